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
        logp = self.inner.token_logprobs(records)
        mask = torch.zeros_like(logp)
        for i, r in enumerate(records):
            mask[i, : len(r["gen_mask"])] = torch.tensor(r["gen_mask"], dtype=logp.dtype)
        # position 0 has no prefix; the agents never mark it generated, but make sure
        mask[:, 0] = 0
        return Scored(logp, mask, None)


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
