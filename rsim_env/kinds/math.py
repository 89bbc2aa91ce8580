"""The ``math`` kind: the answer is a value, boxed, checked symbolically.

* texts: the system prompts ask for ``\\boxed{}``; the termination texts are the termination row's
  own (:data:`rsim_env.strategies.STRATEGIES`);
* detection: echo-aware keyword detection of the generated text (:func:`rsim_env.echo.detect_generated`);
* graded text: the steps as shown (a lead-in such as "The final answer is \\boxed{" belongs to the answer);
* grade: the final answer is extracted from the whole response and checked
  (:func:`rsim_env.answers.check`; ``problem.metadata["rel_tol"]``, when set, is the gold's own relative
  tolerance, as TheoremQA grades floats); an empty answer (``\\boxed{}``) is no answer; format is left to the
  reward table's own ``format`` component (``Grade.format is None``);
* stop rule: a closed, non-empty ``\\boxed{}`` ends the step.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Sequence

from .. import answers, echo
from ..answers.extract import boxed_spans
from ..strategies import STRATEGIES, TERMINATION, example
from .base import Grade, Kind, KindTexts

if TYPE_CHECKING:
    from ..problem import Problem

REASONER_SYSTEM = (
    "You are a careful math tutor. Solve the problem one step at a time. Before each step you get an "
    "instruction in parentheses; write only that one step, briefly, then a blank line. When told to "
    "conclude, give the final answer as \\boxed{answer}."
)
"""System prompt of the ``inline`` protocol (kept verbatim so its measurements can be reproduced)."""
STEPWISE_SYSTEM = (
    "You are a careful math tutor. Solve the problem one short step at a time, following the "
    "instructions you are given. Use numbers, not just words. When asked for the final answer, put "
    "the number inside \\boxed{}."
)
"""System prompt of the ``chat``, ``lead`` and ``chat+lead`` protocols."""
NO_PLANNER_SYSTEM = (
    "You are a careful math tutor. Solve the problem step by step, then put the final answer (a "
    "number) inside \\boxed{}."
)
"""System prompt of no-planner mode. No placeholder inside the box: SmolLM2-135M copies
``\\boxed{answer}`` literally (measured: most final answers under the first chat+lead draft)."""

_END = STRATEGIES[TERMINATION]

_SYMBOLS = ((r"\times", "*"), (r"\cdot", "*"), ("×", "*"), ("·", "*"), (r"\div", "/"), ("÷", "/"), ("−", "-"),
            ("–", "-"))
_BRACKETS = re.compile(r"[(){}\[\]]")
_LABELS = re.compile(r"\b(?:step|part|case)\s+\d+\b|^\s*\d+[.)](?=\s)", re.MULTILINE)
_NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
_OPERAND = rf"(?:{_NUMBER}|(?<![a-z\\])[a-z](?![a-z]))"
_EXPR = re.compile(rf"{_OPERAND}(?:\s*[-+*/^=<>]\s*{_OPERAND})+")
_NUMBERS = re.compile(rf"(?<![\d.]){_NUMBER}")


def _number(text: str) -> str:
    text = text.replace(",", "")
    return text.rstrip("0").rstrip(".") if "." in text else text


def math_units(text: str) -> frozenset[str]:
    """Numbers and expressions of ``text``: the math kind's content units (rules: :mod:`rsim_env.novelty`)."""
    text = text[: echo.MAX_SCAN].lower()
    for a, b in _SYMBOLS:
        text = text.replace(a, b)
    text = _BRACKETS.sub(" ", _LABELS.sub(" ", text))
    found = {_number(m.group()) for m in _NUMBERS.finditer(text)}
    found |= {re.sub(r"\s+", "", re.sub(_NUMBER, lambda m: _number(m.group()), m.group())) for m in _EXPR.finditer(text)}
    return frozenset(found)


class MathKind(Kind):
    """See module docstring."""

    name = "math"
    texts = KindTexts(REASONER_SYSTEM, STEPWISE_SYSTEM, NO_PLANNER_SYSTEM, _END.instruction, _END.lead, _END.prompt)

    def grade(self, problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
        result = answers.check("\n\n".join(steps), problem.answer, problem.answer_type, check or answers.CheckConfig(),
                               rel_tol=problem.metadata.get("rel_tol"))  # a tolerance-graded set's own rule
        # An empty answer (``\boxed{}``) is no answer: no accuracy, whatever the checker says.
        correct = bool(result.correct) and bool((result.extracted or "").strip())
        return Grade(correct, None, result.extracted, result.reason)

    def content_units(self, text: str) -> frozenset[str]:
        """Numbers and expressions (:func:`math_units`): prose that adds none is vacuous (:mod:`rsim_env.novelty`)."""
        return math_units(text)

    def stops(self, injected: str, text: str) -> bool:
        if "}" not in text or "\\boxed" not in injected + text:
            return False
        spans = boxed_spans(injected + text)
        return bool(spans and spans[-1][2].strip())

    def final_step(self, injected: str, answer: str) -> str:
        if injected.endswith("\\boxed{"):  # the protocol opened the box: close it
            return answer + "}."
        return example(TERMINATION, answer)


MATH = MathKind()
