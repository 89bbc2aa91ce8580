"""What a decoder is: the one thing that differs between the torch model, llama.cpp and a server.

:class:`agents.reasoner.Reasoner` builds every turn (:mod:`agents.decoding.turns`) and hands the
decoder a batch of open :class:`~agents.decoding.turns.Turn` objects. The decoder feeds each turn's
new ids (``turn.feed``; the whole conversation is in ``turn.conv.ids``, as text in
``turn.conv.text`` when the reasoner keeps it) and writes tokens with ``turn.write(token, logprob)``
until it returns True (end-of-turn, the cap ``turn.cap`` or a stop rule), or hands a server's text
reply to ``turn.reply``. Log-probs follow :mod:`agents.hf.sampling`'s convention: temperature
``turns.record_temperature``, ``turns.suppressed_ids`` removed.

Adding an engine is one class with :meth:`Decoder.reset` and :meth:`Decoder.decode` (see
``tests/test_decoding.py``, which adds one in a few lines). A decoder that needs more says so by having the
method of one of these protocols, and the reasoner checks ``isinstance`` (no attribute forwarding):

* :class:`KeepsCopies` -- ``keep(copies)``, called before each round's turns are built: forget the state of every
  copy not listed (finished for good; a KV cache);
* :class:`SyncsAdapter` -- ``sync(scorer)``, before a rollout: decode with the scorer's current trained weights (an
  adapter); a reasoner that decodes on one and learns in torch needs a LoRA scorer;
* :class:`Releases` -- ``release()``: free what a copied decoder holds of its own (a llama.cpp fork's context).

Two optional attributes describe a decoder to :mod:`agents.replay.reasoner`: ``fingerprint`` (a string naming its
exact behaviour, e.g. the GGUF's hash) and ``replay_kind`` (the reasoner's name in replay keys).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from .turns import Turn

__all__ = ["Decoder", "KeepsCopies", "SyncsAdapter", "Releases", "adapter_key", "lockstep"]


@runtime_checkable
class Decoder(Protocol):
    """Writes the open turns of a batch of conversations (module docstring)."""

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget every conversation; ``seed`` restarts the sampling generator."""

    def decode(self, turns: Sequence[Turn]) -> None:
        """Feed each turn's new ids and write it until ``turn.done``."""


@runtime_checkable
class KeepsCopies(Protocol):
    """A decoder with per-copy state (a KV cache), told before each round which copies still play."""

    def keep(self, copies: Sequence[int]) -> None:
        """Forget the state of every copy not in ``copies`` (finished for good)."""


@runtime_checkable
class SyncsAdapter(Protocol):
    """A decoder that runs elsewhere than the torch scorer a learner trains (llama.cpp, a server)."""

    def sync(self, scorer: Any) -> bool:
        """Decode with ``scorer``'s LoRA adapter from now on if it changed since the last sync; return whether it
        was sent."""


@runtime_checkable
class Releases(Protocol):
    """A decoder whose copies hold something of their own beyond Python objects (a llama.cpp fork's context)."""

    def release(self) -> None:
        """Free it now rather than when the copy is collected."""


def lockstep(turns: Sequence[Turn], logits: Any, pick: Callable[[Any, list[bool]], tuple[list[int], list[float]]],
             feed: Callable[[list[list[int]]], Any]) -> None:
    """Write every turn one token per step, all rows at once, until each is done.

    Args:
        turns: The open turns, in the decoder's row order.
        logits: Each row's next-token logits after its feed.
        pick: ``(logits, live) -> (tokens, logprobs)``, one per row (rows not ``live`` may get anything).
        feed: ``new tokens per row ([] = none) -> logits`` of the next step.
    """
    live = [not t.done for t in turns]
    while any(live):
        tokens, lps = pick(logits, live)
        for r, turn in enumerate(turns):
            if live[r] and turn.write(tokens[r], lps[r]):
                live[r] = False
        if not any(live):
            return
        logits = feed([[turn.tokens[-1]] if live[r] else [] for r, turn in enumerate(turns)])


def adapter_key(params: dict[str, Any]) -> tuple:
    """What changes when a LoRA adapter's tensors change in place or are replaced (tensor versions and storage, as
    :meth:`agents.hf.lora.SharedBase.sampler` does): a decoder re-sends the adapter when it differs from the last sent."""
    return tuple((n, p._version, p.data_ptr()) for n, p in sorted(params.items()))
