"""Toy random-init trainable agents (model spec ``"toy"``; no tokenizer, no weights to download).

They implement the full agent interface (``reset``/``act``/``records``) plus what a learner needs
(``module``, ``score``; :class:`agents.base.Trainable`), so the training loop, checkpoints and the
multi-process path are tested end to end in seconds, and ``studies/learning_sanity`` can show
that Stackelberg GRPO learns. They are not language models.

* :class:`ToyPlanner`: an MLP over (round one-hot, previous strategy one-hot) -> 9 logits.
* :class:`ToyReasoner`: writes each step as ``step_tokens`` words from a fixed vocabulary (strategy
  keywords and ``\\boxed{d}``), each word drawn from an MLP over (strategy, position).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch import nn

from rsim_env.strategies import num_strategies

from ..base import Scored

VOCAB = (
    "wait", "break", "sub-problems", "carefully", "check", "verify", "so", "far", "focus", "next", "plan",
    "then", "the", "answer", "is", *[f"\\boxed{{{d}}}" for d in range(10)],
)
"""ToyReasoner's words: a few strategy keywords (so R_follow is learnable) and boxed digits."""


@dataclass
class ToyPlannerRecord:
    """One copy's decisions: the features each was made from, and the choice."""

    rounds: list[int] = field(default_factory=list)
    prev: list[int] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)


@dataclass
class ToyReasonerRecord:
    """One copy's steps: the planned strategy and the word ids written for each."""

    strategies: list[int] = field(default_factory=list)
    tokens: list[list[int]] = field(default_factory=list)


class _Sampler:
    def __init__(self, seed_generator: torch.Generator | None) -> None:
        self.greedy = False
        self.generator = seed_generator

    def _choose(self, logits: torch.Tensor) -> torch.Tensor:
        if self.greedy:
            return logits.argmax(-1)
        probs = torch.softmax(logits.float(), -1)
        flat = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1, generator=self.generator)
        return flat.view(probs.shape[:-1])


class ToyPlanner(_Sampler):
    """MLP planner over (round, previous strategy); samples by default, argmax with ``greedy=True``."""

    role = "planner"
    lora = None  # agents.base.Trainable: no adapter, the trainer keeps a frozen copy for a KL term
    shares_reference = False

    def __init__(self, max_rounds: int = 8, hidden: int = 32, device: str | torch.device = "cpu") -> None:
        super().__init__(None)
        self.max_rounds = max_rounds
        self.device = torch.device(device)
        self.n_strategies = num_strategies()  # rows of the strategy table when built (the head's size)
        self.module = nn.Sequential(
            nn.Linear(max_rounds + self.n_strategies + 1, hidden), nn.Tanh(), nn.Linear(hidden, self.n_strategies)
        ).to(self.device)
        self._records: list[Any] = []

    def _features(self, rounds: Sequence[int], prev: Sequence[int]) -> torch.Tensor:
        x = torch.zeros(len(rounds), self.max_rounds + self.n_strategies + 1, device=self.device)
        for i, (r, p) in enumerate(zip(rounds, prev)):
            x[i, min(r, self.max_rounds - 1)] = 1
            x[i, self.max_rounds + p] = 1  # p == self.n_strategies means "no previous plan"
        return x

    def reset(self, num_copies: int) -> None:
        self._records = [ToyPlannerRecord() for _ in range(num_copies)]

    @torch.no_grad()
    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        rounds = [int(o["round"]) for o in observations]
        prev = [int(o["strategies"][-1]) if o["strategies"] else self.n_strategies for o in observations]
        logits = self.module(self._features(rounds, prev))
        masks = torch.tensor([list(o["action_mask"]) for o in observations], device=self.device).bool()
        actions = self._choose(logits.masked_fill(~masks, float("-inf"))).tolist()
        for c, r, p, a in zip(copy_ids, rounds, prev, actions):
            rec = self._records[c]
            rec.rounds.append(r); rec.prev.append(p); rec.actions.append(a)
        return actions

    def records(self) -> list[ToyPlannerRecord]:
        return self._records

    def score(self, records: Sequence[ToyPlannerRecord]) -> Scored:
        T = max(1, max(len(r.actions) for r in records))
        rounds = [r.rounds[t] if t < len(r.rounds) else 0 for r in records for t in range(T)]
        prev = [r.prev[t] if t < len(r.prev) else self.n_strategies for r in records for t in range(T)]
        acts = torch.tensor([r.actions[t] if t < len(r.actions) else 0 for r in records for t in range(T)],
                            device=self.device)
        logp_all = torch.log_softmax(self.module(self._features(rounds, prev)).float(), -1)
        logp = logp_all.gather(-1, acts[:, None]).view(len(records), T)
        entropy = -(logp_all.exp() * logp_all).sum(-1).view(len(records), T)
        mask = torch.tensor([[1.0 if t < len(r.actions) else 0.0 for t in range(T)] for r in records],
                            device=self.device)
        return Scored(logp, mask, entropy)


