"""Every text prompt in rSIM is assembled here, and only here.

The texts themselves are data on the objects they belong to: each :class:`~rsim_env.strategies.Strategy`
row carries its prompt, instruction and lead-in; each :class:`~rsim_env.kinds.Kind` carries the texts
that ask for its answer (:class:`~rsim_env.kinds.KindTexts`: system prompts, termination instruction,
lead-in and inline prompt). A :class:`Protocol` decides how they reach the reasoner.

Two views of one episode:

* **Reasoner** — a chat built by a *turn protocol* (:data:`PROTOCOLS`). Each round the protocol
  gives two texts for the planned strategy: an ``instruction`` (the content of a new user turn, or
  ``""`` to continue the open assistant message) and an injected ``lead`` (text the assistant message
  continues with; the reasoner writes the rest). Round 0's instruction is the first user turn and
  always holds the question. The reasoner's step text is only what it generated; the lead is
  injected and never counts as generated (:meth:`Protocol.show` gives the step as shown, which the
  episode stores once per step and grades). Because every round only appends to the chat, an LLM
  agent keeps its KV cache and feeds just the new tokens each round.
* **Planner** — plain text: :func:`planner_header` followed by one :func:`planner_segment` per
  finished round. The context at round ``t`` is a prefix of the context at round ``t + 1``, so a
  learner can score every decision of a trajectory in one forward pass.

The protocols (measured with ``python -m benchmarks.interaction``; figures in docs/interaction.md):

* ``"inline"`` (the original design, :class:`InlineProtocol`): one growing assistant message where each
  step follows an injected header ``Step 2 (validation: Check the last result ...)``. SmolLM2-135M copies
  the header instead of performing it (most steps are echoes) and fills ``\\boxed{}`` with nothing.
* ``"chat"``: each strategy arrives as its own user turn; each step is its own assistant turn,
  ended by the model's end-of-turn token. Also the form that chat APIs which cannot continue an
  open assistant message need.
* ``"lead"``: one assistant message; each step opens with a first-person lead-in the reasoner
  continues (``Let me check the last result:``); termination opens ``\\boxed{`` for the answer.
* ``"chat+lead"``: both — the strategy as a user turn and the assistant turn opening with its lead.

:data:`DEFAULT_PROTOCOL` is the one the measurements favour (see its docstring). :data:`NO_PLANNER` is
the no-planner mode's protocol (one whole answer, nothing injected). A new protocol is a
:class:`Protocol` (subclass) added to :data:`PROTOCOLS` (tests/test_strategy_rows.py adds one).

Problem kinds (:mod:`rsim_env.kinds`): math asks for ``\\boxed{}``; code asks for the complete program in
one fenced ``python`` block, and its termination lead-in *opens* that block, so the reasoner continues
with the program itself. Every function takes ``kind="math"`` by default (a kind name or a
:class:`~rsim_env.kinds.Kind`).

Agents must not format prompts themselves; they call these functions (or read the observation's
``"prompt"``, ``"system"``, ``"instruction"`` and ``"injected"`` fields, which are built from them).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Iterator, Mapping, Sequence

from . import kinds
from .kinds import Kind, KindTexts
from .kinds.code import CODE_FENCE, CODE_NO_PLANNER_SYSTEM, CODE_REASONER_SYSTEM, CODE_STEPWISE_SYSTEM
from .kinds.math import NO_PLANNER_SYSTEM, REASONER_SYSTEM, STEPWISE_SYSTEM
from .strategies import STRATEGIES, TERMINATION

__all__ = ["CODE_FENCE", "CODE_NO_PLANNER_SYSTEM", "CODE_REASONER_SYSTEM", "CODE_STEPWISE_SYSTEM", "KindTexts",
           "NO_PLANNER_SYSTEM", "REASONER_SYSTEM", "STEPWISE_SYSTEM"]  # texts now kept by the kinds; names kept

STEP_DELIMITER = "\n\n"
"""Ends a reasoning step inside one assistant message; the reasoner stops generating when it writes this."""


class _Column(Sequence[str]):
    """Live view of one text field of every strategy row, in :data:`STRATEGIES` order."""

    def __init__(self, field: str) -> None:
        self._field = field

    def __getitem__(self, i):  # type: ignore[override]
        rows = STRATEGIES[i]
        return tuple(getattr(r, self._field) for r in rows) if isinstance(i, slice) else getattr(rows, self._field)

    def __len__(self) -> int:
        return len(STRATEGIES)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (tuple, list, _Column)) else other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[str]) -> tuple[str, ...]:  # as the tuples these used to be
        return tuple(self) + tuple(other)

    def __radd__(self, other: Sequence[str]) -> tuple[str, ...]:
        return tuple(other) + tuple(self)

    def __repr__(self) -> str:
        return repr(tuple(self))


INSTRUCTIONS: Sequence[str] = _Column("instruction")
"""User-turn instruction per strategy (``chat`` protocols): :attr:`Strategy.instruction` of every row."""
LEADS: Sequence[str] = _Column("lead")
"""Assistant-side lead-in per strategy (``lead`` protocols): :attr:`Strategy.lead` of every row."""


class _KindTextsView(Mapping[str, KindTexts]):
    def __getitem__(self, name: str) -> KindTexts:
        return kinds.KINDS[name].texts

    def __iter__(self) -> Iterator[str]:
        return iter(kinds.KINDS)

    def __len__(self) -> int:
        return len(kinds.KINDS)


KIND_TEXTS: Mapping[str, KindTexts] = _KindTextsView()
"""Answer-asking texts per registered kind (:attr:`rsim_env.kinds.Kind.texts`). Math's termination texts
are the termination row's own; code's termination lead-in ends inside an open fenced block."""


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

    def lead(self, round_index: int, strategy: int, kind: str | Kind = "math") -> str:
        """Assistant-side text injected before the reasoner writes step ``round_index`` ("" if none)."""
        return strategy_texts(strategy, kind)[2] if self.leads else ""

    def instruction(self, question: str, round_index: int, strategy: int | None, kind: str | Kind = "math") -> str:
        """Content of the user turn that opens round ``round_index`` ("" = continue the assistant message).

        Round 0 always opens with the question; separate-turn protocols add the round's instruction to it.
        """
        if strategy is None or not self.separate_turns:
            return question if round_index == 0 else ""
        text = strategy_texts(strategy, kind)[1]
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
             kind: str | Kind = "math") -> list[dict[str, str]]:
        """Chat messages for the reasoner; the last (assistant) message is open and to be continued.

        A round whose :meth:`instruction` is non-empty closes the open assistant turn and opens a new user
        turn; otherwise the assistant message goes on after :data:`STEP_DELIMITER`.
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
            assistant += self.assistant_text(self.lead(i, s, kind), steps[i] if i < len(steps) else None)
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
             kind: str | Kind = "math") -> list[dict[str, str]]:
        """System + question; the assistant is to answer (no open assistant message)."""
        return [{"role": "system", "content": self.system(kind)}, {"role": "user", "content": question}]


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    InlineProtocol("inline", separate_turns=False, leads=False),
    Protocol("chat", separate_turns=True, leads=False),
    Protocol("lead", separate_turns=False, leads=True),
    Protocol("chat+lead", separate_turns=True, leads=True),
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


