"""Find the final answer in a whole model response (chain of thought included).

Priority, first hit wins: ``<answer>...</answer>`` (outside any ``<think>`` block first), the
last ``\\boxed{}``/``\\fbox{}`` (nested braces), "the (final) answer is ...", multiple-choice
phrasings, then (configurable) the value of a final "X is V." statement made only of math, numbers and
units, else the last number. All scanning is linear-time: braces are matched
by a single pass and regexes have no nested quantifiers, so megabyte inputs cost milliseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .idioms import E_EXPONENT
from .units import SINGLE_LETTER_UNITS, UNIT_WORDS

MAX_SCAN = 100_000
"""Only the last this-many characters of a response are inspected (the answer is at the end)."""

_BOX = re.compile(r"\\(?:boxed|fbox)\s*")
_ANSWER_IS = re.compile(
    r"(?i)(?:final\s{1,3}answer|\banswer)(?: to (?:the|this) (?:question|problem))?[ \t]{0,3}"
    r"(?:is[ \t]{0,3}:?|:|=)[ \t*]{0,6}(?=[^\s])")
"""The anchor only; the answer is the rest of the line after the *last* anchor (a restated answer
wins over the first one on the same line)."""
_LETTER = r"([A-J])"
_ANY_CASE_LETTER = r"([A-Ja-j])"
_CHOICE_PATTERNS = (
    re.compile(r"(?i:answer)[ \t]{0,3}(?:is|:)?[ \t:*]{0,6}\(?" + _LETTER + r"\)?(?![\w'])"),
    re.compile(r"\\text(?:bf)?\{ ?\(?" + _LETTER + r"\)? ?\}"),
    re.compile(r"(?i:option|choice)\s+\(?" + _LETTER + r"\)?(?![\w'])"),
    re.compile(r"\(" + _ANY_CASE_LETTER + r"\)"),
    re.compile(r"(?m)^[ \t*]{0,4}" + _LETTER + r"[).:]\**(?:\s|$)"),
)
_NUMBER = re.compile(
    r"\\[dt]?frac\{-?\d{1,12}\}\{\d{1,12}\}|-?\d[\d,]*(?:\.\d+)?(?:[ \t]?/[ \t]?\d+(?:\.\d+)?(?!\d|\.\d))?")
"""The last-number fallback reads a final fraction whole (``3/8``, ``\\frac{3}{8}``), not just ``8``."""
_HASHES = re.compile(r"####[ \t]*(?=[-$\d.\\])")
_PROSE = re.compile(r"[A-Za-z]{3,}[ \t]+[A-Za-z]{2,}")
_BOOL_WORD = re.compile(r"(?i)^[\s*#>]*(yes|no|true|false)\**(?:[.,!:;]|\s*$)")
"""A leading yes/no that stands alone ("No, ...", "Yes."), not "No doubt, ..."."""
_LAST_SENTENCE = re.compile(r"[.!?]\s")
_TRUTH = re.compile(r"(?i)\b(true|false)\b")
_NEGATION = re.compile(r"(?i)\b(?:not|never|no)\b|n't")
_CHOICE_IN_PHRASE = re.compile(r"\(([A-Ja-j])\)|(?<![\w'])([A-J])(?![\w'])")
_MATH_SPAN = re.compile(r"\$\$?([^$]{1,300})\$\$?|\\\((.{1,300}?)\\\)|\\\[(.{1,300}?)\\\]")
"""A math span in an answer phrase: ``$...$``, ``$$...$$``, ``\\(...\\)`` or ``\\[...\\]``."""
_SUPERSCRIPTS = frozenset("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079\u207a\u207b\u207f")
"""Unicode superscript digits and signs (``x²``, ``10⁻³``)."""
_COPULA = re.compile(r"(?i)\b(?:is|are|was|were|equals|takes|becomes)[ \t]+")
_STATEMENT_WORDS = UNIT_WORDS | SINGLE_LETTER_UNITS | {"and", "infty"}
"""Words allowed in a final statement's value (units and "and"; anything else is prose)."""
_SENTENCE_END = re.compile(r"\.(?:\s|$)|\s(?:because|since|which|so)\s")
_HEDGE_BETWEEN = re.compile(r"(?i)^[\s$.,]*(?:or|and/or|,\s*or|maybe|possibly)[\s$.,]*$")
_AND_BETWEEN = re.compile(
    r"(?i)^[\s$]*(?:,|and|,\s*and|&|\\text\{\s*and\s*\})[\s$]*(?:[a-z](?:_\d)?\s?=\s?)?[\s$]*$")


