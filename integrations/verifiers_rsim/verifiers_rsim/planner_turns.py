"""What the ``planner`` role reads and how its answer becomes a strategy, when a model plans (``plan="model"``).

The planner reads rSIM's own planner context (:func:`rsim_env.render.planner_header` and one
:func:`~rsim_env.render.planner_segment` per finished step, as rSIM's LLM planner reads it), one user turn per
decision, each ending with the strategies it may choose now (name and :attr:`rsim_env.strategies.Strategy.prompt`
of every row the action mask allows). It answers with a name. The answer is model output, so it is only
compared with the table's names: :func:`parse_strategy` returns the index, or None with the reason.
"""

from __future__ import annotations

from typing import Sequence

from rsim_env.render import planner_header, planner_segment
from rsim_env.strategies import STRATEGIES

__all__ = ["PLANNER_SYSTEM", "planner_turn", "parse_strategy"]

PLANNER_SYSTEM = ("You plan how a solver reasons through a problem, one step at a time. Before each step you choose "
                  "the strategy the solver follows in that step. Answer with the strategy's name only.")
"""The planner role's system prompt."""

_QUOTES = "-#`\"'*_.:;!,()[]{}<> \t\r\n"


def planner_turn(question: str, steps: Sequence[str], strategies: Sequence[int], legal: Sequence[int]) -> str:
    """The planner's user turn before step ``len(steps)``: the context new since its last turn, then the choice.

    The first turn holds the question (:func:`planner_header`); each later one the step just written
    (:func:`planner_segment`), so the planner's conversation reads as rSIM's planner text.
    """
    t = len(steps)
    context = planner_header(question) if t == 0 else planner_segment(t - 1, strategies[t - 1], steps[t - 1])
    menu = "\n".join(f"- {STRATEGIES[i].name}: {STRATEGIES[i].prompt}" for i in legal)
    return f"{context}\nChoose the strategy of step {t + 1}. Answer with one of these names:\n{menu}"


def parse_strategy(reply: str, legal: Sequence[int]) -> tuple[int | None, str]:
    """``(index, "ok")`` when ``reply`` names a strategy ``legal`` allows, else ``(None, "unknown" | "illegal")``.

    The name is the reply's first line up to a colon (so a copied menu line ``- validation: Check ...`` names
    ``validation``), without case, outer whitespace, list bullets, quotes or markdown; anything else (a sentence,
    two names) is ``"unknown"``.
    """
    lines = reply.strip().splitlines() if isinstance(reply, str) else []
    name = lines[0].split(":", 1)[0].strip(_QUOTES).lower() if lines else ""
    for s in STRATEGIES:
        if s.name == name:
            return (s.index, "ok") if s.index in legal else (None, "illegal")
    return None, "unknown"
