"""Episode state and rules, with no PettingZoo in sight.

One :class:`Episode` is one question played by a planner and a reasoner: each round the planner
picks a strategy (:meth:`Episode.plan`), then the reasoner writes one step
(:meth:`Episode.write`). The episode *terminates* after the step that follows a termination
plan and is *truncated* after ``max_steps`` rounds. With ``planner=False`` (the GRPO baseline)
the reasoner writes the whole solution in a single turn.

Over-long text rule (documented contract): a step longer than ``max_step_chars`` is cut to its
first ``max_step_chars`` characters, and a question longer than ``max_question_chars`` likewise;
each cut is recorded in the episode's info (``truncated_steps``, ``question_truncated``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import answers, grading, rewards
from .problems import Problem
from .rewards import RewardWeights
from .strategies import NUM_STRATEGIES, TERMINATION, detect


@dataclass(frozen=True)
class EnvConfig:
    """Limits, reward weights and answer-check settings of an rSIM episode (``rsim train --set env.*``)."""

    max_steps: int = 8
    """Rounds (plan + step) before the episode is truncated."""
    max_step_chars: int = 2000
    """Longest reasoner step kept; longer steps are cut and flagged in info."""
    max_question_chars: int = 4000
    """Longest question kept; longer questions are cut and flagged in info."""
    planner: bool = True
    """False = no-planner mode (GRPO baseline): the reasoner answers in one turn."""
    weights: RewardWeights = field(default_factory=RewardWeights)
    """Weights of the reward components."""
    check: answers.CheckConfig = field(default_factory=answers.CheckConfig)
    """Answer checking (``timeout_s`` of the sympy part, last-number fallback)."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_step_chars", "max_question_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"EnvConfig.{name}={value!r} must be an int >= 1.")
        if not isinstance(self.weights, RewardWeights):
            raise TypeError(f"EnvConfig.weights must be a RewardWeights, got {type(self.weights).__name__}.")
        if not isinstance(self.check, answers.CheckConfig):
            raise TypeError(f"EnvConfig.check must be a rsim_env.answers.CheckConfig, got {type(self.check).__name__}.")


def is_int_action(action: Any) -> bool:
    return isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))


class Episode:
    """State and rules of one episode (see module docstring)."""

    def __init__(self, problem: Problem, cfg: EnvConfig) -> None:
        self.problem = problem
        self.cfg = cfg
        self.question = problem.question[: cfg.max_question_chars]
        self.question_truncated = len(problem.question) > cfg.max_question_chars
        self.steps: list[str] = []
        self.strategies: list[int] = []
        self.detected: list[set[int]] = []
        self.truncated_steps: list[int] = []
        self.pending: int | None = None
        self.terminated = False
        self.truncated = False
        self._outcome: dict[str, Any] | None = None

    # -- whose turn ---------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def due(self) -> str:
        """``"planner"`` or ``"reasoner"``: who acts next (undefined once done)."""
        return "planner" if self.cfg.planner and self.pending is None else "reasoner"

    @property
    def round(self) -> int:
        return len(self.steps)

    # -- moves --------------------------------------------------------------------------------
    def plan(self, action: Any) -> None:
        """Planner picks a strategy index. Validates before touching any state."""
        if self.done or self.due != "planner":
            raise RuntimeError(f"It is not the planner's turn (due: {'nobody' if self.done else self.due}).")
        if not is_int_action(action):
            raise TypeError(
                f"planner action must be an int strategy index in 0..{NUM_STRATEGIES - 1}, "
                f"got {type(action).__name__} {action!r:.60}."
            )
        if not 0 <= int(action) < NUM_STRATEGIES:
            raise ValueError(
                f"planner action {int(action)} is out of range; expected a strategy index in 0..{NUM_STRATEGIES - 1}."
            )
        self.pending = int(action)

    def write(self, text: Any) -> None:
        """Reasoner writes the next step. Validates before touching any state."""
        if self.done or self.due != "reasoner":
            raise RuntimeError(f"It is not the reasoner's turn (due: {'nobody' if self.done else self.due}).")
        if not isinstance(text, str):
            raise TypeError(f"reasoner action must be the step text as str, got {type(text).__name__} {text!r:.60}.")
        if len(text) > self.cfg.max_step_chars:
            self.truncated_steps.append(len(self.steps))
            text = text[: self.cfg.max_step_chars]
        strategy = self.pending if self.pending is not None else TERMINATION
        self.steps.append(text)
        self.strategies.append(strategy)
        self.detected.append(detect(text))
        self.pending = None
        if not self.cfg.planner or strategy == TERMINATION:
            self.terminated = True
        elif len(self.steps) >= self.cfg.max_steps:
            self.truncated = True

    # -- outcome ------------------------------------------------------------------------------
    def finishes_with(self, text: str) -> str | None:
        """The stored form of ``text`` if writing it now would end the episode, else None."""
        if self.done or self.due != "reasoner" or not isinstance(text, str):
            return None
        strategy = self.pending if self.pending is not None else TERMINATION
        ends = not self.cfg.planner or strategy == TERMINATION or len(self.steps) + 1 >= self.cfg.max_steps
        return text[: self.cfg.max_step_chars] if ends else None

    def outcome(self) -> dict[str, Any]:
        """Rewards and the full info of a finished episode (computed once, then cached)."""
        if not self.done:
            raise RuntimeError("outcome() is only defined once the episode is over.")
        if self._outcome is None:
            self._outcome = self._compute_outcome()
        return self._outcome

    def _compute_outcome(self) -> dict[str, Any]:
        result = grading.grade(self.problem, self.steps, self.cfg.check)  # dispatches on problem.kind
        final = self.steps[-1] if self.steps else ""
        plans = self.strategies if self.cfg.planner else []
        detected = self.detected if self.cfg.planner else []
        facts = rewards.Facts(bool(result.correct), final, plans, detected)
        comps = rewards.components(facts, planner=self.cfg.planner)  # plan-based ones are 0 without plans
        if result.format is not None:  # kinds with their own format rule (code: a program that parses)
            comps["format"] = result.format
        w = self.cfg.weights
        info = {
            "problem_id": self.problem.id,
            "answer": self.problem.answer,
            "extracted": result.extracted,
            "correct": bool(result.correct),
            "reason": result.reason,
            "kind": self.problem.kind,
            "tests_fraction": result.fraction,
            "components": comps,
            "strategies": list(self.strategies),
            "detected": [sorted(d) for d in self.detected],
            "steps": list(self.steps),
            "num_rounds": len(self.steps),
            "terminated": self.terminated,
            "truncated": self.truncated,
            "truncated_steps": list(self.truncated_steps),
            "question_truncated": self.question_truncated,
            "chars": {"question": len(self.question), "steps": sum(len(s) for s in self.steps)},
        }
        return {
            "rewards": {
                "planner": rewards.reward("planner", comps, w) if self.cfg.planner else 0.0,
                "reasoner": rewards.reward("reasoner", comps, w),
            },
            "info": info,
        }
