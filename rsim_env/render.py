"""Every text prompt in rSIM is built here, and only here.

Two views of one episode:

* **Reasoner** — a chat built by a *turn protocol* (:data:`PROTOCOLS`). Each round the protocol
  gives two texts for the planned strategy: an ``instruction`` (the content of a new user turn, or
  ``""`` to continue the open assistant message) and a ``lead`` (text the assistant message
  continues with; the reasoner writes the rest). Round 0's instruction is the first user turn and
  always holds the question. The reasoner's step text is only what it generated; the lead is
  injected and never counts as generated (see :func:`shown_step` for the text graded as the
  answer). Because every round only appends to the chat, an LLM agent keeps its KV cache and feeds
  just the new tokens each round.
* **Planner** — plain text: :func:`planner_header` followed by one :func:`planner_segment` per
  finished round. The context at round ``t`` is a prefix of the context at round ``t + 1``, so a
  learner can score every decision of a trajectory in one forward pass.

The protocols (measured with ``python -m benchmarks.interaction``; figures in docs/interaction.md):

* ``"inline"`` (the original design): one growing assistant message where each step follows an
  injected header ``Step 2 (validation: Check the last result ...)``. SmolLM2-135M copies the header
  instead of performing it (most steps are echoes) and fills ``\\boxed{}`` with nothing.
* ``"chat"``: each strategy arrives as its own user turn; each step is its own assistant turn,
  ended by the model's end-of-turn token. Also the form that chat APIs which cannot continue an
  open assistant message need.
* ``"lead"``: one assistant message; each step opens with a first-person lead-in the reasoner
  continues (``Let me check the last result:``); termination opens ``\\boxed{`` for the answer.
* ``"chat+lead"``: both — the strategy as a user turn and the assistant turn opening with its lead.

:data:`DEFAULT_PROTOCOL` is the one the measurements favour (see its docstring).

Problem kinds (:data:`rsim_env.problems.KINDS`): the texts that ask for the *answer* depend on the
kind (:data:`KIND_TEXTS`): the system prompts, the termination instruction, lead-in and ``inline``
header. Math asks for ``\\boxed{}``; code asks for the complete program in one fenced ``python``
block, and its termination lead-in *opens* that block (``Here is the complete program:`` then an
opening fence line), so the reasoner continues with the program itself and ends it with the closing
fence (the extraction rule for such a step is in :mod:`rsim_env.code.extract`). Every other text is
shared. Every function takes ``kind="math"`` by default, and math prompts are unchanged by kinds.

Agents must not format prompts themselves; they call these functions (or read the observation's
``"prompt"``, ``"system"``, ``"instruction"`` and ``"injected"`` fields, which are built from them).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Sequence

from .strategies import STRATEGIES, TERMINATION

STEP_DELIMITER = "\n\n"
"""Ends a reasoning step inside one assistant message; the reasoner stops generating when it writes this."""

REASONER_SYSTEM = (
    "You are a careful math tutor. Solve the problem one step at a time. Before each step you get an "
    "instruction in parentheses; write only that one step, briefly, then a blank line. When told to "
    "conclude, give the final answer as \\boxed{answer}."
)
"""System prompt of the ``inline`` protocol (kept verbatim so its measurements can be reproduced)."""
STEPWISE_SYSTEM = (
    "You are a careful math tutor. Solve the problem one short step at a time, following the "
    "instructions you are given. Use numbers, not just words. When asked for the final answer, put "
    "the number inside \\boxed{}."
)
"""System prompt of the ``chat``, ``lead`` and ``chat+lead`` protocols."""
NO_PLANNER_SYSTEM = (
    "You are a careful math tutor. Solve the problem step by step, then put the final answer (a "
    "number) inside \\boxed{}."
)
"""System prompt of no-planner mode. No placeholder inside the box: SmolLM2-135M copies
``\\boxed{answer}`` literally (measured: most final answers under the first chat+lead draft)."""

INSTRUCTIONS: tuple[str, ...] = (
    "Look back at your reasoning so far. Is anything wrong or missing? Say what, briefly.",
    "Break the problem into smaller sub-problems and solve the first one.",
    "Think carefully about the next step, then do it.",
    "Check your last result: recompute it or substitute it back.",
    "Summarize briefly what we know so far.",
    "Decide what matters most to do next, and do it.",
    "Continue with the next step of the solution.",
    "Write a short plan for the next steps.",
    "Give the final answer: put the number inside \\boxed{}.",
)
"""User-turn instruction per strategy (``chat`` protocols), in :data:`STRATEGIES` order."""

LEADS: tuple[str, ...] = (
    "Wait, let me look back at my reasoning so far.",
    "Let me break this into smaller parts. First,",
    "Let me think carefully about this step.",
    "Let me check the last result:",
    "So far we know that",
    "The most important step now is to compute",
    "Next,",
    "Here is my plan:",
    "The final answer is \\boxed{",
)
"""Assistant-side lead-in per strategy (``lead`` protocols): the reasoner continues this text.

