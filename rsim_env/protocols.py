"""Turn protocols: how the strategies reach the reasoner, as objects whose behaviour is their own.

A :class:`Protocol` answers, for a round of an episode: which system prompt the chat opens with
(:meth:`~Protocol.system`), whether a user turn opens the round and what it says
(:meth:`~Protocol.instruction`; "" continues the open assistant message after :data:`STEP_DELIMITER`),
what is injected into the assistant text before the reasoner writes (:meth:`~Protocol.lead`), what counts
as the shown step (:meth:`~Protocol.show`: the graded, detected transcript text) and how a round reads in
the transcript (:meth:`~Protocol.assistant_text`); :meth:`~Protocol.chat` assembles them. The texts come
from the strategy rows (:class:`~rsim_env.strategies.Strategy`) and the problem's kind
(:class:`~rsim_env.kinds.KindTexts`). :class:`~rsim_env.game.Episode` asks once per step (``lead`` at
``plan()``, ``show`` at ``write()``) and stores the answers.

The protocols (measured with ``python -m studies.interaction``; figures in docs/interaction.md):

* ``"inline"`` (the original design, :class:`InlineProtocol`): one growing assistant message where each
  step follows an injected header ``Step 2 (validation: Check the last result ...)``. SmolLM2-135M copies
  the header instead of performing it (most steps are echoes) and fills ``\\boxed{}`` with nothing.
* ``"chat"``: each strategy arrives as its own user turn; each step is its own assistant turn,
  ended by the model's end-of-turn token. Also the form that chat APIs which cannot continue an
  open assistant message need.
* ``"lead"``: one assistant message; each step opens with a first-person lead-in the reasoner
  continues (``Let me check the last result:``); termination opens ``\\boxed{`` for the answer.
* ``"chat+lead"``: both — the strategy as a user turn and the assistant turn opening with its lead.

Two options (not the default) make a strategy a move the reasoner visibly makes (texts in
:data:`ACTION_TEXTS` and :data:`EXEMPLARS` below; docs/interaction.md, "Strategy-as-behaviour variants"):

* ``"chat+lead:action"`` (:class:`ActionProtocol`): chat+lead with an (instruction, lead) pair per strategy
  that asks for a concrete move (``Recompute your last result another way ...``).
* ``"chat+lead:exemplar"`` (:class:`ExemplarProtocol`): chat+lead whose user turn adds a one-line worked
  example of the move on another problem, picked per question and round from a pool of 3-digit examples.

:data:`DEFAULT_PROTOCOL` is the one the measurements favour; :data:`NO_PLANNER` is no-planner mode's (one
whole answer, nothing injected). A new protocol is a :class:`Protocol` (subclass) put in :data:`PROTOCOLS`
(tests/test_strategy_rows.py adds one).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Sequence

from . import kinds
from .kinds import Kind, KindTexts
from .strategies import STRATEGIES

STEP_DELIMITER = "\n\n"
"""Ends a reasoning step inside one assistant message; the reasoner stops generating when it writes this."""


def kind_texts(kind: str | Kind) -> KindTexts:
    """:attr:`Kind.texts` of ``kind``, with an error that lists the valid kinds."""
    return kinds.get(kind).texts


def strategy_texts(strategy: int, kind: str | Kind = "math") -> tuple[str, str, str]:
    """``(prompt, instruction, lead)`` of strategy ``strategy`` for problems of ``kind``: the row's own,
    except that the terminating row asks for the answer with the kind's texts."""
    row, k = STRATEGIES[strategy], kinds.get(kind)
    if row.terminates:
        t = k.texts
        return t.termination_prompt, t.termination_instruction, t.termination_lead
    return row.prompt, row.instruction, row.lead


# -- Strategy-as-behaviour texts (the options chat+lead:action and chat+lead:exemplar) ---------------
# For a 135M reasoner the default texts are a formatting wrapper, never a behaviour. ACTION_TEXTS asks for
# a concrete, visible move; every lead is detected as its own strategy (tests/test_protocol_variants.py).
# EXEMPLARS' numbers are all >= 100, so an easy problem's gold is very unlikely to be one of them: copying
# the example cannot pass. exemplar_numbers / copied_numbers let a study measure how often a step copies it.
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


_NUMBER = re.compile(r"(?<![\d.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")  # 1,234 is one number; 1,2,3 three


