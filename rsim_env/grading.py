"""How a finished episode is graded, by problem kind -- the one place that dispatches on it.

* ``math``: the final answer is extracted from the whole response and checked symbolically
  (:func:`rsim_env.answers.check`); format is left to the reward table's own ``format``
  component (``Grade.format is None``).
* ``code``: the program is extracted from the **final step** (:func:`rsim_env.code.extract_program`,
  fenced block or whole step); format = a program was extracted and parses (``ast.parse`` only);
  correct = it passes every test in the sandbox (:func:`rsim_env.code.execute`); the fraction of
  tests passed is recorded.

Code executions can be started ahead of time (:func:`prefetch`, used by
:class:`~rsim_env.group.EnvGroup` when many copies finish in the same step) so that a group's
programs run in parallel; :func:`grade` then waits for the prefetched result.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable, Sequence

from . import answers
from .problems import Problem

DEFAULT_CODE_TIMEOUT_S = 5.0
"""Sandbox time limit per program unless ``problem.metadata["timeout_s"]`` says otherwise."""


@dataclass(frozen=True)
class Grade:
    """Outcome of grading one response."""

    correct: bool
    """R_acc's input: the answer is right / every test passed."""
    format: float | None
    """R_format for kinds with their own rule (code: 1.0 if a program was extracted and parses);
    None = use :mod:`rsim_env.rewards`' ``format`` component (math)."""
    extracted: str | None
    """The extracted answer or program (None if nothing could be extracted)."""
    reason: str
    """Why: the answer checker's reason, or the sandbox's :data:`~rsim_env.code.REASONS` key."""
    fraction: float | None = None
    """Code: fraction of tests passed; None for math."""


def grade_math(problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
    result = answers.check("\n\n".join(steps), problem.answer, problem.answer_type, check or answers.CheckConfig())
    return Grade(bool(result.correct), None, result.extracted, result.reason)


_pending: dict[tuple[str, str, str], list] = {}  # key -> [future, episodes still to grade with it]
_pending_lock = threading.Lock()


def _program(final_step: str) -> str | None:
    from .code import extract_program, program_parses

    program = extract_program(final_step)
    return program if program_parses(program) else None


def prefetch(problem: Problem, final_step: str) -> None:
    """Start the sandboxed run of a code episode's final step now (no-op for math problems)."""
    if problem.kind != "code":
        return
    from .code import default_executor

    program = _program(final_step)
    if program is None:
        return
    key = (program, problem.tests, problem.entry_point)
    with _pending_lock:  # identical programs (common within a GRPO group) share one run
        if key in _pending:
            _pending[key][1] += 1
        else:
            _pending[key] = [default_executor().submit(program, problem.tests, problem.entry_point,
                                                       _timeout(problem)), 1]


def _timeout(problem: Problem) -> float:
    return float(problem.metadata.get("timeout_s", DEFAULT_CODE_TIMEOUT_S))


def grade_code(problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
    """``check`` (the math answer-check settings) is unused: code is judged by running its tests."""
    from .code import default_executor, extract_program

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


GRADERS: dict[str, Callable[..., Grade]] = {"math": grade_math, "code": grade_code}
"""Grader per :data:`~rsim_env.problems.KINDS` entry."""


def grade(problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
    """Grade a finished episode's steps against ``problem`` by its kind (``check``: math answer settings)."""
    return GRADERS[problem.kind](problem, steps, check)
