"""Read a training run dir or an ``rsim eval`` output dir into one shape for the viewer.

* Run dir (``rsim train --out DIR``): ``samples.jsonl`` (one finished rollout per line, with the
  training ``step``) and ``tensorboard/`` event files (the scalar curves).
* Eval dir (``rsim eval --out DIR``): ``episodes.jsonl`` (one episode per line, with its ``mode``)
  and ``results.json``.

Both become a list of :class:`Rollout` grouped into :class:`Problem` groups (a run: one group per
training step and problem, its G rollouts; an eval: one group per problem, one rollout per mode
and sample). Detected strategies and R_follow missing from a file are computed by the env's own rule
(:func:`rsim_env.novelty.follow_from_texts`: echo-aware detection, vacuous and self-repeating steps void)
and marked as such.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsim_env.novelty import detect_steps, follow_from_texts

__all__ = ["Rollout", "Group", "Loaded", "load_dir", "read_curves"]

MAX_LINES = 20_000
"""Rollouts read from one file (the page stays usable in a browser)."""


@dataclass
class Rollout:
    """One episode as the viewer shows it."""

    label: str
    planned: list[int | None]
    steps: list[str]
    detected: list[list[int]]
    extracted: str
    correct: bool
    components: dict[str, float]
    rewards: dict[str, float] = field(default_factory=dict)
    detected_computed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Group:
    """Rollouts over one problem (side by side on the page)."""

    title: str
    problem_id: str
    answer: str
    rollouts: list[Rollout]


@dataclass
class Loaded:
    """Everything the page shows."""

    kind: str
    source: str
    groups: list[Group]
    curves: dict[str, list[tuple[float, float]]]
    notes: list[str]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if len(rows) >= MAX_LINES:
                break
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{i} is not valid JSON ({e.msg}); is this an rsim run or eval dir?") from e
    return rows


def _shown(row: dict[str, Any], steps: list[str]) -> list[str]:
    shown = row.get("shown_steps")
    return [str(s) for s in shown] if isinstance(shown, list) and len(shown) == len(steps) else steps


def _detected(row: dict[str, Any], steps: list[str]) -> tuple[list[list[int]], bool]:
    if isinstance(row.get("detected"), list) and len(row["detected"]) == len(steps):
        return [sorted(int(s) for s in d) for d in row["detected"]], False
    return [sorted(d) for d in detect_steps(steps, _shown(row, steps), str(row.get("kind") or "math"))], True


def _run_rollout(i: int, row: dict[str, Any]) -> Rollout:
    steps = [str(s) for s in row.get("steps", [])]
    det, computed = _detected(row, steps)
    planned = [int(s) for s in row.get("strategies", [])]
    return Rollout(label=f"rollout {i + 1}", planned=planned + [None] * (len(steps) - len(planned)), steps=steps,
                   detected=det, extracted=str(row.get("extracted") or ""), correct=bool(row.get("correct")),
                   components=dict(row.get("components") or {}), rewards=dict(row.get("rewards") or {}),
                   detected_computed=computed)


def _eval_rollout(row: dict[str, Any]) -> Rollout:
    steps = [str(s) for s in row.get("steps", [])]
    det, computed = _detected(row, steps)
    injected = [int(s) for s in row.get("injected") or []]
    comps = {"acc": 1.0 if row.get("correct") else 0.0}
    if "format" in row:
        comps["format"] = float(row["format"])
    if "follow" in row:
        comps["follow"] = float(row["follow"])
    elif injected and len(injected) == len(steps):  # an older file: recomputed by the env's rule
        comps["follow"] = follow_from_texts(injected, steps, _shown(row, steps), str(row.get("question") or ""),
                                            str(row.get("kind") or "math"))[0]
    extra = {k: row[k] for k in ("reason", "rounds", "terminated", "truncated") if k in row}
    tokens = row.get("tokens") or {}
    extra.update({f"tokens {k.replace('_', ' ')}": v for k, v in tokens.items() if v is not None})
    return Rollout(label=f"{row.get('mode', '?')} #{row.get('sample', 0)}",
                   planned=injected + [None] * (len(steps) - len(injected)) if injected else [None] * len(steps),
                   steps=steps, detected=det, extracted=str(row.get("extracted") or ""),
                   correct=bool(row.get("correct")), components=comps, detected_computed=computed, extra=extra)


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
        for row in _jsonl(d / "samples.jsonl"):
            key = (int(row.get("step", 0)), str(row.get("problem_id", "?")))
            g = groups.setdefault(key, Group(f"step {key[0]} · {key[1]}", key[1], str(row.get("answer", "")), []))
            g.rollouts.append(_run_rollout(len(g.rollouts), row))
        curves, notes = read_curves(d / "tensorboard")
        return Loaded("run", str(d), list(groups.values()), curves, notes)
    if (d / "episodes.jsonl").is_file():
        egroups: dict[str, Group] = {}
        for row in _jsonl(d / "episodes.jsonl"):
            pid = str(row.get("problem_id", "?"))
            egroups.setdefault(pid, Group(pid, pid, str(row.get("answer", "")), [])).rollouts.append(_eval_rollout(row))
        return Loaded("eval", str(d), list(egroups.values()), {}, ["eval dir: no training curves"])
    raise ValueError(f"{str(d)!r} has neither samples.jsonl (a run dir) nor episodes.jsonl (an eval dir); "
                     "pass the --out dir of rsim train or rsim eval.")
