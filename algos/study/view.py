"""A split's table and modes as arrays over problems, checked once: what the report's sections compute on.

:class:`View` lines every mode's outcomes up with the table's problem order (``Table.ids()``) and raises a
``ValueError`` naming the mode, the seed and a missing problem when a mode was not scored on every problem of the
table, so that no later figure silently averages over a different set of problems.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .types import ModeResult, Plan, Table

__all__ = ["View", "ModeArrays", "modal_plan"]


def modal_plan(plans: list[Plan]) -> Plan:
    """The most frequent plan (ties: the smallest), e.g. a seed's plan for a task."""
    counts = Counter(plans)
    top = max(counts.values())
    return min(p for p, c in counts.items() if c == top)


@dataclass(frozen=True)
class ModeArrays:
    """One mode on the view's problems: ``[seed, problem]`` arrays, and the plans played (None: no plan)."""

    name: str
    seeds: list[int]
    correct: np.ndarray
    reward: np.ndarray
    tokens: np.ndarray
    plans: list[list[Plan]] | None
    chosen_on: str
    info: Mapping

    def pooled(self, what: str = "correct") -> np.ndarray:
        """Per problem, the mean over seeds (the unit the report's intervals resample)."""
        return getattr(self, what).mean(axis=0)


@dataclass(frozen=True)
class View:
    """The table as ``[problem, plan]`` arrays and every mode as :class:`ModeArrays`, on the same problems."""

    split: str
    ids: list[str]
    tasks: list[str]
    plans: list[Plan]
    correct: np.ndarray
    reward: np.ndarray
    tokens: np.ndarray
    modes: dict[str, ModeArrays]

    @classmethod
    def of(cls, table: Table, modes: Mapping[str, ModeResult]) -> "View":
        """Build the view; raise ``ValueError`` if the table is empty or a mode misses a problem of it."""
        ids, plans = table.ids(), table.plans()
        if not ids or not plans:
            raise ValueError(f"the {table.split!r} table holds no problem (or no plan); fill and read its tree first.")
        for p in ids:
            if set(table.outcomes[p]) != set(plans):
                raise ValueError(f"{table.split} problem {p!r} has plans {sorted(table.outcomes[p])}, not the game's "
                                 f"{plans}; read back only problems whose tree is complete.")
            if p not in table.tasks:
                raise ValueError(f"{table.split} problem {p!r} has no task label; give every problem its task.")
        cells = [[table.outcomes[p][pl] for pl in plans] for p in ids]
        arrays = {n: _mode(table.split, ids, m) for n, m in modes.items()}
        return cls(table.split, ids, [table.tasks[p] for p in ids], plans,
                   np.array([[o.correct for o in row] for row in cells], dtype=float),
                   np.array([[o.reward for o in row] for row in cells], dtype=float),
                   np.array([[o.tokens for o in row] for row in cells], dtype=float), arrays)

    def task_names(self) -> list[str]:
        """The tasks, sorted."""
        return sorted(set(self.tasks))

    def rows(self, task: str) -> np.ndarray:
        """Indices of the problems of ``task``."""
        return np.array([i for i, t in enumerate(self.tasks) if t == task], dtype=int)

    def plan_index(self, plan: Plan) -> int:
        """Column of ``plan`` in the table; ``ValueError`` if the game has no such plan."""
        try:
            return self.plans.index(tuple(plan))
        except ValueError:
            raise ValueError(f"plan {list(plan)} is not one of the game's plans {self.plans}.") from None


def _mode(split: str, ids: list[str], m: ModeResult) -> ModeArrays:
    if not m.outcomes:
        raise ValueError(f"mode {m.name!r} has no seed; score it on the {split} table or leave it out.")
    seeds = sorted(m.outcomes)
    for s in seeds:
        missing = [p for p in ids if p not in m.outcomes[s]]
        if missing:
            raise ValueError(f"mode {m.name!r}, seed {s}: no outcome for {len(missing)} of the {len(ids)} {split} "
                             f"problems (e.g. {missing[0]!r}); score it on every problem of the table.")
        if m.plans is not None and any(p not in m.plans.get(s, {}) for p in ids):
            raise ValueError(f"mode {m.name!r}, seed {s}: plans are missing for some {split} problems; give the "
                             "plan of every problem scored (or plans=None for a mode that plays none).")
    out = [[m.outcomes[s][p] for p in ids] for s in seeds]
    plans = None if m.plans is None else [[tuple(m.plans[s][p]) for p in ids] for s in seeds]
    return ModeArrays(m.name, seeds, np.array([[o.correct for o in r] for r in out], dtype=float),
                      np.array([[o.reward for o in r] for r in out], dtype=float),
                      np.array([[o.tokens for o in r] for r in out], dtype=float), plans, m.chosen_on, dict(m.info))
