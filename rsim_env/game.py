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
from typing import Any, Callable

import numpy as np

from . import answers, kinds, protocols, render, scoring
from .problem import Problem
from .record import EpisodeRecord
from .rewards import Component, Rubric, RewardWeights, rubric
from .strategies import TERMINATION, num_strategies as _strategy_count
from .validation import check_finite


@dataclass(frozen=True)
class EnvConfig:
    """Limits, reward weights and answer-check settings of an rSIM episode (``rsim train --set env.*``)."""

    max_steps: int = 8
    """Rounds (plan + step) before the episode is truncated."""
    terminate_last_round: bool = False
    """True: in the last round (``max_steps - 1``) the planner's ``action_mask`` allows only termination (8),
    and any other plan there is refused, so no episode is truncated for want of a termination plan (its
    R_terminal is never -1). False (the paper): every strategy is legal in every round. A learner option
    (docs/training.md); evaluate a planner under the rule it was trained with."""
    max_step_chars: int = 2000
    """Longest reasoner step kept; longer steps are cut and flagged in info."""
    max_question_chars: int = 4000
    """Longest question kept; longer questions are cut and flagged in info."""
    planner: bool = True
    """False = no-planner mode (GRPO baseline): the reasoner answers in one turn."""
    weights: RewardWeights = field(default_factory=RewardWeights)
    """Weights of the paper's reward components."""
    components: tuple[Component | str, ...] = ()
    """Your own reward components, scored after the paper's: logged in ``info["components"]`` and summed, at
    each one's own weight, into the rewards of the agents it lists. Each is a :class:`rsim_env.rewards.Component`
    object or, where objects cannot go (``--set env.components='["my_rewards:brevity"]'``, saved configs), a
    ``"package.module:name"`` spec naming one (or a sequence of them). One built with ``replaces=True`` takes the
    place of the paper's component of its name (e.g. your own ``format``), at its own weight."""
    protocol: str = render.DEFAULT_PROTOCOL
    """Turn protocol of the reasoner's prompts (``rsim_env.protocols.PROTOCOLS``: chat+lead, chat, lead, inline)."""
    check: answers.CheckConfig = scoring.DEFAULT_CHECK
    """Answer checking (``timeout_s`` of the sympy part, ``last_number_fallback``). The fallback is off by
    default: a response must state its answer (``\\boxed{}``, "the answer is") to earn R_acc, so a rambling
    single answer is not graded by whatever number it ended on (measured in docs/interaction.md).
    ``require_evaluated`` is on: ``\\boxed{37 * 22}`` restates the question and earns nothing (the efficacy study, in git at 42f3ab0)."""

    def __post_init__(self) -> None:
        check_finite(self)
        render.protocol(self.protocol)  # raises ValueError naming the valid protocols
        for name in ("max_steps", "max_step_chars", "max_question_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"EnvConfig.{name}={value!r} must be an int >= 1.")
        if not isinstance(self.terminate_last_round, bool):
            raise TypeError(f"EnvConfig.terminate_last_round must be True or False, got {self.terminate_last_round!r}.")
        if not isinstance(self.weights, RewardWeights):
            raise TypeError(f"EnvConfig.weights must be a RewardWeights, got {type(self.weights).__name__}.")
        object.__setattr__(self, "components", (self.components,) if isinstance(self.components, (str, Component))
                           else tuple(self.components))
        _ = self.rubric  # raises naming a non-Component entry or a repeated name
        if not isinstance(self.check, answers.CheckConfig):
            raise TypeError(f"EnvConfig.check must be a rsim_env.answers.CheckConfig, got {type(self.check).__name__}.")
        check_finite(self.check)  # answers.CheckConfig.timeout_s=inf would never time out


    @property
    def rubric(self) -> Rubric:
        """The components an episode is scored by: the paper's at :attr:`weights`, then :attr:`components`."""
        return rubric(self.weights, self.components)


def is_int_action(action: Any) -> bool:
    return isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_))


