"""What every learner is (:class:`Learner`) and the shared GRPO objective it may inherit (:class:`SharedObjective`).

It lives apart from the registry (:mod:`algos.learners`) so that learners import it without
importing the registry, which imports them.
"""

from __future__ import annotations

from typing import Any, Protocol

from .update_schedule import UpdateSchedule

__all__ = ["LEARNER_MEMBERS", "Learner", "SharedObjective", "check_learner"]


class Learner(Protocol):
    """Who updates, when, with what weight, and the advantages and loss of its update."""

    name: str
    env_planner: bool
    trained: tuple[str, ...]

    def plan(self, step: int) -> UpdateSchedule: ...

    def advantages(self, rewards: Any, group_size: int, cfg: Any) -> Any:
        """``[N]`` advantages of the ``[N]`` rewards, or None for the shared GRPO estimator."""

    def loss(self, logp: Any, old_logp: Any, advantages: Any, mask: Any, cfg: Any, ref_logp: Any,
             entropy: Any) -> tuple[Any, dict[str, float]]: ...


class SharedObjective:
    """The shared GRPO advantages and loss of a :class:`Learner`; override one to change it."""

    def advantages(self, rewards: Any, group_size: int, cfg: Any) -> Any:
        """None: the trainer's group-normalised advantages (per reward term with ``train.grpo.per_term_advantages``)."""
        return None

    def loss(self, logp: Any, old_logp: Any, advantages: Any, mask: Any, cfg: Any, ref_logp: Any = None,
             entropy: Any = None) -> tuple[Any, dict[str, float]]:
        """:func:`algos.grpo.grpo_loss`."""
        from . import grpo

        return grpo.grpo_loss(logp, old_logp, advantages, mask, cfg, ref_logp, entropy)


LEARNER_MEMBERS = ("name", "env_planner", "trained", "plan", "advantages", "loss")
"""The members of :class:`Learner`, checked by :func:`check_learner`."""


def check_learner(learner: Any, spec: str) -> Learner:
    """``learner`` if it has every member of :class:`Learner`, else ``TypeError`` naming the missing ones."""
    missing = [m for m in LEARNER_MEMBERS if m not in dir(learner)]
    if missing:
        raise TypeError(f"learner {spec!r} built {type(learner).__name__}, which lacks {missing} of "
                        "algos.learners.Learner; subclass algos.learners.SharedObjective for the shared GRPO "
                        "advantages and loss, and define name, env_planner, trained and plan(step).")
    return learner


