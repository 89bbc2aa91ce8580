"""Every text prompt in rSIM is assembled here, and only here.

The texts themselves are data on the objects they belong to: each :class:`~rsim_env.strategies.Strategy`
row carries its prompt, instruction and lead-in; each :class:`~rsim_env.kinds.Kind` carries the texts
that ask for its answer (:class:`~rsim_env.kinds.KindTexts`: system prompts, termination instruction,
lead-in and inline prompt). A :class:`~rsim_env.protocols.Protocol` decides how they reach the reasoner.

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

The turn protocols (``inline``, ``chat``, ``lead``, ``chat+lead``, and no-planner mode) are objects in
:mod:`rsim_env.protocols` (re-exported here); the functions below that take a protocol name ask its object.

Problem kinds (:mod:`rsim_env.kinds`): math asks for ``\\boxed{}``; code asks for the complete program in
one fenced ``python`` block, and its termination lead-in *opens* that block, so the reasoner continues
with the program itself. Every function takes ``kind="math"`` by default (a kind name or a
:class:`~rsim_env.kinds.Kind`).

Agents must not format prompts themselves; they call these functions (or read the observation's
``"prompt"``, ``"system"``, ``"instruction"`` and ``"injected"`` fields, which are built from them).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Iterator, Mapping, Sequence

from . import echo, kinds
from .kinds import KindTexts
from .kinds.code import CODE_FENCE, CODE_NO_PLANNER_SYSTEM, CODE_REASONER_SYSTEM, CODE_STEPWISE_SYSTEM  # noqa: F401
from .kinds.math import NO_PLANNER_SYSTEM, REASONER_SYSTEM, STEPWISE_SYSTEM  # noqa: F401
from .protocols import (  # noqa: F401  (the protocol objects are part of render's surface)
    DEFAULT_PROTOCOL, NO_PLANNER, PROTOCOLS, STEP_DELIMITER, InlineProtocol, NoPlannerProtocol, Protocol, kind_texts,
    protocol, strategy_texts)
from .strategies import STRATEGIES, TERMINATION


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


def injection(round_index: int, strategy: int, kind: str = "math") -> str:
    """The ``inline`` protocol's header before step ``round_index`` (0-based); the longest text a protocol
    injects, so the observation bounds are computed from it.

    Example: ``"Step 2 (validation: Check the last result: ...)\\n"``.
    """
    return PROTOCOLS["inline"].lead(round_index, strategy, kind)


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
    for p in PROTOCOLS.values():  # the variants' own texts (chat+lead:action, chat+lead:exemplar)
        for k in KIND_TEXTS:
            leads += [p.texts(s.index, k)[1] for s in STRATEGIES]
            instructions += p.instructions(k)
    longest = max(longest, max(len(x) for x in leads) + max(len(x) for x in instructions) + 40)
    overhead = max(len(chat_to_text(reasoner_chat("", [], [], None, p, k))) for p in PROTOCOLS
                   for k in KIND_TEXTS) + 2 * max_question_chars
    return overhead + max_steps * (longest + max_step_chars + len(STEP_DELIMITER) + 40)


def injected_texts() -> list[str]:
    """Every text any protocol injects (system prompts, instructions, leads, strategy prompts and names),
    for every strategy row and registered kind. The strategy-as-behaviour options' own texts
    (:data:`rsim_env.protocols.ACTION_TEXTS`, :data:`~rsim_env.protocols.EXEMPLARS`) are left out: as references they would change how the default
    protocol's steps are scored (echo, novelty).

    The references of echo detection (:mod:`rsim_env.echo`).
    """
    # Echo detection asks for these on every step: built once per state of the tables they come from (the strategy
    # rows' tuple, which register/pop replace; each kind and its texts; the inline protocol), then copied.
    key = (tuple((n, k, k.texts) for n, k in kinds.KINDS.items()), PROTOCOLS["inline"])
    rows = STRATEGIES[:]
    if _INJECTED and _INJECTED[0] is rows and _INJECTED[1] == key:
        return list(_INJECTED[2])
    out = [*INSTRUCTIONS, *LEADS]
    for s in STRATEGIES:
        out += [s.name, s.prompt, injection(0, s.index)]
    for kind in kinds.KINDS.values():  # each kind's answer-asking texts and termination header
        out += [getattr(kind.texts, f.name) for f in fields(kind.texts)]
        out.append(injection(0, TERMINATION, kind))
    _INJECTED[:] = [rows, key, tuple(dict.fromkeys(out))]
    return list(_INJECTED[2])


_INJECTED: list = []
"""The last :func:`injected_texts`: ``[strategy rows, (kinds and their texts, inline protocol), texts]``."""


echo.set_default_references(injected_texts)  # echo's default references: it cannot import render (render -> kinds -> echo)

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
