"""Statistics of the atlas (:mod:`benchmarks.plans.atlas`): pilot rung choice, per-task plan accuracies, which
tasks prefer different plans, and the headroom of a per-task policy on the most heterogeneous mix.

Pure Python + numpy over outcome rows ``{"task", "setting", "problem_id", "split", "plan", "correct"}``; no model.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Sequence

import numpy as np

from . import stats as plan_stats

__all__ = ["wilson", "majority", "pilot_step", "task_stats", "one_sided_paired_p", "heterogeneity", "mix"]


def key(plan: Sequence[int]) -> str:
    """A plan as a JSON key: ``(3, 8)`` -> ``"3,8"``."""
    return ",".join(map(str, plan))


def wilson(k: int, n: int, z: float = 1.96) -> list[float]:
    """95 % Wilson score interval of ``k`` successes in ``n`` trials (``[0, 1]`` when ``n == 0``)."""
    if n == 0:
        return [0.0, 1.0]
    p, d = k / n, 1 + z * z / n
    c, h = (p + z * z / (2 * n)) / d, z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [max(0.0, c - h), min(1.0, c + h)]


def pilot_step(bests: Sequence[float], rungs: int, low: float, high: float) -> tuple[str, Any]:
    """The pilot's next move on one task's ladder, given the best pilot accuracy of each rung played so far.

    ``("play", k)``: play rung k next; ``("pick", (k, why))``; ``("drop", why)``. Walk up the ladder (easiest
    first) while the best plan solves more than ``high``; stop at the first rung in ``[low, high]``; a rung below
    ``low`` ends the walk (harder rungs would not rise), and the played rung nearest 50 % is picked; a task
    whose every played rung is at 0 is dropped.
    """
    if not bests:
        return "play", 0
    k, b = len(bests) - 1, bests[-1]
    if low <= b <= high:
        return "pick", (k, "in band")
    if b > high and k + 1 < rungs:
        return "play", k + 1
    if max(bests) == 0:
        return "drop", f"0 solved under every pilot plan at {'every played rung' if k else 'the easiest rung'}"
    j = int(np.argmin([abs(x - 0.5) for x in bests]))
    return "pick", (j, "above band at the hardest rung" if b > high else "no rung in band; nearest 50 %")


def _matrix(rows: Sequence[dict[str, Any]]) -> tuple[list[str], dict[str, str], list[tuple[int, ...]], np.ndarray]:
    """``(problem ids, split of each, plans played on every problem, correct[problem, plan])``."""
    index = {r["problem_id"]: r["index"] for r in rows}
    ids = sorted(index, key=index.__getitem__)
    split = {r["problem_id"]: r["split"] for r in rows}
    have: dict[tuple[int, ...], dict[str, bool]] = {}
    for r in rows:
        have.setdefault(tuple(r["plan"]), {})[r["problem_id"]] = bool(r["correct"])
    plans = sorted((p for p, d in have.items() if len(d) == len(ids)), key=lambda p: (len(p), p))
    C = np.array([[have[p][i] for p in plans] for i in ids], dtype=bool).reshape(len(ids), len(plans))
    return ids, split, plans, C


def majority(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The most common gold of the rows' problems and its share: what answering one constant would score
    (a yes/no task with 90 % "Yes" is solved 90 % by a model that always says "Yes")."""
    golds = {r["problem_id"]: r["answer"] for r in rows}
    if not golds:
        return {"answer": None, "share": 0.0}
    top = max(sorted(set(golds.values())), key=list(golds.values()).count)
    return {"answer": top, "share": list(golds.values()).count(top) / len(golds)}


def task_stats(task: str, setting: str, rows: Sequence[dict[str, Any]], close: float) -> dict[str, Any]:
    """One task's line of the atlas: every plan's accuracy (Wilson), the validation-best plan and its test score."""
    ids, split, plans, C = _matrix(rows)
    vi = [j for j, i in enumerate(ids) if split[i] == "val"]
    ti = [j for j, i in enumerate(ids) if split[i] == "test"]
    val, test = C[vi].mean(0), C[ti].mean(0)
    order = sorted(range(len(plans)), key=lambda j: (-val[j], len(plans[j]), plans[j]))
    b, r = order[0], order[1] if len(order) > 1 else order[0]
    return {
        "task": task, "setting": setting, "n": len(ids), "n_val": len(vi), "n_test": len(ti),
        "rounds": max(len(p) for p in plans),
        "accuracy": {key(p): float(C[:, j].mean()) for j, p in enumerate(plans)},
        "wilson95": {key(p): wilson(int(C[:, j].sum()), len(ids)) for j, p in enumerate(plans)},
        "val_accuracy": {key(p): float(val[j]) for j, p in enumerate(plans)},
        "test_accuracy": {key(p): float(test[j]) for j, p in enumerate(plans)},
        "best_plan": list(plans[b]), "best_val": float(val[b]), "best_test": float(test[b]),
        "best_test_wilson95": wilson(int(C[ti, b].sum()), len(ti)),
        "runner_up": list(plans[r]), "runner_up_val": float(val[r]), "runner_up_test": float(test[r]),
        "gap_val": float(val[b] - val[r]), "gap_test": float(test[b] - test[r]),
        "close": bool(val[b] - val[r] <= close),
        "majority_gold": majority(rows),
    }