class ToyReasoner(_Sampler):
    """Writes ``step_tokens`` words per step from :data:`VOCAB`, conditioned on the planned strategy."""

    role = "reasoner"
    lora = None  # agents.base.Trainable: no adapter, the trainer keeps a frozen copy for a KL term
    shares_reference = False

    def __init__(self, step_tokens: int = 4, hidden: int = 32, device: str | torch.device = "cpu") -> None:
        super().__init__(None)
        self.step_tokens = step_tokens
        self.device = torch.device(device)
        self.n_strategies = num_strategies()
        self.module = nn.Sequential(
            nn.Linear(self.n_strategies + step_tokens, hidden), nn.Tanh(), nn.Linear(hidden, len(VOCAB))
        ).to(self.device)
        self._records: list[Any] = []

    def _features(self, strategies: Sequence[int]) -> torch.Tensor:
        n, k = len(strategies), self.step_tokens
        x = torch.zeros(n, k, self.n_strategies + k, device=self.device)
        for i, s in enumerate(strategies):
            x[i, :, s] = 1
            x[i, torch.arange(k), self.n_strategies + torch.arange(k)] = 1
        return x

    def reset(self, num_copies: int) -> None:
        self._records = [ToyReasonerRecord() for _ in range(num_copies)]

    @torch.no_grad()
    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        strategies = [int(o["strategy"]) for o in observations]
        tokens = self._choose(self.module(self._features(strategies))).tolist()
        for c, s, t in zip(copy_ids, strategies, tokens):
            self._records[c].strategies.append(s)
            self._records[c].tokens.append(t)
        return [" ".join(VOCAB[i] for i in t) for t in tokens]

    def records(self) -> list[ToyReasonerRecord]:
        return self._records

    def num_generated(self, record: ToyReasonerRecord) -> int:
        """Tokens this agent generated in one copy's episode."""
        return len(record.tokens) * self.step_tokens

    def token_usage(self, record: ToyReasonerRecord) -> dict[str, int]:
        """Words written (it reads no prompt)."""
        return {"reasoner_written": sum(len(t) for t in record.tokens)}

    def score(self, records: Sequence[ToyReasonerRecord]) -> Scored:
        k = self.step_tokens
        S = max(1, max(len(r.tokens) for r in records))
        strategies = [r.strategies[s] if s < len(r.strategies) else 0 for r in records for s in range(S)]
        toks = torch.tensor([r.tokens[s] if s < len(r.tokens) else [0] * k for r in records for s in range(S)],
                            device=self.device)
        logp_all = torch.log_softmax(self.module(self._features(strategies)).float(), -1)
        logp = logp_all.gather(-1, toks[..., None]).squeeze(-1).view(len(records), S * k)
        entropy = -(logp_all.exp() * logp_all).sum(-1).view(len(records), S * k)
        mask = torch.tensor([[1.0 if s < len(r.tokens) else 0.0 for s in range(S) for _ in range(k)]
                             for r in records], device=self.device)
        return Scored(logp, mask, entropy)
