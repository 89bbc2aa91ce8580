"""Text-level normalisation of an extracted answer before parsing.

Turns the many ways people write the same LaTeX answer into one plain form the parser in
:mod:`rsim_env.answers.parser` understands: ``\\dfrac``/``\\tfrac`` become ``\\frac``, spacing
macros, ``$``, ``\\left``/``\\right``, currency, units, degrees and thousands separators go away,
Unicode operators become ASCII. Everything here is linear-time string work (no regex with
nested quantifiers), so it is safe on hostile input of bounded length.
"""

from __future__ import annotations

import re

# Literal replacements applied in order (longest/most specific first).
_REPLACE = (
    ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\cfrac", "\\frac"),
    ("\\left", ""), ("\\right", ""), ("\\bigl", ""), ("\\bigr", ""), ("\\Bigl", ""), ("\\Bigr", ""),
    ("\\displaystyle", ""), ("\\!", ""), ("\\,", ""), ("\\;", ""), ("\\:", ""), ("\\ ", " "),
    ("\\qquad", " "), ("\\quad", " "), ("~", " "), ("{,}", ""), ("\\%", "%"), ("\\$", ""),
    ("^{\\circ}", ""), ("^\\circ", ""), ("\\circ", ""), ("\\degree", ""), ("°", ""),
    ("\\cdot", "*"), ("\\times", "*"), ("\\ast", "*"), ("\\div", "/"),
    ("\\leq", "<="), ("\\geq", ">="), ("\\le", "<="), ("\\ge", ">="), ("\\neq", "!="), ("\\ne", "!="),
    ("\\lt", "<"), ("\\gt", ">"), ("\\infty", "oo"), ("\\infin", "oo"),
    ("−", "-"), ("–", "-"), ("—", "-"), ("×", "*"), ("·", "*"), ("÷", "/"), ("π", "\\pi "),
    ("√", "\\sqrt"), ("∞", "oo"), ("≤", "<="), ("≥", ">="), ("≠", "!="), ("∪", "\\cup"),
    ("\\lbrace", "\\{"), ("\\rbrace", "\\}"), ("\\lbrack", "["), ("\\rbrack", "]"),
    ("\\mathrm", "\\text"), ("\\textbf", "\\text"), ("\\mbox", "\\text"), ("\\textrm", "\\text"),
    ("\\mathbf", ""), ("\\boldsymbol", ""), ("\\operatorname", ""),
)

UNIT_WORDS = frozenset(
    """dollars dollar usd cents cent euros euro pounds yuan units unit degrees degree deg rad radians
    meters meter metres m cm mm km kg g mg lb lbs oz inches inch in feet foot ft yards yard miles mile
    seconds second sec s minutes minute min hours hour hrs hr h days day weeks week months month years
    year liters liter l ml gallons gallon mph kmh km/h m/s sq square cubic cm^2 m^2 cm^3 m^3 percent
    people persons students apples cookies points times ways items pages marbles books cups boxes
    watts w volts v joules j newtons n pa kpa hz""".split()
)
"""Words dropped when they trail a number (``5 cm``, ``\\text{ dollars}``); see :func:`strip_units`."""

HEDGE_WORDS = (" or ", "\\text{or}", "\\text{ or }", " either ", "/or ", " and/or ")

_THOUSANDS = re.compile(r"(?<![\d.])(\d{1,3})((?:,\d{3})+)(?![\d])")
_TEXT = re.compile(r"\\text\{([^{}]*)\}")
_GLUED_UNIT = re.compile(r"^(-?[\d.]+%?)([A-Za-z/^23]{1,8})$")
_SPACES = re.compile(r"\s+")
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


def strip_units(s: str) -> str:
    """Drop trailing unit words after a number (``12 cm`` -> ``12``, ``5 dollars`` -> ``5``).

    Only words in :data:`UNIT_WORDS` are dropped, so ``3x`` or ``2 pi`` keep their meaning.
    """
    m = _GLUED_UNIT.match(s)
    if m and m.group(2).lower() in UNIT_WORDS:
        return m.group(1)
    words = s.split(" ")
    while len(words) > 1 and words[-1].strip(".").lower() in UNIT_WORDS:
        words.pop()
    out = " ".join(words)
    return out if any(c.isdigit() for c in out) else s


def _text_repl(m: re.Match) -> str:
    inner = m.group(1).strip()
    if inner.lower() in ("or", "and"):
        return f" {inner.lower()} "
    if not inner or all(w.strip(".,").lower() in UNIT_WORDS for w in inner.split()):
        return ""
    return inner


def normalize(s: str) -> str:
    """Return the canonical plain form of an answer string (see module docstring)."""
    s = s.strip()
    for a, b in _REPLACE:
        if a in s:
            s = s.replace(a, b)
    s = s.replace("$", "")
    if "\\text" in s:
        s = _TEXT.sub(_text_repl, s)
    s = _THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(",", ""), s)
    s = _SPACES.sub(" ", s).strip()
    for prefix in ("USD", "US", "Rs.", "Rs", "€", "£", "¥"):
        if s.startswith(prefix) and s[len(prefix):].lstrip()[:1].isdigit():
            s = s[len(prefix):].lstrip()
    s = s.rstrip(" .;")
    return mixed_to_fraction(strip_units(s).strip())


def is_hedged(s: str) -> bool:
    """True when an answer offers alternatives (``8 or 9``, ``either 3 or 4``)."""
    low = f" {s.lower()} "
    return any(w in low for w in HEDGE_WORDS)
