"""Batched, resumable KV cache for multi-turn decoding over many conversations at once.

Layout ("shared columns with holes"): one cache holds every live conversation as one batch row.
Each forward appends the same number of *columns* to every row; a row that has fewer new tokens
than the widest row gets pad tokens that the attention mask hides (holes). Each row keeps its own
position counter, so RoPE positions count only real tokens and a row's logits are exactly what
the model would give for that row alone (tested against re-encoding). Rows whose conversation
ended are dropped from the batch (:meth:`KVBatch.keep`). Inside a turn, rows that finished their
step are fed nothing; with the prealloc cache the live rows are swapped to the front of the buffer
and the forward runs on that prefix only, so finished rows stop costing compute.

:class:`PreallocLayer` replaces ``DynamicLayer``'s per-step ``torch.cat`` (which copies the whole
cache every token; ~13 % of a batch-16 step on CPU) with a buffer that doubles when full and is
written in place; attention reads a view of the filled part.
"""

from __future__ import annotations

from typing import Sequence

import torch
import transformers
from packaging.version import Version
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

MIN_TRANSFORMERS = "5.24"
"""Oldest transformers whose models take ``cache=`` (earlier releases drop it silently: no KV cache)."""
if Version(transformers.__version__) < Version(MIN_TRANSFORMERS):
    raise ImportError(f"rSIM's KV cache needs transformers>={MIN_TRANSFORMERS} (models take `cache=`), found "
                      f"{transformers.__version__}; upgrade with: pip install -U 'transformers>={MIN_TRANSFORMERS}'.")

__all__ = ["MIN_TRANSFORMERS", "PreallocLayer", "make_cache", "KVBatch"]


