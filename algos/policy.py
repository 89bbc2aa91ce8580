"""What a learner needs from an agent: :class:`agents.base.Trainable` (re-exported here).

A *trainable* agent exposes the ``module`` whose parameters are optimised and scores its own
records (``agent.score(records) -> Scored(logp, mask, entropy)``); the trainer only multiplies
those tensors by advantages (algos/grpo.py).
"""

from __future__ import annotations

from typing import Any

from agents.base import Scored, Trainable

__all__ = ["Scored", "Trainable", "check_trainable"]


def check_trainable(agent: Any, role: str) -> None:
    """Raise a clear TypeError if ``agent`` cannot be trained as ``role``."""
    missing = [m for m in ("module", "score", "act", "reset", "records") if not hasattr(agent, m)]
    if missing:
        raise TypeError(
            f"The {role} agent {type(agent).__name__} cannot be trained: it lacks {missing}. Pass an agent that "
            "implements agents.base.Trainable, or freeze it (e.g. plug-in training freezes the reasoner)."
        )
    if getattr(agent, "role", role) != role:
        raise TypeError(f"Agent {type(agent).__name__} has role {agent.role!r} but is used as the {role}.")
