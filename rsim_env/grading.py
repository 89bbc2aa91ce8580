"""Grading a finished episode: a thin front to the problem's :class:`~rsim_env.kinds.Kind`.

Each kind grades its own answers (:meth:`rsim_env.kinds.Kind.grade`; math in
:mod:`rsim_env.kinds.math`, code in :mod:`rsim_env.kinds.code`); this module keeps the names other code
imports. Code executions can be started ahead of time (:func:`prefetch`, used by
:class:`~rsim_env.group.EnvGroup` when many copies finish in the same step) so that a group's programs
run in parallel; :func:`grade` then waits for the prefetched result.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from . import answers, kinds
from .kinds import Grade
from .kinds.code import _pending  # noqa: F401  (tests read it: every prefetched run is consumed)
from .kinds.code import CODE, DEFAULT_CODE_TIMEOUT_S
from .kinds.math import MATH
from .problems import Problem

__all__ = ["Grade", "GRADERS", "DEFAULT_CODE_TIMEOUT_S", "grade", "grade_code", "grade_math", "prefetch"]

grade_math: Callable[..., Grade] = MATH.grade
grade_code: Callable[..., Grade] = CODE.grade


class _Graders(Mapping[str, Callable[..., Grade]]):
    """Live view: kind name -> its ``grade`` method."""

    def __getitem__(self, name: str) -> Callable[..., Grade]:
        return kinds.KINDS[name].grade

    def __iter__(self):
        return iter(kinds.KINDS)

    def __len__(self) -> int:
        return len(kinds.KINDS)


GRADERS: Mapping[str, Callable[..., Grade]] = _Graders()
"""Grader per registered kind (:data:`rsim_env.kinds.KINDS`)."""


def prefetch(problem: Problem, final_step: str) -> None:
    """Start grading work for a final step now (code: the sandbox run; a no-op for math)."""
    kinds.get(problem.kind).prefetch(problem, final_step)


def grade(problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
    """Grade a finished episode's steps against ``problem`` by its kind (``check``: math answer settings)."""
    return kinds.get(problem.kind).grade(problem, steps, check)
