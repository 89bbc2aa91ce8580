"""The optimisation gap: a trained planner against the best policies a planner could represent on a table.

Input is an outcome table -- one row per (problem, plan) -- as :mod:`benchmarks.plans.table` writes it
(``<out>.episodes.jsonl.gz``, read with :func:`read_rows`) or as any plain list of dicts::

    problem_id, task, plan [strategy indices], correct (bool), reward (planner reward; optional)

A row without ``reward`` gets the paper's planner reward from its plan and correctness
(:func:`planner_reward_of`: R_acc + R_terminal + R_penalty under ``weights``). From the table:

* ``best_single``: the one plan with the highest mean planner reward over the table's problems;
* ``per_task_best``: per task the plan with the highest mean reward on that task's problems (what a planner
  that reads the task could reach; an upper bound for one that cannot);
* ``trained``: the trained planner's own episodes on the same problems (rows of the same form; averaged per
  problem first, so several samples of one problem weigh as one), and ``ratio`` = trained / per_task_best
  reward (None when that reward is not positive).

Plans are chosen on ``select`` rows when given (e.g. the training tree) and scored on ``rows`` (e.g. test):
the gap on the training tree is the optimisation gap, on test it is generalisation. Pure Python, no torch.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Sequence

from rsim_env.rewards import RewardWeights, planner_reward, r_acc, r_penalty, r_terminal

__all__ = ["planner_reward_of", "read_rows", "outcome_table", "best_policies", "policy_value", "optimisation_gap"]

Table = dict[str, dict[tuple[int, ...], tuple[float, float]]]
"""``problem_id -> plan -> (accuracy, planner reward)``, each the mean over that cell's rows."""


def planner_reward_of(plan: Sequence[int], correct: bool, weights: RewardWeights | None = None) -> float:
    """The paper's planner reward of one episode from its plan and correctness alone."""
    plan = [int(s) for s in plan]
    c = {"acc": r_acc(bool(correct)), "terminal": r_terminal(plan), "penalty": r_penalty(plan)}
    return planner_reward(c | {"format": 0.0, "follow": 0.0}, weights or RewardWeights())


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file (``.gz`` read as gzip), e.g. plan_table's ``<out>.episodes.jsonl.gz``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file; pass a plan table's <out>.episodes.jsonl.gz (benchmarks.plans.table).")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def outcome_table(rows: Iterable[dict[str, Any]], weights: RewardWeights | None = None) -> tuple[Table, dict[str, str]]:
    """``(table, task of each problem)`` from rows (module docstring); a bad row, or a problem that lacks a plan
    another one has, raises naming it."""
    cells, tasks = _cells(rows, weights)
    table = {p: {plan: _mean2(v) for plan, v in by.items()} for p, by in cells.items()}
    plans = set.union(*(set(by) for by in table.values()))
    for p, by in table.items():
        if set(by) != plans:
            raise ValueError(f"problem {p!r} lacks plans {sorted(map(list, plans - set(by)))[:3]}; fill the table "
                             "(every plan on every problem) before comparing policies.")
    return table, tasks


