"""Every text prompt in rSIM is built here, and only here.

Two views of one episode:

* **Reasoner** — a chat: a system message, the question as the user message, and one assistant
  message that grows round by round. Each round appends the *injection* for the planned strategy
  (:func:`injection`), then the reasoner's step, then :data:`STEP_DELIMITER`. Because the
  assistant message only ever grows, an LLM agent can keep its KV cache and feed just the new
  injection tokens each round.
* **Planner** — plain text: :func:`planner_header` followed by one :func:`planner_segment` per
  finished round. The context at round ``t`` is a prefix of the context at round ``t + 1``, so a
  learner can score every decision of a trajectory in one forward pass.

Agents must not format prompts themselves; they call these functions (or read the observation's
``"prompt"`` field, which is built from them).
"""

from __future__ import annotations

from typing import Sequence

from .strategies import STRATEGIES

STEP_DELIMITER = "\n\n"
"""Ends a reasoning step; the reasoner stops generating when it writes this."""

REASONER_SYSTEM = (
    "You are a careful math tutor. Solve the problem one step at a time. Before each step you get an "
    "instruction in parentheses; write only that one step, briefly, then a blank line. When told to "
    "conclude, give the final answer as \\boxed{answer}."
)
NO_PLANNER_SYSTEM = (
    "You are a careful math tutor. Solve the problem step by step, then give the final answer as "
    "\\boxed{answer}."
)


def injection(round_index: int, strategy: int) -> str:
    """Text injected into the reasoner's message before step ``round_index`` (0-based).

    Example: ``"Step 2 (validation: Check the last result: ...)\\n"``.
    """
    s = STRATEGIES[strategy]
    return f"Step {round_index + 1} ({s.name}: {s.prompt})\n"


def reasoner_assistant_prefix(steps: Sequence[str], strategies: Sequence[int], current: int | None) -> str:
    """The assistant message so far: past rounds, then the injection for ``current`` (if any)."""
    parts = [injection(i, p) + z + STEP_DELIMITER for i, (p, z) in enumerate(zip(strategies, steps))]
    if current is not None:
        parts.append(injection(len(steps), current))
    return "".join(parts)


def reasoner_chat(
    question: str, steps: Sequence[str], strategies: Sequence[int], current: int | None
) -> list[dict[str, str]]:
    """Chat messages for the reasoner; the last (assistant) message is open and to be continued."""
    return [
        {"role": "system", "content": REASONER_SYSTEM},
        {"role": "user", "content": question},
        {"role": "assistant", "content": reasoner_assistant_prefix(steps, strategies, current)},
    ]


def no_planner_chat(question: str) -> list[dict[str, str]]:
    """Chat for plain chain-of-thought (no planner): system + question, assistant to answer."""
    return [{"role": "system", "content": NO_PLANNER_SYSTEM}, {"role": "user", "content": question}]


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
    seg = len(planner_segment(max_steps - 1, 0, "")) + longest_name + max_step_chars
    return len(planner_header("")) + max_question_chars + max_steps * seg


def max_reasoner_chars(max_question_chars: int, max_steps: int, max_step_chars: int) -> int:
    """Upper bound on the reasoner prompt's length (``chat_to_text(reasoner_chat(...))``)."""
    longest = max(len(injection(max_steps - 1, s.index)) for s in STRATEGIES)
    overhead = len(chat_to_text(reasoner_chat("", [], [], None)))
    return overhead + max_question_chars + max_steps * (longest + max_step_chars + len(STEP_DELIMITER))


CODE_INSTRUCTION = (
    "Write a Python function `{entry_point}` that solves the task below, using only the standard library. "
    "In your final step, give the complete program (imports and the whole function) in one ```python "
    "code block; nothing after the code block is run."
)


def code_question(task: str, entry_point: str) -> str:
    """Question text of a code problem: the instruction about the final program, then the task."""
    return CODE_INSTRUCTION.format(entry_point=entry_point) + "\n\n" + task.strip("\n")
