"""Strip a trailing unit or label from an answer: ``12 cm^2``, ``5\\text{ cm}^2``,
``3\\,\\mathrm{kg\\,m/s^2}``, ``9.8 m/s²``, ``72 \\text{clips}``, ``40 dollars``.

The tail of the answer is tokenised once (linear time) and walked backwards while the tokens
form a unit expression: unit words, ``\\text{}``/``\\mathrm{}`` groups of unit words, powers
(``^2``, ``^{-1}``), ``/``, ``*``, ``\\cdot`` and spaces. What stays must still contain a digit
and must not end in an operator, so ``3x``, ``2\\pi`` and ``x^2`` keep their meaning.

Which words count:

* :data:`UNIT_WORDS` (``cm``, ``km``, ``kg``, ``dollars``, ``hours``, ...) always;
* single letters (``m``, ``s``, ``g``) only when written inside ``\\text{}``/``\\mathrm{}`` or
  when the caller says letters cannot be symbols (the gold is a plain number);
* any other plain word (``clips``, ``apples``) only when what stays is a plain number, so a
  counting answer's noun goes but an expression's letters never do.
"""

from __future__ import annotations

import re
from fractions import Fraction

UNIT_WORDS = frozenset(
    """dollars dollar usd cents cent euros euro pounds yuan rupees units unit degrees degree deg rad radians
    meters meter metres metre cm mm km nm um kg mg lb lbs oz inches inch in feet foot ft yards yard yd miles
    mile mi seconds second sec secs ms minutes minute min mins hours hour hrs hr days day weeks week months
    month years year yrs liters liter litres litre ml gallons gallon gal quarts pints mph kmh kph mps sq
    square cubic cu percent pct people persons students points times ways items pages watts volts joules
    newtons pa kpa mpa hz khz mhz ohm ohms kw kwh mw ev kev mev cal kcal mol mmol atm bar torr
    celsius fahrenheit kelvin""".split()
)
"""Unit words dropped after a number; see the module docstring for plain words and single letters."""

SINGLE_LETTER_UNITS = frozenset("m s g h l j v w n k a c t".split())
"""Single-letter units (metre, second, gram, hour, litre, joule, volt, watt, newton, kelvin, ampere,
coulomb, tonne); a letter can also be a symbol, so these need markup or a plain-number gold."""

MATH_WORDS = frozenset(
    """pi e i sqrt frac sin cos tan cot sec csc log ln exp and or to over plus minus choose mod pmod
    infty oo inf infinity cdot times divided by of is are not no yes none true false""".split()
)
"""Words never taken for a label (they carry meaning in an answer)."""

_TOKEN = re.compile(
    r"(?P<grp>\\(?:text|mathrm|mbox|textrm|rm|textnormal|mathit|operatorname)\s*\{(?:[^{}]|\{[^{}]*\})*\})"
    r"|(?P<ws>\s+|\\[,;:! ]|~|\\quad|\\qquad)|(?P<op>\\cdot|\\times|[*/])"
    r"|(?P<pow>\^\s*(?:\{\s*-?\d{1,2}\s*\}|-?\d))|(?P<word>[A-Za-z]+\.?)|(?P<other>\\[A-Za-z]+|.)",
    re.S,
)
_GROUP_BODY = re.compile(r"\{(.*)\}$", re.S)


def _is_unit_word(word: str, letters: bool, plain: bool) -> bool:
    w = word.rstrip(".").lower()
    if w in UNIT_WORDS:
        return True
    if len(w) == 1:
        return letters and w in SINGLE_LETTER_UNITS
    return plain and w not in MATH_WORDS and w.isalpha()


def _is_unit_expr(s: str, plain: bool) -> bool:
    """True when ``s`` (the inside of ``\\text{}``) is a unit expression such as ``kg\\,m/s^2``."""
    toks = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(s)]
    words = [t for k, t in toks if k == "word"]
    return bool(words) and all(k in ("ws", "op", "pow") or (k == "word" and _is_unit_word(t, True, plain))
                               for k, t in toks)


def _cut(s: str, letters: bool, plain: bool) -> int | None:
    """Index where a trailing unit expression starts, or None when there is none."""
    toks = [(m.lastgroup, m.start(), m.group()) for m in _TOKEN.finditer(s)]
    cut = None
    for k in range(len(toks) - 1, -1, -1):
        tok_type, start, text = toks[k]
        if tok_type == "grp":
            body = _GROUP_BODY.search(text)
            if not (body and _is_unit_expr(body.group(1), plain)):
                break
        elif tok_type == "word":
            if not _is_unit_word(text, letters and start > 0 and not s[start - 1].isalnum(), plain):
                break
        elif tok_type == "pow":  # a power belongs to a unit only when it follows one directly
            if k == 0 or toks[k - 1][0] not in ("word", "grp"):
                break
        elif tok_type not in ("ws", "op"):
            break
        if tok_type in ("grp", "word"):
            cut = start
    return cut