Leads end where the natural continuation is the work itself. Measured: "The most important thing
to do next is" was continued with "to find the final answer." (an echo) in most greedy episodes;
"... step now is to compute" is continued with the computation."""

CODE_REASONER_SYSTEM = (
    "You are a careful Python programmer. Solve the task one step at a time. Before each step you get an "
    "instruction in parentheses; write only that one step, briefly, then a blank line. When told to "
    "conclude, give the complete program in one ```python code block."
)
"""``inline`` system prompt of code problems."""
CODE_STEPWISE_SYSTEM = (
    "You are a careful Python programmer. Solve the task one short step at a time, following the "
    "instructions you are given. When asked for the complete program, write the whole Python function "
    "in one ```python code block."
)
"""System prompt of code problems under the ``chat``, ``lead`` and ``chat+lead`` protocols."""
CODE_NO_PLANNER_SYSTEM = (
    "You are a careful Python programmer. Think about the task briefly, then write the complete Python "
    "function in one ```python code block."
)
"""No-planner system prompt of code problems."""
CODE_FENCE = "```python\n"
"""The opening fence line that code prompts ask for (and the code termination lead-in ends with)."""


@dataclass(frozen=True)
class KindTexts:
    """The texts that ask for the answer, per problem kind (every other text is shared by all kinds)."""

    inline_system: str
    """System prompt of the ``inline`` protocol."""
    stepwise_system: str
    """System prompt of the ``chat``, ``lead`` and ``chat+lead`` protocols."""
    no_planner_system: str
    """System prompt of no-planner mode (one whole answer)."""
    termination_instruction: str
    """User-turn instruction of the termination strategy (``chat`` protocols)."""
    termination_lead: str
    """Assistant-side lead-in of the termination strategy (``lead`` protocols)."""
    termination_prompt: str
    """Strategy prompt in the ``inline`` termination header."""


KIND_TEXTS: dict[str, KindTexts] = {
    "math": KindTexts(REASONER_SYSTEM, STEPWISE_SYSTEM, NO_PLANNER_SYSTEM, INSTRUCTIONS[TERMINATION],
                      LEADS[TERMINATION], STRATEGIES[TERMINATION].prompt),
    "code": KindTexts(CODE_REASONER_SYSTEM, CODE_STEPWISE_SYSTEM, CODE_NO_PLANNER_SYSTEM,
                      "Give the complete program: the whole Python function in one ```python code block.",
                      "Here is the complete program:\n" + CODE_FENCE,
                      "Conclude and give the complete program in one ```python code block."),
}
"""Answer-asking texts per problem kind. Math's are :data:`INSTRUCTIONS`/:data:`LEADS`'s termination
entries and the strategy table's prompt (unchanged); code's termination lead-in ends inside an open
fenced block, so what the reasoner generates is the program and its closing fence."""


def kind_texts(kind: str) -> KindTexts:
    """:data:`KIND_TEXTS` entry of ``kind``, with an error that lists the valid kinds."""
    if kind not in KIND_TEXTS:
        raise ValueError(f"unknown problem kind {kind!r}; choose one of {sorted(KIND_TEXTS)} (Problem.kind).")
    return KIND_TEXTS[kind]


@dataclass(frozen=True)
class Protocol:
    """How strategies reach the reasoner (see module docstring)."""

    name: str
    """Key in :data:`PROTOCOLS`."""
    separate_turns: bool
    """Each strategy is its own user turn and each step its own assistant turn (ended by end-of-turn)."""
    leads: bool
    """Each step's assistant text opens with the strategy's lead-in (:data:`LEADS`)."""
    system: str
    """System prompt of math problems (:func:`system` gives any kind's)."""


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol("inline", separate_turns=False, leads=False, system=REASONER_SYSTEM),
    Protocol("chat", separate_turns=True, leads=False, system=STEPWISE_SYSTEM),
    Protocol("lead", separate_turns=False, leads=True, system=STEPWISE_SYSTEM),
    Protocol("chat+lead", separate_turns=True, leads=True, system=STEPWISE_SYSTEM),
)}
"""Every turn protocol, by name."""

DEFAULT_PROTOCOL = "chat+lead"
"""The protocol the environment uses unless told otherwise (chosen by measurement, see docs/interaction.md)."""


def protocol(name: str) -> Protocol:
    """Look a protocol up by name, with an error that lists the valid names."""
    if name not in PROTOCOLS:
        raise ValueError(f"unknown turn protocol {name!r}; choose one of {sorted(PROTOCOLS)}.")
    return PROTOCOLS[name]


def system(proto: str, kind: str = "math") -> str:
    """System prompt of protocol ``proto`` for problems of ``kind``."""
    t = kind_texts(kind)
    return t.inline_system if protocol(proto).name == "inline" else t.stepwise_system


