"""The nine reasoning strategies (data) and keyword detection.

The table is the single source of truth: index order is the planner's ``Discrete(9)`` action
order, ``prompt`` is what the reasoner sees before writing the step, and ``patterns`` are the
case-insensitive regular expressions whose match in a step's text counts as *showing* that
strategy (the paper's keyword matching, used for ``R_follow`` and strategy counts).

Detection rules (documented contract):

* matching is case-insensitive and on word boundaries (``"check"`` matches "Check:" and
  "checking" but not "paycheck");
* a step can show several strategies, so :func:`detect` returns a set;
* ``continuation`` (6) is the default mode of writing: a step that shows no other strategy
  counts as continuation, as does an explicit "next," / "then" / "continuing";
* ``termination`` (8) is shown by a final-answer marker (``\\boxed{``, "the final answer",
  "the answer is", ``<answer>``).

Keyword matching is a noisy proxy (the paper says so too); the patterns are deliberately plain
so researchers can swap the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Strategy", "STRATEGIES", "EXAMPLES", "NUM_STRATEGIES", "TERMINATION", "CONTINUATION", "detect", "by_name", "example"]


@dataclass(frozen=True)
class Strategy:
    """One row of the strategy table.

    Attributes:
        index: Position in :data:`STRATEGIES` and the planner's action id.
        name: Paper name (``"self-reflection"``, ...).
        prompt: Instruction injected before the reasoner writes the step.
        patterns: Case-insensitive regexes; any match means the text shows this strategy.
    """

    index: int
    name: str
    prompt: str
    patterns: tuple[str, ...]


_ROWS = (
    ("self-reflection", "Look back at the reasoning so far and question it: is anything wrong or missing?",
     (r"\bwait\b", r"\bhmm+\b", r"\breflect", r"\blooking back\b", r"\bre-?examin", r"\bmistake",
      r"\bon second thought", r"\breconsider", r"\bactually\b", r"\bdid i\b", r"\bis (?:this|that) (?:right|correct)")),
    ("decomposition", "Break the problem into smaller sub-problems.",
     (r"\bbreak (?:it|this|the problem)? ?(?:down|into)", r"\bsub-?problems?\b", r"\bsub-?tasks?\b",
      r"\bsmaller (?:parts|pieces|problems|steps)", r"\bdecompos", r"\bsplit (?:it|this|the problem)",
      r"\bfirst part\b", r"\bpart \d\b")),
    ("deliberative thinking", "Think slowly and carefully about this step.",
     (r"\bcareful(?:ly)?\b", r"\bthink(?:ing)? (?:slowly|carefully|about)", r"\blet me think\b",
      r"\bconsider(?:ing)?\b", r"\bdeliberat", r"\bstep by step\b", r"\bin detail\b")),
    ("validation", "Check the last result: substitute it back or recompute it.",
     (r"\bcheck", r"\bverif", r"\bvalidat", r"\bsubstitut", r"\bplug(?:ging)? (?:it |this |that )?(?:back|in)",
      r"\brecompute", r"\bdouble-?check", r"\bconfirm", r"\bsanity")),
    ("summarization", "Restate briefly what is known so far.",
     (r"\bsummar", r"\bin summary\b", r"\bso far\b", r"\bto recap\b", r"\brecap\b", r"\bwe (?:now )?know\b",
      r"\bwe have (?:found|shown|established)", r"\bin short\b", r"\bputting (?:it|this) together")),
    ("prioritization", "Decide what matters most to do next, and do that first.",
     (r"\bprioriti", r"\bmost important", r"\bfocus on\b", r"\bkey (?:step|point|quantity|fact)",
      r"\bfirst,? (?:we|i) (?:need|must|should)", r"\bthe main\b", r"\bmatters most\b", r"\bcrucial")),
    ("continuation", "Carry on with the next step of the solution.",
     (r"\bnext\b", r"\bthen\b", r"\bcontinu", r"\bmoving on\b", r"\bnow,? (?:we|i|let)", r"\bproceed")),
    ("sub-planning", "Lay out a short plan for the next few steps.",
     (r"\bplan\b", r"\bplanning\b", r"\bthe steps are\b", r"\bapproach\b", r"\bstrategy\b", r"\bwe will\b",
      r"\bi will\b", r"\bfirst\b.*\bthen\b")),
    ("termination", "Conclude and state the final answer in \\boxed{}.",
     (r"\\boxed\{", r"\bfinal answer\b", r"\bthe answer is\b", r"<answer>", r"\btherefore,? the answer")),
)

STRATEGIES: tuple[Strategy, ...] = tuple(
    Strategy(index=i, name=name, prompt=prompt, patterns=patterns) for i, (name, prompt, patterns) in enumerate(_ROWS)
)
"""The nine strategies, in the planner's action order (see module docstring)."""

