"""``grpo_fixed``: the reasoner trained alone, in the planner's game, under a fixed plan in the planner's seat.

The control that separates "a planner" from "a prompt that names strategies": the environment runs the planner's
game (each step injected, the termination step opening the answer), but the planner seat holds a scripted
:class:`agents.scripted.policies.FixedPlanner` that plays the same plan on every problem and never learns. Only the
reasoner updates, every step, at its full learning rate, as in :class:`algos.grpo_baseline.GRPOBaseline`.

As an ``rsim train`` learner spec: ``--learner algos.study.arms.learner:grpo_fixed`` (the planner seat is filled by
:mod:`algos.study.arms.train`, which builds the fixed planner from the study's best fixed plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...learner_base import SharedObjective
from ...update_schedule import UpdateSchedule

__all__ = ["FixedPlanGRPO", "grpo_fixed", "SPEC"]

SPEC = "algos.study.arms.learner:grpo_fixed"
"""The learner spec of a ``grpo_fixed`` run (saved in its config)."""


@dataclass(frozen=True)
class FixedPlanGRPO(SharedObjective):
    """Reasoner-only GRPO with the planner in the environment (a fixed, untrained planner plays it)."""

    name: str = "grpo_fixed"
    env_planner: bool = True
    trained: tuple[str, ...] = ("reasoner",)

    def plan(self, step: int) -> UpdateSchedule:
        return UpdateSchedule(stage=0, lam=0.0, update={"reasoner": True}, lr_scale={"reasoner": 1.0})


def grpo_fixed(cfg: Any) -> FixedPlanGRPO:
    """Learner factory (``package.module:factory``): :class:`FixedPlanGRPO`."""
    return FixedPlanGRPO()