# -- functions by protocol name (kept for callers; each asks the Protocol object) ---------------

def system(proto: str, kind: str = "math") -> str:
    """System prompt of protocol ``proto`` for problems of ``kind``."""
    return protocol(proto).system(kind)


def injection(round_index: int, strategy: int, kind: str = "math") -> str:
    """The ``inline`` protocol's header before step ``round_index`` (0-based).

    Example: ``"Step 2 (validation: Check the last result: ...)\\n"``.
    """
    return PROTOCOLS["inline"].lead(round_index, strategy, kind)


def lead(proto: str, round_index: int, strategy: int, kind: str = "math") -> str:
    """Assistant-side text injected before the reasoner writes step ``round_index`` ("" if none)."""
    return protocol(proto).lead(round_index, strategy, kind)


def instruction(proto: str, question: str, round_index: int, strategy: int | None, kind: str = "math") -> str:
    """Content of the user turn that opens round ``round_index`` (:meth:`Protocol.instruction`)."""
    return protocol(proto).instruction(question, round_index, strategy, kind)


def shown_step(proto: str, round_index: int, strategy: int, step: str, kind: str = "math") -> str:
    """A finished step as it reads in the transcript (:meth:`Protocol.show` of the protocol's lead-in)."""
    p = protocol(proto)
    return p.show(p.lead(round_index, strategy, kind), step)


