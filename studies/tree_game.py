"""The game a decoded adaptive plan tree holds: its env, its complete problems, and a problem's task.

Shared by :mod:`studies.tree_learner` (which trains planners on the trees) and :mod:`studies.tree_baselines`
(which plays plans and kept planners on them); it sits below both so neither imports the other's module to get
the game (tree_learner imports tree_baselines for its held-out comparison, never the other way round).
"""

from __future__ import annotations

from typing import Any

__all__ = ["game", "tree_problems", "tree_eval_limit", "adaptive_task"]


def game() -> Any:
    """The env of the trees' game (as :data:`studies.adaptive_tree.SETS`: two rounds, the last may only terminate)."""
    from rsim_env import EnvConfig

    return EnvConfig(max_steps=2, terminate_last_round=True)


def tree_problems(tree: Any, split: str, per_task: int, tasks: int = 0) -> list[Any]:
    """The problems of ``adaptive:<split>`` (first ``per_task`` a task) whose every plan is in ``tree``."""
    from agents.replay.plan_tree import terminal_plans
    from studies.adaptive_tree import split_problems

    plans = terminal_plans(2)
    return [p for p in split_problems(split, per_task, tasks) if all(tree.has(p.id, plan) for plan in plans)]


def tree_eval_limit(tree_dir: str, split: str) -> tuple[int, int]:
    """``(per_task, limit)`` of ``adaptive_<split>``'s tree: the problems a task it was filled with (its header), and
    the ``rsim eval --limit`` that loads exactly the split's first ``per_task`` a task (``per_task`` x the tasks)."""
    import json
    from pathlib import Path

    from rsim_env.sources.adaptive import TASKS

    per_task = int(json.loads((Path(tree_dir) / f"adaptive_{split}.tree.json").read_text())["per_task"])
    return per_task, per_task * len(TASKS)


def adaptive_task(problem_id: str) -> str:
    """The task of an ``adaptive`` problem id (``adaptive/SPLIT/TASK/...``)."""
    return problem_id.split("/")[2]
