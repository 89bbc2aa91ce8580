"""The records the stages of ``rsim study`` hand each other: a split's read-back table and every mode's outcomes.

A frozen greedy reasoner makes a planner episode a function of (problem, plan), so once a split's plan tree is
filled every plan policy's outcome on it is a lookup in :class:`Table`. The score stage turns trees, heads and
baselines into one :class:`ModeResult` per mode; the report (:mod:`algos.study.report`) reads nothing else, so it is
tested on tables written by hand (scripted cases) exactly as on decoded trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = ["Plan", "Outcome", "Table", "ModeResult", "MODES"]

Plan = tuple[int, ...]
"""A plan: one strategy index per round, the last being termination (``(3, 8)``)."""


@dataclass(frozen=True)
class Outcome:
    """One problem played one way."""

    correct: bool
    """The reasoner's final answer was graded right."""
    reward: float
    """The planner's reward for the episode (the env's rubric sum for the planner)."""
    tokens: float
    """Reasoner tokens the episode cost (prompt tokens read + tokens written), for equal-token baselines."""


@dataclass(frozen=True)
class Table:
    """A split's read-back table: every plan of the game on every problem whose tree is complete."""

    split: str
    """``train`` / ``val`` / ``test`` / ``replication``."""
    tasks: Mapping[str, str]
    """Problem id → task label."""
    outcomes: Mapping[str, Mapping[Plan, Outcome]]
    """Problem id → plan → outcome (every plan of the game; the same plan set for every problem)."""

    def plans(self) -> list[Plan]:
        """The plans of the game, in a stable order."""
        first = next(iter(self.outcomes.values()), {})
        return sorted(first)

    def ids(self) -> list[str]:
        """The problem ids, in a stable order."""
        return sorted(self.outcomes)


@dataclass(frozen=True)
class ModeResult:
    """One mode's outcome on one split, per seed (deterministic modes have the single seed 0)."""

    name: str
    """``trained``, ``best_fixed``, ``per_task``, ``bandit``, ``random``, ``none``, ``sc``, ``stackelberg``, ..."""
    outcomes: Mapping[int, Mapping[str, Outcome]]
    """Seed → problem id → outcome."""
    plans: Mapping[int, Mapping[str, Plan]] | None = None
    """Seed → problem id → the plan played (None for modes that play no plan, e.g. ``sc``)."""
    chosen_on: str = ""
    """What the mode's choices were made on (``train+val``, ``train`` episodes, ``test`` for a ceiling)."""
    info: Mapping[str, Any] = field(default_factory=dict)
    """Anything else the report prints (episodes given to a bandit, the k of self-consistency, ...)."""


MODES = ("trained", "best_fixed", "per_task", "bandit", "random", "none", "sc")
"""The modes every report has when they were scored, in the report's order; the headline is ``trained`` vs
``best_fixed``. Ceilings (per-task best on test, per-problem oracle) are computed by the report from the test
:class:`Table`, never passed in as modes."""