@dataclass(frozen=True)
class Extraction:
    """An extracted answer: its ``text``, the ``method`` that found it, and ``hedged``."""

    text: str
    method: str
    hedged: bool = False


def boxed_spans(text: str) -> list[tuple[int, int, str]]:
    """All ``\\boxed{...}``/``\\fbox{...}`` contents as ``(start, end, content)``, in order."""
    out, close_of, stack = [], {}, []
    if "\\boxed" not in text and "\\fbox" not in text:
        return out
    for j, ch in enumerate(text):  # one pass: match every brace pair (linear, no rescans)
        if ch == "{":
            stack.append(j)
        elif ch == "}" and stack:
            close_of[stack.pop()] = j
    for m in _BOX.finditer(text):
        i = m.end()
        if i < len(text) and text[i] == "{":
            if i in close_of:
                out.append((m.start(), close_of[i] + 1, text[i + 1:close_of[i]]))
        elif i < len(text):  # \boxed 5
            tok = re.match(r"[^\s$]+", text[i:])
            if tok:
                out.append((m.start(), i + tok.end(), tok.group()))
    return out


def _from_boxed(text: str) -> Extraction | None:
    spans = boxed_spans(text)
    if not spans:
        return None
    last = spans[-1]
    hedged = False
    if len(spans) > 1 and spans[-2][2].strip() != last[2].strip():
        between = text[spans[-2][1]:last[0]]
        hedged = len(between) < 60 and bool(_HEDGE_BETWEEN.match(between))
        if not hedged:  # "\boxed{2} and \boxed{3}": several solutions, boxed one by one
            parts = [last[2].strip()]
            k = len(spans) - 1
            while k > 0 and _AND_BETWEEN.match(text[spans[k - 1][1]:spans[k][0]][:60]):
                k -= 1
                parts.insert(0, spans[k][2].strip())
            return Extraction(", ".join(parts), "boxed")
    return Extraction(last[2].strip(), "boxed", hedged)


def from_answer_is(text: str) -> Extraction | None:
    """The answer after the last "the answer is ..." anchor (or GSM8K's ``#### 72`` marker), or None."""
    found = None
    for found in _ANSWER_IS.finditer(text):  # noqa: B007 - keep the last anchor
        pass
    for hashes in _HASHES.finditer(text):  # GSM8K's "#### 72" marker, when it comes later
        if found is None or hashes.start() > found.start():
            found = hashes
    if found is None:
        return None
    tail = text[found.end():found.end() + 300].split("\n", 1)[0].replace("\\$", "")
    math = _MATH_SPAN.search(tail)
    if math:
        tail = next(g for g in math.groups() if g is not None)
    else:
        end = _SENTENCE_END.search(tail)
        tail = tail[: end.start()] if end else tail
    tail = tail.strip().strip("*").strip()
    return Extraction(tail, "answer_is") if tail else None


def _choice(text: str) -> Extraction | None:
    """The chosen letter; hedged when the answer phrase names two letters ("(A) or (C)")."""
    letter = choice_letter(text)
    if letter is None:
        return None
    phrase = from_answer_is(text)
    letters = {a.upper() or b for a, b in _CHOICE_IN_PHRASE.findall(phrase.text)} if phrase else set()
    return Extraction(letter, "choice", len(letters) > 1)


def _bool_word(text: str) -> Extraction | None:
    """A yes/no answer: the first word of the response or of its last paragraph, else the one
    truth word of the last sentence when that sentence has no negation ("So the claim is true.")."""
    for part in (text, text.rstrip().rsplit("\n\n", 1)[-1]):
        m = _BOOL_WORD.match(part)
        if m:
            return Extraction(m.group(1), "bool_word")
    last = _LAST_SENTENCE.split(text.rstrip().rstrip(".!").rsplit("\n", 1)[-1])[-1]
    words = {w.lower() for w in _TRUTH.findall(last)}
    if len(words) == 1 and not _NEGATION.search(last):
        return Extraction(words.pop(), "bool_word")
    return None


def choice_letter(text: str) -> str | None:
    """The multiple-choice letter in ``text`` (last match of the most specific pattern)."""
    stripped = text.strip().strip("*$ ").strip()
    if re.fullmatch(r"\(?([A-Ja-j])\)?[.:]?", stripped) and stripped not in ("a", "a.", "a:"):
        return stripped.strip("().:").upper()
    for pat in _CHOICE_PATTERNS:
        hits = pat.findall(text)
        if hits:
            return hits[-1].upper()
    return None


