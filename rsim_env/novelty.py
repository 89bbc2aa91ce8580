"""Novelty of a reasoner step: does it say anything new, or announce and repeat? The rules behind R_follow's credit.

A step can only *announce* its move ("The most important step now is to compute the final answer to the given
arithmetic problem.") or repeat the reasoner's own earlier step, and keyword detection counts both as following
their strategy (how often the embedded reasoner does either: ``docs/rewards.md``). Here is what
:func:`rsim_env.rewards.r_follow` uses to refuse them (documented contract, tested in
``tests/test_reward_holes.py`` and ``tests/test_echo.py``):

* The step is read as **generated content**: the generated text with echoes of injected text removed
  (:func:`rsim_env.echo.generated_content`).
* The **context** of step *i* is the question, the earlier steps as the transcript shows them, every
  text any protocol injects (:func:`rsim_env.render.injected_texts`) and the lead-ins or headers
  injected up to step *i*.
* **Content units** of a math text (:func:`rsim_env.kinds.math.math_units`, re-exported here): its numbers (thousands commas dropped, ``3.50`` = ``3.5``) and its
  expressions/equations (two or more numbers or one-letter variables joined by ``+ - * / ^ = < >``,
  ``×``, ``÷``, ``\\times``, ``\\cdot``; parentheses and braces ignored; spaces removed). Labels are not
  content: a number after ``step``/``part``/``case`` and a list marker (``1.``, ``2)``) at a line start. Of a code text:
  its normalised words (:func:`rsim_env.echo.words`), since a code step's content is prose or a program.
* An **answer** step (planned as termination, and its detected strategies include it: a closed,
  non-empty box, a final-answer phrase, a program) is neither vacuous nor a self-repeat -- the answer is the reasoner's own, as in
  :mod:`rsim_env.echo`; R_format and R_acc judge it (and R_follow skips it, see :func:`rsim_env.rewards.r_follow`).
* A step is **vacuous** (announcement-only) when its content has no unit the context lacks: no new
  number, equation or expression (math), no new word (code). ``I will verify 6 * 7 carefully.`` on
  "What is 6 * 7?" is vacuous; ``42 / 7 = 6`` is not.
* A step is a **self-repeat** when its generated content is mostly a copy of the episode's earlier generated steps: the echo rule of
  :mod:`rsim_env.echo` with those steps as the references (a clause holding a number the earlier steps
  lack is never a copy; at least :data:`rsim_env.echo.ECHO_STEP_THRESHOLD` of its words copied).

Pure Python on bounded input, like :mod:`rsim_env.echo`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from . import echo, kinds
from .kinds.math import math_units
from .render import injected_texts
from .strategies import TERMINATION

__all__ = ["StepNovelty", "units", "math_units", "word_units", "is_vacuous", "is_self_repeat", "assess"]


def word_units(text: str) -> frozenset[str]:
    """Normalised words of ``text`` (the content units of code steps)."""
    return frozenset(echo.words(text[: echo.MAX_SCAN]))


def units(text: str, kind: str = "math") -> frozenset[str]:
    """Content units of ``text`` for problems of ``kind`` (the kind's :meth:`~rsim_env.kinds.Kind.content_units`:
    :func:`math_units` for math, :func:`word_units` for code and, by default, any other kind)."""
    return kinds.get(kind).content_units(text)


def _injected_units(kind: str) -> frozenset[str]:
    """Content units of every injected text, for the strategy rows and kinds registered *now* (a row added by
    ``strategies.register`` / ``extra_strategy`` counts as soon as it is there)."""
    return _units_of(kind, tuple(injected_texts()))


@lru_cache(maxsize=16)
def _units_of(kind: str, texts: tuple[str, ...]) -> frozenset[str]:
    return frozenset().union(*(units(t, kind) for t in texts))


def is_vacuous(step: str, context: Sequence[str], kind: str = "math") -> bool:
    """True if the step's generated content has no content unit that ``context`` (plus every injected text) lacks."""
    known = _injected_units(kind).union(*(units(t, kind) for t in context))
    return not (units(echo.generated_content(step), kind) - known)


def is_self_repeat(step: str, earlier: Sequence[str]) -> bool:
    """True if ``step``'s generated content mostly copies the ``earlier`` steps' (echo rule, those as references)."""
    if not earlier:
        return False
    content = echo.generated_content(step)
    return bool(echo.words(content)) and echo.is_echo(content, [echo.generated_content(e) for e in earlier])


@dataclass(frozen=True)
class StepNovelty:
    """Per step of one episode: announcement-only and self-repeat flags."""

    vacuous: tuple[bool, ...]
    """Step *i* adds no content unit to its context."""
    self_repeat: tuple[bool, ...]
    """Step *i* mostly repeats the episode's earlier steps."""

    @property
    def void(self) -> tuple[bool, ...]:
        """Steps that earn no follow whatever they show (vacuous or self-repeat)."""
        return tuple(v or r for v, r in zip(self.vacuous, self.self_repeat))


def assess(question: str, steps: Sequence[str], planned: Sequence[int], detected: Sequence[set[int]],
           shown: Sequence[str] | None = None, injected: Sequence[str] = (), kind: str = "math") -> StepNovelty:
    """Novelty flags of every step of an episode.

    Args:
        question: The question as the reasoner saw it.
        steps: Generated step texts.
        planned: Strategy planned for each step (termination for a no-planner answer).
        detected: Strategies each step shows (``rsim_env.echo.detect_generated`` or the code rule).
        shown: The steps as the transcript reads them (lead-in included); default ``steps``.
        injected: Lead-in or header injected before each step ("" for none).
        kind: Problem kind (its content units: :func:`units`).
    """
    shown = list(steps) if shown is None else list(shown)
    if not len(shown) == len(detected) == len(planned) == len(steps):
        raise ValueError(f"novelty.assess: {len(steps)} steps, {len(planned)} planned, {len(detected)} detected, "
                         f"{len(shown)} shown; pass one of each per step.")
    vacuous, repeat = [], []
    known = set(_injected_units(kind) | units(question, kind))  # grows by each step's shown text and lead-in
    contents = [echo.generated_content(z) for z in steps]  # each step cut into clauses once
    for i, content in enumerate(contents):
        answer = planned[i] == TERMINATION and TERMINATION in detected[i]  # the reasoner's own, as in rsim_env.echo
        if i < len(injected):
            known |= units(injected[i], kind)
        vacuous.append(not answer and not (units(content, kind) - known))
        repeat.append(not answer and i > 0 and bool(echo.words(content)) and echo.is_echo(content, contents[:i]))
        known |= units(shown[i], kind)
    return StepNovelty(tuple(vacuous), tuple(repeat))
