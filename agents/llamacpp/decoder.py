"""A decoder on llama.cpp (:class:`agents.llamacpp.engine.Engine`): the GGUF's own weights, no torch.

The engine keeps every conversation's KV cache between turns (a turn feeds only its new tokens) and
decodes all live conversations of a step in one batched ``llama_decode`` per token; the G copies of a
group read their common prompt once. Log-probs are computed from llama.cpp's logits under
:mod:`agents.hf.sampling`'s convention, so a torch model can rescore the records. :meth:`EngineDecoder.sync_adapter`
decodes with a LoRA adapter; :meth:`EngineDecoder.sync` sends a torch learner's adapter when it changed.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..decoding.decoder import adapter_key, lockstep
from ..decoding.turns import Turn, Turns

__all__ = ["EngineDecoder", "read_peft_dir"]


class EngineDecoder:
    """:class:`agents.decoding.decoder.Decoder` on a llama.cpp engine (module docstring).

    Args:
        engine: The :class:`agents.llamacpp.engine.Engine` on the GGUF.
        turns: The reasoner's turn rules; its tokenizer must be the GGUF's (checked).
    """

    replay_kind = "LlamaCppReasoner"
    """Its reasoner's name in replay keys (the class name they were made with, so stored steps stay valid)."""

    def __init__(self, engine: Any, turns: Turns) -> None:
        self.engine, self.turns, self.config = engine, turns, turns.config
        tokenizer = turns.tokenizer
        if len(tokenizer) > engine.n_vocab:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but {engine.path.name} only {engine.n_vocab}; "
                             "it is not this model's tokenizer.")
        probe = "Step 1: 2 + 3 = 5.\n\nSo \\boxed{5}"
        if engine.tokenize(probe) != turns.encode(probe):
            raise ValueError(f"the tokenizer does not encode text as {engine.path.name}'s own vocabulary does; "
                             "it is not this model's tokenizer.")
        self._suppressed = np.asarray(turns.suppressed_ids, dtype=np.int64)
        self.generator = np.random.default_rng(self.config.seed)
        self.adapter_syncs = 0
        self._adapted = False
        self._adapter_dir: Path | None = None
        self._synced: tuple | None = None
        self._live: set[int] = set()

    def __copy__(self) -> "EngineDecoder":
        """A decoder with its own sequences on a fork of the engine (same weights, own KV): :mod:`agents.replay.reasoner`
        decodes each session on a copy, and two sessions sharing one context clobbered each other's KV (an
        IndexError, or silently wrong steps, once a copy read back round 0 but decoded round 1)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.engine = self.engine.fork()
        new._live = set()
        return new

    def release(self) -> None:
        """Free the context of a copy's forked engine now (:mod:`agents.replay.reasoner` closes a session's copy when it is
        done: forks held ~0.75 GB of KV each until garbage collection). The original engine is left alone."""
        if getattr(self.engine, "_forked", False):
            self.engine.close()

    @property
    def fingerprint(self) -> str:
        """What :mod:`agents.replay.reasoner` keys this decoder's steps by: the GGUF's sha256, llama.cpp's version and the
        engine settings that change a step (context size, unified KV); raises ``TypeError`` once an adapter is synced
        (a trained reasoner is not frozen: replay the bare GGUF, or a GGUF with the adapter merged)."""
        if self._adapted:
            raise TypeError("cannot fingerprint a llamacpp reasoner with a synced LoRA adapter for replay; replay the "
                            "bare GGUF or merge the adapter into a GGUF first.")
        import hashlib

        import llama_cpp

        h = hashlib.sha256()
        with open(self.engine.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return f"llamacpp:{h.hexdigest()}:{llama_cpp.__version__}:n_ctx={self.engine.n_ctx}:unified={self.engine.unified}"

    # ------------------------------------------------------------------------------ Decoder

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self._live = set(range(num_copies))
        self.engine.reset(num_copies)
        if seed is not None:
            self.generator = np.random.default_rng(seed)

    def keep(self, copies: Sequence[int]) -> None:
        """Free the KV of every copy not in ``copies`` (finished)."""
        for gone in self._live - set(copies):
            self.engine.remove(gone)
        self._live = set(copies)

    def decode(self, turns: Sequence[Turn]) -> None:
        rows = sorted(turns, key=lambda t: t.copy)
        feeds = {t.copy: list(t.feed) for t in rows}
        logits = {**self._prefill_prompts(rows, feeds), **self.engine.feed(feeds)}

        def pick(by_copy: dict[int, np.ndarray], live: list[bool]) -> tuple[list[int], list[float]]:
            idx = [r for r in range(len(rows)) if live[r]]
            tokens, lps = self._pick(np.stack([by_copy[rows[r].copy] for r in idx]))
            out_t, out_lp = [0] * len(rows), [0.0] * len(rows)
            for r, t, lp in zip(idx, tokens, lps):
                out_t[r], out_lp[r] = t, lp
            return out_t, out_lp

        lockstep(rows, logits, pick, lambda new: self.engine.feed({t.copy: f for t, f in zip(rows, new) if f}))

    def _prefill_prompts(self, rows: list[Turn], feeds: dict[int, list[int]]) -> dict[int, np.ndarray]:
        """Round 0: each distinct prompt is decoded once and its KV copied to the copies that share it;
        ``feeds`` keeps only what follows the prompt (the lead-in). Returns the prompts' logits."""
        if not self.config.share_prefill or any(self.engine.past[c] for c in feeds):
            return {}
        lens = {t.copy: t.conv.prompt_len for t in rows}
        first: dict[tuple[int, ...], int] = {}
        for c in feeds:
            first.setdefault(tuple(feeds[c][:lens[c]]), c)
        logits = self.engine.feed({c: list(p) for p, c in first.items()})
        out = {}
        for c in list(feeds):
            src = first[tuple(feeds[c][:lens[c]])]
            if src != c:
                self.engine.share(src, c)
            out[c], feeds[c] = logits[src], feeds[c][lens[c]:]
        return out

    def _pick(self, logits: np.ndarray) -> tuple[list[int], list[float]]:
        """One token per row of ``[rows, vocab]`` logits and its log-prob (:mod:`agents.hf.sampling`'s convention)."""
        x = logits.astype(np.float32) / np.float32(self.turns.record_temperature)
        if self._suppressed.size:
            x[:, self._suppressed] = -np.inf
        top = x.max(-1, keepdims=True)
        lp = x - (top + np.log(np.exp(x - top).sum(-1, keepdims=True)))
        if self.config.greedy:
            tokens = lp.argmax(-1)
        else:
            tokens = np.array([self._sample_row(row) for row in lp])
        return tokens.tolist(), lp[np.arange(len(lp)), tokens].astype(float).tolist()

    def _sample_row(self, lp: np.ndarray) -> int:
        p = np.exp(lp.astype(np.float64))
        order = None
        if self.config.top_p < 1.0:  # the smallest set of top tokens whose mass reaches top_p (always >= 1 token)
            order = np.argsort(-p, kind="stable")
            sorted_p = p[order]
            p = sorted_p * (np.cumsum(sorted_p) - sorted_p < self.config.top_p)
        cum = np.cumsum(p)
        i = int(min(np.searchsorted(cum, self.generator.random() * cum[-1], side="right"), len(p) - 1))
        return int(order[i]) if order is not None else i

    # ------------------------------------------------------------------------------ LoRA adapters

    def sync(self, scorer: Any, force: bool = False) -> bool:
        """Send ``scorer``'s LoRA adapter (a :class:`agents.hf.decoder.TorchLM`) if its weights changed
        since the last sync (tensor versions, as :meth:`agents.hf.lora.SharedBase.sampler` does); return whether it did."""
        lora = scorer.lora
        params = lora.parameters()
        key = adapter_key(params)
        if key == self._synced and not force:
            return False
        self.sync_adapter(params, alpha=lora.base.adapters[lora.name].alpha, name=lora.name)
        self._synced = key
        return True

    def sync_adapter(self, adapter: Mapping[str, Any] | str | Path | None, alpha: float | None = None,
                     name: str | None = None) -> dict[str, Any]:
        """Decode with this LoRA adapter from now on (call between rollouts; it drops the KV caches).

        Args:
            adapter: PEFT adapter weights by name (``...layers.N.self_attn.q_proj.lora_A[.NAME].weight``;
                only they are written, :mod:`agents.llamacpp.gguf_lora`), a PEFT adapter dir (``adapter_config.json``
                + ``adapter_model.safetensors``), an adapter ``.gguf`` file, or None for the bare base.
            alpha: PEFT's ``lora_alpha`` (needed with weights; a dir has it in its config).
            name: Keep only this PEFT adapter's weights (a shared base carries one per agent).

        Returns:
            The loaded adapter's summary (tensors, ranks, alpha), empty for None.
        """
        self._adapted = adapter is not None
        if adapter is None:
            self.engine.clear_adapter()
            return {}
        if isinstance(adapter, (str, Path)) and Path(adapter).suffix == ".gguf":
            return self.engine.load_adapter(adapter)
        if isinstance(adapter, (str, Path)):
            adapter, alpha = read_peft_dir(Path(adapter))
        if alpha is None:
            raise ValueError("sync_adapter(weights) needs alpha= (the adapter's lora_alpha, agents.hf.lora.LoraSpec.alpha).")
        from .gguf_lora import write_adapter

        if self._adapter_dir is None:
            self._adapter_dir = Path(tempfile.mkdtemp(prefix="rsim-lora-"))
            weakref.finalize(self, shutil.rmtree, str(self._adapter_dir), True)
        path = write_adapter(self._adapter_dir / f"adapter-{self.adapter_syncs}.gguf", adapter, alpha,
                             self.engine.base_tensors, adapter=name)
        try:
            summary = self.engine.load_adapter(path)  # llama.cpp copies the tensors into its own buffers
        finally:
            path.unlink(missing_ok=True)
        self.adapter_syncs += 1
        return summary


