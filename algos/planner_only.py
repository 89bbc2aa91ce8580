"""Plug-in training: only the planner learns, against a frozen reasoner.

This is how a planner is trained once and then plugged into other reasoners (the paper's
transfer experiment): the reasoner acts but never updates, so it need not be trainable at all
(a scripted or API-backed reasoner works).

A greedy frozen reasoner can be *replayed*: ``--reasoner replay:SPEC --set reasoner.greedy=true``
stores every step it writes (:mod:`agents.replay.reasoner`) and reads it back whenever the same problem
and plan prefix come again, so later steps, seeds and evaluations decode only what is new
(``benchmarks/runtime/replay.py`` measures the speed-up on the same episodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from .learner_base import SharedObjective
from .update_schedule import UpdateSchedule


@dataclass(frozen=True)
class PlannerOnly(SharedObjective):
    """Planner-only GRPO with a frozen reasoner."""

    name: str = "planner_only"
    env_planner: bool = True
    trained: tuple[str, ...] = ("planner",)

    def plan(self, step: int) -> UpdateSchedule:
        return UpdateSchedule(stage=1, lam=1.0, update={"planner": True}, lr_scale={"planner": 1.0})
