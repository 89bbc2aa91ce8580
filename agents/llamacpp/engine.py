"""A GGUF model on llama.cpp, decoding many sequences at once, each with its own KV cache.

:class:`Engine` speaks token ids only (like :class:`agents.hf.kv.KVBatch` does for torch): one
``llama_model`` and one ``llama_context`` whose KV memory holds ``n_seq`` sequences (sequence id =
environment copy id). :meth:`Engine.feed` appends new tokens to any subset of the sequences in
one ``llama_decode`` (chunked to ``n_batch`` tokens) and returns the logits after each sequence's
last new token, so a turn reads only its new tokens and every decode step is one batched forward
over the live sequences. :meth:`Engine.share` copies a sequence's KV to another (a group's G
copies read their common prompt once).

It uses the low-level binding of ``llama-cpp-python`` (``pip install 'rsim[llamacpp]'``): the
high-level ``Llama`` class holds a single sequence per context, which would mean one model copy
(or one decode call) per episode.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["Engine", "import_llama_cpp", "MAX_SEQUENCES"]

MAX_SEQUENCES = 256
"""llama.cpp's ``LLAMA_MAX_SEQ``: sequences one context can hold."""


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module, or an ImportError that says how to install it."""
    try:
        import llama_cpp
        from llama_cpp import _internals  # noqa: F401  (the binding's model/context/batch wrappers)
    except ImportError as e:
        raise ImportError("the llamacpp: reasoner needs llama-cpp-python (it compiles llama.cpp, 10-40 min): "
                          "pip install 'rsim[llamacpp]' (on a CPU without AVX-512, set CMAKE_ARGS as the Makefile "
                          "does).") from e
    return llama_cpp


def default_threads() -> int:
    """``OMP_NUM_THREADS`` when set (the repo's convention for shared machines), else all cores."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)


class Engine:
    """One GGUF model and a context of up to ``n_seq`` sequences (see module docstring).

    Args:
        path: The ``.gguf`` file.
        n_ctx: Token capacity of each sequence (prompt + every turn of an episode).
        threads: llama.cpp threads (None: :func:`default_threads`).
        n_batch: Most tokens per ``llama_decode`` call (longer feeds are split).
        unified: One KV buffer for all sequences (attention masks the others' cells; a copied prompt is
            shared, not copied) instead of one stream per sequence (the default). Faster at 8 copies
            (a 2-round profile: 8.5 s vs 12.3 s), but a sequence's numbers then depend on the others in
            the buffer: two greedy copies of one prompt can write different tokens.
    """

    def __init__(self, path: str | Path, n_ctx: int = 2048, threads: int | None = None, n_batch: int = 512,
                 unified: bool = False):
        path = Path(path).expanduser()
        if not path.is_file():
            raise ValueError(f"GGUF file {str(path)!r} does not exist; pass an existing .gguf file "
                             "(llamacpp:PATH.gguf) or llamacpp:default for the embedded model (python -m agents.embedded).")
        if n_ctx < 16 or n_batch < 1:
            raise ValueError(f"n_ctx={n_ctx} / n_batch={n_batch}: use n_ctx >= 16 and n_batch >= 1.")
        llama_cpp = self.lib = import_llama_cpp()
        from llama_cpp import _internals
        from llama_cpp._logger import set_verbose

        set_verbose(False)  # llama.cpp logs every load and context to stderr otherwise
        llama_cpp.llama_backend_init()
        self.path, self.n_ctx, self.n_batch, self.unified = path, int(n_ctx), int(n_batch), bool(unified)
        self.threads = int(threads or default_threads())
        self.model = _internals.LlamaModel(path_model=str(path), params=llama_cpp.llama_model_default_params(),
                                           verbose=False)
        self.n_vocab = self.model.n_vocab()
        self.eos_id = self.model.token_eos()
        self.ctx: Any = None
        self.capacity = 0
        self.past: list[int] = []
        self._batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=1, verbose=False)
        self.adapter: Any = None  # the loaded llama_adapter_lora (None: the bare base)
        self.adapter_path: Path | None = None
        self.adapter_scale = 1.0
        self._base_tensors: Any = None
        self._forked = False  # fork(): a context of its own on another engine's weights

    def tokenize(self, text: str, special: bool = True) -> list[int]:
        """llama.cpp's own tokenisation of ``text`` (no BOS), to check a tokenizer against the GGUF's."""
        return list(self.model.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def reset(self, n_seq: int) -> None:
        """Empty every sequence; make room for ``n_seq`` of them (a new context only when it must grow)."""
        if not 0 <= n_seq <= MAX_SEQUENCES:
            raise ValueError(f"{n_seq} sequences: llama.cpp holds at most {MAX_SEQUENCES} per context; run fewer "
                             "copies per rollout (e.g. rsim eval --batch).")
        if n_seq > self.capacity:
            self._new_context(n_seq)
        elif self.ctx is not None:
            self.ctx.kv_cache_clear()
        self.past = [0] * n_seq

    def fork(self) -> "Engine":
        """An engine on the same loaded weights with its own context (its own KV and sequences).

        Two sets of conversations decoded on one engine would clear and overwrite each other's KV (``reset`` empties
        every sequence): :mod:`agents.replay.reasoner` runs a session per set, each on a fork. The fork shares the weights
        and the adapter handle (a new context applies it); load or clear adapters on the original only.
        """
        from llama_cpp import _internals

        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.ctx, new.capacity, new.past, new._forked = None, 0, [], True
        new._batch = _internals.LlamaBatch(n_tokens=self.n_batch, embd=0, n_seq_max=1, verbose=False)
        return new

    def _new_context(self, n_seq: int) -> None:
        from llama_cpp import _internals

        params = self.lib.llama_context_default_params()
        params.n_seq_max = n_seq
        params.n_ctx = self.n_ctx * n_seq
        params.n_batch = params.n_ubatch = self.n_batch
        params.n_threads = params.n_threads_batch = self.threads
        params.kv_unified = self.unified
        if self.ctx is not None:
            self.ctx.close()
        self.ctx = _internals.LlamaContext(model=self.model, params=params, verbose=False)
        self.capacity = n_seq
        if self.adapter is not None:  # a new context starts bare
            self._apply_adapter()

    # ------------------------------------------------------------------------------ LoRA adapters

    @property
    def base_tensors(self) -> Any:
        """The GGUF's architecture, head counts and tensor shapes (:class:`agents.llamacpp.gguf_lora.BaseTensors`)."""
        if self._base_tensors is None:
            from .gguf_lora import BaseTensors

            self._base_tensors = BaseTensors.from_gguf(self.path)
        return self._base_tensors

    def load_adapter(self, path: str | Path, scale: float = 1.0) -> dict[str, Any]:
        """Decode with the LoRA adapter GGUF at ``path`` (times ``scale``) from now on; return its summary.

        The previous adapter is detached and freed. Every sequence's KV is dropped (it was computed with
        the old weights): load between rollouts, then :meth:`reset`.

        Raises:
            ValueError: the file is not a LoRA adapter of this model (checked against the GGUF's tensor
                table first, since llama.cpp only logs why it refuses one).
        """
        from .gguf_lora import check_adapter

        if not hasattr(self.lib, "llama_set_adapters_lora"):
            raise ImportError("LoRA adapters on the engine need a llama-cpp-python with llama_set_adapters_lora "
                              "(0.3.36 has it): pip install -U 'rsim[llamacpp]'.")
        path = Path(path).expanduser()
        summary = check_adapter(path, self.base_tensors)
        adapter = self.lib.llama_adapter_lora_init(self.model.model, str(path).encode("utf-8"))
        if not adapter:
            raise ValueError(f"llama.cpp refused the adapter {str(path)!r} for {self.path.name} (run with "
                             "llama_cpp verbose logging to see why).")
        old, self.adapter, self.adapter_path, self.adapter_scale = self.adapter, adapter, path, float(scale)
        self._apply_adapter()
        if old is not None:
            self.lib.llama_adapter_lora_free(old)
        return summary

    def clear_adapter(self) -> None:
        """Decode with the bare base again (frees the adapter; drops every sequence's KV)."""
        old, self.adapter, self.adapter_path = self.adapter, None, None
        self._apply_adapter()
        if old is not None:
            self.lib.llama_adapter_lora_free(old)

    def _apply_adapter(self) -> None:
        """Attach :attr:`adapter` (or none) to the context; its KV is stale afterwards, so it is cleared."""
        if self.ctx is None:
            return
        import ctypes

        if self.adapter is None:
            code = self.lib.llama_set_adapters_lora(self.ctx.ctx, None, 0, None)
        else:
            adapters = (self.lib.llama_adapter_lora_p_ctypes * 1)(self.adapter)
            code = self.lib.llama_set_adapters_lora(self.ctx.ctx, adapters, 1, (ctypes.c_float * 1)(self.adapter_scale))
        if code != 0:
            raise RuntimeError(f"llama_set_adapters_lora returned {code}")
        self.ctx.kv_cache_clear()
        self.past = [0] * len(self.past)

    def remove(self, seq: int) -> None:
        """Free a finished sequence's KV."""
        self.ctx.kv_cache_seq_rm(seq, -1, -1)
        self.past[seq] = 0

    def share(self, src: int, dst: int) -> None:
        """Give ``dst`` (empty) the KV of ``src``'s tokens so far."""
        if self.past[dst]:
            raise ValueError(f"share({src}, {dst}): sequence {dst} is not empty")
        self.ctx.kv_cache_seq_cp(src, dst, -1, -1)
        self.past[dst] = self.past[src]

    def feed(self, feeds: Mapping[int, Sequence[int]]) -> dict[int, np.ndarray]:
        """Append ``feeds[seq]`` to each listed sequence; return ``{seq: logits after its last new token}``.

        Logits are float32 ``[n_vocab]`` copies. All sequences advance in the same ``llama_decode``
        calls (one per ``n_batch`` tokens).
        """
        feeds = {s: list(t) for s, t in feeds.items() if len(t)}
        for s, toks in feeds.items():
            if self.past[s] + len(toks) > self.n_ctx:
                raise ValueError(f"sequence {s} would hold {self.past[s] + len(toks)} tokens, over the engine's n_ctx="
                                 f"{self.n_ctx} per sequence; raise it (llamacpp:...#n_ctx=4096).")
            bad = [t for t in toks if not 0 <= t < self.n_vocab]
            if bad:
                raise ValueError(f"token ids {bad[:5]} are outside the GGUF's vocabulary ({self.n_vocab})")
        flat = [(s, t, i == len(toks) - 1) for s, toks in feeds.items() for i, t in enumerate(toks)]
        out: dict[int, np.ndarray] = {}
        for lo in range(0, len(flat), self.n_batch):
            chunk = flat[lo:lo + self.n_batch]
            self._decode(chunk)
            for i, (s, _, last) in enumerate(chunk):
                if last:
                    ptr = self.lib.llama_get_logits_ith(self.ctx.ctx, i)
                    out[s] = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()
        return out

    def _decode(self, chunk: list[tuple[int, int, bool]]) -> None:
        b = self._batch.batch
        b.n_tokens = len(chunk)
        for i, (s, t, last) in enumerate(chunk):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = t, self.past[s], 1, last
            b.seq_id[i][0] = s
            self.past[s] += 1
        code = self.lib.llama_decode(self.ctx.ctx, b)
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code} for {len(chunk)} tokens (1: no KV slot left; raise n_ctx)")

    def close(self) -> None:
        """Free the context, the adapter and the model now (otherwise at garbage collection)."""
        for obj in (self.ctx, self._batch):
            if obj is not None:
                obj.close()
        self.ctx = None
        if self._forked:  # a fork frees its own context only; the weights are the original's
            return
        if self.adapter is not None:
            self.lib.llama_adapter_lora_free(self.adapter)
            self.adapter = None
        self.model.close()