def step_text(proto: str, round_index: int, strategy: int, step: str | None, kind: str = "math") -> str:
    """Assistant-side text of a round: the injected lead (or ``inline`` header), then the step if written."""
    p = protocol(proto)
    return p.assistant_text(p.lead(round_index, strategy, kind), step)


def reasoner_chat(question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None,
                  proto: str = DEFAULT_PROTOCOL, kind: str = "math") -> list[dict[str, str]]:
    """Chat messages for the reasoner; the last (assistant) message is open and to be continued."""
    return protocol(proto).chat(question, steps, strategies, current, kind)


def no_planner_chat(question: str, kind: str = "math") -> list[dict[str, str]]:
    """Chat for plain chain-of-thought (no planner): system + question, assistant to answer."""
    return NO_PLANNER.chat(question, [], [], None, kind)


def chat_to_text(messages: Sequence[dict[str, str]]) -> str:
    """Model-agnostic plain-text form of a chat (for agents without a chat template, and logs)."""
    return "".join(f"<|{m['role']}|>\n{m['content']}" + ("\n" if i < len(messages) - 1 else "")
                   for i, m in enumerate(messages))


def planner_header(question: str) -> str:
    """Start of the planner's context: the question."""
    return f"Question: {question}\nReasoning so far:\n"


def planner_segment(round_index: int, strategy: int, step: str) -> str:
    """One finished round as the planner reads it."""
    return f"Step {round_index + 1} [{STRATEGIES[strategy].name}]: {step}\n"


def planner_text(question: str, steps: Sequence[str], strategies: Sequence[int]) -> str:
    """The planner's full context before choosing the strategy of round ``len(steps)``."""
    return planner_header(question) + "".join(
        planner_segment(i, p, z) for i, (p, z) in enumerate(zip(strategies, steps))
    )


def transcript(question: str, steps: Sequence[str], strategies: Sequence[int]) -> str:
    """Human-readable episode (used by ``render_mode="ansi"``)."""
    lines = [f"Q: {question}"]
    for i, (p, z) in enumerate(zip(strategies, steps)):
        lines.append(f"  [{i + 1}] <{STRATEGIES[p].name}> {z}")
    return "\n".join(lines)


def max_planner_chars(max_question_chars: int, max_steps: int, max_step_chars: int) -> int:
    """Upper bound on ``len(planner_text(...))`` for the given limits (for observation spaces)."""
    longest_name = max(len(s.name) for s in STRATEGIES)
    leads = [*LEADS, *(t.termination_lead for t in KIND_TEXTS.values())]
    longest_lead = max(max(len(x) for x in leads), len(injection(max_steps - 1, 0)) + 200) + 1
    seg = len(planner_segment(max_steps - 1, 0, "")) + longest_name + longest_lead + max_step_chars
    return len(planner_header("")) + max_question_chars + max_steps * seg


def max_reasoner_chars(max_question_chars: int, max_steps: int, max_step_chars: int) -> int:
    """Upper bound on the reasoner prompt's length (``chat_to_text(reasoner_chat(...))``), any protocol."""
    longest = max(len(injection(max_steps - 1, s.index, k)) for s in STRATEGIES for k in KIND_TEXTS)
    leads = [*LEADS, *(t.termination_lead for t in KIND_TEXTS.values())]
    instructions = [*INSTRUCTIONS, *(t.termination_instruction for t in KIND_TEXTS.values())]
    longest = max(longest, max(len(x) for x in leads) + max(len(x) for x in instructions) + 40)
    overhead = max(len(chat_to_text(reasoner_chat("", [], [], None, p, k))) for p in PROTOCOLS
                   for k in KIND_TEXTS) + 2 * max_question_chars
    return overhead + max_steps * (longest + max_step_chars + len(STEP_DELIMITER) + 40)


