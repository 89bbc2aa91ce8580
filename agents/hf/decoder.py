"""The torch side of a reasoner: the causal LM that decodes (:class:`TorchDecoder`) and scores for learners
(:class:`TorchLM`, also the scorer of reasoners that decode elsewhere: llama.cpp or a server).

:class:`TorchDecoder` keeps one :class:`agents.hf.kv.KVBatch` across all turns: per round it feeds every live
conversation only its *new* tokens in one batched forward, then writes all rows in lockstep, one forward per
token. With ``share_prefill`` each distinct prompt is encoded once and its KV copied to the copies that share
it (the G copies of a group).
"""

from __future__ import annotations

import contextlib
from typing import Any, Sequence

import torch

from ..base import Scored
from ..decoding.decoder import lockstep
from ..decoding.turns import ReasonerRecord, Turn, Turns
from .kv import KVBatch
from .prefix import shared_prefix_logprobs
from .sampling import generated_logprobs, masked_logprobs, sample

__all__ = ["TorchLM", "TorchDecoder"]


class TorchLM:
    """A causal LM as a learner sees it: its trained parameters, the KL reference, and :meth:`score`.

    Args:
        model: The causal LM (put in eval mode).
        config: The reasoner's :class:`agents.reasoner.ReasonerConfig` (``share_prefill``, ``sample_dtype``).
    """

    def __init__(self, model: torch.nn.Module, config: Any) -> None:
        self.model, self.config = model.eval(), config
        self.device = next(model.parameters()).device
        self.lora = None  # AdapterSlot when the model is a LoRA adapter on a shared frozen base
        self._trained = None
        self._reference = False
        self._sampler = None

    def attach_lora(self, slot: Any) -> None:
        """Run on ``slot``'s adapter of a shared frozen base; only the adapter trains."""
        from .lora import Trained

        self.lora, self._trained = slot, Trained(slot.parameters())

    def scope(self) -> contextlib.AbstractContextManager:
        """Context: the adapter on (or off while scoring as the reference)."""
        if self.lora is None:
            return contextlib.nullcontext()
        return self.lora.disabled() if self._reference else self.lora.active()

    @property
    def shares_reference(self) -> bool:
        """True for a LoRA adapter: :meth:`reference` scores as the KL reference (agents.base.Trainable)."""
        return self.lora is not None

    @contextlib.contextmanager
    def reference(self):
        """Context: score as the KL reference (LoRA only: the base with the adapter disabled)."""
        if self.lora is None:
            raise ValueError("Reasoner.reference() needs a LoRA reasoner; a fully fine-tuned one keeps a frozen copy")
        self._reference = True
        try:
            yield self
        finally:
            self._reference = False

    def decode_model(self) -> torch.nn.Module:
        """What decoding runs: the model, a copy in ``sample_dtype``, or for LoRA its merged sampler.

        ``sample_dtype="float32"`` means no cast: the model decodes in its own dtype (a frozen bf16 or
        int8 reasoner, ``model.frozen``, decodes as it is, not through a float32 copy).
        """
        dtype = None if self.config.sample_dtype == "float32" else getattr(torch, self.config.sample_dtype)
        if self.lora is not None and self.lora.base.adapters[self.lora.name].merged_sampler:
            return self.lora.base.sampler(self.lora.name, dtype)  # None: the base's dtype
        if dtype is None or dtype == next(self.model.parameters()).dtype:
            return self.model
        from .lora import cast_copy

        self._sampler = cast_copy(self.model, dtype, self._sampler)
        return self._sampler

    @property
    def module(self) -> torch.nn.Module:
        """The parameters a learner optimises (:class:`agents.base.Trainable`): the model, or with
        LoRA only its adapter (:class:`agents.hf.lora.Trained`)."""
        return self.model if self.lora is None else self._trained

    def score(self, records: Sequence[ReasonerRecord]) -> Scored:
        """Log-probs of the generated tokens of ``records`` with gradients, in one forward over the batch.

        Non-zero only where ``gen_mask`` is 1; uses each record's own sampling convention
        (``temperature``, ``suppressed_ids``; see :mod:`agents.hf.sampling`).
        """
        first = records[0]
        seqs, masks = [r.input_ids for r in records], [r.gen_mask for r in records]
        with self.scope():
            if self.config.share_prefill:  # the G copies of a group: their prompt is encoded once
                logp, mask, entropy = shared_prefix_logprobs(
                    self.model, seqs, masks, [r.prompt_len for r in records], float(first.temperature),
                    first.suppressed_ids, first.pad_id)
            else:
                logp, mask, entropy = generated_logprobs(
                    self.model, seqs, masks, float(first.temperature), first.suppressed_ids, first.pad_id)
        return Scored(logp, mask, entropy)


class TorchDecoder:
    """:class:`agents.decoding.decoder.Decoder` on a :class:`TorchLM` (module docstring).

    Args:
        lm: The model (and its LoRA adapter) that decodes.
        turns: The reasoner's turn rules (special ids, pad id, sampling convention).
    """

    def __init__(self, lm: TorchLM, turns: Turns) -> None:
        self.lm, self.turns, self.config = lm, turns, lm.config
        self._suppressed = torch.as_tensor(turns.suppressed_ids, dtype=torch.long, device=lm.device)
        self.generator = None
        if self.config.seed is not None:
            self.generator = torch.Generator(lm.device).manual_seed(self.config.seed)
        self.kv: KVBatch | None = None
        self.num_copies = 0

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self.num_copies, self.kv = num_copies, None
        if seed is not None:
            self.generator = torch.Generator(self.lm.device).manual_seed(seed)

    def keep(self, copies: Sequence[int]) -> None:
        """Drop the KV rows of every copy not in ``copies`` (finished for good; a dropped copy raises)."""
        if self.kv is not None:
            self.kv.keep(copies)

    def decode(self, turns: Sequence[Turn]) -> None:
        cfg = self.config
        with torch.inference_mode(), self.lm.scope():
            model = self.lm.decode_model()
            if self.kv is None:
                self.kv = KVBatch(model, self.num_copies, self.turns.pad_id, cfg.cache, cfg.cache_capacity,
                                  share_prefill=cfg.share_prefill)
            kv = self.kv
            kv.keep([t.copy for t in turns])
            by_copy = {t.copy: t for t in turns}
            rows = [by_copy[c] for c in kv.rows]
            feeds, logits = [t.feed for t in rows], None
            if not kv.columns and cfg.share_prefill:  # round 0: each distinct prompt is encoded once (KVBatch)
                lens = [t.conv.prompt_len for t in rows]
                logits = kv.feed([f[:n] for f, n in zip(feeds, lens)])
                feeds = [f[n:] for f, n in zip(feeds, lens)]
            if any(feeds):
                fed = kv.feed(feeds)
                logits = fed if logits is None else torch.where(
                    torch.tensor([bool(f) for f in feeds], device=fed.device)[:, None], fed, logits)
            lockstep(rows, logits, self._pick, kv.feed)

    def _pick(self, logits: torch.Tensor, live: list[bool]) -> tuple[list[int], list[float]]:
        lp = masked_logprobs(logits, self.turns.record_temperature, self._suppressed)
        tokens, token_lp = sample(lp, self.config.greedy, self.config.top_p, self.generator)
        return tokens.tolist(), token_lp.tolist()
