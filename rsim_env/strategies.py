"""The reasoning strategies: one :class:`Strategy` row each, and keyword detection.

The table is the single source of truth: a row carries everything about its strategy (its name,
its index = the planner's action id, the texts each turn protocol injects, the scripted example step
and the detection patterns). Every other list of strategies -- ``render.INSTRUCTIONS``,
``render.LEADS``, :data:`EXAMPLES`, the planner's ``Discrete`` action space, the planner heads --
is read from the rows when it is used, so a new strategy is one row::

    from rsim_env.strategies import Strategy, extra_strategy, num_strategies

    row = Strategy(index=num_strategies(), name="analogy", prompt="...", instruction="...",
                   lead="This is like", example="This is like a problem we know.", patterns=(r"\\blike\\b",))
    with extra_strategy(row):       # or register(row) for the rest of the process
        env = rsim_env.env()        # Discrete(10); tests/test_strategy_rows.py plays it in every protocol

Rows are only ever appended (:func:`register`): the index of a built-in row never changes, because
checkpoints and logs store action ids. Build environments and agents after registering (their
spaces and heads are sized when they are built): an env validates plans against the rows it was built
with, so it refuses a row registered later, and a new env accepts it.

Detection rules (documented contract):

* matching is case-insensitive and on word boundaries (``"check"`` matches "Check:" and
  "checking" but not "paycheck");
* a step can show several strategies, so :func:`detect` returns a set;
* ``continuation`` (6, the row with ``default=True``) is the default mode of writing: a step that
  shows no other strategy counts as continuation, as does an explicit "next," / "then" / "continuing";
* ``termination`` (8, the row with ``terminates=True``) is shown by a final-answer marker
  (``\\boxed{``, "the final answer", "the answer is", ``<answer>``).

Keyword matching is a noisy proxy (the paper says so too); the patterns are deliberately plain
so researchers can swap the table.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence, overload

__all__ = ["Strategy", "STRATEGIES", "EXAMPLES", "TERMINATION", "CONTINUATION", "detect", "by_name",
           "example", "register", "extra_strategy", "num_strategies", "rows"]


@dataclass(frozen=True)
class Strategy:
    """One row of the strategy table: everything about one strategy.

    Attributes:
        index: Position in :data:`STRATEGIES` and the planner's action id (a new row: :func:`num_strategies`).
        name: Paper name (``"self-reflection"``, ...); lower case, unique.
        prompt: The strategy described, shown in the ``inline`` protocol's header.
        instruction: User-turn instruction of the ``chat`` protocols.
        lead: Assistant-side lead-in of the ``lead`` protocols: the reasoner continues this text. Leads
            end where the natural continuation is the work itself.
        example: A step that shows the strategy without copying any injected text (scripted agents and
            tests write it; ``{answer}`` is filled in, so a literal brace is written ``{{``).
        patterns: Case-insensitive regexes; any match means the text shows this strategy.
        terminates: The concluding strategy: the episode ends after the step that follows it, and each
            problem kind asks for its answer with its own texts (:class:`rsim_env.kinds.KindTexts`; this
            row's texts are math's). Exactly one row.
        default: The default mode of writing (continuation): a step showing no other strategy shows it.
    """

    index: int
    name: str
    prompt: str
    patterns: tuple[str, ...]
    instruction: str
    lead: str
    example: str
    terminates: bool = False
    default: bool = False

    def __post_init__(self) -> None:
        for f in ("name", "prompt", "instruction", "lead", "example"):
            if not isinstance(getattr(self, f), str) or not getattr(self, f).strip():
                raise ValueError(f"Strategy.{f}={getattr(self, f)!r} must be a non-empty str (row {self.name!r}).")
        if self.name != self.name.strip().lower():
            raise ValueError(f"Strategy.name={self.name!r} must be lower case without outer spaces.")
        object.__setattr__(self, "patterns", tuple(self.patterns))
        if not self.patterns or not all(isinstance(p, str) and p for p in self.patterns):
            raise ValueError(f"Strategy {self.name!r} needs patterns: a tuple of non-empty regex strings.")
        for p in self.patterns:
            re.compile(p)  # a bad regex fails here, naming itself, not at the first detect()
        try:
            self.example.format(answer="0")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"Strategy {self.name!r}: example {self.example!r} must format with only "
                             f"{{answer}} (write a literal brace as {{{{): {exc}") from exc

    def example_step(self, answer: str = "0") -> str:
        """The :attr:`example` step with ``{answer}`` filled in."""
        return self.example.format(answer=answer)


_BUILTIN = (
    Strategy(
        index=0, name="self-reflection",
        prompt="Look back at the reasoning so far and question it: is anything wrong or missing?",
        instruction="Look back at your reasoning so far. Is anything wrong or missing? Say what, briefly.",
        lead="Wait, let me look back at my reasoning so far.",
        example="Wait, is the earlier reasoning right? Reconsider it: nothing is missing, so it stands.",
        patterns=(r"\bwait\b", r"\bhmm+\b", r"\breflect", r"\blooking back\b", r"\bre-?examin", r"\bmistake",
                  r"\bon second thought", r"\breconsider", r"\bactually\b", r"\bdid i\b",
                  r"\bis (?:this|that) (?:right|correct)")),
    Strategy(
        index=1, name="decomposition",
        prompt="Break the problem into smaller sub-problems.",
        instruction="Break the problem into smaller sub-problems and solve the first one.",
        lead="Let me break this into smaller parts. First,",
        example="Split it into sub-problems: part 1 is to find each quantity, part 2 is to combine them.",
        patterns=(r"\bbreak (?:it|this|the problem)? ?(?:down|into)", r"\bsub-?problems?\b", r"\bsub-?tasks?\b",
                  r"\bsmaller (?:parts|pieces|problems|steps)", r"\bdecompos", r"\bsplit (?:it|this|the problem)",
                  r"\bfirst part\b", r"\bpart \d\b")),
    Strategy(
        index=2, name="deliberative thinking",
        prompt="Think slowly and carefully about this step.",
        instruction="Think carefully about the next step, then do it.",
        lead="Let me think carefully about this step.",
        example="Considering it slowly, the quantities must be combined in the order the question gives them.",
        patterns=(r"\bcareful(?:ly)?\b", r"\bthink(?:ing)? (?:slowly|carefully|about)", r"\blet me think\b",
                  r"\bconsider(?:ing)?\b", r"\bdeliberat", r"\bstep by step\b", r"\bin detail\b")),
    Strategy(
        index=3, name="validation",
        prompt="Check the last result: substitute it back or recompute it.",
        instruction="Check your last result: recompute it or substitute it back.",
        lead="Let me check the last result:",
        example="Verify: recomputing the previous result gives the same value.",
        patterns=(r"\bcheck", r"\bverif", r"\bvalidat", r"\bsubstitut",
                  r"\bplug(?:ging)? (?:it |this |that )?(?:back|in)", r"\brecompute", r"\bdouble-?check",
                  r"\bconfirm", r"\bsanity")),
    Strategy(
        index=4, name="summarization",
        prompt="Restate briefly what is known so far.",
        instruction="Summarize briefly what we know so far.",
        lead="So far we know that",
        example="To recap: the question gives two quantities and asks for their combination.",
        patterns=(r"\bsummar", r"\bin summary\b", r"\bso far\b", r"\bto recap\b", r"\brecap\b",
                  r"\bwe (?:now )?know\b", r"\bwe have (?:found|shown|established)", r"\bin short\b",
                  r"\bputting (?:it|this) together")),
    Strategy(
        index=5, name="prioritization",
        prompt="Decide what matters most to do next, and do that first.",
        instruction="Decide what matters most to do next, and do it.",
        lead="The most important step now is to compute",
        example="Focus on the key quantity first; it decides everything else.",
        patterns=(r"\bprioriti", r"\bmost important", r"\bfocus on\b", r"\bkey (?:step|point|quantity|fact)",
                  r"\bfirst,? (?:we|i) (?:need|must|should)", r"\bthe main\b", r"\bmatters most\b", r"\bcrucial")),
    Strategy(
        index=6, name="continuation", default=True,
        prompt="Carry on with the next step of the solution.",
        instruction="Continue with the next step of the solution.",
        lead="Next,",
        example="Then we combine the two quantities.",
        patterns=(r"\bnext\b", r"\bthen\b", r"\bcontinu", r"\bmoving on\b", r"\bnow,? (?:we|i|let)", r"\bproceed")),
    Strategy(
        index=7, name="sub-planning",
        prompt="Lay out a short plan for the next few steps.",
        instruction="Write a short plan for the next steps.",
        lead="Here is my plan:",
        example="Plan: compute the parts, then combine them, then verify.",
        patterns=(r"\bplan\b", r"\bplanning\b", r"\bthe steps are\b", r"\bapproach\b", r"\bstrategy\b",
                  r"\bwe will\b", r"\bi will\b", r"\bfirst\b.*\bthen\b")),
    Strategy(
        index=8, name="termination", terminates=True,
        prompt="Conclude and state the final answer in \\boxed{}.",
        instruction="Give the final answer: put the number inside \\boxed{}.",
        lead="The final answer is \\boxed{",
        example="Therefore, the final answer is \\boxed{{{answer}}}.",
        patterns=(r"\\boxed\{", r"\bfinal answer\b", r"\bthe answer is\b", r"<answer>", r"\btherefore,? the answer")),
)
"""The nine rows of the paper, in the planner's action order. Measured (docs/interaction.md): the
prioritization lead "The most important thing to do next is" was continued with "to find the final
answer." (an echo) in most greedy episodes; "... step now is to compute" is continued with the work."""

_MAX_SCAN = 20_000  # characters scanned per step: bounds detection cost on hostile, huge steps


class _Table:
    """The live rows and what is derived from them (compiled patterns)."""

    def __init__(self, rows: Sequence[Strategy]) -> None:
        self.rows: tuple[Strategy, ...] = ()
        self.compiled: tuple[re.Pattern, ...] = ()
        for row in rows:
            self.append(row)

    def append(self, row: Strategy) -> None:
        if not isinstance(row, Strategy):
            raise TypeError(f"register() takes a Strategy row, got {type(row).__name__}.")
        if row.index != len(self.rows):
            raise ValueError(f"Strategy {row.name!r} has index={row.index}; rows are appended, so use "
                             f"index={len(self.rows)} (num_strategies()).")
        if any(r.name == row.name for r in self.rows):
            raise ValueError(f"Strategy name {row.name!r} is taken; choose another name.")
        for flag in ("terminates", "default"):
            if getattr(row, flag) and any(getattr(r, flag) for r in self.rows):
                raise ValueError(f"Strategy {row.name!r} sets {flag}=True but the table has that row already.")
        self.rows += (row,)
        self.compiled += (re.compile("|".join(f"(?:{p})" for p in row.patterns), re.IGNORECASE),)

    def pop(self, row: Strategy) -> None:
        if not self.rows or self.rows[-1] is not row:
            raise RuntimeError(f"Strategy {row.name!r} is not the last row; remove rows in reverse order.")
        self.rows, self.compiled = self.rows[:-1], self.compiled[:-1]


_TABLE = _Table(())


class _Rows(Sequence[Strategy]):
    """Read-only live view of the rows (a new row shows up in every holder of :data:`STRATEGIES`)."""

    @overload
    def __getitem__(self, i: int) -> Strategy: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Strategy, ...]: ...

    def __getitem__(self, i: Any) -> Any:
        return _TABLE.rows[i]

    def __len__(self) -> int:
        return len(_TABLE.rows)

    def __iter__(self) -> Iterator[Strategy]:
        return iter(_TABLE.rows)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, _Rows)) else other)

    def __hash__(self) -> int:
        return hash(_TABLE.rows)

    def __repr__(self) -> str:
        return f"STRATEGIES{_TABLE.rows!r}"


