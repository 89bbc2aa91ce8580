"""Plain-text Unicode math to the ASCII/LaTeX forms the parser reads.

Models and datasets write the same answer with Unicode operators and digits: U+2212 minus,
``×``/``·``/``÷``, ``√``/``∛``, superscript powers (``x²``, ``10⁻³``), vulgar fractions (``½``,
``2¾``), fullwidth and other-script digits (``３``, ``٣``), ``∞``/``∅``/``ℝ``/Greek letters.
:func:`to_ascii` maps each to its ASCII or LaTeX spelling in one linear pass, then applies NFKC.

Bidirectional-override and zero-width characters are *kept*: they change how a string displays
(``1\\u202e2`` shows as "21"), so guessing the intended digits would be a false positive; the
parser refuses them instead.
"""

from __future__ import annotations

import unicodedata

_CHARS = {
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-", "\u2011": "-", "\u2012": "-", "\ufe63": "-",
    "\u00d7": "*", "\u2715": "*", "\u2a2f": "*", "\u00b7": "*", "\u22c5": "*", "\u2219": "*", "\u2217": "*",
    "\u00f7": "/", "\u2215": "/", "\u2044": "/",
    "\u2264": "<=", "\u2a7d": "<=", "\u2265": ">=", "\u2a7e": ">=", "\u2260": "!=",
    "\u2248": "\\approx ", "\u2243": "\\approx ", "\u2245": "\\approx ",
    "\u221e": "\\infty ", "\u2205": "\\emptyset ", "\u211d": "\\mathbb{R}", "\u2208": "\\in ",
    "\u222a": "\\cup ", "\u2229": "\\cap ", "\u00b1": "\\pm ", "\u2213": "\\mp ",
    "\u221a": "\\sqrt", "\u221b": "\\sqrt[3]", "\u221c": "\\sqrt[4]", "\u00b0": "^\\circ ",
    "\u2032": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
    "\u03c0": "\\pi ", "\u03b1": "\\alpha ", "\u03b2": "\\beta ", "\u03b3": "\\gamma ", "\u03b4": "\\delta ",
    "\u03b5": "\\epsilon ", "\u03b8": "\\theta ", "\u03bb": "\\lambda ", "\u03bc": "\\mu ", "\u03c1": "\\rho ",
    "\u03c3": "\\sigma ", "\u03c4": "\\tau ", "\u03c6": "\\phi ", "\u03c9": "\\omega ",
}
_SUPER = dict(zip("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207d\u207e\u207f",
                  "0123456789+-()n"))
_DIGIT_GAPS = frozenset("\u00a0\u2009\u202f\u2008\u2007")
_SUB = dict(zip("\u2080\u2081\u2082\u2083\u2084\u2085\u2086\u2087\u2088\u2089", "0123456789"))


def _vulgar(ch: str) -> str | None:
    """``½`` -> `` 1/2`` (the leading space makes ``2½`` read as the mixed number ``2 1/2``)."""
    if unicodedata.category(ch) != "No":
        return None
    nfkc = unicodedata.normalize("NFKC", ch)
    return " " + nfkc.replace("\u2044", "/") + " " if "\u2044" in nfkc else None


def to_ascii(s: str) -> str:
    """Map Unicode math in ``s`` to ASCII/LaTeX (see module docstring); ASCII input is unchanged."""
    if s.isascii():
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch in _SUPER or ch in _SUB:  # a run of super/subscripts becomes one ^{...} / _{...}
            table, mark = (_SUPER, "^") if ch in _SUPER else (_SUB, "_")
            j = i
            while j < n and s[j] in table:
                j += 1
            out.append(mark + "{" + "".join(table[c] for c in s[i:j]) + "}")
            i = j
            continue
        if ch in _DIGIT_GAPS and 0 < i < n - 1 and s[i - 1].isdigit() and s[i + 1].isdigit():
            i += 1  # 1\u202f000\u202f000: thin/no-break spaces group thousands
            continue
        if ch.isascii():
            out.append(ch)
        elif ch in _CHARS:
            out.append(_CHARS[ch])
        elif (d := unicodedata.decimal(ch, None)) is not None:
            out.append(str(d))  # fullwidth, Arabic-Indic, Devanagari, ... digits
        else:
            out.append(_vulgar(ch) or unicodedata.normalize("NFKC", ch))
        i += 1
    return "".join(out)