def injected_texts() -> list[str]:
    """Every text any protocol injects (system prompts, instructions, leads, strategy prompts and names),
    for every strategy row and registered kind.

    The references of echo detection (:mod:`rsim_env.echo`).
    """
    out = [*INSTRUCTIONS, *LEADS]
    for s in STRATEGIES:
        out += [s.name, s.prompt, injection(0, s.index)]
    for kind in kinds.KINDS.values():  # each kind's answer-asking texts and termination header
        out += [getattr(kind.texts, f.name) for f in fields(kind.texts)]
        out.append(injection(0, TERMINATION, kind))
    return list(dict.fromkeys(out))


CODE_INSTRUCTION = (
    "Write a Python function `{entry_point}` that solves the task below, using only the standard library. "
    "In your final step, give the complete program (imports and the whole function) in one ```python "
    "code block; nothing after the code block is run."
)


def code_question(task: str, entry_point: str) -> str:
    """Question text of a code problem: the instruction about the final program, then the task."""
    return CODE_INSTRUCTION.format(entry_point=entry_point) + "\n\n" + task.strip("\n")



# -- Chat-API form (OpenAI-compatible servers) ------------------------------------------------
# A chat-completions server cannot continue an open assistant message, so a served reasoner speaks
# the ``chat`` protocol (every strategy its own user turn, every step its own assistant turn) minus
# its open, empty last assistant message: the server's reply to the last user turn is the next step.

CHAT_API_PROTOCOL = "chat"
"""The turn protocol of :func:`reasoner_messages` (it has no lead-ins, which a chat API cannot continue)."""


def reasoner_messages(
    question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None, kind: str = "math"
) -> list[dict[str, str]]:
    """Chat messages for a chat-completions reasoner; ``current=None`` means no planner (one answer).

    Layout (:data:`CHAT_API_PROTOCOL`): system, the question with the first instruction (user), then
    per finished round the step (assistant) and the next instruction (user). The reply is the next step.
    """
    if current is None:
        return no_planner_chat(question, kind)
    msgs = reasoner_chat(question, steps, strategies, current, proto=CHAT_API_PROTOCOL, kind=kind)
    assert msgs[-1] == {"role": "assistant", "content": ""}, "the chat protocol opens no assistant text"
    return msgs[:-1]


def reasoner_messages_from_observation(obs: dict) -> list[dict[str, str]]:
    """:func:`reasoner_messages` for a reasoner observation of :mod:`rsim_env.env`.

    No-planner mode (``env(planner=False)``) is the observation's ``no_planner`` flag; the problem
    kind its ``kind`` field (math when absent).
    """
    kind = str(obs.get("kind", "math"))
    if obs.get("no_planner"):
        return reasoner_messages(obs["question"], [], [], None, kind)
    return reasoner_messages(obs["question"], obs["steps"], obs["strategies"], int(obs["strategy"]), kind)


def whole_answer_turn(messages: Sequence[dict[str, str]]) -> bool:
    """True when the reply to ``messages`` (:func:`reasoner_messages`) is one whole answer, not one step.

    No-planner chats (any kind's no-planner system prompt) and the termination turn of a kind whose answer
    is whole (:attr:`Kind.whole_answer`: code's program has blank lines of its own) are whole answers: no
    step-delimiter stop, the answer token cap.
    """
    if messages and messages[0]["content"] in {k.texts.no_planner_system for k in kinds.KINDS.values()}:
        return True
    last = messages[-1]["content"] if messages else ""
    return any(last.endswith(k.texts.termination_instruction) for k in kinds.KINDS.values() if k.whole_answer)
