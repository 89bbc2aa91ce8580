"""Echo detection: which parts of a reasoner step merely repeat injected text.

Small instruction-tuned models often answer an injected strategy by copying it (``Step 2
(decomposition: Break the problem into smaller sub-problems.)``) instead of performing it. Such
text must neither count as following the strategy (``R_follow``) nor show up in strategy counts,
so detection runs on :func:`generated_content`, the step with its echoed clauses removed.

Definitions (the documented contract, tested in ``tests/test_echo.py``):

* **normalised words** — the text lower-cased, every run of characters other than ``a-z0-9``
  replaced by one space, split on spaces (``"Sub-problems."`` -> ``["sub", "problems"]``).
* **clause** — a piece of the step between line breaks, ``:`` / ``;``, parentheses/brackets, or a
  sentence end (``.``, ``!``, ``?`` followed by whitespace or the end of the text).
* **header clause** — a clause that starts (after punctuation) with ``Step <number>`` or with a
  strategy name followed by ``:`` or ``]``, e.g. ``Step 2 (``, ``[validation]``, ``validation:``.
* **copied clause** — a clause whose normalised words are at least :data:`COPY_THRESHOLD` (60 %)
  covered by word trigrams that occur in some reference text (every text any protocol injects:
  see :func:`rsim_env.render.injected_texts`); a clause of one or two words is copied only when
  it *is* a whole reference (``"Next,"``, a strategy name), so ``"Plan:"`` or ``"First,"`` stay. Clauses without any word are neutral.
* an **answer clause** — one holding a closed, non-empty ``\\boxed{...}`` — is never copied (the
  answer is the reasoner's own; ``The final answer is \\boxed{7}.`` performs termination), unless
  the box holds a reference's placeholder (``\\boxed{answer}``). Boxed answers are never cut into clauses.
* a **number clause** — one with a number that no reference contains (the reasoner's own
  arithmetic: ``So the final answer is 25.``) — is never copied either.
* **echo clause** = header clause, a clause inside the parentheses/brackets a header clause opens
  (``Step 2 (deductive reasoning: Apply the rule.)`` is all echo), or a copied clause.
* A step's **echo fraction** is the share of its normalised words that lie in echo clauses,
  and the step **is an echo** when that fraction is at least :data:`ECHO_STEP_THRESHOLD` (50 %).

Everything here is pure Python on bounded input (the first :data:`MAX_SCAN` characters).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from .answers.extract import boxed_spans
from .strategies import STRATEGIES, TERMINATION, detect

__all__ = ["detect_generated", "COPY_THRESHOLD", "ECHO_STEP_THRESHOLD", "MAX_SCAN", "words", "clauses", "is_header", "is_copied",
           "echo_fraction", "is_echo", "generated_content"]

COPY_THRESHOLD = 0.6
"""A clause is copied when at least this share of its words is covered by reference trigrams."""
ECHO_STEP_THRESHOLD = 0.5
"""A step is an echo when at least this share of its normalised words is in echo clauses."""
MAX_SCAN = 20_000
"""Characters of a step that are examined (bounds the cost on hostile, huge steps)."""

_NON_WORD = re.compile(r"[^a-z0-9]+")
_SPLIT = re.compile(r"(\n+|[:;()\[\]]|[.!?](?=\s|$))")
_NAMES = "|".join(re.escape(s.name) for s in STRATEGIES)
_HEADER = re.compile(rf"^\W*(?:step\s*\d+\b|(?:{_NAMES})\s*(?:[:\]]|$))", re.IGNORECASE)


def words(text: str) -> list[str]:
    """Normalised words of ``text`` (see module docstring)."""
    return _NON_WORD.sub(" ", text.lower()).split()


_BOX = "\ue000"  # stands for one boxed answer while the text is cut into clauses


def clauses(text: str) -> list[str]:
    """``text`` cut into clauses; joining them gives back ``text[:MAX_SCAN]`` exactly."""
    text = text[:MAX_SCAN]
    spans = [(a, b) for a, b, _ in boxed_spans(text)] if _BOX not in text else []
    masked, boxes, last = [], [], 0
    for a, b in spans:
        masked.append(text[last:a] + _BOX)
        boxes.append(text[a:b])
        last = b
    masked.append(text[last:])
    flat = "".join(masked)
    out, start = [], 0
    for m in _SPLIT.finditer(flat):
        out.append(flat[start:m.end()])
        start = m.end()
    if start < len(flat):
        out.append(flat[start:])
    it = iter(boxes)
    return [_unmask(c, it) for c in out if c]


def _unmask(clause: str, boxes) -> str:
    while _BOX in clause:
        clause = clause.replace(_BOX, next(boxes), 1)
    return clause


def _is_answer(clause: str, refs: tuple[str, ...]) -> bool:
    if "{" not in clause:
        return False
    placeholders = _reference_boxes(refs)  # e.g. "answer" in "\\boxed{answer}": a copy, not an answer
    return any(content.strip() and content.strip().lower() not in placeholders for _, _, content in boxed_spans(clause))


@lru_cache(maxsize=64)
def _reference_numbers(refs: tuple[str, ...]) -> frozenset[str]:
    return frozenset(w for r in refs for w in words(r) if w.isdigit())


@lru_cache(maxsize=64)
def _reference_boxes(refs: tuple[str, ...]) -> frozenset[str]:
    return frozenset(c.strip().lower() for r in refs for _, _, c in boxed_spans(r))


def _trigrams(ws: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + 3]) for i in range(len(ws) - 2)}


@lru_cache(maxsize=64)
def _reference_index(references: tuple[str, ...]) -> tuple[frozenset, tuple[str, ...]]:
    grams: set[tuple[str, ...]] = set()
    joined = []
    for ref in references:
        ws = words(ref)
        grams |= _trigrams(ws)
        joined.append(" " + " ".join(ws) + " ")
    return frozenset(grams), tuple(joined)


_REFERENCES: list[Callable[[], Iterable[str]]] = []  # the provider of the default references, set once


def set_default_references(provider: Callable[[], Iterable[str]]) -> None:
    """Name the function that lists the default references (every text any protocol injects).

    :mod:`rsim_env.render` sets it to :func:`~rsim_env.render.injected_texts` when it loads (``import rsim_env``
    always loads it). Echo detection sits below the kinds and protocols that own those texts, so it asks for
    them through this hook instead of importing them: no import circle.
    """
    _REFERENCES[:] = [provider]


def _default_references() -> tuple[str, ...]:
    assert _REFERENCES, "rsim_env.render sets the default references when it loads"
    return tuple(_REFERENCES[0]())


def is_header(clause: str) -> bool:
    """True if ``clause`` starts like a step header (``Step 3 (``, ``validation:``, ``[summarization]``)."""
    return bool(_HEADER.match(clause))


def is_copied(clause: str, references: Iterable[str] | None = None) -> bool:
    """True if ``clause`` is mostly a copy of reference text (see module docstring)."""
    refs = tuple(references) if references is not None else _default_references()
    grams, joined = _reference_index(refs)
    ws = words(clause)
    if not ws or _is_answer(clause, refs):
        return False
    if any(w.isdigit() and w not in _reference_numbers(refs) for w in ws):
        return False
    if len(ws) < 3:
        needle = " " + " ".join(ws) + " "
        return needle in joined
    covered = [False] * len(ws)
    for i in range(len(ws) - 2):
        if tuple(ws[i:i + 3]) in grams:
            covered[i] = covered[i + 1] = covered[i + 2] = True
    return sum(covered) / len(ws) >= COPY_THRESHOLD


def _split(step: str, references: Iterable[str] | None) -> list[tuple[str, bool]]:
    if not isinstance(step, str):
        raise TypeError(f"echo detection takes the step text as str, got {type(step).__name__}.")
    refs = tuple(references) if references is not None else _default_references()
    out, close = [], ""  # close: the bracket that ends the header we are inside ("" = none)
    for c in clauses(step):
        if close:
            out.append((c, True))
            if c.endswith(close) or "\n" in c:
                close = ""
            continue
        header = is_header(c)
        out.append((c, header or is_copied(c, refs)))
        if header and c[-1:] in "([":
            close = ")" if c.endswith("(") else "]"
    return out


def echo_fraction(step: str, references: Iterable[str] | None = None) -> float:
    """Share of the step's normalised words inside echo clauses (0.0 for a step with no word)."""
    parts = [(len(words(c)), e) for c, e in _split(step, references)]
    total = sum(n for n, _ in parts)
    if not total:
        return 0.0
    return sum(n for n, e in parts if e) / total


def is_echo(step: str, references: Iterable[str] | None = None) -> bool:
    """True if the step mostly repeats injected text or step headers (fraction >= 50 %)."""
    return echo_fraction(step, references) >= ECHO_STEP_THRESHOLD


def generated_content(step: str, references: Iterable[str] | None = None) -> str:
    """The step with its echo clauses removed: the text strategy detection and ``R_follow`` see."""
    return "".join(c for c, e in _split(step, references) if not e)


def detect_generated(step: str, shown: str | None = None) -> set[int]:
    """Strategies a generated step shows: the rule behind ``R_follow`` and strategy counts.

    :func:`rsim_env.detect` on :func:`generated_content` (echo clauses removed), plus termination
    when the step is not an echo and ``shown`` (the step as the transcript reads it, lead-in
    included; default ``step``) holds a closed, non-empty ``\\boxed{...}`` — under lead-in
    protocols the injected lead opens the box and the generated answer fills and closes it.
    """
    found = detect(generated_content(step))
    shown = step if shown is None else shown
    if step.strip() and not is_echo(step):
        spans = boxed_spans(shown[-MAX_SCAN:])
        if spans and spans[-1][2].strip():
            found.add(TERMINATION)
    return found
