"""Texts of the strategy-as-behaviour turn protocols ``chat+lead:action`` and ``chat+lead:exemplar``.

For a 135M reasoner the default strategy texts are a formatting wrapper, never a behaviour. These two
options of :mod:`rsim_env.protocols` try to turn a strategy into a move the reasoner visibly makes:

* :data:`ACTION_TEXTS` — per built-in strategy, an ``(instruction, lead)`` pair that asks for a concrete,
  visible move ("Recompute your last result another way ...", lead "Let me recompute the last result
  another way:"). Every lead is detected as its own strategy (:func:`rsim_env.strategies.detect`;
  tests/test_protocol_variants.py). Rows not in the table (registered extras) keep their own texts.
* :data:`EXEMPLARS` — per built-in strategy, a pool of one-line worked examples of the move on another
  problem. :func:`exemplar` picks one by a stable hash (CRC-32, the same in every process, unlike
  ``hash()``) of the strategy, the round and the question. Every number in a pool is at least 100, so
  an easy problem's gold is very unlikely to be one of them: copying the example cannot pass.
  :func:`exemplar_numbers` and :func:`copied_numbers` let a study measure how often a step copies it.

Termination is not here: each problem kind asks for its answer with its own texts.
Pure Python (no torch), like the rest of :mod:`rsim_env`.
"""

from __future__ import annotations

import re
import zlib

__all__ = ["ACTION_TEXTS", "EXEMPLARS", "EXEMPLAR_PREFIX", "exemplar", "exemplar_numbers", "copied_numbers"]

ACTION_TEXTS: dict[str, tuple[str, str]] = {
    "self-reflection": ("Is your last step right? Redo it and say if it holds.",
                        "Wait, is my last step right? Redoing it:"),
    "decomposition": ("Split the problem into its parts and name each part.",
                      "Let me split this into parts. Part 1:"),
    "deliberative thinking": ("Work the next step out slowly, one operation at a time.",
                              "Let me think carefully, one operation at a time:"),
    "validation": ("Recompute your last result another way (e.g. undo it) and compare.",
                   "Let me recompute the last result another way:"),
    "summarization": ("List the facts the question gives, then what is still unknown.",
                      "To recap, the question gives"),
    "prioritization": ("Name the one quantity to find first, and find it.",
                       "The key step is to compute"),
    "continuation": ("Continue with the next step of the solution.", "Next,"),  # the row's own texts
    "sub-planning": ("Write the steps you will take as a numbered list.", "My plan: 1."),
}
"""Strategy name -> ``(instruction, lead)`` of ``chat+lead:action`` (non-terminating built-in rows)."""

EXEMPLAR_PREFIX = "Example on another problem: "
"""Opens the worked example appended to a ``chat+lead:exemplar`` instruction."""

# (a, b, c) with s = a + b and d = s - c: every number of every example is a 3-digit value (>= 100).
_NUMBERS = ((347, 128, 236), (214, 389, 175), (456, 237, 318), (162, 574, 293),
            (508, 146, 219), (273, 415, 162), (381, 226, 149), (129, 643, 255))

_TEMPLATES = {
    "self-reflection": "I wrote {a} + {b} = {s}. Is that right? Redo it: {s} - {b} = {a}, so it holds.",
    "decomposition": "{a} apples and {b} pears, {c} eaten. Part one: {a} + {b} = {s}. Part two: {s} - {c} = {d}.",
    "deliberative thinking": "One operation at a time: {a} + {b} = {s}; then {s} - {c} = {d}.",
    "validation": "{a} + {b} = {s}; check: {s} - {b} = {a}, it matches.",
    "summarization": "The question gives {a} red and {b} blue beads and {c} lost; still unknown: how many are left.",
    "prioritization": "Find the total first: {a} + {b} = {s}; everything else uses it.",
    "continuation": "We had {s} in all; next, {s} - {c} = {d}.",
    "sub-planning": "Plan: add {a} and {b}; subtract {c}; check the result.",
}

EXEMPLARS: dict[str, tuple[str, ...]] = {
    name: tuple(t.format(a=a, b=b, c=c, s=a + b, d=a + b - c) for a, b, c in _NUMBERS)
    for name, t in _TEMPLATES.items()
}
"""Strategy name -> worked examples of the move on another problem (``chat+lead:exemplar``'s pool)."""


def exemplar(name: str, question: str, round_index: int) -> str:
    """The worked example line for strategy ``name`` in round ``round_index`` of ``question`` ("" if none).

    The pick is CRC-32 of the strategy name, the round and the question, modulo the pool size: the same
    in every process and run; different questions spread over the pool.
    """
    pool = EXEMPLARS.get(name)
    if not pool:
        return ""
    key = f"{name}\x00{round_index}\x00{question}".encode("utf-8", "surrogatepass")
    return EXEMPLAR_PREFIX + pool[zlib.crc32(key) % len(pool)]


_NUMBER = re.compile(r"(?<![\d.])\d[\d,]*(?:\.\d+)?")


def exemplar_numbers(text: str) -> set[str]:
    """The numbers written in ``text``, normalised (thousands commas dropped, ``3.50`` -> ``3.5``).

    Example: ``exemplar_numbers("347 + 128 = 475.")`` is ``{"347", "128", "475"}``.
    """
    out = set()
    for m in _NUMBER.finditer(text):
        n = m.group().rstrip(",").replace(",", "")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return out


def copied_numbers(step: str, example: str, question: str = "") -> set[str]:
    """Numbers of ``example`` that ``step`` writes and ``question`` lacks: a non-empty set means the step
    copied the worked example (the per-step event behind a study's copy rate)."""
    return (exemplar_numbers(step) & exemplar_numbers(example)) - exemplar_numbers(question)
