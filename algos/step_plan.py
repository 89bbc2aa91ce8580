"""What happens at one optimizer step: the :class:`StepPlan` a learner's ``plan(step)`` returns.

It lives apart from the learner registry (:mod:`algos.learners`) so that learners, the trainer and
the metrics import it without importing the registry, which imports the learners.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StepPlan"]


@dataclass(frozen=True)
class StepPlan:
    """What happens at one optimizer step."""

    stage: int
    """1 or 2 (0 for single-agent learners)."""
    lam: float
    """Planner weight lambda."""
    update: dict[str, bool]
    """Which agents take an optimizer step."""
    lr_scale: dict[str, float]
    """Multiplier on each agent's base learning rate (lambda, 1 - lambda)."""
