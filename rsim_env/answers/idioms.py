"""Answer idioms the general pipeline misses: engineering ``j``, clock times, E-notation glued to a unit.

Each rule is narrow by construction -- it fires only when the gold has the matching shape -- so no verdict
outside its family changes (the labelled tables in ``benchmarks/grading/answer_cases/*.jsonl`` are re-run by the tests):

* :func:`engineering_j`: a gold that is a complex number written with ``i`` (``3+4i``, ``-2i``) accepts the
  same number written with the engineering unit ``j`` (``3+4j``, ``3 + j4``); only when the answer has no
  other letter, so ``j`` cannot be a variable or the joule there.
* :func:`same_clock`: a gold that is a clock time (``10:15``, ``10{:}15``, ``3 PM``, ``3:30 p.m.``, ``15:00``)
  is compared as a time of day: ``{:}`` is LaTeX's colon, ``a.m.``/``AM``/``am`` are one meridiem, and
  ``3 PM`` is ``15:00``. A gold without a meridiem also accepts the same clock reading with one
  (``3:30`` for ``3:30 p.m.``): the gold did not say which half of the day.
* :func:`split_glued_exponent`: ``1.5E3m`` reads as ``1.5E3 m`` (the tokenizer refuses a letter right after an
  exponent, so the unit could never be split off).
* :func:`within_rel_tol`: a decimal gold of a tolerance-graded set (TheoremQA grades a float within 4 % of the
  gold: :data:`THEOREMQA_REL_TOL`) accepts a plain number within that relative distance. Opt-in per problem
  (``Problem.metadata["rel_tol"]``, set by the TheoremQA loader for float answers); without it the strict
  rule of :mod:`rsim_env.answers.numeric` stands (``2.71`` is not ``2.718``).

Everything here is a few anchored, linear-time regexes on bounded text.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .numeric import eval_fraction, literal_decimals

__all__ = ["engineering_j", "same_clock", "clock", "split_glued_exponent", "within_rel_tol", "E_EXPONENT",
           "THEOREMQA_REL_TOL"]

THEOREMQA_REL_TOL = 0.04
"""TheoremQA's evaluator: a float prediction is right within ``abs(gold) * 0.04`` of the gold."""

_NUM = r"\d+(?:\.\d+)?"
_COMPLEX_I = re.compile(rf"[-+]?\s*(?:{_NUM}\s*\*?\s*)?i(?:\s*[-+]\s*{_NUM})?|[-+]?\s*{_NUM}\s*[-+]\s*(?:{_NUM}\s*\*?\s*)?i")
"""A complex number written with ``i``: ``3+4i``, ``-2i``, ``4i+3``, ``i``."""
_J_FIRST = re.compile(rf"\bj\s*\*?\s*({_NUM})")
_COMPLEX_J = re.compile(rf"[-+]?\s*(?:{_NUM}\s*\*?\s*)?j(?:\s*[-+]\s*{_NUM})?|[-+]?\s*{_NUM}\s*[-+]\s*(?:{_NUM}\s*\*?\s*)?j")
_CLOCK = re.compile(r"(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(?:([AaPp])\.?\s?[Mm]\.?)?")
_TEXT = re.compile(r"\\(?:text|mathrm)\{\s*([^{}]*?)\s*\}")
E_EXPONENT = re.compile(r"(?<=\d)[eE][-+]?\d{1,4}(?![\d.])")
"""The exponent of E-notation (``1.5E3``, ``2e-3``), right after the mantissa's last digit."""
_GLUED = re.compile(r"(\d[eE][-+]?\d{1,4})(?=[A-Za-z\\])")


def engineering_j(pred: str, gold: str) -> str:
    """``pred`` with the engineering imaginary unit ``j`` written as ``i`` when ``gold`` is a complex number
    in ``i`` and ``pred`` is one in ``j`` (both already normalised); else ``pred`` unchanged."""
    if "j" not in pred or "i" in pred or not _COMPLEX_I.fullmatch(gold.strip()):
        return pred
    p = _J_FIRST.sub(r"\1j", pred.strip())  # 3 + j4 -> 3 + 4j
    return p.replace("j", "i") if _COMPLEX_J.fullmatch(p) else pred


def clock(text: str) -> tuple[int, int, int, str | None] | None:
    """``(hour, minute, second, meridiem)`` of a clock time (``"10:15"``, ``"3 p.m."``), else None.

    A bare number (``"3"``) is no time: a time needs minutes or a meridiem."""
    s = _TEXT.sub(r" \1", text.replace("{:}", ":").replace("$", "")).strip().rstrip(".").strip()
    if len(s) > 24:
        return None
    m = _CLOCK.fullmatch(s)
    if not m or (m.group(2) is None and m.group(4) is None):
        return None
    hour, minute, second = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)
    mer = m.group(4).upper() + "M" if m.group(4) else None
    if minute > 59 or second > 59 or hour > (12 if mer else 23) or (mer and hour == 0):
        return None
    return hour, minute, second, mer


def _minutes(t: tuple[int, int, int, str | None]) -> int:
    hour, minute, second, mer = t
    if mer:
        hour = hour % 12 + (12 if mer == "PM" else 0)
    return (hour * 60 + minute) * 60 + second


def same_clock(pred: str, gold: str) -> bool | None:
    """Whether ``pred`` and ``gold`` name the same time of day; None when either is not a clock time
    (the general pipeline then decides, as before)."""
    g = clock(gold)
    p = clock(pred) if g else None
    if g is None or p is None:
        return None
    if _minutes(p) == _minutes(g):
        return True
    # the gold gave no meridiem: the same clock reading with one is the same answer
    return g[3] is None and p[3] is not None and p[:3] == g[:3]


def split_glued_exponent(s: str) -> str:
    """``1.5E3m`` -> ``1.5E3 m``: a unit glued to an exponent is set apart so that it can be split off."""
    return _GLUED.sub(r"\1 ", s) if ("e" in s or "E" in s) else s


def within_rel_tol(pred: tuple, gold: tuple, rel_tol: float) -> bool:
    """True when ``gold`` (a parsed answer) is a decimal number and ``pred`` a number within ``rel_tol`` of it,
    relative to the gold. Exact arithmetic; anything but two plain numbers is False (the caller's verdict stands)."""
    if pred[0] != "expr" or gold[0] != "expr" or literal_decimals(gold[1]) is None:
        return False
    a, b = eval_fraction(pred[1]), eval_fraction(gold[1])
    return a is not None and b is not None and abs(a - b) <= Fraction(str(rel_tol)) * abs(b)
