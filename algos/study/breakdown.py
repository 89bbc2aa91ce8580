"""Where a trained planner's difference comes from: per task, how concentrated, and within a task.

Three sections of the report (:mod:`algos.study.report`), each a JSON-able dict computed on a :class:`View`:

* :func:`per_task` -- per task: problems, each mode's plan (the one it played most there) and accuracy, the
  task's best plan on test (a ceiling) and the trained planner's gain over the best fixed plan, in problems;
* :func:`concentration` -- how many tasks carry the gain (the smallest set of tasks, largest gains first, whose
  gain reaches the total) and the headline recomputed with the top one and top three tasks left out;
* :func:`tied_plans` / :func:`tie_range` -- the per-task policy's ties on the selection problems and the range of
  its test accuracy over every tie-break;
* :func:`within_task` -- whether the planner conditions on more than the task: per seed, distinct plans per task
  and the problems departing from the seed's modal plan for their task, and the value of those departures against
  the seed's own per-task lookup (its modal plan there: the comparison that isolates conditioning on more than the
  task) and against the per-task policy chosen on train + val, each with a bootstrap interval over problems. The
  second mixes in which plan a task gets: when a seed's modal plan is not the policy's, its departures fall on the
  problems where the policy's plan is right, so departures worth +1 each against the seed's lookup read 0 there.

Gains are in problems of one seed (the mean over seeds), differences in accuracy points.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from .stats import paired, sign_test
from .types import Plan, Table
from .view import View, modal_plan

__all__ = ["per_task", "concentration", "within_task", "task_gains", "ci_pts", "tied_plans", "tie_range", "TIE_RULE"]


def ci_pts(r: dict[str, Any]) -> dict[str, Any]:
    """A :func:`algos.study.stats.paired` result in accuracy points (``difference_pts``, ``ci95_pts``) and problems."""
    pts = [None if x is None else 100 * x for x in r["ci95"]]
    return {"difference_pts": None if r["difference"] is None else 100 * r["difference"], "ci95_pts": pts,
            "difference_problems": r["sum"], "p_value": r["p_value"], "problems": r["n"]}


def task_gains(view: View, a: str = "trained", b: str = "best_fixed") -> dict[str, float]:
    """Per task, ``a``'s correct problems minus ``b``'s (each averaged over its seeds)."""
    d = view.modes[a].pooled() - view.modes[b].pooled()
    return {t: float(d[view.rows(t)].sum()) for t in view.task_names()}


def per_task(view: View, test_best: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """Per task: ``problems``, ``modes`` (each: ``plan`` played most, ``distinct_plans``, ``accuracy_pct``),
    ``test_best`` (the task's best plan on test and its accuracy: a ceiling, chosen on test) and ``gain_problems``
    (trained minus best fixed)."""
    gains = task_gains(view) if {"trained", "best_fixed"} <= set(view.modes) else {}
    out = {}
    for t in view.task_names():
        rows = view.rows(t)
        modes = {}
        for name, m in view.modes.items():
            played = None if m.plans is None else [pl[i] for pl in m.plans for i in rows]
            modes[name] = {"plan": None if played is None else list(modal_plan(played)),
                           "distinct_plans": None if played is None else len(set(played)),
                           "accuracy_pct": 100 * float(m.correct[:, rows].mean())}
        j = view.plan_index(test_best[t])
        out[t] = {"problems": int(rows.size), "modes": modes,
                  "test_best": {"plan": list(view.plans[j]), "accuracy_pct": 100 * float(view.correct[rows, j].mean())},
                  "gain_problems": gains.get(t)}
    return out


def _without(view: View, drop: list[str], rounds: int, seed: int) -> dict[str, Any] | None:
    keep = np.array([i for i, t in enumerate(view.tasks) if t not in drop], dtype=int)
    if keep.size == 0:
        return None
    tr, bf = view.modes["trained"], view.modes["best_fixed"]
    r = ci_pts(paired(tr.pooled()[keep], bf.pooled()[keep], rounds, seed))
    per_seed = tr.correct[:, keep].mean(axis=1)
    base = float(bf.correct[:, keep].mean())
    return {"left_out": drop, **r, "seeds": sign_test([float(x) for x in per_seed], [base] * len(per_seed))}


def concentration(view: View, rounds: int, seed: int) -> dict[str, Any]:
    """``gain_problems`` (total), ``tasks_carrying`` (the smallest set of tasks whose gain reaches the total; None
    when the total is not above 0), ``rest_problems`` (what the other tasks net), ``by_task`` (gains, largest first)
    and ``without_top_1`` / ``without_top_3`` (the headline on the other tasks' problems)."""
    gains = task_gains(view)
    order = sorted(gains, key=lambda t: (-gains[t], t))
    total = sum(gains.values())
    carrying = None
    if total > 1e-9:
        acc, carrying = 0.0, []
        for t in order:
            carrying.append(t)
            acc += gains[t]
            if acc >= total - 1e-9:
                break
    rest = None if carrying is None else total - sum(gains[t] for t in carrying)
    return {"gain_problems": total, "tasks": len(order), "tasks_carrying": carrying,
            "carrying_problems": None if carrying is None else sum(gains[t] for t in carrying),
            "rest_problems": rest, "by_task": {t: gains[t] for t in order},
            "without_top_1": _without(view, order[:1], rounds, seed) if len(order) > 1 else None,
            "without_top_3": _without(view, order[:3], rounds, seed) if len(order) > 3 else None}


def within_task(view: View, rounds: int, seed: int) -> dict[str, Any] | None:
    """Distinct plans per task per seed, departures from each seed's modal per-task plan, and their value (module
    docstring); ``conditions_on_more_than_task`` is True only when the value against the seed's own per-task lookup
    has a 95 % interval above 0. None when the trained mode recorded no plans."""
    tr = view.modes["trained"]
    if tr.plans is None:
        return None
    n_seeds, n = tr.correct.shape
    dep = np.zeros((n_seeds, n))
    own = np.zeros((n_seeds, n))  # the correctness the seed's modal plan would have had
    by_seed = []
    for k, s in enumerate(tr.seeds):
        distinct = {}
        for t in view.task_names():
            rows = view.rows(t)
            played = [tr.plans[k][i] for i in rows]
            modal = modal_plan(played)
            distinct[t] = len(set(played))
            dep[k, rows] = [p != modal for p in played]
            own[k, rows] = view.correct[rows, view.plan_index(modal)]
        hist = Counter(distinct.values())
        by_seed.append({"seed": s, "tasks": len(distinct), "tasks_one_plan": hist.get(1, 0),
                        "distinct_plans": distinct, "departures": int(dep[k].sum())})
    vs_modal = ci_pts(paired((dep * tr.correct).mean(0), (dep * own).mean(0), rounds, seed))
    vs_policy = None
    if "per_task" in view.modes:
        pt = view.modes["per_task"].pooled()
        vs_policy = ci_pts(paired((dep * tr.correct).mean(0), (dep * pt).mean(0), rounds, seed))
    lo = vs_modal["ci95_pts"][0]
    return {"by_seed": by_seed, "departures_per_seed": float(dep.sum(1).mean()),
            "value_vs_modal_plan": vs_modal, "value_vs_per_task": vs_policy,
            "conditions_on_more_than_task": bool(lo is not None and lo > 0)}


TIE_RULE = ("per task, the plan with the highest mean planner reward on train + val; a tie goes to the shortest plan, "
            "then the smallest (lexicographic) one")
"""How the per-task policy breaks a tie (:func:`algos.optimisation_gap.best_policies`)."""


def tied_plans(tables: Sequence[Table]) -> dict[str, list[list[int]]]:
    """Per task of ``tables`` pooled (the selection problems), every plan whose summed planner reward equals the best
    (to 1e-9), in the tie-break order (:data:`TIE_RULE`): the first is the one the per-task policy plays."""
    sums: dict[str, dict[Plan, float]] = {}
    for t in tables:
        for p in t.ids():
            by = sums.setdefault(t.tasks[p], {})
            for plan, o in t.outcomes[p].items():
                by[plan] = by.get(plan, 0.0) + o.reward
    out = {}
    for task, by in sorted(sums.items()):
        top = max(by.values())
        out[task] = [list(pl) for pl in sorted((pl for pl, v in by.items() if v >= top - 1e-9),
                                               key=lambda pl: (len(pl), pl))]
    return out


def tie_range(view: View, tied: Mapping[str, Sequence[Sequence[int]]]) -> dict[str, Any]:
    """The per-task policy's test accuracy over every tie-break: each task's test problems are played with one plan,
    so the accuracy is a sum over tasks and its least / greatest value is the sum of each task's least / greatest
    correct count over its tied plans. ``tied_tasks`` (ties on the selection problems), ``tied_tasks_on_test`` (of
    them, tasks with test problems), ``by_task`` (tied plans and their test correct counts), ``accuracy_range_pct``."""
    lo = hi = 0
    by_task = {}
    for t in view.task_names():
        rows = view.rows(t)
        plans = [tuple(pl) for pl in tied.get(t, [])]
        if not plans:
            raise ValueError(f"task {t!r} has test problems but no chosen plan among the ties; score the per-task "
                             "policy on the same tasks.")
        counts = [int(view.correct[rows, view.plan_index(pl)].sum()) for pl in plans]
        lo, hi = lo + min(counts), hi + max(counts)
        if len(plans) > 1:
            by_task[t] = {"plans": [list(pl) for pl in plans], "test_correct": counts, "problems": int(rows.size)}
    n = len(view.ids)
    return {"rule": TIE_RULE, "tied_tasks": sum(len(v) > 1 for v in tied.values()), "tied_tasks_on_test": len(by_task),
            "by_task": by_task, "accuracy_range_pct": [100 * lo / n, 100 * hi / n]}
