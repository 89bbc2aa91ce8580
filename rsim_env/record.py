"""The typed episode record: one finished episode as every file and reader sees it.

Training samples (``samples.jsonl``), eval episodes (``episodes.jsonl``) and benchmarks that save
episodes write :meth:`EpisodeRecord.to_json` rows; the viewer and analysis code read them back with
:func:`read_row`. Per step it keeps the planned strategy, the text the protocol **injected** before the
step (a lead-in such as ``The final answer is \\boxed{``), the **generated** text and the step as
**shown** (both together), so a reader sees what the model was given and what it wrote. The question
text travels with it. Rewards and components come from :func:`rsim_env.scoring.score`.

Format (version 1; one JSON object per line): ``version``, the problem fields (``problem_id``, ``kind``,
``question``, ``answer``, ``answer_type``), ``protocol``, ``planner``, per-step lists of equal length
(``strategies`` -- empty without a planner --, ``injected``, ``steps`` (generated), ``shown_steps``,
``detected``, ``echo``, ``vacuous``, ``self_repeat``), the outcome (``extracted``, ``correct``, ``reason``,
``tests_fraction``, ``components``, ``rewards``, ``rounds``, ``terminated``, ``truncated``) and where it
came from (``mode`` and ``sample`` for eval, ``step`` for training, ``tokens``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from . import kinds
from .problem import Problem

__all__ = ["RECORD_VERSION", "EpisodeRecord", "from_outcome", "read_row"]

RECORD_VERSION = 1
"""Version written by :meth:`EpisodeRecord.to_json`; :meth:`EpisodeRecord.from_json` reads only this one."""


@dataclass(frozen=True)
class EpisodeRecord:
    """One finished episode (see module docstring for the JSON layout)."""

    problem_id: str
    """Problem id within its source."""
    kind: str
    """Problem kind (:mod:`rsim_env.kinds`)."""
    question: str
    """The question text as the agents saw it."""
    answer: str
    """The gold answer (code: a reference solution or "")."""
    answer_type: str = "auto"
    """How the answer is compared (:data:`rsim_env.problem.ANSWER_TYPES`)."""
    protocol: str = ""
    """Turn protocol (:mod:`rsim_env.protocols`); "none" without a planner, "" if not recorded."""
    planner: bool = True
    """False in no-planner mode (one whole answer, no plans)."""
    strategies: tuple[int, ...] = ()
    """Per step: the planned strategy index (empty without a planner)."""
    injected: tuple[str, ...] = ()
    """Per step: the text the protocol injected before it ("" for none)."""
    steps: tuple[str, ...] = ()
    """Per step: the text the reasoner generated."""
    shown_steps: tuple[str, ...] = ()
    """Per step: the step as the transcript reads it (injected lead-in + generated text)."""
    detected: tuple[tuple[int, ...], ...] = ()
    """Per step: strategies the generated text shows."""
    echo: tuple[bool, ...] = ()
    """Per step: copies injected text."""
    vacuous: tuple[bool, ...] = ()
    """Per step: says nothing new."""
    self_repeat: tuple[bool, ...] = ()
    """Per step: repeats an earlier step."""
    extracted: str | None = None
    """The extracted answer or program."""
    correct: bool = False
    """R_acc's input."""
    reason: str = ""
    """The grader's reason (``ok``, ``unparsable``, a sandbox reason, ...)."""
    tests_fraction: float | None = None
    """Code: share of tests passed."""
    components: dict[str, float] = field(default_factory=dict)
    """Unweighted reward components."""
    rewards: dict[str, float] = field(default_factory=dict)
    """Weighted reward per agent."""
    rounds: int = 0
    """Steps written."""
    terminated: bool = False
    """Ended by a termination plan (or the single no-planner turn)."""
    truncated: bool = False
    """Ended by the round limit."""
    mode: str = ""
    """Eval: the planner mode (``none``, ``trained``, ``fixed:1,3,8``, ...)."""
    sample: int = 0
    """Eval: the sample index among ``k``."""
    step: int | None = None
    """Training: the optimizer step the rollout came from."""
    tokens: dict[str, Any] = field(default_factory=dict)
    """Token counts, where the agents report them."""
    version: int = RECORD_VERSION
    """Record format version."""

    def problem(self) -> Problem:
        """The problem rebuilt from the record (enough to grade math; code needs its tests: pass the problem)."""
        problem = Problem(id=self.problem_id, question=self.question or "(no question recorded)", answer=self.answer,
                          answer_type=self.answer_type, kind=self.kind)
        kinds.validate(problem)  # Problem is plain data: a code record (no tests) is refused here, by name
        return problem

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (lists for tuples)."""
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, tuple):
                d[k] = [list(x) if isinstance(x, tuple) else x for x in v]
        return d

    def to_json(self) -> str:
        """One line of JSON (a ``samples.jsonl`` / ``episodes.jsonl`` row)."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, row: str | Mapping[str, Any]) -> EpisodeRecord:
        """Read a row written by :meth:`to_json` (a JSON string or its parsed dict).

        Raises:
            ValueError: No or an unknown ``version``, or keys this version does not have.
        """
        d = dict(json.loads(row) if isinstance(row, str) else row)
        version = d.get("version")
        if version is None:
            raise ValueError("this row has no 'version', so it is not an rsim episode record (EpisodeRecord.to_json "
                             "writes one); write episodes with rsim_env.record.from_outcome(...).to_json().")
        if version != RECORD_VERSION:
            raise ValueError(f"episode record version {version!r} is not supported; this rsim reads version "
                             f"{RECORD_VERSION}. Read the file with the rsim version that wrote it, or upgrade rsim.")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"episode record (version {version}) has unknown keys {unknown}; expected only {sorted(names)}.")
        for k in ("strategies", "injected", "steps", "shown_steps", "echo", "vacuous", "self_repeat"):
            if k in d:
                d[k] = tuple(d[k])
        if "detected" in d:
            d["detected"] = tuple(tuple(x) for x in d["detected"])
        return cls(**d)