def exemplar_numbers(text: str) -> set[str]:
    """The numbers written in ``text``, normalised (thousands commas dropped, ``3.50`` -> ``3.5``).

    Example: ``exemplar_numbers("347 + 128 = 475.")`` is ``{"347", "128", "475"}``.
    """
    out = set()
    for m in _NUMBER.finditer(text):
        n = m.group().replace(",", "")
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        out.add(n)
    return out


def copied_numbers(step: str, example: str, question: str = "") -> set[str]:
    """Numbers of ``example`` that ``step`` writes and ``question`` lacks: a non-empty set means the step
    copied the worked example (the per-step event behind a study's copy rate)."""
    return (exemplar_numbers(step) & exemplar_numbers(example)) - exemplar_numbers(question)


@dataclass(frozen=True)
class Protocol:
    """How strategies reach the reasoner: its behaviour is its methods (see module docstring).

    The base class is the family of turn protocols ``chat``, ``lead`` and ``chat+lead``;
    :class:`InlineProtocol` and :class:`NoPlannerProtocol` override what differs.
    """

    name: str
    """Key in :data:`PROTOCOLS`."""
    separate_turns: bool
    """Each strategy is its own user turn and each step its own assistant turn (ended by end-of-turn)."""
    leads: bool
    """Each step's assistant text opens with the strategy's lead-in (:attr:`Strategy.lead`)."""

    def system(self, kind: str | Kind = "math") -> str:
        """System prompt for problems of ``kind``."""
        return kinds.get(kind).texts.stepwise_system

    def texts(self, strategy: int, kind: str | Kind = "math") -> tuple[str, str]:
        """``(instruction, lead)`` of strategy ``strategy`` for problems of ``kind`` (:func:`strategy_texts`),
        before any per-question addition."""
        return strategy_texts(strategy, kind)[1:]

    def instructions(self, kind: str | Kind = "math") -> list[str]:
        """Every instruction this protocol may send for ``kind``, without the question (for length bounds)."""
        return [self.texts(s.index, kind)[0] for s in STRATEGIES]

    def lead(self, round_index: int, strategy: int, kind: str | Kind = "math") -> str:
        """Assistant-side text injected before the reasoner writes step ``round_index`` ("" if none)."""
        return self.texts(strategy, kind)[1] if self.leads else ""

    def instruction(self, question: str, round_index: int, strategy: int | None, kind: str | Kind = "math") -> str:
        """Content of the user turn that opens round ``round_index`` ("" = continue the assistant message).

        Round 0 always opens with the question; separate-turn protocols add the round's instruction to it.
        """
        if strategy is None or not self.separate_turns:
            return question if round_index == 0 else ""
        text = self.texts(strategy, kind)[0]
        return f"{question}\n\n{text}" if round_index == 0 else text

    def show(self, injected: str, step: str) -> str:
        """What counts as the shown step: the injected lead-in (if any) + the generated ``step``.

        A lead-in ending in ``{`` or a line break (code's opened fence) is continued with no space.
        """
        if not injected:
            return step
        glue = "" if injected.endswith(("{", "\n")) or not step or step[:1] in " \n" else " "
        return injected + glue + step

    def assistant_text(self, injected: str, step: str | None) -> str:
        """Assistant-side text of a round: what was injected, then the step if written."""
        return injected if step is None else self.show(injected, step)

    def chat(self, question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None,
             kind: str | Kind = "math", injected: Sequence[str] | None = None) -> list[dict[str, str]]:
        """Chat messages for the reasoner; the last (assistant) message is open and to be continued.

        A round whose :meth:`instruction` is non-empty closes the open assistant turn and opens a new user
        turn; otherwise the assistant message goes on after :data:`STEP_DELIMITER`. ``injected``: what
        :meth:`lead` gave for each round so far (the episode's stored texts); None asks :meth:`lead` again.
        """
        msgs = [{"role": "system", "content": self.system(kind)}]
        plans = list(strategies) + ([current] if current is not None else [])
        if not plans:
            return msgs + [{"role": "user", "content": question}, {"role": "assistant", "content": ""}]
        assistant: str | None = None
        for i, s in enumerate(plans):
            user = self.instruction(question, i, s, kind)
            if user:
                if assistant is not None:
                    msgs.append({"role": "assistant", "content": assistant})
                msgs.append({"role": "user", "content": user})
                assistant = ""
            else:
                assistant += STEP_DELIMITER
            head = injected[i] if injected is not None else self.lead(i, s, kind)
            assistant += self.assistant_text(head, steps[i] if i < len(steps) else None)
        msgs.append({"role": "assistant", "content": assistant})
        return msgs


