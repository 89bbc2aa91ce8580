"""What a learner is: who updates, when, with what weight — and optionally how.

A learner is a small frozen dataclass with ``name``, ``env_planner`` (does the environment run
the planner), ``trained`` (roles it optimises) and ``plan(step) -> UpdateSchedule``
(:mod:`algos.update_schedule`). It may also define ``advantages(rewards, group_size, cfg)`` and
``loss(logp, old_logp, advantages, mask, cfg, ref_logp, entropy)``;
:meth:`algos.trainer.Trainer.update` calls them when present and the shared GRPO ones
(:mod:`algos.grpo`) otherwise.

:data:`LEARNERS` maps ``rsim train --learner NAME`` to a factory taking the run config; a new
learner is one module plus one line there. Learners import :class:`UpdateSchedule` from
:mod:`algos.update_schedule`, never from this registry (which imports them); it is re-exported here,
and under its old name ``StepPlan`` (renamed: a "plan" is the planner's strategy sequence), because
plug-in learners outside the tree were written against ``algos.learners.StepPlan``.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from .update_schedule import UpdateSchedule

__all__ = ["LEARNERS", "Learner", "UpdateSchedule", "build_learner"]

StepPlan = UpdateSchedule
"""The old name of :class:`UpdateSchedule`, kept for plug-in learners outside the tree (see module docstring)."""


@runtime_checkable
class Learner(Protocol):
    """Who updates, when, with what weight (see module docstring for the optional hooks)."""

    name: str
    env_planner: bool
    trained: tuple[str, ...]

    def plan(self, step: int) -> UpdateSchedule: ...


def _stackelberg(cfg: Any) -> Learner:
    from .stackelberg import StackelbergGRPO

    return StackelbergGRPO(cfg.schedule)


def _grpo(cfg: Any) -> Learner:
    from .grpo_baseline import GRPOBaseline

    return GRPOBaseline()


def _planner_only(cfg: Any) -> Learner:
    from .planner_only import PlannerOnly

    return PlannerOnly()


LEARNERS: dict[str, Callable[[Any], Learner]] = {
    "stackelberg": _stackelberg, "grpo": _grpo, "planner_only": _planner_only,
}
"""``name -> factory(run_config)``."""


def build_learner(cfg: Any) -> Learner:
    """The learner named by ``cfg.learner``."""
    return LEARNERS[cfg.learner](cfg)
