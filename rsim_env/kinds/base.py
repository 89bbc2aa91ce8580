"""The kind machinery: :class:`Kind`, its texts and grade, the registry, and problem validation.

The built-in kinds (:mod:`rsim_env.kinds.math`, :mod:`rsim_env.kinds.code`) and any new one import
from here, never from the package ``rsim_env.kinds`` (which imports them to register them): so no
module of the kinds imports its own package.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .. import echo
from ..strategies import TERMINATION, example

if TYPE_CHECKING:
    from ..answers import CheckConfig
    from ..problem import Problem

__all__ = ["Grade", "Kind", "KindTexts", "KINDS", "get", "names", "register", "registered", "validate"]


@dataclass(frozen=True)
class KindTexts:
    """The texts that ask for the answer (every other text is shared by all kinds)."""

    inline_system: str
    """System prompt of the ``inline`` protocol."""
    stepwise_system: str
    """System prompt of the ``chat``, ``lead`` and ``chat+lead`` protocols."""
    no_planner_system: str
    """System prompt of no-planner mode (one whole answer)."""
    termination_instruction: str
    """User-turn instruction of the termination strategy (``chat`` protocols)."""
    termination_lead: str
    """Assistant-side lead-in of the termination strategy (``lead`` protocols)."""
    termination_prompt: str
    """Strategy prompt in the ``inline`` termination header."""


@dataclass(frozen=True)
class Grade:
    """Outcome of grading one response."""

    correct: bool
    """R_acc's input: the answer is right / every test passed."""
    format: float | None
    """R_format for kinds with their own rule (code: 1.0 if a program was extracted and parses);
    None = use :mod:`rsim_env.rewards`' ``format`` component (math)."""
    extracted: str | None
    """The extracted answer or program (None if nothing could be extracted)."""
    reason: str
    """Why: the answer checker's reason, or the sandbox's :data:`~rsim_env.code.REASONS` key."""
    fraction: float | None = None
    """Code: fraction of tests passed; rg: the generator's score (partial credit); None for math."""


class Kind:
    """One problem kind. Subclass it, set :attr:`name` and :attr:`texts`, override what differs.

    The defaults are prose rules: detection is echo-aware keyword detection of the generated text,
    the final step is graded as shown (lead-in + generated text), and a step stops only at the
    step delimiter or end of turn.
    """

    name: str = ""
    """Key in :data:`KINDS` (``Problem.kind``)."""
    texts: KindTexts
    """The answer-asking texts (system prompts, termination instruction, lead-in, inline prompt)."""
    whole_answer: bool = False
    """The termination turn is one whole answer (agents: the answer token cap and no step-delimiter
    stop), as a program with blank lines of its own is. No-planner turns always are."""

    # -- validation ------------------------------------------------------------------------
    def validate(self, problem: Problem) -> None:
        """Raise ``ValueError`` if ``problem`` lacks what this kind needs (called by :func:`validate`)."""

    # -- a step ----------------------------------------------------------------------------
    def detect(self, step: str, shown: str, injected: str) -> set[int]:
        """Strategies a generated ``step`` shows (R_follow, strategy counts).

        Args:
            step: The generated text.
            shown: The step as the transcript reads it (lead-in + generated; :meth:`Protocol.show`).
            injected: What the protocol injected before it ("" when nothing).
        """
        return echo.detect_generated(step, shown)

    def content_units(self, text: str) -> frozenset[str]:
        """The content units of ``text`` (:mod:`rsim_env.novelty`: a step that adds none its context lacks
        is vacuous and follows nothing). Default: its normalised words; math counts numbers and expressions."""
        return frozenset(echo.words(text[: echo.MAX_SCAN]))

    def answer_text(self, step: str, shown: str, injected: str) -> str:
        """The text of a final step that is graded (math: as shown, a lead-in such as ``\\boxed{`` is
        part of the answer)."""
        return shown

    def stops(self, injected: str, text: str) -> bool:
        """Agents' stop rule: True once ``text`` (generated after ``injected``) holds a complete answer."""
        return False

    # -- a finished episode ----------------------------------------------------------------
    def graded_steps(self, steps: Sequence[str], shown: Sequence[str], injected: Sequence[str]) -> list[str]:
        """The steps handed to :meth:`grade`: as shown, the last one as :meth:`answer_text` reads it."""
        if not steps:
            return []
        return list(shown[:-1]) + [self.answer_text(steps[-1], shown[-1], injected[-1])]

    def grade(self, problem: Problem, steps: Sequence[str], check: CheckConfig | None = None) -> Grade:
        """Grade a finished episode's :meth:`graded_steps` against ``problem``."""
        raise NotImplementedError(f"kind {self.name!r} must define grade()")

    def prefetch(self, problem: Problem, final: str) -> None:
        """Start grading work for a final step early (code: the sandbox run); no-op by default."""

    # -- scripted agents -------------------------------------------------------------------
    def final_step(self, injected: str, answer: str) -> str:
        """A scripted final step giving ``answer`` after the lead-in ``injected``."""
        return example(TERMINATION, answer)

    def wrong_answer(self, gold: str) -> str:
        """A wrong answer for scripted agents (same digits with one more appended)."""
        return f"{gold}1"

    def right_answer(self, gold: Any) -> str:
        """The oracle's gold as a scripted answer."""
        return str(gold)

    placeholder_answer: str = "0"
    """What a scripted agent without an oracle answers."""

    def __repr__(self) -> str:
        return f"<Kind {self.name!r}>"