def from_outcome(outcome: Mapping[str, Any], **where: Any) -> EpisodeRecord:
    """The record of an env outcome (``{"info", "rewards"}`` of :meth:`Episode.outcome`, or a rollout
    trajectory holding them); ``where`` sets ``mode``, ``sample``, ``step`` or ``tokens``."""
    info, planner = outcome["info"], bool(outcome["info"].get("planner", True))
    return EpisodeRecord(
        problem_id=info["problem_id"], kind=info["kind"], question=info["question"], answer=info["answer"],
        answer_type=info.get("answer_type", "auto"), protocol=info["protocol"], planner=planner,
        strategies=tuple(info["strategies"]) if planner else (), injected=tuple(info["injected"]),
        steps=tuple(info["steps"]), shown_steps=tuple(info["shown_steps"]),
        detected=tuple(tuple(d) for d in info["detected"]), echo=tuple(info["echo"]), vacuous=tuple(info["vacuous"]),
        self_repeat=tuple(info["self_repeat"]), extracted=info["extracted"], correct=bool(info["correct"]),
        reason=info["reason"], tests_fraction=info.get("tests_fraction"), components=dict(info["components"]),
        rewards=dict(outcome["rewards"]), rounds=int(info["num_rounds"]), terminated=bool(info["terminated"]),
        truncated=bool(info["truncated"]), **where)


def read_row(row: str | Mapping[str, Any]) -> EpisodeRecord:
    """A record from a ``samples.jsonl`` / ``episodes.jsonl`` row (a JSON string or an already parsed object).

    Raises:
        ValueError: The row is not a JSON object, or :meth:`EpisodeRecord.from_json` refuses it.
    """
    d = json.loads(row) if isinstance(row, str) else row
    if not isinstance(d, Mapping):
        raise ValueError(f"an episode row must be a JSON object, got {type(d).__name__}.")
    return EpisodeRecord.from_json(d)