def _last_statement(text: str) -> Extraction | None:
    """The value a final "X is/takes/equals V." sentence states, when V is only math, numbers and unit
    words (so it holds the response's last number): ``(−∞, −1) ∪ (3, ∞)``, ``1 hour and 30 minutes``,
    ``$3 \\times 10^8$ m/s`` -- read whole where the last-number fallback would take ``3``, ``30``, ``8``."""
    line = text.rstrip()[-400:].rsplit("\n", 1)[-1]
    sentence = _LAST_SENTENCE.split(line)[-1].rstrip().rstrip(".!")
    cop = None
    for cop in _COPULA.finditer(sentence):  # noqa: B007 - keep the last one
        pass
    if cop is None:
        return None
    tail = sentence[cop.end():].strip()
    math = _MATH_SPAN.search(tail)
    rest = _MATH_SPAN.sub(" ", tail) if math else tail
    # E-notation's exponent is no word (1.5E3 m); with a Unicode power (x², a³) single letters are variables
    words = re.findall(r"[A-Za-z]+", re.sub(r"\\[A-Za-z]+", " ", E_EXPONENT.sub("", rest)))
    powers = any(c in _SUPERSCRIPTS for c in tail)
    if not tail or len(tail) > 120 or not all(w.lower() in _STATEMENT_WORDS or (powers and len(w) == 1)
                                              for w in words):
        return None
    value = next(g for g in math.groups() if g is not None) if math else tail
    # the tail ends the response, so a digit in it means the response's last number is inside it
    return Extraction(value.strip(), "last_statement") if any(c.isdigit() for c in value) else None


def _last_number(text: str) -> Extraction | None:
    found = None
    for found in _NUMBER.finditer(text[-5000:]):  # noqa: B007 - keep the last match
        pass
    return Extraction(found.group().rstrip(","), "last_number") if found else None


def last_answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>...</answer>`` (two ``rfind`` calls: linear time)."""
    low = text.lower()
    end = low.rfind("</answer>")
    start = low.rfind("<answer>", 0, end) if end >= 0 else -1
    return text[start + len("<answer>"):end] if start >= 0 else None


def _search(text: str, choice: bool) -> Extraction | None:
    inner = last_answer_tag(text)
    if inner is not None:
        boxed = _from_boxed(inner)
        if boxed:
            return Extraction(boxed.text, "answer_tag", boxed.hedged)
        if _PROSE.search(inner):  # "<answer>The total is 7 apples.</answer>": a sentence
            inside = from_answer_is(inner) or (_choice(inner) if choice else _last_number(inner))
            if inside:
                return Extraction(inside.text, "answer_tag", inside.hedged)
        return Extraction(inner.strip(), "answer_tag")  # empty: an explicit "no answer"
    found = _from_boxed(text)
    if found:
        return found
    if choice:
        found = _choice(text)
        if found:
            return found
    found = from_answer_is(text)
    if found:
        return found
    if not choice:
        m = _CHOICE_PATTERNS[0].search(text[-300:]) or _CHOICE_PATTERNS[2].search(text[-300:])
        if m:
            return Extraction(m.group(1), "choice")
    return None


def extract(response: str, answer_type: str = "auto", last_number: bool = True) -> Extraction | None:
    """Extract the final answer from ``response`` (see module docstring for the priority).

    Args:
        response: The whole model response.
        answer_type: ``"choice"`` makes multiple-choice phrasings win over "the answer is".
        last_number: Fall back to the last number in the text (GSM8K-style data).

    Returns:
        An :class:`Extraction`, or None when no answer is found.
    """
    text = response[-MAX_SCAN:].replace("\x00", "")
    low = text.lower()
    close = low.rfind("</think>")
    if close >= 0:
        outside = text[close + len("</think>"):]
    elif "<think>" in low:
        return None  # unclosed think block: the response was cut off before any final answer
    else:
        outside = text
    choice = answer_type == "choice"
    for part in (outside, text) if outside.strip() and outside != text else (text,):
        found = _search(part, choice)
        if found:
            # An empty <answer></answer> or \boxed{} is the model's final word: no answer, and
            # never a cue to go looking for numbers in the reasoning.
            return found if found.text else None
    if answer_type == "bool":
        return _bool_word(text)
    if not last_number or answer_type == "choice":
        return None
    return _last_statement(text) or _last_number(text)