KINDS: dict[str, Kind] = {}
"""Every registered kind, by name."""


def register(kind: Kind) -> Kind:
    """Add ``kind`` to :data:`KINDS` for the rest of the process.

    Raises:
        ValueError: The name is empty or taken, or the kind has no :class:`KindTexts`.
    """
    if not isinstance(kind, Kind):
        raise TypeError(f"register() takes a Kind instance, got {type(kind).__name__}.")
    if not kind.name or not isinstance(kind.name, str):
        raise ValueError(f"{type(kind).__name__}.name={kind.name!r}: give the kind a name (Problem.kind).")
    if kind.name in KINDS:
        raise ValueError(f"problem kind {kind.name!r} is registered already; choose another name.")
    if not isinstance(getattr(kind, "texts", None), KindTexts):
        raise ValueError(f"kind {kind.name!r} needs texts=KindTexts(...) (how it asks for its answer).")
    KINDS[kind.name] = kind
    return kind


@contextlib.contextmanager
def registered(kind: Kind) -> Iterator[Kind]:
    """Register ``kind`` for the ``with`` block, then remove it."""
    register(kind)
    try:
        yield kind
    finally:
        del KINDS[kind.name]


def get(kind: str | Kind) -> Kind:
    """The registered kind named ``kind`` (a :class:`Kind` is returned as is).

    Raises:
        ValueError: Unknown name; the message lists the valid kinds.
    """
    if isinstance(kind, Kind):
        return kind
    if kind not in KINDS:
        raise ValueError(f"unknown problem kind {kind!r}; choose one of {sorted(KINDS)} (Problem.kind).")
    return KINDS[kind]


def names() -> tuple[str, ...]:
    """The registered kinds' names."""
    return tuple(KINDS)



def validate(problem: Problem) -> Problem:
    """``problem`` itself, once its kind is registered and has what the kind needs.

    :class:`~rsim_env.problem.Problem` is plain data; this is the kind check, run where problems enter
    (:func:`rsim_env.sources.data.load_problems`, :func:`rsim_env.sources.data.load_jsonl`, :class:`rsim_env.game.Episode`).

    Raises:
        ValueError: The kind is not registered (the message lists the registered ones), or the kind's own
            :meth:`Kind.validate` refuses the problem (e.g. a code problem without tests).
    """
    if problem.kind not in KINDS:
        raise ValueError(f"Problem.kind={problem.kind!r} is not one of {names()} (rsim_env.kinds.register adds one).")
    KINDS[problem.kind].validate(problem)  # e.g. code problems need tests and an entry point
    return problem