def injection(round_index: int, strategy: int, kind: str = "math") -> str:
    """The ``inline`` protocol's header before step ``round_index`` (0-based).

    Example: ``"Step 2 (validation: Check the last result: ...)\\n"``.
    """
    s = STRATEGIES[strategy]
    prompt = kind_texts(kind).termination_prompt if strategy == TERMINATION else s.prompt
    return f"Step {round_index + 1} ({s.name}: {prompt})\n"


def lead(proto: str, round_index: int, strategy: int, kind: str = "math") -> str:
    """Assistant-side text injected before the reasoner writes step ``round_index`` ("" if none)."""
    p = protocol(proto)
    if p.name == "inline":
        return injection(round_index, strategy, kind)
    if not p.leads:
        return ""
    return kind_texts(kind).termination_lead if strategy == TERMINATION else LEADS[strategy]


def instruction(proto: str, question: str, round_index: int, strategy: int | None, kind: str = "math") -> str:
    """Content of the user turn that opens round ``round_index`` ("" = continue the assistant message).

    Round 0 always opens with the question; chat protocols add the round's instruction to it.
    """
    p = protocol(proto)
    if strategy is None or not p.separate_turns:
        return question if round_index == 0 else ""
    text = kind_texts(kind).termination_instruction if strategy == TERMINATION else INSTRUCTIONS[strategy]
    return f"{question}\n\n{text}" if round_index == 0 else text


def shown_step(proto: str, round_index: int, strategy: int, step: str, kind: str = "math") -> str:
    """A finished step as it reads in the transcript: lead-in (if any) + generated text.

    For ``inline`` the header is not part of the step (it is an instruction, not an answer). A lead-in
    ending in ``{`` or a line break (code's opened fence) is continued with no space.
    """
    if proto == "inline":
        return step
    head = lead(proto, round_index, strategy, kind)
    if not head:
        return step
    glue = "" if head.endswith(("{", "\n")) or not step or step[:1] in " \n" else " "
    return head + glue + step


def step_text(proto: str, round_index: int, strategy: int, step: str | None, kind: str = "math") -> str:
    """Assistant-side text of a round: the injected lead (or ``inline`` header), then the step if written."""
    head = lead(proto, round_index, strategy, kind)
    if step is None:
        return head
    return head + step if proto == "inline" else shown_step(proto, round_index, strategy, step, kind)


def reasoner_chat(question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None,
                  proto: str = DEFAULT_PROTOCOL, kind: str = "math") -> list[dict[str, str]]:
    """Chat messages for the reasoner; the last (assistant) message is open and to be continued."""
    msgs = [{"role": "system", "content": system(proto, kind)}]
    plans = list(strategies) + ([current] if current is not None else [])
    if not plans:
        return msgs + [{"role": "user", "content": question}, {"role": "assistant", "content": ""}]
    assistant: str | None = None
    for i, s in enumerate(plans):
        user = instruction(proto, question, i, s, kind)
        if user:
            if assistant is not None:
                msgs.append({"role": "assistant", "content": assistant})
            msgs.append({"role": "user", "content": user})
            assistant = ""
        else:
            assistant += STEP_DELIMITER
        assistant += step_text(proto, i, s, steps[i] if i < len(steps) else None, kind)
    msgs.append({"role": "assistant", "content": assistant})
    return msgs


def no_planner_chat(question: str, kind: str = "math") -> list[dict[str, str]]:
    """Chat for plain chain-of-thought (no planner): system + question, assistant to answer."""
    return [{"role": "system", "content": kind_texts(kind).no_planner_system}, {"role": "user", "content": question}]


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
    """Every text any protocol injects (system prompts, instructions, leads, strategy prompts and names).

    The references of echo detection (:mod:`rsim_env.echo`).
    """
    out = [REASONER_SYSTEM, STEPWISE_SYSTEM, NO_PLANNER_SYSTEM, *INSTRUCTIONS, *LEADS]
    for s in STRATEGIES:
        out += [s.name, s.prompt, injection(0, s.index)]
    for kind, t in KIND_TEXTS.items():  # other kinds' answer-asking texts (math's are already in)
        out += [x for x in (getattr(t, f.name) for f in fields(t)) if x not in out]
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


assert len(INSTRUCTIONS) == len(LEADS) == len(STRATEGIES) and LEADS[TERMINATION].endswith("\\boxed{")
assert KIND_TEXTS["code"].termination_lead.endswith(CODE_FENCE)


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

    No-planner chats (any kind's no-planner system prompt) and code's termination turn (the program,
    which has blank lines of its own) are whole answers: no step-delimiter stop, the answer token cap.
    """
    if messages and messages[0]["content"] in {t.no_planner_system for t in KIND_TEXTS.values()}:
        return True
    last = messages[-1]["content"] if messages else ""
    return any(last.endswith(t.termination_instruction) for k, t in KIND_TEXTS.items() if k != "math")
