"""``rsim eval --out DIR`` keeps every finished batch, so a killed evaluation resumes where it stopped.

``DIR/journal.jsonl``: the first line is a header with the settings fingerprint (every field of the
resolved :class:`EvalConfig` that shapes an episode, and the problem ids); each further line is one
finished batch of one mode (its episode rows and timing), appended and ``fsync``-ed as it finishes.
Rerunning the same command reads the journal, skips the finished ``(mode, problem, sample)``
episodes (whole batches: a batch is played as one batched rollout) and plays the rest; a rerun with
other settings is refused in one line. Each batch is seeded on its own (:func:`.run.evaluate_mode`),
so a resumed evaluation writes the same ``results.json`` as an uninterrupted one (wall times aside).
A torn last line (killed mid-write) is dropped and that batch is played again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

from .config import EvalConfig

__all__ = ["NAME", "RUN_ONLY", "settings_of", "fingerprint", "Journal"]

NAME = "journal.jsonl"
RUN_ONLY = ("out", "plots", "progress", "resume", "threads", "set", "ledger_dir")  # threads: speed only, chosen per process
"""EvalConfig fields that change where and how results are shown, not the episodes (not fingerprinted); ``set``
holds the --set items, whose effect is in the resolved sections (the same setting by a flag or --set resumes)."""


def settings_of(cfg: EvalConfig, problem_ids: Sequence[str], checkpoint: str = "") -> dict[str, Any]:
    """What the episodes depend on: the resolved config without :data:`RUN_ONLY`, the problem ids and
    the checkpoint the settings came from (a run that trained on since has a newer one: refused)."""
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in RUN_ONLY}
    doc = {"config": config, "problem_ids": list(problem_ids), "checkpoint": checkpoint}
    return json.loads(json.dumps(doc, default=str))


def fingerprint(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf-8")).hexdigest()


def _flat(d: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(d, dict):
        return {prefix.rstrip("."): d}
    out: dict[str, Any] = {}
    for k, v in d.items():
        out |= _flat(v, f"{prefix}{k}.")
    return out


class Journal:
    """Finished batches of one evaluation under ``out`` (see the module docstring)."""

    def __init__(self, out: Path, settings: dict[str, Any], resume: bool = True) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / NAME
        self.fingerprint = fingerprint(settings)
        self.done: dict[tuple[str, int], dict[str, Any]] = {}
        if resume and self.path.exists():
            self._load(settings)
        else:
            self._write_header(settings)

    def _write_header(self, settings: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{NAME}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"fingerprint": self.fingerprint, "settings": settings}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def _load(self, settings: dict[str, Any]) -> None:
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        try:
            header = json.loads(lines[0])
        except ValueError:
            header = {}
        if header.get("fingerprint") != self.fingerprint:
            old, new = _flat(header.get("settings", {})), _flat(settings)
            changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
            shown = ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in changed[:3]) or "unreadable header"
            raise ValueError(f"{self.path.parent}: holds a partial evaluation with other settings ({shown}"
                             f"{', ...' if len(changed) > 3 else ''}); rerun the same command to resume it, pass "
                             "another --out, or --no-resume to start over.")
        good = len(lines[0]) + 1
        for line in lines[1:]:
            try:
                unit = json.loads(line)
                self.done[(unit["mode"], unit["batch"])] = unit
            except (ValueError, KeyError, TypeError):
                break  # a torn last line: that batch is played again
            good += len(line) + 1
        if good < len(raw):
            with open(self.path, "r+b") as fh:  # drop the torn tail so appends start on a clean line
                fh.truncate(good)

    def get(self, mode: str, batch: int, keys: Sequence[tuple[str, int]]) -> dict[str, Any] | None:
        """The finished batch ``(mode, batch)`` if it holds exactly the episodes ``keys`` (problem id, sample)."""
        unit = self.done.get((mode, batch))
        if unit is None or sorted((r["problem_id"], r["sample"]) for r in unit["rows"]) != sorted(keys):
            return None
        return unit

    def append(self, mode: str, batch: int, rows: Sequence[dict[str, Any]], stats: dict[str, Any]) -> None:
        """Record a finished batch durably (one line, flushed and fsync-ed)."""
        unit = {"mode": mode, "batch": batch, "rows": list(rows), "stats": stats}
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(unit, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.done[(mode, batch)] = json.loads(json.dumps(unit, default=str))
