"""Text-level normalisation of an extracted answer before parsing.

Turns the many ways people write the same LaTeX answer into one plain form the parser in
:mod:`rsim_env.answers.parser` understands: ``\\dfrac``/``\\tfrac`` become ``\\frac``, spacing
macros, ``$``, ``\\left``/``\\right``, currency, units, degrees and thousands separators go away,
Unicode operators become ASCII. Everything here is linear-time string work (no regex with
nested quantifiers), so it is safe on hostile input of bounded length.
"""

from __future__ import annotations

import re
from fractions import Fraction

from .idioms import split_glued_exponent
from .unicode import to_ascii
from .units import UNIT_WORDS, canonical_unit, merge_compound, rstrip_space, split_units

# Literal replacements applied in order (longest/most specific first).
_REPLACE = (
    ("\\dbinom", "\\binom"), ("\\tbinom", "\\binom"), ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\cfrac", "\\frac"),
    ("\\left", ""), ("\\right", ""), ("\\bigl", ""), ("\\bigr", ""), ("\\Bigl", ""), ("\\Bigr", ""),
    ("\\displaystyle", ""), ("\\!", ""), ("\\,", ""), ("\\;", ""), ("\\:", ""), ("\\ ", " "),
    ("\\qquad", " "), ("\\quad", " "), ("~", " "), ("{,}", ""), ("\\%", "%"), ("\\$", ""),
    ("^{\\circ}", ""), ("^\\circ", ""), ("\\circ", ""), ("\\degree", ""), ("°", ""),
    ("\\cdot", "*"), ("\\times", "*"), ("\\ast", "*"), ("\\div", "/"),
    ("\\leq", "<="), ("\\geq", ">="), ("\\le", "<="), ("\\ge", ">="), ("\\neq", "!="), ("\\ne", "!="),
    ("\\lt", "<"), ("\\gt", ">"), ("\\varnothing", "\\{\\}"), ("\\emptyset", "\\{\\}"),
    ("\\mathbb{R}", "(-oo,oo)"), ("\\mathbb R", "(-oo,oo)"), ("\\mathbb", ""), ("\\infty", "oo"), ("\\infin", "oo"),
    ("−", "-"), ("–", "-"), ("—", "-"), ("×", "*"), ("·", "*"), ("÷", "/"), ("π", "\\pi "),
    ("√", "\\sqrt"), ("∞", "oo"), ("≤", "<="), ("≥", ">="), ("≠", "!="), ("∪", "\\cup"),
    ("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""), ("\\lbrace", "\\{"), ("\\rbrace", "\\}"), ("\\lbrack", "["), ("\\rbrack", "]"),
    ("\\mathrm", "\\text"), ("\\textbf", "\\text"), ("\\mbox", "\\text"), ("\\textrm", "\\text"),
    ("\\mathbf", ""), ("\\boldsymbol", ""), ("\\operatorname", ""),
)

NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
                                                   "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100}
"""A whole answer written as one number word."""

MAX_NORMALIZE = 20_000
"""Longer answers are returned unchanged (the parser refuses anything over its own limit)."""

HEDGE_WORDS = (" or ", "\\text{or}", "\\text{ or }", " either ", "/or ", " and/or ")

_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3})((?:,\d{3})+)(?![\d])")
_TEXT = re.compile(r"\\text\{([^{}]*)\}")
_NAME = re.compile(r"^[A-Za-z](?:_\{?\w+\}?)?$")
_CHOOSE = re.compile(r"\{([^{}]{1,40})\\choose([^{}]{1,40})\}")
_EMPTY_SET_WORDS = ("empty set", "the empty set", "\\{ \\}")
_REPEATING = re.compile(r"(-?)(\d{0,12})\.(\d{0,12})\\overline\{(\d{1,12})\}")
_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![a-z])")
_SPACES = re.compile(r"\s+")
_SCI_X = re.compile(r"(\d)[ \t]{0,3}[xX][ \t]{0,3}(?=10[ \t]{0,3}\^)")
"""``3 x 10^6``, ``2.5x10^3``: a letter x between a number and a power of ten is a times sign."""
_STARS_POW = re.compile(r"(?<=[\w)\]}])[ \t]{0,3}\*\*[ \t]{0,3}(?=[-+\w({])")
"""``10**6``: a programmer's power."""
_MIXED = re.compile(r"^(-?)(\d{1,9})\s*(?:\\frac\{(\d{1,9})\}\{(\d{1,9})\}|\s(\d{1,9})/(\d{1,9}))$")


def mixed_to_fraction(s: str) -> str:
    """Read a whole answer written as a mixed number as one fraction.

    ``2\\frac{1}{3}`` and ``2 1/3`` become ``\\frac{7}{3}`` (the school convention that MATH-style
    answers follow); only a proper fraction after a whole number qualifies, so ``2\\frac{4}{3}``
    stays a product.
    """
    m = _MIXED.match(s)
    if not m:
        return s
    sign, whole = m.group(1), int(m.group(2))
    num, den = (int(m.group(3)), int(m.group(4))) if m.group(3) else (int(m.group(5)), int(m.group(6)))
    if not 0 < num < den:
        return s
    return f"{sign}\\frac{{{whole * den + num}}}{{{den}}}"


