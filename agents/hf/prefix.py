"""Scoring G copies that share a prompt: encode the prompt once, with gradients, for all of them.

The G copies of a GRPO group start with the same prompt (system + question), often most of each
sequence's tokens. :func:`shared_prefix_logprobs` runs the decoder over each *distinct* prompt once
(``use_cache=True``, gradients on), copies the prompt's keys/values to every row that shares it
(an index, so gradients from every copy flow back into the one prompt pass), then runs each row's
continuation attending to that cache. Same numbers as :func:`agents.hf.sampling.generated_logprobs`
(tested, values and gradients), with ``(G - 1) / G`` of the prompt's forward and backward saved.
"""

from __future__ import annotations

from typing import Sequence

import torch
from transformers import DynamicCache

from .sampling import generated_logprobs, right_pad, scatter_generated

__all__ = ["shared_prefix_hidden", "shareable", "shared_prefix_logprobs"]


def _left_pad(sequences: Sequence[Sequence[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), int(pad_id), dtype=torch.long)
    mask = torch.zeros(len(sequences), width, dtype=torch.long)
    for r, s in enumerate(sequences):
        ids[r, width - len(s):] = torch.as_tensor(list(s), dtype=torch.long)
        mask[r, width - len(s):] = 1
    return ids.to(device), mask.to(device)


def shared_prefix_hidden(
    decoder: torch.nn.Module,
    sequences: Sequence[Sequence[int]],
    prefix_lens: Sequence[int],
    rows: torch.Tensor,
    cols: torch.Tensor,
    pad_id: int = 0,
) -> torch.Tensor:
    """Last-layer hidden states at ``(rows, cols)`` with each distinct prefix encoded once.

    Every ``cols[i]`` must be ``>= prefix_lens[rows[i]] - 1`` (the prefix's last token or later).
    """
    device = rows.device
    slot: dict[tuple[int, ...], int] = {}
    src = [slot.setdefault(tuple(s[:p]), len(slot)) for s, p in zip(sequences, prefix_lens)]
    index = torch.tensor(src, device=device)
    p_ids, p_mask = _left_pad(list(slot), pad_id, device)
    cache = DynamicCache(config=decoder.config)
    p_pos = (p_mask.cumsum(1) - 1).clamp(min=0)
    prompt = decoder(input_ids=p_ids, attention_mask=p_mask, position_ids=p_pos, cache=cache, use_cache=True)
    for layer in cache.layers:  # every row gets its prefix's K/V (a differentiable gather)
        layer.keys, layer.values = layer.keys[index], layer.values[index]
    rest = [s[p:] or [pad_id] for s, p in zip(sequences, prefix_lens)]
    r_ids, r_mask = right_pad(rest, pad_id, device)
    plen = torch.tensor(list(prefix_lens), device=device)
    r_pos = plen[:, None] + torch.arange(r_ids.shape[1], device=device)[None]
    out = decoder(input_ids=r_ids, attention_mask=torch.cat([p_mask[index], r_mask], 1), position_ids=r_pos,
                  cache=cache, use_cache=True).last_hidden_state
    offset = cols - plen[rows]
    if bool((offset < -1).any()):
        raise ValueError("shared_prefix_hidden: a requested position lies inside its row's prefix (before its last token)")
    return torch.where((offset < 0)[:, None], prompt.last_hidden_state[index[rows], -1], out[rows, offset.clamp(min=0)])


def shareable(sequences: Sequence[Sequence[int]], prefix_lens: Sequence[int]) -> bool:
    """Whether at least two rows start with the same (non-empty) prefix."""
    prefixes = {tuple(s[:p]) for s, p in zip(sequences, prefix_lens)}
    return min(prefix_lens, default=0) >= 1 and len(prefixes) < len(sequences)


def shared_prefix_logprobs(
    model: torch.nn.Module,
    sequences: Sequence[Sequence[int]],
    gen_masks: Sequence[Sequence[int]],
    prefix_lens: Sequence[int],
    temperature: float = 1.0,
    suppressed_ids: Sequence[int] = (),
    pad_id: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`agents.hf.sampling.generated_logprobs` with each distinct prefix ``seq[:prefix_len]`` encoded once.

    Generated tokens must come after the prefix (``gen_mask`` is 0 on ``seq[:prefix_len]``).
    Falls back to :func:`generated_logprobs` when no two rows share a prefix.
    """
    device = next(model.parameters()).device
    if not shareable(sequences, prefix_lens):
        return generated_logprobs(model, sequences, gen_masks, temperature, suppressed_ids, pad_id)
    if any(any(m[:p]) for m, p in zip(gen_masks, prefix_lens)):
        raise ValueError("shared_prefix_logprobs: a generated token lies inside its row's prefix; pass prefix_lens "
                         "that end before the first generated token (the reasoner's prompt_len).")
    gen = right_pad(gen_masks, 0, device)[0].float()
    rows, cols = gen.nonzero(as_tuple=True)
    # the token at column c is predicted by the hidden state at c - 1
    hidden = shared_prefix_hidden(model.get_decoder(), sequences, prefix_lens, rows, cols - 1, pad_id)
    logits = model.get_output_embeddings()(hidden)
    ids = right_pad(sequences, pad_id, device)[0]
    return scatter_generated(logits, ids, gen, rows, cols, temperature, suppressed_ids)
