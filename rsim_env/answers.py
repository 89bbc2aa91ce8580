"""Answer extraction and checking (placeholder: exact / numeric comparison).

Interface is final; the full hostile-input-safe sympy checker replaces the body (issue 3).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class AnswerCheck:
    """Result of :func:`check`: ``correct``, the ``extracted`` answer and a ``reason``."""

    correct: bool
    extracted: str | None
    reason: str


def extract_answer(response: str) -> str | None:
    """Last ``\\boxed{...}`` content, else None."""
    found = _BOXED.findall(response[-100_000:])
    return found[-1].strip() if found else None


def check(response: str, gold: str, answer_type: str = "auto") -> AnswerCheck:
    """Compare the answer extracted from ``response`` with ``gold``."""
    got = extract_answer(response)
    if got is None:
        return AnswerCheck(False, None, "no_answer")
    a, b = got.replace(",", ""), gold.replace(",", "")
    if a == b:
        return AnswerCheck(True, got, "ok")
    try:
        return AnswerCheck(abs(float(a) - float(b)) < 1e-9, got, "ok")
    except ValueError:
        return AnswerCheck(False, got, "unparsable")