class PreallocLayer(DynamicLayer):
    """One layer's K/V in a preallocated ``[batch, heads, capacity, head_dim]`` buffer."""

    def __init__(self, capacity: int = 512, **kwargs):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.active: int | None = None  # forwards touch only rows [:active] (None: all rows)
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        b, h, _, _ = key_states.shape
        self._k = key_states.new_zeros(b, h, self.capacity, key_states.shape[-1])
        self._v = value_states.new_zeros(b, h, self.capacity, value_states.shape[-1])
        self.is_initialized = True

    def _grow(self, needed: int) -> None:
        cap = max(needed, 2 * self._k.shape[2])
        for name in ("_k", "_v"):
            old = getattr(self, name)
            new = old.new_zeros(*old.shape[:2], cap, old.shape[-1])
            new[:, :, : self.length] = old[:, :, : self.length]
            setattr(self, name, new)

    def _refresh_views(self) -> None:
        self.keys = self._k[: self.active, :, : self.length]
        self.values = self._v[: self.active, :, : self.length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self._k.shape[2]:
            self._grow(end)
        rows = self.active
        self._k[:rows, :, self.length : end] = key_states  # rows past `active` keep holes (masked)
        self._v[:rows, :, self.length : end] = value_states
        self.length = end
        self._refresh_views()
        return self.keys, self.values

    def swap_rows(self, a: int, b: int) -> None:
        """Exchange two rows of the buffer in place (the filled columns; the rest is never read unwritten)."""
        if self.is_initialized:
            for buf in (self._k, self._v):
                buf[[a, b], :, : self.length] = buf[[b, a], :, : self.length]

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self._k, self._v = self._k[indices], self._v[indices]
            self._refresh_views()

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("PreallocLayer does not support crop(); rSIM never rewinds a conversation.")


def make_cache(model: PreTrainedModel, cache_type: str = "prealloc", capacity: int = 512) -> DynamicCache:
    """A ``DynamicCache`` for ``model``; ``cache_type="prealloc"`` swaps in :class:`PreallocLayer` layers."""
    cache = DynamicCache(config=model.config)
    if cache_type == "prealloc":
        cache.layers = [PreallocLayer(capacity) for _ in range(len(cache.layers))]
    elif cache_type != "dynamic":
        raise ValueError(f"cache kind must be 'prealloc' or 'dynamic', got {cache_type!r}")
    return cache


class KVBatch:
    """A batch of conversations sharing one KV cache; feed each row any number of new tokens.

    Args:
        model: A causal LM (``logits_to_keep`` supported) or a bare backbone, in eval mode.
        num_rows: Conversations in the batch (row ``i`` starts as conversation ``i``).
        pad_id: Token id used for holes (never attended to).
        kind / capacity: See :func:`make_cache`.
        share_prefill: On the first feed, encode identical rows once and copy their KV to every
            twin (the G copies of a GRPO group share their prompt's prefill).
    """

    def __init__(self, model: PreTrainedModel, num_rows: int, pad_id: int, kind: str = "prealloc",
                 capacity: int = 512, share_prefill: bool = True):
        self.model = model
        self.share_prefill = share_prefill
        self.pad_id = pad_id
        self.device = next(model.parameters()).device
        self.cache = make_cache(model, kind, capacity)
        self.rows = list(range(num_rows))  # conversation id of each batch row (callers' order)
        self._slot = list(range(num_rows))  # physical cache row of each of self.rows
        self._compactable = all(isinstance(layer, PreallocLayer) for layer in self.cache.layers)
        self.positions = torch.zeros(num_rows, dtype=torch.long, device=self.device)  # real tokens seen
        self._mask = torch.zeros(num_rows, capacity, dtype=torch.bool, device=self.device)
        self.columns = 0
        output_embeddings = getattr(model, "get_output_embeddings", None)  # None on test fakes: treat as an LM
        self.is_lm = output_embeddings is None or output_embeddings() is not None

    def _shared_first_feed(self, new_tokens: Sequence[Sequence[int]], unique: list[list[int]]) -> torch.Tensor:
        """First feed with repeated rows: encode each distinct row once, then copy its KV to its twins."""
        rows = self.rows
        where = {tuple(u): i for i, u in enumerate(unique)}
        source = torch.tensor([where[tuple(t)] for t in new_tokens], device=self.device)
        self.rows, self.positions = list(range(len(unique))), self.positions[: len(unique)]
        self._mask, self._slot = self._mask[: len(unique)], list(range(len(unique)))
        out = self.feed(unique)  # columns == 0 and all distinct: a plain batched prefill
        self.rows, self.positions, self._mask = rows, self.positions[source], self._mask[source]
        self._slot = list(range(len(rows)))
        self.cache.batch_select_indices(source)
        return out[source]

    def keep(self, conversations: Sequence[int]) -> None:
        """Drop every row whose conversation is not in ``conversations`` (they never come back)."""
        wanted = set(conversations)
        missing = wanted - set(self.rows)
        if missing:
            raise ValueError(f"conversations {sorted(missing)} are not in this batch (already dropped or unknown)")
        if len(wanted) == len(self.rows):
            return
        kept = [i for i, c in enumerate(self.rows) if c in wanted]
        index = torch.tensor([self._slot[i] for i in kept], device=self.device)
        self.rows = [self.rows[i] for i in kept]
        self._slot = list(range(len(kept)))
        self.positions = self.positions[index]
        self._mask = self._mask[index]
        if self.columns:
            self.cache.batch_select_indices(index)

    def _swap(self, a: int, b: int) -> None:
        """Exchange physical slots ``a`` and ``b`` (cache rows, positions, mask)."""
        for layer in self.cache.layers:
            layer.swap_rows(a, b)
        for t in (self.positions, self._mask):
            t[[a, b]] = t[[b, a]]

    def _front(self, live: list[int]) -> int:
        """Move the ``live`` logical rows into physical slots ``[0, len(live))``; return that count."""
        k = len(live)
        free = [i for i in range(len(self.rows)) if i not in set(live) and self._slot[i] < k]
        for i in live:
            if self._slot[i] >= k:
                j = free.pop()
                self._swap(self._slot[i], self._slot[j])
                self._slot[i], self._slot[j] = self._slot[j], self._slot[i]
        return k

    def feed(self, new_tokens: Sequence[Sequence[int]]) -> torch.Tensor:
        """Append ``new_tokens[r]`` to row ``r`` (may be empty); return the last-position output.

        Rows fed nothing cost no compute with the prealloc cache: the live rows are moved to the
        front of the buffer and the forward runs on that prefix only.

        Returns:
            ``[rows, vocab]`` float logits (causal LM) or ``[rows, hidden]`` last hidden states
            (backbone) after each row's last new token (zeros for rows fed nothing).
        """
        n = len(self.rows)
        if len(new_tokens) != n:
            raise ValueError(f"feed() needs one token list per row ({n}), got {len(new_tokens)}")
        width = max(len(t) for t in new_tokens)
        if width == 0:
            raise ValueError("feed() got no tokens for any row")
        if self.columns == 0 and self.share_prefill:
            unique = {tuple(t): None for t in new_tokens}
            if len(unique) < n:  # identical first feeds (the G copies of one prompt): prefill once
                return self._shared_first_feed(new_tokens, [list(u) for u in unique])
        live = [i for i, t in enumerate(new_tokens) if t]
        k = self._front(live) if len(live) < n and self.columns and self._compactable else n
        ids = torch.full((k, width), self.pad_id, dtype=torch.long)
        real = torch.zeros(k, width, dtype=torch.bool)
        for i in (live if k < n else range(n)):  # right-align: each row's last token is in the last column
            toks, r = new_tokens[i], self._slot[i]
            if toks:
                ids[r, width - len(toks):] = torch.as_tensor(list(toks), dtype=torch.long)
                real[r, width - len(toks):] = True
        out = self._forward(ids.to(self.device), real.to(self.device), k)
        if k == n:
            return out[self._slot] if self._slot != list(range(n)) else out
        full = out.new_zeros(n, out.shape[-1])
        full[live] = out[[self._slot[i] for i in live]]
        return full

    def _forward(self, ids: torch.Tensor, real: torch.Tensor, k: int) -> torch.Tensor:
        """One forward of physical rows ``[0, k)`` over ``ids``; the other rows get holes."""
        width = ids.shape[1]
        # positions: real tokens continue the row's count; holes reuse a harmless in-range value
        offsets = (real.long().cumsum(1) - 1).clamp(min=0)
        position_ids = self.positions[:k, None] + offsets
        end = self.columns + width
        if end > self._mask.shape[1]:
            grown = torch.zeros(self._mask.shape[0], max(end, 2 * self._mask.shape[1]), dtype=torch.bool,
                                device=self.device)
            grown[:, : self.columns] = self._mask[:, : self.columns]
            self._mask = grown
        self._mask[:k, self.columns : end] = real
        extra = {"logits_to_keep": 1} if self.is_lm else {}
        partial = k < self._mask.shape[0]
        if partial:
            for layer in self.cache.layers:
                layer.active = k
        try:
            out = self.model(input_ids=ids, attention_mask=self._mask[:k, :end], position_ids=position_ids,
                             cache=self.cache, use_cache=True, **extra)
        finally:
            if partial:
                for layer in self.cache.layers:
                    layer.active = None
                    if layer.is_initialized:
                        layer._refresh_views()
        self.columns = end
        step = torch.zeros_like(self.positions)
        step[:k] = real.sum(1)
        self.positions = self.positions + step
        return (out.logits if self.is_lm else out.last_hidden_state)[:, -1, :].float()
