"""What happens at one optimizer step: the :class:`UpdateSchedule` a learner's ``plan(step)`` returns.

It lives apart from the learner registry (:mod:`algos.learners`) so that learners, the trainer and
the metrics import it without importing the registry, which imports the learners.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["UpdateSchedule"]


@dataclass(frozen=True)
class UpdateSchedule:
    """What happens at one optimizer step: which agents update, at which stage, with what learning-rate weight
    (not to be confused with a *plan*, the planner's strategy sequence)."""

    stage: int
    """1 or 2 (0 for single-agent learners)."""
    lam: float
    """Planner weight lambda."""
    update: dict[str, bool]
    """Which agents take an optimizer step."""
    lr_scale: dict[str, float]
    """Multiplier on each agent's base learning rate (lambda, 1 - lambda)."""