EXAMPLES: dict[str, str] = {
    "self-reflection": "Wait, let me look back at the reasoning so far and reconsider whether it is right.",
    "decomposition": "Let me break the problem down into smaller sub-problems and solve each part.",
    "deliberative thinking": "Let me think carefully about this step before writing anything.",
    "validation": "Let me check the last result by substituting it back.",
    "summarization": "To recap what we know so far: the quantities in the question are given.",
    "prioritization": "The most important thing to do next is to focus on the key quantity.",
    "continuation": "Next, we continue with the computation.",
    "sub-planning": "Plan: first compute the parts, then combine them, then check.",
    "termination": "Therefore, the final answer is \\boxed{{{answer}}}.",
}
"""A step that shows each strategy (scripted agents and tests write these; ``{answer}`` is filled in)."""

NUM_STRATEGIES = len(STRATEGIES)


def _index(name: str) -> int:
    return next(s.index for s in STRATEGIES if s.name == name)


CONTINUATION = _index("continuation")
"""The default mode of writing (a step showing no other strategy counts as this)."""
TERMINATION = _index("termination")
"""Concluding strategy: the episode ends after the step that follows it."""

_COMPILED = tuple(re.compile("|".join(f"(?:{p})" for p in s.patterns), re.IGNORECASE) for s in STRATEGIES)
_MAX_SCAN = 20_000  # characters scanned per step: bounds detection cost on hostile, huge steps


def by_name(name: str) -> Strategy:
    """Look a strategy up by its name (case-insensitive).

    Raises:
        KeyError: Unknown name; the message lists the valid names.
    """
    key = name.strip().lower()
    for s in STRATEGIES:
        if s.name == key:
            return s
    raise KeyError(f"Unknown strategy {name!r}; valid names: {[s.name for s in STRATEGIES]}")


def detect(text: str) -> set[int]:
    """Strategies a step's text shows, by keyword matching.

    Args:
        text: One reasoning step (any string; only the first 20,000 characters are scanned).

    Returns:
        Set of strategy indices. Text with no keyword of strategies 0-5, 7, 8 counts as
        continuation (6); empty text shows nothing.
    """
    if not isinstance(text, str):
        raise TypeError(f"detect() takes the step text as str, got {type(text).__name__}.")
    text = text[:_MAX_SCAN]
    if not text.strip():
        return set()
    found = {i for i, rx in enumerate(_COMPILED) if rx.search(text)}
    if not (found - {CONTINUATION}):
        found.add(CONTINUATION)
    return found


def example(index: int, answer: str = "0") -> str:
    """:data:`EXAMPLES` text of strategy ``index`` (the termination example boxes ``answer``)."""
    return EXAMPLES[STRATEGIES[index].name].format(answer=answer)


_missing = {s.name for s in STRATEGIES} - set(EXAMPLES)
if _missing:  # a new row needs its example step too
    raise AssertionError(f"rsim_env.strategies.EXAMPLES lacks {sorted(_missing)}.")