def read_peft_dir(path: Path) -> tuple[dict[str, Any], float]:
    """A PEFT adapter dir's weights and the alpha that gives llama.cpp's ``alpha / r`` PEFT's scale."""
    from safetensors.numpy import load_file

    config, weights = path / "adapter_config.json", path / "adapter_model.safetensors"
    if not config.is_file() or not weights.is_file():
        raise ValueError(f"{str(path)!r} is not a PEFT adapter dir (needs adapter_config.json and "
                         "adapter_model.safetensors; save one with model.save_pretrained), nor a .gguf adapter.")
    try:
        cfg = json.loads(config.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{config} is not valid JSON ({e}); save the adapter again (model.save_pretrained).") from e
    if not isinstance(cfg, dict):
        raise ValueError(f"{config}: expected a JSON object, got {type(cfg).__name__}; save the adapter again.")
    alpha, rank = float(cfg.get("lora_alpha", 0)), int(cfg.get("r", 0))
    if not alpha > 0 or rank < 1 or cfg.get("rank_pattern") or cfg.get("alpha_pattern") or cfg.get("use_dora"):
        raise ValueError(f"{config}: llama.cpp takes a plain LoRA: a positive lora_alpha and r, no per-module "
                         "rank/alpha patterns, no DoRA.")
    if cfg.get("use_rslora"):  # PEFT scales by alpha / sqrt(r), llama.cpp by alpha / r
        alpha *= rank ** 0.5
    try:
        return load_file(str(weights)), alpha
    except Exception as e:  # noqa: BLE001 -- safetensors' own error names neither the file nor the fix
        raise ValueError(f"{weights} cannot be read, truncated or not safetensors ({' '.join(str(e).split())[:160]}); "
                         "save the adapter again (model.save_pretrained).") from e