class _Examples(Mapping[str, str]):
    """Live view: strategy name -> :attr:`Strategy.example`."""

    def __getitem__(self, name: str) -> str:
        return by_name(name).example

    def __iter__(self) -> Iterator[str]:
        return (s.name for s in _TABLE.rows)

    def __len__(self) -> int:
        return len(_TABLE.rows)


STRATEGIES: Sequence[Strategy] = _Rows()
"""Every strategy, in the planner's action order (a live view of the table; see module docstring)."""

EXAMPLES: Mapping[str, str] = _Examples()
"""A step that shows each strategy, by name (:attr:`Strategy.example`; ``{answer}`` is filled in).

Each performs its strategy without copying any injected text (``rsim_env.echo`` finds no echo in
them; tests/test_echo.py): a scripted reasoner that parrots its instructions is the reward hole."""


def rows() -> tuple[Strategy, ...]:
    """The rows as a tuple (a snapshot)."""
    return _TABLE.rows


def num_strategies() -> int:
    """How many strategies the table has now (the planner's action count).

    Read it when you need it: a copy taken at import time misses rows registered later.
    """
    return len(_TABLE.rows)


def register(row: Strategy) -> Strategy:
    """Append ``row`` to the table for the rest of the process (see module docstring).

    Raises:
        ValueError: ``row.index`` is not :func:`num_strategies`, its name is taken, or it claims
            ``terminates``/``default`` which another row holds.
    """
    _TABLE.append(row)
    return row