def rstrip_space(s: str) -> str:
    """Drop trailing spaces and LaTeX spacing macros (``\\,``, ``\\;``, ``~``) in linear time."""
    while True:
        t = s.rstrip().rstrip("~")
        if len(t) >= 2 and t[-2] == "\\" and t[-1] in ",;:!":
            t = t[:-2]
        elif t.endswith("\\"):  # "\ " (a LaTeX space) whose space rstrip() already took
            t = t[:-1]
        if t == s:
            return s
        s = t


def _keeps_number(prefix: str) -> bool:
    p = prefix.rstrip()
    return any(c.isdigit() for c in p) and not p.endswith(("+", "-", "*", "/", "^", "(", ",", "=", "\\"))


def _plain_number(prefix: str) -> bool:
    """No letters outside LaTeX commands: ``\\frac{3}{4}``, ``1,200``, ``\\$5`` are plain numbers."""
    return not any(c.isalpha() for c in re.sub(r"\\[A-Za-z]+", "", prefix))


def split_units(s: str, letters: bool = False) -> tuple[str, str | None]:
    """Split ``s`` into the value and its trailing unit/label (None when there is none).

    Args:
        s: The answer text (``$`` already removed).
        letters: Single-letter units written without markup (``5 m``) may be dropped, because
            the other side is a plain number so a letter cannot be a symbol there.
    """
    for plain in (False, True):
        cut = _cut(s, letters, plain)
        if cut is None:
            continue
        prefix = rstrip_space(s[:cut])
        if _keeps_number(prefix) and (not plain or _plain_number(prefix)):
            return prefix.rstrip(), s[cut:]
    return s, None


def strip_units(s: str, letters: bool = False) -> str:
    """``s`` without its trailing unit or label (see :func:`split_units`)."""
    return split_units(s, letters)[0]


_SYNONYMS = {
    "centimeter": "cm", "centimetre": "cm", "meter": "m", "metre": "m", "kilometer": "km", "kilometre": "km",
    "millimeter": "mm", "millimetre": "mm", "inch": "in", "inche": "in", "foot": "ft", "feet": "ft", "yard": "yd",
    "mile": "mi", "second": "s", "sec": "s", "minute": "min", "hour": "h", "hr": "h", "year": "yr",
    "dollar": "usd", "gram": "g", "kilogram": "kg", "milligram": "mg", "liter": "l", "litre": "l",
    "milliliter": "ml", "millilitre": "ml", "pound": "lb", "degree": "deg", "radian": "rad", "gallon": "gal",
    "hrs": "h", "mins": "min", "secs": "s", "yrs": "yr", "lbs": "lb", "newton": "n", "joule": "j", "watt": "w", "volt": "v", "kilowatt": "kw", "percent": "%", "pct": "%",
}
_UNIT_PART = re.compile(r"[A-Za-z]+|\^\s*\{?\s*-?\d+|/")


def canonical_unit(unit: str) -> str:
    """One spelling per unit: ``\\text{ centimeters}^2``, ``cm^{2}``, ``square cm`` -> ``cm^2``."""
    body = re.sub(r"\\(?:text|mathrm|mbox|textrm|rm|textnormal|mathit|operatorname)\b", "", unit)
    out: list[str] = []
    power = ""
    for part in _UNIT_PART.findall(body):
        if part[0] == "^":
            if out:
                out[-1] += "^" + part.lstrip("^{ ")
            continue
        if part == "/":
            out.append("/")
            continue
        w = part.lower()
        if w in ("square", "sq", "cubic", "cu"):
            power = "^2" if w in ("square", "sq") else "^3"
            continue
        w = _SYNONYMS.get(w) or _SYNONYMS.get(w[:-1] if w.endswith("s") and len(w) > 3 else w) or \
            (w[:-1] if w.endswith("s") and len(w) > 3 else w)
        out.append(w + power)
        power = ""
    return " ".join(out)


def _physical(unit: str) -> bool:
    words = re.findall(r"[a-z]+", unit)
    known = UNIT_WORDS | set(_SYNONYMS.values()) | SINGLE_LETTER_UNITS
    return bool(words) and all(w in known and w not in ("unit", "units") for w in words)


def units_conflict(a: str | None, b: str | None) -> bool:
    """True when both answers carry physical units and they differ (``5 m`` is not ``5 cm``).

    Canonical units come from :func:`canonical_unit`; a missing unit, a generic ``units`` or a
    counting label (``apples``) never conflicts.
    """
    return a is not None and b is not None and a != b and _physical(a) and _physical(b)