def _text_repl(m: re.Match) -> str:
    inner = m.group(1).strip()
    if inner.lower() in ("or", "and"):
        return f" {inner.lower()} "
    if not inner or all(w.strip(".,").lower() in UNIT_WORDS for w in inner.split()):
        return ""
    return inner


def cut_approximation(s: str) -> str:
    """Judge ``exact \\approx decimal`` by the exact value.

    ``\\sqrt{2} \\approx 1.414`` -> ``\\sqrt{2}``; ``\\pi\\ (\\approx 3.14)`` -> ``\\pi``. When nothing exact
    precedes (``\\approx 1.41``) or only a variable does (``x \\approx 1.41``), the approximation is
    the answer (``1.41``, ``x = 1.41``).
    """
    i = s.find("\\approx")
    if i < 0:
        return s
    head, tail = rstrip_space(s[:i]), s[i + len("\\approx"):].split("\\approx")[0].strip()
    if head.endswith(("(", "[")):
        head = rstrip_space(head[:-1])
    if not head:
        return tail.rstrip(")]").strip()
    if _NAME.match(head):
        return f"{head} = {tail}"
    return head.rstrip("=, ").rstrip()


def normalize(s: str, letters_are_units: bool = False) -> str:
    """Return the canonical plain form of an answer string (see module docstring).

    Args:
        s: The extracted answer (or the gold).
        letters_are_units: A bare single letter after a number (``5 m``) is a unit, not a symbol;
            the caller sets this when the other side is a plain number.
    """
    return normalize_with_unit(s, letters_are_units)[0]


def normalize_with_unit(s: str, letters_are_units: bool = False) -> tuple[str, str | None]:
    """:func:`normalize`, plus the canonical trailing unit it dropped (None when there was none)."""
    if len(s) > MAX_NORMALIZE:
        return s, None  # far over the parser's limit: it will refuse it; don't spend time here
    s = split_glued_exponent(to_ascii(s.strip()).replace("\\$", "").replace("$", ""))  # 1.5E3m -> 1.5E3 m
    if "approx" in s:
        s = cut_approximation(s)
    if "**" in s:
        s = _STARS_POW.sub("^", s)
    if "10" in s:
        s = _SCI_X.sub(r"\1*", s)
    if "circ" in s or "degree" in s:
        s = _degrees_in_trig(s)
    s, unit = split_units(merge_compound(s.strip().rstrip(" .;")), letters_are_units)
    s = s.replace("\x01", "").replace("\\\\", "\x01")  # keep row breaks apart from "\\ " spacing
    for a, b in _REPLACE:
        if a in s:
            s = s.replace(a, b)
    s = s.replace("\x01", "\\\\")
    if "\\overline" in s:
        s = _REPEATING.sub(_repeating_repl, s)
    if "\\choose" in s:
        s = _CHOOSE.sub(r"\\binom{\1}{\2}", s)
    if "\\text" in s:
        s = _TEXT.sub(_text_repl, s)
    s = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), s)
    s = _SPACES.sub(" ", s).strip()
    for prefix in ("USD", "US", "Rs.", "Rs", "€", "£", "¥"):
        if s.startswith(prefix) and s[len(prefix):].lstrip()[:1].isdigit():
            s = s[len(prefix):].lstrip()
    s = s.rstrip(" .;")
    if s.lower() in _EMPTY_SET_WORDS:
        return "\\{\\}", None
    if s.lower() in NUMBER_WORDS:  # "The answer is five."
        s = str(NUMBER_WORDS[s.lower()])
    s, late_unit = split_units(s, letters_are_units)
    unit = unit or late_unit
    return mixed_to_fraction(s.strip()), canonical_unit(unit) if unit else None


def _repeating_repl(m: re.Match) -> str:
    """``0.1\\overline{6}`` -> ``\\frac{1}{6}``: a repeating decimal is an exact fraction."""
    sign, whole, fixed, rep = m.group(1), m.group(2) or "0", m.group(3), m.group(4)
    value = Fraction(int(whole)) + (Fraction(int(fixed), 10 ** len(fixed)) if fixed else 0)
    value += Fraction(int(rep), (10 ** len(rep) - 1) * 10 ** len(fixed))
    return f"{sign}\\frac{{{value.numerator}}}{{{value.denominator}}}"


def _degrees_in_trig(s: str) -> str:
    """Inside a trig function a degree mark converts to radians: ``\\cos 60^\\circ`` is 1/2."""
    if not _TRIG.search(s):
        return s
    for mark in ("^{\\circ}", "^\\circ", "\\circ", "\\degree"):
        s = s.replace(mark, "(\\pi/180)")
    return s


def is_hedged(s: str) -> bool:
    """True when an answer offers alternatives (``8 or 9``, ``either 3 or 4``)."""
    low = f" {s.lower()} "
    return any(w in low for w in HEDGE_WORDS)
