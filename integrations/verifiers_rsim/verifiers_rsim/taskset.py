"""rSIM's problems as a verifiers v1 ``Taskset``: one :class:`RsimTask` per problem of any rSIM data spec.

A task carries its whole :class:`rsim_env.problem.Problem` as wire data (question, answer, answer type,
kind, task label, code tests), so an env worker that receives only the task (prime-rl's env servers) rebuilds the
same problem without loading the data again. Scoring is not the task's: the episode's rewards depend on both
agents, so :meth:`verifiers_rsim.env.RsimEnv.finalize` records them.
"""

from __future__ import annotations

from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from rsim_env.sources.data import load_problems
from rsim_env.problem import Problem

__all__ = ["RsimTaskData", "RsimTask", "RsimTasksetConfig", "RsimTaskset"]


class RsimTaskData(vf.TaskData):
    """One rSIM problem on the wire (``prompt`` is its question, for dashboards; the env builds every turn)."""

    problem_id: str
    """The problem's id in its source (``curriculum:add2_1d`` writes ``add2_1d/1000/9``)."""
    question: str
    answer: str
    answer_type: str = "auto"
    source: str = "custom"
    choices: list[str] = Field(default_factory=list)
    kind: str = "math"
    """A registered rSIM kind (``math``, ``code``)."""
    task: str = ""
    """The problem's task label (its ``metadata["task"]``, else its source)."""
    tests: str = ""
    entry_point: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    def problem(self) -> Problem:
        """The rSIM problem this task carries."""
        return Problem(id=self.problem_id, question=self.question, answer=self.answer, answer_type=self.answer_type,
                       source=self.source, choices=tuple(self.choices), metadata=dict(self.metadata), kind=self.kind,
                       tests=self.tests, entry_point=self.entry_point)

    @classmethod
    def of(cls, problem: Problem) -> RsimTaskData:
        """The wire form of ``problem``."""
        label = problem.metadata.get("task") if isinstance(problem.metadata.get("task"), str) else problem.source
        return cls(id=problem.id, name=problem.id, prompt=problem.question, problem_id=problem.id,
                   question=problem.question, answer=problem.answer, answer_type=problem.answer_type,
                   source=problem.source, choices=list(problem.choices), kind=problem.kind, task=label,
                   tests=problem.tests, entry_point=problem.entry_point, metadata=dict(problem.metadata))


class RsimTask(vf.Task[RsimTaskData]):
    """One rSIM problem. Its key is the problem id (stable across runs, unlike the content hash of ``idx``)."""

    @property
    def key(self) -> str:
        return self.data.problem_id


class RsimTasksetConfig(vf.TasksetConfig):
    """Which rSIM problems load (``--env.taskset.*``): :func:`rsim_env.sources.data.load_problems`' arguments."""

    data: str = "curriculum:heldout"
    """Any rSIM data spec: ``default``, ``curriculum:heldout``, ``gsm8k``, a JSONL file, ... (docs/data.md)."""
    limit: int | None = Field(100, ge=1)
    """At most this many problems (None: all the spec has)."""
    data_seed: int = 1000
    """The spec's generator / sampling seed (``rsim eval --set data.seed=``)."""
    split: str | None = None
    """A split the spec knows (``train``, ``val``, ``test``, ...); None: the spec's default."""


class RsimTaskset(vf.Taskset[RsimTask, RsimTasksetConfig]):
    """The problems of ``config.data`` as :class:`RsimTask` s, in the order ``rsim eval`` plays them."""

    def load(self) -> list[RsimTask]:
        problems = load_problems(self.config.data, limit=self.config.limit, seed=self.config.data_seed,
                                 split=self.config.split or None)
        ids = [p.id for p in problems]
        if len(set(ids)) != len(ids):
            raise ValueError(f"data {self.config.data!r} holds repeated problem ids ({len(ids) - len(set(ids))} "
                             "repeats); a task's key is its problem id: give each problem its own id.")
        return [RsimTask(RsimTaskData.of(p), self.config.task) for p in problems]
