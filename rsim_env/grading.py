"""Grading a finished episode: a thin front to the problem's :class:`~rsim_env.kinds.Kind`.

Each kind grades its own answers (:meth:`rsim_env.kinds.Kind.grade`; math in
:mod:`rsim_env.kinds.math`, code in :mod:`rsim_env.kinds.code`); this module keeps the names other code
imports. Code executions can be started ahead of time (:func:`prefetch`, used by
:class:`~rsim_env.group.EnvGroup` when many copies finish in the same step) so that a group's programs
run in parallel; :func:`grade` then waits for the prefetched result.

:class:`GradeCache` sits in front of a kind's grader where a grade is a pure function of (problem, graded
text): pass it as ``grader=`` to :func:`rsim_env.env` / :class:`~rsim_env.group.EnvGroup`; training on a plan
tree (:mod:`agents.replay.plan_tree`) grades each distinct final text once.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Callable, Mapping, Sequence

from . import answers, kinds
from .kinds import Grade
from .kinds.code import CODE, DEFAULT_CODE_TIMEOUT_S
from .kinds.math import MATH
from .problem import Problem

__all__ = ["Grade", "GRADERS", "DEFAULT_CODE_TIMEOUT_S", "GradeCache", "UNSTABLE_REASONS", "grade", "grade_code",
           "grade_math", "prefetch"]

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


UNSTABLE_REASONS = frozenset({"timeout", "overloaded", "worker_crashed", "protocol_error", "worker_error"})
"""Grade reasons that depend on the machine (load, a worker's fate), not on the text: never cached."""


class GradeCache:
    """``(problem, graded steps, check) -> Grade``, computed by the problem's kind once and then read back.

    The key is the problem's kind, id, gold, answer type, choices and metadata (a tolerance, an rg entry), the
    graded steps and the check settings: everything a kind's ``grade`` reads. Only ``kinds`` whose grade is a pure
    function of that key are cached (math and rg by default; code runs programs and prefetches them, so it
    passes through), and no grade whose reason is in :data:`UNSTABLE_REASONS`.

    Args:
        max_entries: most grades kept (least recently used go first).
        kinds: kind names whose grades are cached.
    """

    def __init__(self, max_entries: int = 1_000_000, kinds: Sequence[str] = ("math", "rg")) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"GradeCache max_entries={max_entries!r} must be an int >= 1.")
        self.max_entries = max_entries
        self.kinds = frozenset(kinds)
        self.stats = {"hits": 0, "misses": 0, "passed": 0}
        """``hits``: read back; ``misses``: graded and kept (or unstable); ``passed``: a kind not cached."""
        self._grades: OrderedDict[tuple, Grade] = OrderedDict()

    def __len__(self) -> int:
        return len(self._grades)

    def __call__(self, problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
        """The grade :func:`grade` gives (same arguments)."""
        if problem.kind not in self.kinds:
            self.stats["passed"] += 1
            return grade(problem, steps, check)
        ident = json.dumps([problem.kind, problem.id, problem.answer, problem.answer_type, list(problem.choices),
                            problem.metadata], sort_keys=True, default=repr)
        key = (ident, tuple(steps), check)
        found = self._grades.get(key)
        if found is not None:
            self._grades.move_to_end(key)
            self.stats["hits"] += 1
            return found
        self.stats["misses"] += 1
        result = grade(problem, steps, check)
        if result.reason not in UNSTABLE_REASONS:
            self._grades[key] = result
            if len(self._grades) > self.max_entries:
                self._grades.popitem(last=False)
        return result
