"""What a learner needs from an agent on top of :class:`agents.base.Policy`.

A *trainable* agent also exposes the ``module`` whose parameters are optimised, and recomputes
log-probs of what it did with its current weights::

    scored = agent.score(records)     # records: agent.records() entries for a subset of copies
    scored.logp    # [B, T] log-prob of each chosen token (reasoner) / strategy (planner), with grad
    scored.mask    # [B, T] 1 where the agent chose (generated tokens / decisions), 0 for prompt,
                   #        injected strategy text and padding
    scored.entropy # [B, T] or None (logged only)

The trainer never sees token ids; it only multiplies these tensors by advantages (algos/grpo.py).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, Sequence, runtime_checkable

import torch


class Scored(NamedTuple):
    """Per-position log-probs of an agent's own choices (see module docstring)."""

    logp: torch.Tensor
    mask: torch.Tensor
    entropy: torch.Tensor | None = None


@runtime_checkable
class Trainable(Protocol):
    """A :class:`agents.base.Policy` the trainer can optimise."""

    role: str
    module: torch.nn.Module

    def reset(self, num_copies: int) -> None: ...

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[Any]: ...

    def records(self) -> list[dict[str, Any]]: ...

    def score(self, records: Sequence[dict[str, Any]]) -> Scored: ...


def check_trainable(agent: Any, role: str) -> None:
    """Raise a clear TypeError if ``agent`` cannot be trained as ``role``."""
    missing = [m for m in ("module", "score", "act", "reset", "records") if not hasattr(agent, m)]
    if missing:
        raise TypeError(
            f"The {role} agent {type(agent).__name__} cannot be trained: it lacks {missing}. Pass an agent that "
            "implements algos.policy.Trainable, or freeze it (e.g. plug-in training freezes the reasoner)."
        )
    if getattr(agent, "role", role) != role:
        raise TypeError(f"Agent {type(agent).__name__} has role {agent.role!r} but is used as the {role}.")
