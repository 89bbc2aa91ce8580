"""Statistics of a plan table (:mod:`benchmarks.plans.table`): choose on validation, score on test.

Pure numpy over rows ``{"problem_id", "task", "plan", "correct"}``; no model.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["split", "summarise", "markdown"]


def split(ids: Sequence[str], val_fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """``(validation ids, test ids)``: a seeded permutation, the first ``round(val_fraction * n)`` to validation."""
    order = np.random.default_rng(seed).permutation(len(ids))
    n_val = min(max(1, round(val_fraction * len(ids))), len(ids) - 1) if len(ids) > 1 else len(ids)
    return [ids[i] for i in order[:n_val]], [ids[i] for i in order[n_val:]]


def best_plan(acc: np.ndarray | Sequence[float], prefer: int | None = None) -> int:
    """Index of the highest accuracy; ties go to ``prefer`` if it is tied, else to the first (shortest) plan."""
    acc = np.asarray(acc)
    top = np.flatnonzero(acc == acc.max())
    return int(prefer) if prefer is not None and prefer in top else int(top[0])


def _bootstrap(diff: np.ndarray, n: int, seed: int) -> list[float]:
    if diff.size == 0:
        return [float("nan")] * 2
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(n, diff.size))].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def summarise(rows: Sequence[dict[str, Any]], ids: Sequence[str], plans: Sequence[tuple[int, ...]],
              val_fraction: float, split_seed: int, bootstrap: int, seed: int,
              val_test: tuple[Sequence[str], Sequence[str]] | None = None) -> dict[str, Any]:
    """Everything the plan table's JSON reports besides config and timing (module docstring of plan_table).

    ``val_test`` gives the validation and test ids instead of :func:`split` (the atlas splits each task
    on its own, so a mix of tasks keeps every task's split)."""
    pos = {p: i for i, p in enumerate(ids)}
    col = {tuple(p): j for j, p in enumerate(plans)}
    C = np.zeros((len(ids), len(plans)), dtype=bool)
    task = {}
    for r in rows:
        C[pos[r["problem_id"]], col[tuple(r["plan"])]] = r["correct"]
        task[r["problem_id"]] = r["task"]
    val, test = (list(val_test[0]), list(val_test[1])) if val_test else split(list(ids), val_fraction, split_seed)
    vi, ti = [pos[i] for i in val], [pos[i] for i in test]
    val_acc, test_acc = C[vi].mean(0), C[ti].mean(0)
    best = best_plan(val_acc)
    tasks = sorted(set(task.values()))
    per_task, choice = {}, {}
    for t in tasks:
        tv = [pos[i] for i in val if task[i] == t]
        tt = [pos[i] for i in test if task[i] == t]
        j = best_plan(C[tv].mean(0), prefer=best) if tv else best
        choice[t] = j
        per_task[t] = {"plan": list(plans[j]), "val_accuracy": float(C[tv, j].mean()) if tv else None,
                       "test_accuracy": float(C[tt, j].mean()) if tt else None, "n_val": len(tv), "n_test": len(tt),
                       "best_fixed_test_accuracy": float(C[tt, best].mean()) if tt else None}
    fixed_t = C[ti, best].astype(float)
    adaptive_t = np.array([C[pos[i], choice[task[i]]] for i in test], dtype=float)
    oracle_t = C[ti].any(1).astype(float)
    diff = adaptive_t - fixed_t
    firsts = sorted({p[0] for p in plans})
    heat = [[float(C[[pos[i] for i in ids if task[i] == t]][:, [j for j, p in enumerate(plans) if p[0] == s]].mean())
             for t in tasks] for s in firsts]
    return {
        "plans": [{"plan": list(p), "val_accuracy": float(val_acc[j]), "test_accuracy": float(test_acc[j]),
                   "accuracy": float(C[:, j].mean())} for j, p in enumerate(plans)],
        "problems": {"n": len(ids), "val": val, "test": test, "val_fraction": val_fraction, "split_seed": split_seed,
                     "tasks": {t: sum(1 for i in ids if task[i] == t) for t in tasks}},
        "best_fixed": {"plan": list(plans[best]), "val_accuracy": float(val_acc[best]),
                       "test_accuracy": float(fixed_t.mean()) if ti else None},
        "per_task": {"test_accuracy": float(adaptive_t.mean()) if ti else None, "tasks": per_task},
        "oracle": {"test_accuracy": float(oracle_t.mean()) if ti else None,
                   "note": "upper bound: each test problem counts as correct if any plan solves it (the plan is "
                           "picked knowing the answer; no policy can do this)"},
        "headroom": {"per_task_minus_best_fixed": float(diff.mean()) if ti else None,
                     "ci95": _bootstrap(diff, bootstrap, seed), "method": f"paired bootstrap over {len(ti)} test "
                     f"problems, {bootstrap} resamples (plans fixed as chosen on validation)",
                     "oracle_minus_best_fixed": float((oracle_t - fixed_t).mean()) if ti else None},
        "heatmap": {"rows": firsts, "tasks": tasks, "accuracy": heat},
    }


def markdown(result: dict[str, Any]) -> str:
    """The summary as a markdown table (printed by plan_table)."""
    def pct(x: Any) -> str:
        return "n/a" if x is None else f"{100 * x:.1f} %"

    h = result["headroom"]
    lines = ["| policy | plan | val | test |", "| --- | --- | --- | --- |",
             f"| best fixed | {result['best_fixed']['plan']} | {pct(result['best_fixed']['val_accuracy'])} | "
             f"{pct(result['best_fixed']['test_accuracy'])} |",
             f"| per task | (below) | | {pct(result['per_task']['test_accuracy'])} |",
             f"| oracle (upper bound) | per problem | | {pct(result['oracle']['test_accuracy'])} |",
             "", f"headroom per_task - best_fixed (test): {pct(h['per_task_minus_best_fixed'])}, 95 % CI "
             f"[{pct(h['ci95'][0])}, {pct(h['ci95'][1])}]", "", "| task | plan | val | test | best fixed on test |",
             "| --- | --- | --- | --- | --- |"]
    for t, v in result["per_task"]["tasks"].items():
        lines.append(f"| {t} | {v['plan']} | {pct(v['val_accuracy'])} ({v['n_val']}) | {pct(v['test_accuracy'])} "
                     f"({v['n_test']}) | {pct(v['best_fixed_test_accuracy'])} |")
    return "\n".join(lines)