def _cells(rows: Iterable[dict[str, Any]], weights: RewardWeights | None) -> tuple[dict, dict[str, str]]:
    """``problem_id -> plan -> [(correct, reward), ...]`` and each problem's task, rows checked."""
    cells: dict[str, dict[tuple[int, ...], list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    tasks: dict[str, str] = {}
    for i, row in enumerate(rows):
        missing = [k for k in ("problem_id", "plan", "correct") if k not in row]
        if missing:
            raise ValueError(f"row {i} lacks {missing}; each row needs problem_id, plan, correct (and task, reward).")
        pid, plan = str(row["problem_id"]), tuple(int(s) for s in row["plan"])
        task = str(row.get("task", pid.split("/", 1)[0]))
        if tasks.setdefault(pid, task) != task:
            raise ValueError(f"problem {pid!r} is in tasks {tasks[pid]!r} and {task!r}; give each problem one task.")
        cells[pid][plan].append(_value(row, weights))
    if not cells:
        raise ValueError("no rows: pass the outcome table's rows (one per problem and plan).")
    return cells, tasks


def _value(row: dict[str, Any], weights: RewardWeights | None) -> tuple[float, float]:
    """``(correct, planner reward)`` of one row (the reward from plan and correctness when the row has none)."""
    reward = row.get("reward")
    if reward is None:
        reward = planner_reward_of(row["plan"], row["correct"], weights)
    return float(bool(row["correct"])), float(reward)


def _per_problem(rows: Sequence[dict[str, Any]], weights: RewardWeights | None) -> dict[str, tuple[float, float]]:
    """``problem_id -> (accuracy, reward)``, each the mean over that problem's rows (whatever plans they played)."""
    cells, _ = _cells(rows, weights)
    return {p: _mean2([v for vs in by.values() for v in vs]) for p, by in cells.items()}


def _mean2(pairs: Sequence[tuple[float, float]]) -> tuple[float, float]:
    return sum(a for a, _ in pairs) / len(pairs), sum(r for _, r in pairs) / len(pairs)


def _best_plan(table: Table, problems: Sequence[str]) -> tuple[int, ...]:
    """The plan with the highest mean reward over ``problems`` (ties: shortest, then smallest)."""
    plans = table[problems[0]]  # every problem has the same plans (outcome_table checks)
    return max(sorted(plans, key=lambda pl: (len(pl), pl)), key=lambda pl: sum(table[p][pl][1] for p in problems))


def best_policies(table: Table, tasks: dict[str, str]) -> dict[str, Any]:
    """``{"best_single": plan, "per_task_best": {task: plan}}`` chosen on ``table`` by mean planner reward."""
    by_task: dict[str, list[str]] = defaultdict(list)
    for p in table:
        by_task[tasks[p]].append(p)
    return {"best_single": _best_plan(table, list(table)),
            "per_task_best": {t: _best_plan(table, ps) for t, ps in sorted(by_task.items())}}


def policy_value(table: Table, tasks: dict[str, str], plan_of: dict[str, tuple[int, ...]]) -> dict[str, float]:
    """Mean ``reward`` and ``accuracy`` over ``table``'s problems when task ``t`` plays ``plan_of[t]``."""
    for t, plan in plan_of.items():
        if plan not in next(iter(table.values())):
            raise ValueError(f"plan {list(plan)} (task {t!r}) is not in the table; choose plans on a table with the same plans.")
    acc, reward = _mean2([table[p][plan_of[tasks[p]]] for p in table])
    return {"reward": reward, "accuracy": acc}


def optimisation_gap(rows: Sequence[dict[str, Any]], trained: Sequence[dict[str, Any]],
                     select: Sequence[dict[str, Any]] | None = None,
                     weights: RewardWeights | None = None) -> dict[str, Any]:
    """Best single plan, per-task best plan and the trained planner on ``rows``' problems (module docstring).

    Args:
        rows: the outcome table the policies are scored on.
        trained: the trained planner's episodes (rows), on problems of ``rows`` only.
        select: rows the best plans are chosen on (default ``rows``).
        weights: reward weights for rows without ``reward``.
    """
    table, tasks = outcome_table(rows, weights)
    chosen = best_policies(*outcome_table(select if select is not None else rows, weights))
    missing = sorted(set(tasks.values()) - set(chosen["per_task_best"]))
    if missing:
        raise ValueError(f"tasks {missing} have no rows in select; choose plans on rows that cover every task.")
    own = _per_problem(list(trained), weights)
    outside = sorted(set(own) - set(table))
    if outside:
        raise ValueError(f"trained episodes on problems not in the table: {outside[:3]}; score the planner on the table's problems.")
    t_acc, t_reward = _mean2(list(own.values()))
    single = {t: chosen["best_single"] for t in set(tasks.values())}
    per_task = policy_value(table, tasks, chosen["per_task_best"])
    return {
        "problems": len(table), "trained_problems": len(own),
        "best_single": {"plan": list(chosen["best_single"]), **policy_value(table, tasks, single)},
        "per_task_best": {"plans": {t: list(p) for t, p in chosen["per_task_best"].items()}, **per_task},
        "trained": {"reward": t_reward, "accuracy": t_acc},
        "ratio": t_reward / per_task["reward"] if per_task["reward"] > 0 else None,
    }
