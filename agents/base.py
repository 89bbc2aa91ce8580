"""The one interface every rSIM agent implements (scripted, LLM, or a researcher's own).

A rollout over a batch of ``n`` environment copies (see :class:`rsim_env.EnvGroup`) goes::

    planner.reset(n); reasoner.reset(n)
    while not group.done:
        agent, copy_ids, observations = group.observe()
        actions = policies[agent].act(copy_ids, observations)
        group.step(actions)
    records = planner.records(), reasoner.records()

``copy_ids`` are stable integers in ``range(n)`` naming the environment copy each observation
belongs to; an agent that keeps per-copy state (a KV cache, token ids) keys it by copy id.
Copies that finished early simply stop appearing. Driving a single AEC env is the ``n = 1`` case.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

ROLES = ("planner", "reasoner")


@runtime_checkable
class Policy(Protocol):
    """An agent that acts for a batch of environment copies.

    Attributes:
        role: ``"planner"`` (actions are strategy indices 0..8) or ``"reasoner"`` (actions are
            step texts).
    """

    role: str

    def reset(self, num_copies: int) -> None:
        """Start a new rollout over ``num_copies`` copies; drop all per-copy state."""
        ...

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[Any]:
        """Return one action per observation, in order."""
        ...

    def records(self) -> list[dict[str, Any]]:
        """Per-copy training record gathered since :meth:`reset` (``[]`` entries for scripted agents).

        LLM agents put here what a learner needs (token ids, generated-token masks, log-probs).
        """
        ...