def one_sided_paired_p(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """Exact one-sided McNemar test that ``a`` beats ``b`` on the same problems: ``(a only, b only, p)``."""
    wins, losses = int((a & ~b).sum()), int((~a & b).sum())
    n = wins + losses
    p = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2 ** n if n else 1.0
    return wins, losses, float(p)


def _test_column(rows: Sequence[dict[str, Any]], plan: Sequence[int]) -> np.ndarray:
    ids, split, plans, C = _matrix(rows)
    return C[[j for j, i in enumerate(ids) if split[i] == "test"], plans.index(tuple(plan))]


def heterogeneity(stats: Sequence[dict[str, Any]], rows_of: dict[str, list[dict[str, Any]]],
                  alpha: float) -> dict[str, Any]:
    """Pairs of tasks whose validation-best plans differ, each tested on test problems both ways.

    A pair *survives* when A's plan beats B's plan on A's test problems and B's beats A's on B's, each by an
    exact one-sided paired test at ``alpha / pairs`` (Bonferroni over the pairs tested).
    """
    pairs = [(a, b) for a, b in itertools.combinations(stats, 2) if a["best_plan"] != b["best_plan"]]
    level = alpha / max(1, len(pairs))
    out = []
    for a, b in pairs:
        ra, rb = rows_of[a["task"]], rows_of[b["task"]]
        if tuple(b["best_plan"]) not in {tuple(r["plan"]) for r in ra} or \
                tuple(a["best_plan"]) not in {tuple(r["plan"]) for r in rb}:
            continue  # an L = 3 plan not played on the other task
        wa, la, pa = one_sided_paired_p(_test_column(ra, a["best_plan"]), _test_column(ra, b["best_plan"]))
        wb, lb, pb = one_sided_paired_p(_test_column(rb, b["best_plan"]), _test_column(rb, a["best_plan"]))
        out.append({"a": a["task"], "b": b["task"], "plan_a": a["best_plan"], "plan_b": b["best_plan"],
                    "on_a": {"a_plan_only": wa, "b_plan_only": la, "p": pa},
                    "on_b": {"b_plan_only": wb, "a_plan_only": lb, "p": pb},
                    "survives": bool(pa < level and pb < level)})
    distinct = sorted({key(s["best_plan"]) for s in stats})
    # the test's power: a one-sided exact paired test with no losses has p = 0.5 ** wins, so a pair can survive
    # only when each task's own plan wins at least this many of its test problems outright
    need = next(k for k in range(1, 200) if 0.5 ** k < level)
    return {"distinct_best_plans": distinct, "pairs_tested": len(out), "alpha": alpha, "level": level,
            "min_wins_to_survive": need, "surviving": sum(p["survives"] for p in out), "pairs": out,
            "method": "exact one-sided paired (McNemar) test on each task's test problems, both directions; "
                      "plans chosen on validation; Bonferroni over pairs"}


def _val_headroom(mats: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """In-sample validation headroom of a mix: each task's own best plan minus the best common plan."""
    V = np.concatenate([C[v] for C, v in mats])
    own = sum(C[v].mean(0).max() * len(v) for C, v in mats) / max(1, len(V))
    return float(own - V.mean(0).max()) if len(V) else 0.0


def mix(rows_of: dict[str, list[dict[str, Any]]], plans: Sequence[tuple[int, ...]], size: int, bootstrap: int,
        seed: int) -> dict[str, Any]:
    """Greedy mix of ``size`` tasks by validation headroom; its per-task policy vs best single plan on test."""
    mats, uids = {}, {}
    for t, rows in rows_of.items():
        ids, split, played, C = _matrix(rows)
        cols = [played.index(p) for p in plans]
        mats[t] = (C[:, cols], [j for j, i in enumerate(ids) if split[i] == "val"])
        uids[t] = [(f"{t}|{i}", split[i]) for i in ids]
    names = sorted(mats)
    chosen: list[str] = []
    path = []
    if size >= len(names) >= 2:  # every task: nothing to choose
        chosen = list(names)
        path.append({"tasks": list(chosen), "val_headroom": _val_headroom([mats[x] for x in chosen])})
    elif len(names) >= 2:
        chosen = list(max(itertools.combinations(names, 2), key=lambda ab: _val_headroom([mats[x] for x in ab])))
        path.append({"tasks": list(chosen), "val_headroom": _val_headroom([mats[x] for x in chosen])})
        while len(chosen) < min(size, len(names)):
            nxt = max((t for t in names if t not in chosen), key=lambda t: _val_headroom([mats[x] for x in chosen + [t]]))
            chosen.append(nxt)
            path.append({"tasks": list(chosen), "val_headroom": _val_headroom([mats[x] for x in chosen])})
    else:
        chosen = names
    rows = [{**r, "problem_id": f"{t}|{r['problem_id']}", "task": t} for t in chosen for r in rows_of[t]
            if tuple(r["plan"]) in set(plans)]
    ids = [u for t in chosen for u, _ in uids[t]]
    val = [u for t in chosen for u, s in uids[t] if s == "val"]
    test = [u for t in chosen for u, s in uids[t] if s == "test"]
    if not ids:
        return {"tasks": [], "best_fixed": None, "per_task": None, "headroom": None, "selection": path}
    res = plan_stats.summarise(rows, ids, list(plans), 0.5, 0, bootstrap, seed, val_test=(val, test))
    h = res["headroom"]
    return {"tasks": chosen, "plans": [list(p) for p in plans], "n_val": len(val), "n_test": len(test),
            "best_fixed": res["best_fixed"], "per_task": res["per_task"], "oracle": res["oracle"],
            "headroom": {"point": h["per_task_minus_best_fixed"], "ci95": h["ci95"], "method": h["method"]},
            "selection": path}
