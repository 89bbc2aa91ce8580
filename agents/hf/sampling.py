"""Token sampling and the log-prob convention shared by generation and learners.

Convention (what ``logprobs`` in every record means, and what :func:`token_logprobs` recomputes):
``log_softmax(logits / temperature)`` over the vocabulary with the *suppressed* ids set to
``-inf`` — top-p only narrows what is sampled, not the recorded distribution (the TRL / vLLM
convention). Greedy decoding records ``temperature = 1``.
"""

from __future__ import annotations

from typing import Sequence

import torch

__all__ = ["right_pad", "masked_logprobs", "sample", "token_logprobs", "generated_logprobs"]


def right_pad(sequences: Sequence[Sequence[int]], pad_id: int,
              device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad token id lists into ``(ids, mask)`` ``[rows, max_len]`` long tensors (mask 1 on real tokens)."""
    n, width = len(sequences), max(len(s) for s in sequences)
    ids = torch.full((n, width), int(pad_id), dtype=torch.long)
    mask = torch.zeros(n, width, dtype=torch.long)
    for r, s in enumerate(sequences):
        ids[r, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        mask[r, : len(s)] = 1
    return (ids, mask) if device is None else (ids.to(device), mask.to(device))


def masked_logprobs(logits: torch.Tensor, temperature: float, suppressed: torch.Tensor | None) -> torch.Tensor:
    """``log_softmax(logits / temperature)`` with ``suppressed`` vocabulary ids removed."""
    logits = logits.float()
    if temperature != 1.0:  # x / 1.0 == x exactly: skip a full-vocabulary pass per decoded token (greedy records T = 1)
        logits = logits / temperature
    if suppressed is not None and suppressed.numel():
        logits = logits.index_fill(-1, suppressed, float("-inf"))
    return torch.log_softmax(logits, dim=-1)


def sample(
    logprobs: torch.Tensor, greedy: bool, top_p: float, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pick one token per row of ``[rows, vocab]`` log-probs; return ``(tokens, their log-probs)``."""
    if greedy:
        tokens = logprobs.argmax(-1)
    else:
        probs = logprobs.exp()
        if top_p < 1.0:
            sorted_p, order = probs.sort(-1, descending=True)
            keep = sorted_p.cumsum(-1) - sorted_p < top_p  # always keeps the top token
            sorted_p = sorted_p * keep
            choice = torch.multinomial(sorted_p, 1, generator=generator)
            tokens = order.gather(-1, choice).squeeze(-1)
        else:
            tokens = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return tokens, logprobs.gather(-1, tokens[:, None]).squeeze(-1)


def token_logprobs(
    model: torch.nn.Module,
    sequences: Sequence[Sequence[int]],
    temperature: float = 1.0,
    suppressed_ids: Sequence[int] = (),
    pad_id: int = 0,
) -> torch.Tensor:
    """Log-prob of every token given its prefix, in one right-padded forward (gradients flow).

    Args:
        model: Causal LM.
        sequences: Token ids per row (e.g. a reasoner record's ``input_ids``).
        temperature, suppressed_ids: The record's sampling convention (see module docstring).

    Returns:
        ``[rows, max_len]`` float tensor; entry ``[r, i]`` is ``log p(seq[i] | seq[:i])`` for
        ``1 <= i < len(seq_r)``, and 0 at ``i = 0``, on padding, and on suppressed ids (prompt
        chat markers, which are never generated). Multiply by the record's
        ``gen_mask`` to keep only generated tokens.
    """
    device = next(model.parameters()).device
    ids, mask = right_pad(sequences, pad_id, device)
    n, width = ids.shape
    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits[:, :-1]
    suppressed = torch.as_tensor(list(suppressed_ids), dtype=torch.long, device=device)
    lp = masked_logprobs(logits, temperature, suppressed).gather(-1, ids[:, 1:, None]).squeeze(-1)
    out = torch.zeros(n, width, dtype=lp.dtype, device=device)
    # Prompt chat markers and pads are suppressed ids (-inf); zero them so `lp * gen_mask` never makes NaN.
    keep = mask[:, 1:].bool() & torch.isfinite(lp)
    out[:, 1:] = torch.where(keep, lp, torch.zeros_like(lp))
    return out


def generated_logprobs(
    model: torch.nn.Module,
    sequences: Sequence[Sequence[int]],
    gen_masks: Sequence[Sequence[int]],
    temperature: float = 1.0,
    suppressed_ids: Sequence[int] = (),
    pad_id: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`token_logprobs` at the generated positions only: ``(logp, mask, entropy)``, ``[rows, max_len]``.

    Same convention (:func:`masked_logprobs`), but the vocabulary projection and softmax run only
    where ``gen_masks`` is 1, not over prompt / injected tokens (the LM head over a 49k vocabulary
    is a large share of a small model's cost). ``logp`` carries gradients; ``entropy`` does not.
    """
    device = next(model.parameters()).device
    ids, attn = right_pad(sequences, pad_id, device)
    gen = right_pad(gen_masks, 0, device)[0].float()
    gen[:, 0] = 0  # position 0 has no prefix to predict it
    hidden = model.get_decoder()(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state
    rows, cols = gen.nonzero(as_tuple=True)
    logits = model.get_output_embeddings()(hidden[rows, cols - 1])
    return scatter_generated(logits, ids, gen, rows, cols, temperature, suppressed_ids)


def scatter_generated(
    logits: torch.Tensor, ids: torch.Tensor, gen: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor,
    temperature: float, suppressed_ids: Sequence[int],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probs and entropies of the generated tokens ``ids[rows, cols]`` from their ``logits``
    (one row per generated token), scattered back to ``[rows, max_len]``: ``(logp, gen, entropy)``."""
    suppressed = torch.as_tensor(list(suppressed_ids), dtype=torch.long, device=logits.device)
    lp_all = masked_logprobs(logits, temperature, suppressed)
    lp = lp_all.gather(-1, ids[rows, cols][:, None]).squeeze(-1)
    with torch.no_grad():
        p = lp_all.exp()
        ent = -(p * lp_all.masked_fill(p == 0, 0)).sum(-1)
    logp = torch.zeros(gen.shape, device=gen.device, dtype=lp.dtype).index_put((rows, cols), lp)
    entropy = torch.zeros(gen.shape, device=gen.device).index_put((rows, cols), ent.float())
    return logp, gen, entropy