@dataclass(frozen=True)
class InlineProtocol(Protocol):
    """``inline``: a header ``Step n (name: prompt)`` before each step, inside one assistant message. The
    header is an instruction, not part of the answer: the shown step is the generated text alone."""

    def system(self, kind: str | Kind = "math") -> str:
        return kinds.get(kind).texts.inline_system

    def lead(self, round_index: int, strategy: int, kind: str | Kind = "math") -> str:
        return f"Step {round_index + 1} ({STRATEGIES[strategy].name}: {strategy_texts(strategy, kind)[0]})\n"

    def show(self, injected: str, step: str) -> str:
        return step

    def assistant_text(self, injected: str, step: str | None) -> str:
        return injected + (step or "")


@dataclass(frozen=True)
class NoPlannerProtocol(Protocol):
    """No-planner mode: one whole answer to the question, nothing injected."""

    def system(self, kind: str | Kind = "math") -> str:
        return kinds.get(kind).texts.no_planner_system

    def lead(self, round_index: int, strategy: int, kind: str | Kind = "math") -> str:
        return ""

    def chat(self, question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None,
             kind: str | Kind = "math", injected: Sequence[str] | None = None) -> list[dict[str, str]]:
        """System + question; the assistant is to answer (no open assistant message)."""
        return [{"role": "system", "content": self.system(kind)}, {"role": "user", "content": question}]


@dataclass(frozen=True)
class ActionProtocol(Protocol):
    """``chat+lead:action``: each built-in strategy asks for a visible move (:data:`ACTION_TEXTS`); termination
    keeps the kind's texts and a row without action texts (a registered extra) keeps its own."""

    def texts(self, strategy: int, kind: str | Kind = "math") -> tuple[str, str]:
        row = STRATEGIES[strategy]
        if row.terminates or row.name not in ACTION_TEXTS:
            return super().texts(strategy, kind)
        return ACTION_TEXTS[row.name]


@dataclass(frozen=True)
class ExemplarProtocol(Protocol):
    """``chat+lead:exemplar``: the default texts, and each non-terminating instruction followed by a worked
    example of the move on another problem (:func:`exemplar`: stable per question
    and round; every number in it is at least 100, so copying it cannot pass)."""

    def instruction(self, question: str, round_index: int, strategy: int | None, kind: str | Kind = "math") -> str:
        text = super().instruction(question, round_index, strategy, kind)
        if strategy is None or not self.separate_turns or STRATEGIES[strategy].terminates:
            return text
        example = exemplar(STRATEGIES[strategy].name, question, round_index)
        return f"{text}\n{example}" if example else text

    def instructions(self, kind: str | Kind = "math") -> list[str]:
        examples = [x for pool in EXEMPLARS.values() for x in pool]
        return [*super().instructions(kind), *(f"{t}\n{EXEMPLAR_PREFIX}{x}" for t in super().instructions(kind)
                                               for x in examples)]


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    InlineProtocol("inline", separate_turns=False, leads=False),
    Protocol("chat", separate_turns=True, leads=False),
    Protocol("lead", separate_turns=False, leads=True),
    Protocol("chat+lead", separate_turns=True, leads=True),
    ActionProtocol("chat+lead:action", separate_turns=True, leads=True),
    ExemplarProtocol("chat+lead:exemplar", separate_turns=True, leads=True),
)}
"""Every turn protocol, by name (``EnvConfig.protocol``)."""

NO_PLANNER = NoPlannerProtocol("none", separate_turns=False, leads=False)
"""The protocol of no-planner mode (``EnvConfig(planner=False)``; observations say ``"none"``)."""

DEFAULT_PROTOCOL = "chat+lead"
"""The protocol the environment uses unless told otherwise (chosen by measurement, see docs/interaction.md)."""


def protocol(name: str | Protocol) -> Protocol:
    """Look a protocol up by name (a :class:`Protocol` is returned as is), with an error that lists the names."""
    if isinstance(name, Protocol):
        return name
    if name not in PROTOCOLS:
        raise ValueError(f"unknown turn protocol {name!r}; choose one of {sorted(PROTOCOLS)}.")
    return PROTOCOLS[name]