@contextlib.contextmanager
def extra_strategy(row: Strategy) -> Iterator[Strategy]:
    """Install ``row`` (as :func:`register`) for the ``with`` block, then remove it."""
    _TABLE.append(row)
    try:
        yield row
    finally:
        _TABLE.pop(row)


for _row in _BUILTIN:  # the paper's rows go in as a user's row does
    register(_row)


def _flagged(flag: str) -> int:
    (row,) = [s for s in _TABLE.rows if getattr(s, flag)]
    return row.index


CONTINUATION = _flagged("default")
"""The default mode of writing (a step showing no other strategy counts as this)."""
TERMINATION = _flagged("terminates")
"""Concluding strategy: the episode ends after the step that follows it (a built-in row: never moves)."""


def by_name(name: str) -> Strategy:
    """Look a strategy up by its name (case-insensitive).

    Raises:
        KeyError: Unknown name; the message lists the valid names.
    """
    key = name.strip().lower()
    for s in _TABLE.rows:
        if s.name == key:
            return s
    raise KeyError(f"Unknown strategy {name!r}; valid names: {[s.name for s in _TABLE.rows]}")


def detect(text: str) -> set[int]:
    """Strategies a step's text shows, by keyword matching.

    Args:
        text: One reasoning step (any string; only the first 20,000 characters are scanned).

    Returns:
        Set of strategy indices. Text with no keyword of any strategy but continuation counts as
        continuation (6); empty text shows nothing.
    """
    if not isinstance(text, str):
        raise TypeError(f"detect() takes the step text as str, got {type(text).__name__}.")
    text = text[:_MAX_SCAN]
    if not text.strip():
        return set()
    found = {i for i, rx in enumerate(_TABLE.compiled) if rx.search(text)}
    if not (found - {CONTINUATION}):
        found.add(CONTINUATION)
    return found


def example(index: int, answer: str = "0") -> str:
    """:attr:`Strategy.example` step of strategy ``index`` (the termination example boxes ``answer``)."""
    return _TABLE.rows[index].example_step(answer)
