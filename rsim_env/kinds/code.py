"""The ``code`` kind: the answer is a Python program, run on the problem's tests in the sandbox.

* texts: ask for the complete program in one fenced ``python`` block; the termination lead-in *opens*
  that block (``Here is the complete program:`` then an opening fence line), so the reasoner
  continues with the program itself and ends it with the closing fence;
* detection: prose only, a program shows termination (:func:`rsim_env.code.follow.detect_code_step`);
* graded text: the generated steps, the last one preceded by its lead-in only when that opened the
  fenced block (:func:`rsim_env.code.extract.answer_text`);
* grade: the program is extracted from the **final step** (:func:`rsim_env.code.extract_program`,
  fenced block or whole step); format = a program was extracted and parses (``ast.parse`` only);
  correct = it passes every test in the sandbox (:func:`rsim_env.code.execute`); the fraction of
  tests passed is recorded. Runs can start early (:meth:`CodeKind.prefetch`, used by
  :class:`~rsim_env.group.EnvGroup` when many copies finish in the same step) so that a group's
  programs run in parallel; :meth:`CodeKind.grade` then waits for the prefetched result;
* stop rule: a closed fenced block with a non-blank body ends the step; the termination turn is a
  whole answer (the program has blank lines of its own).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Sequence

from .base import Grade, Kind, KindTexts

if TYPE_CHECKING:
    from ..answers import CheckConfig
    from ..problem import Problem

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
WRONG_PROGRAM = "def wrong_answer():\n    return None"
"""What a scripted agent writes for a wrong program: it parses but defines no entry point."""
DEFAULT_CODE_TIMEOUT_S = 5.0
"""Sandbox time limit per program unless ``problem.metadata["timeout_s"]`` says otherwise."""

_pending: dict[tuple[str, str, str], list] = {}  # key -> [future, episodes still to grade with it]
_pending_lock = threading.Lock()


def pending_runs() -> int:
    """How many prefetched sandbox runs no episode has consumed yet (0 once every prefetch was graded)."""
    with _pending_lock:
        return len(_pending)


def _program(final_step: str) -> str | None:
    from ..code import extract_program, program_parses

    program = extract_program(final_step)
    return program if program_parses(program) else None


def _timeout(problem: Problem) -> float:
    return float(problem.metadata.get("timeout_s", DEFAULT_CODE_TIMEOUT_S))


class CodeKind(Kind):
    """See module docstring."""

    name = "code"
    texts = KindTexts(CODE_REASONER_SYSTEM, CODE_STEPWISE_SYSTEM, CODE_NO_PLANNER_SYSTEM,
                      "Give the complete program: the whole Python function in one ```python code block.",
                      "Here is the complete program:\n" + CODE_FENCE,
                      "Conclude and give the complete program in one ```python code block.")
    whole_answer = True
    placeholder_answer = WRONG_PROGRAM

    def validate(self, problem: Problem) -> None:
        if not isinstance(problem.tests, str) or "def check" not in problem.tests:
            raise ValueError(f"Code problem {problem.id!r} needs tests: source defining `def check(candidate):` "
                             "(rsim_env.code.pairs_to_check builds it from input/output pairs).")
        if not isinstance(problem.entry_point, str) or not problem.entry_point.isidentifier():
            raise ValueError(f"Code problem {problem.id!r} has entry_point={problem.entry_point!r}; "
                             "give the name of the function the program must define.")

    def detect(self, step: str, shown: str, injected: str) -> set[int]:
        from ..code.follow import detect_code_step

        return detect_code_step(step, injected)

    def answer_text(self, step: str, shown: str, injected: str) -> str:
        from ..code.extract import answer_text

        return answer_text(injected, step)

    def graded_steps(self, steps: Sequence[str], shown: Sequence[str], injected: Sequence[str]) -> list[str]:
        """Generated steps (no lead-ins), the last one as :meth:`answer_text` reads it."""
        if not steps:
            return []
        return list(steps[:-1]) + [self.answer_text(steps[-1], shown[-1], injected[-1])]

    def stops(self, injected: str, text: str) -> bool:
        from ..code.extract import answer_text, closes_program

        return closes_program(answer_text(injected, text))

    def prefetch(self, problem: Problem, final: str) -> None:
        """Start the sandboxed run of ``final`` now; identical programs (common within a GRPO group) share one run."""
        from ..code import default_executor

        program = _program(final)
        if program is None:
            return
        key = (program, problem.tests, problem.entry_point)
        with _pending_lock:
            if key in _pending:
                _pending[key][1] += 1
            else:
                _pending[key] = [default_executor().submit(program, problem.tests, problem.entry_point,
                                                           _timeout(problem)), 1]

    def grade(self, problem: Problem, steps: Sequence[str], check: CheckConfig | None = None) -> Grade:
        """``check`` (the math answer-check settings) is unused: code is judged by running its tests."""
        from ..code import default_executor, extract_program

        extracted = extract_program(steps[-1] if steps else "")
        program = _program(steps[-1] if steps else "")
        if program is None:
            return Grade(False, 0.0, extracted, "no_program" if extracted is None else "syntax_error", 0.0)
        key = (program, problem.tests, problem.entry_point)
        with _pending_lock:
            entry = _pending.get(key)
            future = entry[0] if entry else None
            if entry and entry[1] <= 1:
                del _pending[key]
            elif entry:
                entry[1] -= 1
        if future is None:
            future = default_executor().submit(program, problem.tests, problem.entry_point, _timeout(problem))
        result = future.result()
        return Grade(result.passed, 1.0, program, result.reason, result.fraction)

    def final_step(self, injected: str, answer: str) -> str:
        from ..code.extract import leaves_open

        if leaves_open(injected):  # the lead-in opened the block: continue it
            return f"{answer}\n```"
        return f"```python\n{answer}\n```"

    def right_answer(self, gold: Any) -> str:
        return str(gold).strip("\n")

    def wrong_answer(self, gold: str) -> str:
        return WRONG_PROGRAM


CODE = CodeKind()