_F = Fraction
SCALES: dict[str, tuple[str, Fraction]] = {
    "m": ("L", _F(1)), "cm": ("L", _F(1, 100)), "mm": ("L", _F(1, 1000)), "km": ("L", _F(1000)),
    "um": ("L", _F(1, 10**6)), "nm": ("L", _F(1, 10**9)), "in": ("L", _F(254, 10**4)), "ft": ("L", _F(3048, 10**4)),
    "yd": ("L", _F(9144, 10**4)), "mi": ("L", _F(1609344, 1000)),
    "kg": ("M", _F(1)), "g": ("M", _F(1, 1000)), "mg": ("M", _F(1, 10**6)), "lb": ("M", _F(45359237, 10**8)),
    "oz": ("M", _F(45359237, 16 * 10**8)),
    "s": ("T", _F(1)), "ms": ("T", _F(1, 1000)), "min": ("T", _F(60)), "h": ("T", _F(3600)),
    "day": ("T", _F(86400)), "week": ("T", _F(604800)),
    "month": ("MONTH", _F(1)), "yr": ("MONTH", _F(12)),  # months and years convert exactly only to each other
    "l": ("L3", _F(1, 1000)), "ml": ("L3", _F(1, 10**6)),
    "mph": ("L/T", _F(1609344, 3600 * 1000)), "kmh": ("L/T", _F(1000, 3600)), "kph": ("L/T", _F(1000, 3600)),
}
"""Units with an exact factor to their base unit, by dimension (SI length, mass and time, the litre, speeds
written as one word). Calendar months and years are their own dimension (a year is not a whole number of
days), and units with regional variants (gallons, quarts) or offsets (degrees Celsius) are left out: an
answer in one of those and a gold in another unit still conflict."""
_DIMS = {"L": {"L": 1}, "M": {"M": 1}, "T": {"T": 1}, "MONTH": {"MONTH": 1}, "L3": {"L": 3}, "L/T": {"L": 1, "T": -1}}
_CANON_PART = re.compile(r"^([a-z]+)(?:\^(-?\d{1,2}))?$")


def _dimension(unit: str) -> tuple[tuple[tuple[str, int], ...], Fraction] | None:
    """``(dimension, factor to base units)`` of a canonical unit (``km / h``, ``cm^2``), or None if unknown."""
    dims: dict[str, int] = {}
    factor, sign = Fraction(1), 1
    for part in unit.split():
        if part == "/":
            sign = -1
            continue
        m = _CANON_PART.match(part)
        if not m or m.group(1) not in SCALES:
            return None
        dim, scale = SCALES[m.group(1)]
        power = sign * int(m.group(2) or 1)
        for d, p in _DIMS[dim].items():
            dims[d] = dims.get(d, 0) + p * power
        factor *= scale ** power
    return tuple(sorted((d, p) for d, p in dims.items() if p)), factor


def conversion(a: str | None, b: str | None) -> Fraction | None:
    """The factor that turns a value in canonical unit ``a`` into unit ``b`` (``h`` -> ``min``: 60), or None
    when either is missing or unknown or they measure different things."""
    if a is None or b is None:
        return None
    da, db = _dimension(a), _dimension(b)
    if da is None or db is None or da[0] != db[0]:
        return None
    return da[1] / db[1]


_COMPOUND = re.compile(r"^\s*(\d{1,9}(?:\.\d{1,9})?)\s*([A-Za-z]{1,12})\s*(?:,|and)?\s*(\d{1,9}(?:\.\d{1,9})?)\s*"
                       r"([A-Za-z]{1,12})\s*\.?\s*$")
_TEXT_WRAP = re.compile(r"\\(?:text|mathrm|mbox|textrm)\s*\{([^{}]{0,40})\}")


def merge_compound(s: str) -> str:
    """One quantity written in two units, larger first (``2 hours 30 minutes``, ``5 ft 3 in``,
    ``1\\text{ hour } 30\\text{ minutes}``), as one number in the smaller unit (``150\\text{ minutes}``).

    Anything else (different dimensions, the smaller unit first, more parts) is returned unchanged.
    """
    if len(s) > 200 or not any(c.isdigit() for c in s):
        return s
    m = _COMPOUND.match(_TEXT_WRAP.sub(r" \1 ", s))
    if not m:
        return s
    (n1, u1, n2, u2) = m.groups()
    c1, c2 = canonical_unit(u1), canonical_unit(u2)
    factor = conversion(c1, c2)
    if factor is None or factor <= 1:
        return s
    total = Fraction(n1) * factor + Fraction(n2)
    value = str(total.numerator) if total.denominator == 1 else f"\\frac{{{total.numerator}}}{{{total.denominator}}}"
    return f"{value}\\text{{ {u2}}}"  # markup: a one-letter unit (s, m, h) is a unit here, never a symbol