class Episode:
    """State and rules of one episode (see module docstring).

    Args:
        problem: The problem to play.
        cfg: Limits, reward settings and answer checking.
        grader: Grades the final answer instead of the kind (``scoring.score``'s ``grader``).
        num_strategies: The planner's action count (an env passes the one its ``Discrete`` space was built
            with); default: the strategy table's rows now. Plans are validated against it.
    """

    def __init__(self, problem: Problem, cfg: EnvConfig, grader: Callable[..., Any] | None = None,
                 num_strategies: int | None = None) -> None:
        self.problem = kinds.validate(problem)  # a Problem is plain data: its kind is checked here
        self.cfg = cfg
        self.grader = grader
        """Grades the final answer instead of the kind (``scoring.score``'s ``grader``: a ``GradeCache``)."""
        self.num_strategies = _strategy_count() if num_strategies is None else num_strategies
        """The planner's action count this episode validates plans against (fixed when it starts)."""
        if isinstance(self.num_strategies, bool) or not isinstance(self.num_strategies, int) or \
                self.num_strategies <= TERMINATION:
            raise ValueError(f"Episode num_strategies={num_strategies!r} must be an int > {TERMINATION} (the table's "
                             "rows when the env was built: rsim_env.num_strategies()).")
        self.question = problem.question[: cfg.max_question_chars]
        self.question_truncated = len(problem.question) > cfg.max_question_chars
        self.kind = kinds.get(problem.kind)
        """The problem's :class:`~rsim_env.kinds.Kind` (texts, detection, grading)."""
        self.protocol = protocols.protocol(cfg.protocol) if cfg.planner else protocols.NO_PLANNER
        """The turn protocol (:data:`rsim_env.protocols.NO_PLANNER` in no-planner mode)."""
        self.steps: list[str] = []
        self.strategies: list[int] = []
        self.injected: list[str] = []
        """Per step: the text the protocol injected before it (lead-in, ``inline`` header, or "")."""
        self.shown: list[str] = []
        """Per step: the step as shown (:meth:`Protocol.show`), computed once; detection and grading read it."""
        self.truncated_steps: list[int] = []
        self.pending: int | None = None
        self.pending_injected = ""
        """What the protocol injects before the pending step (set by :meth:`plan`; the observation's ``injected``)."""
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
    def plan_mask(self, n: int | None = None) -> np.ndarray:
        """``int8`` mask over ``n`` strategies (default: :attr:`num_strategies`) the planner may pick now: all
        zeros when it is not its turn; only termination in the last round when ``cfg.terminate_last_round``;
        else all ones."""
        mask = np.zeros(self.num_strategies if n is None else n, dtype=np.int8)
        if self.done or self.due != "planner":
            return mask
        if self.cfg.terminate_last_round and self.round >= self.cfg.max_steps - 1:
            mask[TERMINATION] = 1
        else:
            mask[:] = 1
        return mask

    def plan(self, action: Any) -> None:
        """Planner picks a strategy index. Validates before touching any state."""
        if self.done or self.due != "planner":
            raise RuntimeError(f"It is not the planner's turn (due: {'nobody' if self.done else self.due}).")
        n = self.num_strategies
        if not is_int_action(action):
            raise TypeError(
                f"planner action must be an int strategy index in 0..{n - 1}, "
                f"got {type(action).__name__} {action!r:.60}."
            )
        if not 0 <= int(action) < n:
            later = n <= int(action) < _strategy_count()
            raise ValueError(
                f"planner action {int(action)} is out of range for this env's planner space Discrete({n}); expected a "
                f"strategy index in 0..{n - 1}."
                + (f" Strategy {int(action)} was registered after this env was built (the table has "
                   f"{_strategy_count()} rows now): build a new env to use it." if later else "")
            )
        if int(action) >= _strategy_count():
            raise ValueError(
                f"planner action {int(action)}: strategy {int(action)} was removed from the table after this env was "
                f"built with Discrete({n}) (the table has {_strategy_count()} rows now); build a new env."
            )
        if not self.plan_mask(n)[int(action)]:
            raise ValueError(
                f"planner action {int(action)} is not legal in round {self.round} of max_steps={self.cfg.max_steps}: "
                f"EnvConfig.terminate_last_round=True allows only termination ({TERMINATION}) in the last round; "
                "pick an action the observation's action_mask allows."
            )
        self.pending = int(action)
        self.pending_injected = self.protocol.lead(self.round, self.pending, self.kind)

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
        injected = self.pending_injected if self.pending is not None else ""
        shown = self.protocol.show(injected, text)
        self.steps.append(text)
        self.strategies.append(strategy)
        self.injected.append(injected)
        self.shown.append(shown)
        self.pending, self.pending_injected = None, ""
        if not self.cfg.planner or strategy == TERMINATION:
            self.terminated = True
        elif len(self.steps) >= self.cfg.max_steps:
            self.truncated = True

    # -- outcome ------------------------------------------------------------------------------
    def finishes_with(self, text: str) -> str | None:
        """If writing ``text`` now would end the episode, the final step as it will be graded
        (:meth:`Kind.answer_text`: math the shown step; code lead-in + text when the lead-in opened the
        block), else None."""
        if self.done or self.due != "reasoner" or not isinstance(text, str):
            return None
        strategy = self.pending if self.pending is not None else TERMINATION
        ends = not self.cfg.planner or strategy == TERMINATION or len(self.steps) + 1 >= self.cfg.max_steps
        if not ends:
            return None
        text = text[: self.cfg.max_step_chars]
        injected = self.pending_injected if self.pending is not None else ""
        return self.kind.answer_text(text, self.protocol.show(injected, text), injected)

    def outcome(self) -> dict[str, Any]:
        """Rewards and the full info of a finished episode (computed once, then cached)."""
        if not self.done:
            raise RuntimeError("outcome() is only defined once the episode is over.")
        if self._outcome is None:
            self._outcome = self._compute_outcome()
        return self._outcome

    def shown_steps(self) -> list[str]:
        """Steps as the transcript reads them (lead-in + generated text; stored by :meth:`write`)."""
        return list(self.shown)

    def record(self) -> EpisodeRecord:
        """The finished episode's texts as an unscored :class:`~rsim_env.record.EpisodeRecord` (what
        :func:`rsim_env.scoring.score` reads)."""
        p = self.problem
        return EpisodeRecord(problem_id=p.id, kind=p.kind, question=self.question, answer=p.answer,
                             answer_type=p.answer_type, protocol=self.protocol.name, planner=self.cfg.planner,
                             strategies=tuple(self.strategies) if self.cfg.planner else (),
                             injected=tuple(self.injected), steps=tuple(self.steps), shown_steps=tuple(self.shown),
                             rounds=len(self.steps), terminated=self.terminated, truncated=self.truncated)

    def _compute_outcome(self) -> dict[str, Any]:
        scored = scoring.score(self.record(), self.problem, self.cfg.check, grader=self.grader, rubric=self.cfg.rubric)
        grade = scored.grade
        info = {
            "problem_id": self.problem.id,
            "question": self.question,
            "answer": self.problem.answer,
            "answer_type": self.problem.answer_type,
            "extracted": grade.extracted,
            "correct": bool(grade.correct),
            "reason": grade.reason,
            "kind": self.problem.kind,
            "tests_fraction": grade.fraction,
            "components": scored.values,
            "planner": self.cfg.planner,
            "strategies": list(self.strategies),
            "detected": [list(d) for d in scored.detected],
            "steps": list(self.steps),
            "shown_steps": self.shown_steps(),
            "injected": list(self.injected),
            "echo": list(scored.echo),
            "vacuous": list(scored.vacuous),
            "self_repeat": list(scored.self_repeat),
            "protocol": self.protocol.name,
            "num_rounds": len(self.steps),
            "terminated": self.terminated,
            "truncated": self.truncated,
            "truncated_steps": list(self.truncated_steps),
            "question_truncated": self.question_truncated,
            "chars": {"question": len(self.question), "steps": sum(len(s) for s in self.steps)},
        }
        return {"rewards": scored.rewards(self.cfg.rubric, self.cfg.planner), "info": info}
