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

from typing import Any, NamedTuple, Protocol, Sequence, runtime_checkable


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

    def records(self) -> list[Any]:
        """Per-copy record gathered since :meth:`reset`: a dataclass of the agent's own (e.g.
        :class:`agents.reasoner.ReasonerRecord`), or ``None`` for agents with nothing to learn from.

        Trainable agents put here what their ``score`` needs (token ids, generated-token masks, log-probs).
        """
        ...


class Scored(NamedTuple):
    """Per-position log-probs of an agent's own choices, recomputed with gradients by ``score``.

    ``logp`` and ``mask`` are ``[B, T]`` tensors: the log-prob of each chosen token (reasoner) or
    strategy (planner), and 1 where the agent chose (generated tokens / decisions), 0 on prompt,
    injected strategy text and padding. ``entropy`` is ``[B, T]`` or None (logged only).
    """

    logp: Any
    mask: Any
    entropy: Any = None


@runtime_checkable
class Trainable(Policy, Protocol):
    """A :class:`Policy` a learner can optimise: it owns its parameters and scores its own records.

    The trainer never sees token ids; it multiplies ``score``'s tensors by advantages::

        scored = agent.score(records)   # records: agent.records() entries for a subset of copies

    Optional: ``num_generated(record) -> int`` (tokens a reasoner wrote; logged as
    ``completions/mean_length``) and ``token_usage(record) -> dict`` (what one episode cost, keys
    ``planner_read``, ``planner_context``, ``reasoner_read``, ``reasoner_written``; ``rsim eval``
    reports it and leaves the keys an agent does not give empty).
    """

    module: Any
    """The ``torch.nn.Module`` whose parameters are optimised (saved as ``model.<role>`` in checkpoints)."""
    lora: Any
    """Its LoRA adapter on a shared frozen base (:class:`agents.lora.AdapterSlot`: checkpoints record the base's
    identity), or None."""
    shares_reference: bool
    """True when ``reference()`` is a context in which ``score`` gives the KL reference (LoRA: adapter off); False:
    the trainer keeps a frozen copy of the agent for the KL term."""

    def score(self, records: Sequence[Any]) -> Scored:
        """Log-probs of what the agent did in ``records`` under its current weights (gradients flow)."""
        ...


@runtime_checkable
class Prefilling(Policy, Protocol):
    """A reasoner that can be handed steps it wrote before instead of writing them again.

    :mod:`agents.replay.reasoner` uses it to catch a fresh copy up to a stored history: the copy then holds exactly the
    stored steps, and its next :meth:`Policy.act` is conditioned on them (fed as a prompt continuation) instead of
    on a re-decoded step that batched floating-point noise may have changed. :class:`agents.reasoner.Reasoner`
    implements it for every decoder.
    """

    def prefill(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]], steps: Sequence[Sequence[int]],
                texts: Sequence[str] | None = None) -> list[str]:
        """Append each copy's step (the token ids its turn wrote) for this round without decoding; return the texts."""
        ...

    def step_ids(self, copy_id: int, round: int = -1) -> list[int]:
        """The token ids the turn of ``round`` wrote for ``copy_id`` (what :meth:`prefill` takes)."""
        ...


def check_trainable(agent: Any, role: str) -> None:
    """Raise a clear TypeError if ``agent`` cannot be trained as ``role``."""
    missing = [m for m in ("module", "score", "act", "reset", "records", "lora", "shares_reference")
               if not hasattr(agent, m)]
    if missing:
        raise TypeError(
            f"The {role} agent {type(agent).__name__} cannot be trained: it lacks {missing}. Pass an agent that "
            "implements agents.base.Trainable (an agent without an adapter has lora = None and shares_reference = "
            "False), or freeze it (e.g. plug-in training freezes the reasoner)."
        )
    if getattr(agent, "role", role) != role:
        raise TypeError(f"Agent {type(agent).__name__} has role {agent.role!r} but is used as the {role}.")


def check_act_args(copy_ids: Sequence[int], observations: Sequence[Any], num_copies: int) -> None:
    """Raise ``ValueError`` unless ``act(copy_ids, observations)`` got one observation per copy id, each id
    in ``range(num_copies)`` (the agent's last ``reset``)."""
    if len(copy_ids) != len(observations):
        raise ValueError(f"act() got {len(copy_ids)} copy ids but {len(observations)} observations")
    bad = [c for c in copy_ids if not 0 <= c < num_copies]
    if bad:
        raise ValueError(f"copy ids {bad} outside range({num_copies}); call reset(num_copies) first")
