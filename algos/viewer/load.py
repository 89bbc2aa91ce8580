"""Read a training run dir or an ``rsim eval`` output dir into one shape for the viewer.

* Run dir (``rsim train --out DIR``): ``samples.jsonl`` (one finished rollout per line, with the
  training ``step``) and ``tensorboard/`` event files (the scalar curves).
* Eval dir (``rsim eval --out DIR``): ``episodes.jsonl`` (one episode per line, with its ``mode``)
  and ``results.json``.

Both files hold :class:`rsim_env.record.EpisodeRecord` rows (read with :func:`rsim_env.record.read_row`). They become a list of :class:`Rollout` grouped
into :class:`Group` s (a run: one group per training step and problem, its G rollouts; an eval: one
group per problem, one rollout per mode and sample), each group with its question text and each step
with the text injected before it. Detected strategies and R_follow missing from an old file are computed
by the env's own scoring (:func:`rsim_env.scoring.score`, with the file's stored grade) and marked as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsim_env.kinds import Grade
from rsim_env.problem import Problem
from rsim_env.record import EpisodeRecord, read_row
from rsim_env.scoring import Components, score

__all__ = ["Rollout", "Group", "Loaded", "load_dir", "read_curves", "recompute"]

MAX_LINES = 20_000
"""Rollouts read from one file (the page stays usable in a browser)."""
NO_QUESTION = "(question not recorded: this file was written before rsim's episode record)"
"""What a group of an old file shows in place of its question."""


@dataclass
class Rollout:
    """One episode as the viewer shows it."""

    label: str
    planned: list[int | None]
    steps: list[str]
    """Generated text per step."""
    detected: list[list[int]]
    extracted: str
    correct: bool
    components: dict[str, float]
    rewards: dict[str, float] = field(default_factory=dict)
    detected_computed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    injected: list[str] = field(default_factory=list)
    """Text the protocol injected before each step ("" for none), shown apart from the generated text."""


@dataclass
class Group:
    """Rollouts over one problem (side by side on the page)."""

    title: str
    problem_id: str
    answer: str
    rollouts: list[Rollout]
    question: str = ""
    """The question text ("" when the file did not record it)."""


@dataclass
class Loaded:
    """Everything the page shows."""

    origin: str
    """Where the rollouts come from: ``"run"`` (samples.jsonl) or ``"eval"`` (episodes.jsonl)."""
    source: str
    groups: list[Group]
    curves: dict[str, list[tuple[float, float]]]
    notes: list[str]


def _jsonl(path: Path) -> list[EpisodeRecord]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if len(rows) >= MAX_LINES:
                break
            if line.strip():
                try:
                    rows.append(read_row(json.loads(line)))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{i} is not valid JSON ({e.msg}); is this an rsim run or eval dir?") from e
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{path}:{i}: {e}") from e
    return rows


def recompute(record: EpisodeRecord, problem: Problem | None = None, keep_grade: bool = False) -> Components:
    """Every component of ``record`` by the env's scoring (:func:`rsim_env.scoring.score`).

    Args:
        record: The episode.
        problem: What to grade against; default the problem rebuilt from the record (math; a code
            record carries no tests, so pass its problem).
        keep_grade: Take the record's stored grade (correct, extracted answer, stored format) instead of
            grading again (what the page does for old files, which lack some components).
    """
    if keep_grade:
        grade = Grade(record.correct, record.components.get("format"), record.extracted, record.reason,
                      record.tests_fraction)
        return score(record, grade=grade)
    return score(record, problem if problem is not None else record.problem())


def _rollout(label: str, rec: EpisodeRecord, extra: dict[str, Any]) -> Rollout:
    comps, detected, computed = dict(rec.components), [list(d) for d in rec.detected], False
    if len(detected) != len(rec.steps) or (rec.planner and "follow" not in comps):  # an old file
        scored = recompute(rec, keep_grade=True)
        if len(detected) != len(rec.steps):
            detected, computed = [list(d) for d in scored.detected], True
        if rec.planner:
            comps.setdefault("follow", scored.values["follow"])
    planned: list[int | None] = list(rec.strategies) if rec.planner else []
    return Rollout(label=label, planned=planned + [None] * (len(rec.steps) - len(planned)), steps=list(rec.steps),
                   detected=detected, extracted=str(rec.extracted or ""), correct=rec.correct, components=comps,
                   rewards=dict(rec.rewards), detected_computed=computed, extra=extra, injected=list(rec.injected))


def _eval_extra(rec: EpisodeRecord) -> dict[str, Any]:
    extra: dict[str, Any] = {"reason": rec.reason, "rounds": rec.rounds, "terminated": rec.terminated,
                             "truncated": rec.truncated}
    extra.update({f"tokens {k.replace('_', ' ')}": v for k, v in rec.tokens.items() if v is not None})
    return extra


def read_curves(tb_dir: Path) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    """Scalar curves ``tag -> [(step, value)]`` from TensorBoard event files under ``tb_dir``."""
    if not tb_dir.is_dir():
        return {}, [f"no {tb_dir.name}/ directory: no training curves"]
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return {}, ["tensorboard is not installed (pip install 'rsim[train]'): no training curves"]
    curves: dict[str, list[tuple[float, float]]] = {}
    for events in sorted({p.parent for p in tb_dir.rglob("events.out.tfevents.*")}):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in acc.Tags().get("scalars", []):
            curves.setdefault(tag, []).extend((float(e.step), float(e.value)) for e in acc.Scalars(tag))
    return {t: sorted(v) for t, v in curves.items()}, []


def load_dir(path: str | Path) -> Loaded:
    """Load a run dir (``samples.jsonl``) or an eval dir (``episodes.jsonl``)."""
    d = Path(path)
    if not d.is_dir():
        raise ValueError(f"{str(d)!r} is not a directory; pass a run dir (rsim train --out) or an eval dir "
                         "(rsim eval --out).")
    if (d / "samples.jsonl").is_file():
        groups: dict[tuple[int, str], Group] = {}
        for rec in _jsonl(d / "samples.jsonl"):
            key = (int(rec.step or 0), rec.problem_id)
            g = groups.setdefault(key, Group(f"step {key[0]} · {key[1]}", key[1], rec.answer, [], rec.question))
            g.rollouts.append(_rollout(f"rollout {len(g.rollouts) + 1}", rec, {}))
        curves, notes = read_curves(d / "tensorboard")
        return Loaded("run", str(d), list(groups.values()), curves, notes)
    if (d / "episodes.jsonl").is_file():
        egroups: dict[str, Group] = {}
        for rec in _jsonl(d / "episodes.jsonl"):
            g = egroups.setdefault(rec.problem_id, Group(rec.problem_id, rec.problem_id, rec.answer, [], rec.question))
            g.rollouts.append(_rollout(f"{rec.mode or '?'} #{rec.sample}", rec, _eval_extra(rec)))
        return Loaded("eval", str(d), list(egroups.values()), {}, ["eval dir: no training curves"])
    raise ValueError(f"{str(d)!r} has neither samples.jsonl (a run dir) nor episodes.jsonl (an eval dir); "
                     "pass the --out dir of rsim train or rsim eval.")
