"""Scripted agents: rollouts, tests and baselines with no model at all (no torch import).

* :class:`RandomPlanner` samples a legal strategy uniformly (optionally with a higher
  termination probability so episodes end).
* :class:`FixedPlanner` plays a fixed strategy sequence, then terminates.
* :class:`TemplateReasoner` writes the planned strategy's example step
  (:data:`rsim_env.strategies.EXAMPLES`: it shows its strategy to detection and copies no injected
  text) and, on termination, the final step of the problem's kind (the observation's ``kind``;
  ``rsim_env.kinds.Kind.final_step``) giving the answer of an optional ``oracle`` (``question ->
  answer``) with probability ``p_correct``, else the kind's wrong answer (``Kind.wrong_answer``).
  Math boxes the answer (when the protocol's lead-in already opened ``\\boxed{``, it writes only the
  answer and the closing brace); code writes a program in a fenced ``python`` block: the oracle's
  answer, which for code problems is the reference solution every code loader stores, else
  :data:`WRONG_PROGRAM` (it parses but defines no entry point, so every test fails); when the
  lead-in already opened the block it writes the program and the closing fence only.

All implement :class:`agents.base.Policy`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rsim_env import kinds
from rsim_env.kinds.code import WRONG_PROGRAM
from rsim_env.strategies import TERMINATION, example, num_strategies

__all__ = ["FixedPlanner", "RandomPlanner", "TemplateReasoner", "WRONG_PROGRAM"]
"""The template reasoner's wrong program (and its program without an oracle): valid Python that
defines no entry point, so a code problem's tests fail (the code analogue of a wrong number)."""

@dataclass
class PlanRecord:
    """A scripted planner's choices in one copy."""

    actions: list[int] = field(default_factory=list)


class RandomPlanner:
    """Uniformly random legal strategy; ``p_terminate`` overrides the termination probability."""

    role = "planner"

    def __init__(self, seed: int | None = None, p_terminate: float | None = None) -> None:
        if p_terminate is not None and not 0.0 <= p_terminate <= 1.0:
            raise ValueError(f"p_terminate={p_terminate!r} must be in [0, 1] or None (uniform).")
        self._rng = np.random.default_rng(seed)
        self.p_terminate = p_terminate

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget the episodes; ``seed`` restarts the generator (rsim eval seeds every batch)."""
        self._records: list[PlanRecord] = [PlanRecord() for _ in range(num_copies)]
        if seed is not None:
            self._rng = np.random.default_rng(seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        out = []
        for c, obs in zip(copy_ids, observations):
            mask = np.asarray(obs.get("action_mask", np.ones(num_strategies())), dtype=bool)
            legal = np.flatnonzero(mask)
            if self.p_terminate is not None and mask[TERMINATION]:
                others = legal[legal != TERMINATION]
                a = TERMINATION if (self._rng.random() < self.p_terminate or others.size == 0) else self._rng.choice(others)
            else:
                a = self._rng.choice(legal)
            out.append(int(a))
            self._record(c, int(a))
        return out

    def _record(self, c: int, a: int) -> None:
        if hasattr(self, "_records") and c < len(self._records):
            self._records[c].actions.append(a)

    def records(self) -> list[PlanRecord]:
        return list(getattr(self, "_records", []))


class FixedPlanner(RandomPlanner):
    """Plays ``sequence[round]``; past its end it plays termination."""

    def __init__(self, sequence: Sequence[int]) -> None:
        super().__init__()
        n = num_strategies()
        bad = [s for s in sequence if not (isinstance(s, (int, np.integer)) and 0 <= s < n)]
        if bad:
            raise ValueError(f"FixedPlanner sequence has invalid strategies {bad}; use ints in 0..{n - 1}.")
        self.sequence = [int(s) for s in sequence]

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        out = []
        for c, obs in zip(copy_ids, observations):
            r = int(obs["round"])
            a = self.sequence[r] if r < len(self.sequence) else TERMINATION
            out.append(a)
            self._record(c, a)
        return out


class TemplateReasoner:
    """Writes a templated step for the planned strategy; boxed answer on termination.

    Args:
        oracle: ``question -> answer`` mapping or callable; without it the answer is ``"0"``.
        p_correct: Probability that the boxed answer is the oracle's (else a wrong one).
        seed: Seed for the ``p_correct`` draws.
    """

    role = "reasoner"

    def __init__(
        self,
        oracle: Mapping[str, str] | Callable[[str], str] | None = None,
        p_correct: float = 1.0,
        seed: int | None = None,
    ) -> None:
        if not 0.0 <= p_correct <= 1.0:
            raise ValueError(f"p_correct={p_correct!r} must be in [0, 1].")
        self.oracle = oracle
        self.p_correct = p_correct
        self._rng = random.Random(seed)

    def _final(self, obs: dict[str, Any]) -> str:
        """The termination step: the problem kind's scripted final step (``Kind.final_step``) giving the
        oracle's answer with probability ``p_correct``, else the kind's wrong answer (see module docstring)."""
        kind = kinds.get(str(obs.get("kind", "math")))
        gold = None
        if self.oracle is not None:
            gold = self.oracle(obs["question"]) if callable(self.oracle) else self.oracle.get(obs["question"])
        if gold is None:
            answer = kind.placeholder_answer
        elif self._rng.random() < self.p_correct:
            answer = kind.right_answer(gold)
        else:
            answer = kind.wrong_answer(str(gold))
        return kind.final_step(str(obs.get("injected", "")), answer)

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget the episodes; ``seed`` restarts the ``p_correct`` draws (rsim eval seeds every batch)."""
        self._n = num_copies
        if seed is not None:
            self._rng = random.Random(seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        out = []
        for obs in observations:
            s = int(obs.get("strategy", TERMINATION))
            out.append(example(s) if s != TERMINATION else self._final(obs))
        return out

    def records(self) -> list[None]:
        """Nothing to learn from: one ``None`` per copy."""
        return [None for _ in range(getattr(self, "_n", 0))]
