"""The records the stages of ``rsim study`` hand each other: a split's read-back table and every mode's outcomes.

A frozen greedy reasoner makes a planner episode a function of (problem, plan), so once a split's plan tree is
filled every plan policy's outcome on it is a lookup in :class:`Table`. The score stage turns trees, heads and
baselines into one :class:`ModeResult` per mode; the report (:mod:`algos.study.report`) reads nothing else, so it is
tested on tables written by hand (scripted cases) exactly as on decoded trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

__all__ = ["Plan", "Outcome", "Table", "ModeResult", "MODES", "plan_key", "plan_from_key", "outcome_to_json",
           "outcome_from_json", "table_to_json", "table_from_json", "mode_to_json", "mode_from_json"]

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


# ------------------------------------------------------------------------------------------- JSON

def plan_key(plan: Sequence[int]) -> str:
    """``(3, 8)`` -> ``"3,8"`` (a plan as a JSON key; :func:`plan_from_key` reads it back)."""
    return ",".join(str(int(s)) for s in plan)


def plan_from_key(key: str) -> Plan:
    """``"3,8"`` -> ``(3, 8)``."""
    return tuple(int(s) for s in key.split(","))


def outcome_to_json(o: Outcome) -> list[Any]:
    """An outcome as the JSON row ``[correct, reward, tokens]`` (:func:`outcome_from_json` reads it back)."""
    return [o.correct, o.reward, o.tokens]


def outcome_from_json(row: Sequence[Any]) -> Outcome:
    """The outcome of a JSON row ``[correct, reward, tokens]``."""
    correct, reward, tokens = row
    return Outcome(bool(correct), float(reward), float(tokens))


def table_to_json(t: Table) -> dict[str, Any]:
    """A table as JSON values: ``split``, ``tasks`` and ``outcomes`` (problem -> plan key -> outcome row)."""
    return {"split": t.split, "tasks": dict(t.tasks),
            "outcomes": {p: {plan_key(pl): outcome_to_json(o) for pl, o in by.items()} for p, by in t.outcomes.items()}}


def table_from_json(d: Mapping[str, Any]) -> Table:
    """The table of :func:`table_to_json`'s values."""
    return Table(d["split"], d["tasks"], {p: {plan_from_key(k): outcome_from_json(row) for k, row in by.items()}
                                          for p, by in d["outcomes"].items()})


def mode_to_json(r: ModeResult) -> dict[str, Any]:
    """A mode's result as JSON values (seeds as string keys, plans as plan keys)."""
    return {"name": r.name, "chosen_on": r.chosen_on, "info": r.info,
            "outcomes": {str(s): {p: outcome_to_json(o) for p, o in by.items()} for s, by in r.outcomes.items()},
            "plans": None if r.plans is None else {str(s): {p: plan_key(pl) for p, pl in by.items()}
                                                   for s, by in r.plans.items()}}


def mode_from_json(d: Mapping[str, Any]) -> ModeResult:
    """The mode result of :func:`mode_to_json`'s values."""
    outcomes = {int(s): {p: outcome_from_json(row) for p, row in by.items()} for s, by in d["outcomes"].items()}
    plans = None if d["plans"] is None else {int(s): {p: plan_from_key(k) for p, k in by.items()}
                                             for s, by in d["plans"].items()}
    return ModeResult(d["name"], outcomes, plans, d["chosen_on"], d["info"])
