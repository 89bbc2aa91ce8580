"""Plain single-agent GRPO on the reasoner, no planner: the paper's comparison point.

The environment runs in no-planner mode (the reasoner writes the whole solution in one turn);
only the reasoner updates, every step, at its full learning rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from .learner_base import SharedObjective
from .update_schedule import UpdateSchedule


@dataclass(frozen=True)
class GRPOBaseline(SharedObjective):
    """Reasoner-only GRPO (no planner in the environment)."""

    name: str = "grpo"
    env_planner: bool = False
    trained: tuple[str, ...] = ("reasoner",)

    def plan(self, step: int) -> UpdateSchedule:
        return UpdateSchedule(stage=0, lam=0.0, update={"reasoner": True}, lr_scale={"reasoner": 1.0})
