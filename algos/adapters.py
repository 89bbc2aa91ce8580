"""Thin adapters that give the LLM agents (agents/) the learner interface of ``algos/policy.py``.

The agents already record token ids, generated-token masks and log-probs, and can recompute
log-probs with gradients; this module only renames that to ``module`` / ``score`` so the trainer
never depends on an agent's internals.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from .policy import Scored


class TrainableReasoner:
    """Wraps :class:`agents.reasoner.Reasoner`: advantage on generated tokens only (``gen_mask``)."""

    role = "reasoner"

    def __init__(self, reasoner: Any) -> None:
        self.inner = reasoner
        self.module: torch.nn.Module = reasoner.model

    def reset(self, num_copies: int) -> None:
        self.inner.reset(num_copies)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        return self.inner.act(copy_ids, observations)

    def records(self) -> list[dict[str, Any]]:
        return self.inner.records()

    def num_generated(self, record: dict[str, Any]) -> int:
        return int(sum(record["gen_mask"]))

    def score(self, records: Sequence[dict[str, Any]]) -> Scored:
        """Log-probs of the generated tokens only, with gradients, in one forward over the batch.

        Same convention as ``agents.sampling.token_logprobs`` (``log_softmax(logits / T)`` with the
        suppressed ids removed; tested equal), but the vocabulary projection and softmax run only at
        generated positions, not over prompt / injected tokens (the LM head over a 49k vocabulary is
        a large share of a small model's cost).
        """
        model = self.inner.model
        dev = next(model.parameters()).device
        n, width = len(records), max(len(r["input_ids"]) for r in records)
        ids = torch.full((n, width), int(records[0].get("pad_id", self.inner.pad_id)), dtype=torch.long)
        attn = torch.zeros(n, width, dtype=torch.long)
        gen = torch.zeros(n, width)
        for i, r in enumerate(records):
            m = len(r["input_ids"])
            ids[i, :m] = torch.as_tensor(r["input_ids"])
            attn[i, :m] = 1
            gen[i, :m] = torch.as_tensor(r["gen_mask"], dtype=gen.dtype)
        gen[:, 0] = 0  # position 0 has no prefix to predict it
        ids, attn, gen = ids.to(dev), attn.to(dev), gen.to(dev)
        hidden = model.get_decoder()(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state
        rows, cols = gen.nonzero(as_tuple=True)
        logits = model.get_output_embeddings()(hidden[rows, cols - 1]).float() / float(records[0]["temperature"])
        suppressed = records[0].get("suppressed_ids") or []
        if suppressed:
            logits = logits.index_fill(-1, torch.as_tensor(suppressed, device=dev), float("-inf"))
        lse = torch.logsumexp(logits, -1)
        lp = logits.gather(-1, ids[rows, cols][:, None]).squeeze(-1) - lse
        with torch.no_grad():
            p = torch.softmax(logits, -1)
            ent = lse - (p * logits.masked_fill(p == 0, 0)).sum(-1)
        logp = torch.zeros(n, width, device=dev, dtype=lp.dtype).index_put((rows, cols), lp)
        entropy = torch.zeros(n, width, device=dev).index_put((rows, cols), ent)
        return Scored(logp, gen, entropy)


class TrainablePlanner:
    """Wraps :class:`agents.planner.Planner` (an ``nn.Module``: backbone + head): one advantage per decision.

    All decisions of a trajectory are scored in one forward (``Planner.trajectory_logprobs``).
    """

    role = "planner"

    def __init__(self, planner: Any) -> None:
        self.inner = planner
        self.module: torch.nn.Module = planner

    def reset(self, num_copies: int) -> None:
        self.inner.reset(num_copies)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        return self.inner.act(copy_ids, observations)

    def records(self) -> list[dict[str, Any]]:
        return self.inner.records()

    def score(self, records: Sequence[dict[str, Any]]) -> Scored:
        logp, valid = self.inner.trajectory_logprobs(records)
        return Scored(logp, valid, None)
