"""The ledger of a test tree: every configuration ever scored on it, so the report can say how often it was looked at.

A test split is sealed only if every look at it is counted. The ledger is an append-only JSON-lines file beside the
tree (``<tree_dir>/<name>_<split>.ledger.jsonl``: every study that reads that tree writes to the same ledger, whatever
its ``--out``). One line per distinct configuration: its hash (:func:`config_hash`: SHA-256 of the canonical JSON of
the settings that decide the scores, and of the tree's fingerprint), the time, what was scored, and the settings.
Scoring an identical configuration again reuses its line and adds none; :func:`record` returns how many distinct
configurations the ledger holds, this one included: the ``m`` the report corrects its headline p-value for.

Lines a study did not write itself (earlier scorings of the same tree, by hand) count the same: ``{"hash": ..., "time":
..., "scored": "what it was"}`` is a valid line. A line that is not JSON raises (the count would be wrong)."""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from .config import StudyConfig

__all__ = ["ledger_path", "tree_fingerprint", "config_hash", "score_settings", "scoring_hash", "entries", "count",
           "record"]


def ledger_path(cfg: StudyConfig, split: str = "test") -> Path:
    """Where the ledger of ``split``'s tree is: beside the tree, named as it (``<name>_<split>.ledger.jsonl``; another
    replication draw's or your own file's tree has its own)."""
    from .fill import tree_path

    tree = tree_path(cfg, split)
    return tree.with_name(tree.name.removesuffix(".tree.json.gz") + ".ledger.jsonl")


def tree_fingerprint(path: str | os.PathLike) -> str:
    """What identifies a tree's content: SHA-256 of its reasoner root, its env config and its problems (id -> what the
    reasoner saw); filling more problems changes it, rewriting the same content does not."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"no plan tree at {path}: fill it first (rsim study --stage fill).") from None
    meta = data.get("meta", {}) if isinstance(data, dict) else {}
    body = [meta.get("root"), meta.get("env"), sorted(data.get("problems", {}).items())]
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def config_hash(settings: Mapping[str, Any], fingerprint: str) -> str:
    """SHA-256 of the canonical JSON (sorted keys) of ``settings`` and the tree ``fingerprint``."""
    text = json.dumps({"settings": settings, "tree": fingerprint}, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


SCORE_KEYS = ("data", "task_column", "tasks", "data_seed", "train_per_task", "val_per_task", "test_per_task",
              "replication_per_task", "rounds", "terminate_last_round", "planner", "learner", "heads_from")
"""The :class:`StudyConfig` fields that decide a scoring (with the tree and the heads' weights): not where things are
written, how the fill batches, or the threads."""


def _heads_digest(heads: Path) -> str:
    """SHA-256 of every weights file (``model.*``) under ``heads`` ("" when there are none): retrained heads are another
    look at the test tree even under the same settings; a log or state file written beside them is not."""
    h = hashlib.sha256()
    files = sorted(p for p in heads.rglob("model.*") if p.is_file())
    for p in files:
        h.update(str(p.relative_to(heads)).encode())
        h.update(p.read_bytes())
    return h.hexdigest() if files else ""


def score_settings(cfg: StudyConfig) -> dict[str, Any]:
    """The settings that decide a scoring of ``cfg`` (:data:`SCORE_KEYS`, and the digest of the heads scored)."""
    from dataclasses import asdict

    from .config import heads_dir

    d = asdict(cfg)
    src = Path(cfg.heads_from)
    heads = (src / "heads" if (src / "heads").is_dir() else src) if cfg.heads_from else heads_dir(cfg)
    return {**{k: d[k] for k in SCORE_KEYS}, "heads": _heads_digest(heads) if heads.is_dir() else ""}


def scoring_hash(cfg: StudyConfig, split: str = "test", extra: Mapping[str, Any] | None = None) -> tuple[str, dict]:
    """``(hash, settings)`` of scoring ``cfg`` on its ``split`` tree: :func:`score_settings` (plus ``extra``: e.g. the
    modes scored) and the tree's fingerprint; pass both to :func:`record`."""
    from .fill import tree_path

    settings = {**score_settings(cfg), **(extra or {})}
    return config_hash(settings, tree_fingerprint(tree_path(cfg, split))), settings


def _path(where: StudyConfig | str | os.PathLike, split: str) -> Path:
    if isinstance(where, StudyConfig):
        return ledger_path(where, split)
    p = Path(where)
    return p / "ledger.jsonl" if p.is_dir() else p


def entries(where: StudyConfig | str | os.PathLike, split: str = "test") -> list[dict[str, Any]]:
    """Every line of the ledger (``where``: a study config, the ledger file, or a folder holding ``ledger.jsonl``);
    [] when there is none yet.

    Raises:
        ValueError: a line that is not a JSON object with a ``hash`` (the message names the file and line).
    """
    path = _path(where, split)
    if not path.exists():
        return []
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} line {i} is not JSON ({e}); repair it by hand: the ledger is the count of looks "
                             "at the test tree and cannot be rebuilt.") from None
        if not isinstance(row, dict) or not isinstance(row.get("hash"), str):
            raise ValueError(f"{path} line {i} has no 'hash': every line is {{'hash', 'time', 'scored', ...}}.")
        out.append(row)
    return out


def count(where: StudyConfig | str | os.PathLike, split: str = "test") -> int:
    """How many distinct configurations the ledger holds."""
    return len({row["hash"] for row in entries(where, split)})


def record(where: StudyConfig | str | os.PathLike, hash_: str, *, split: str = "test", scored: str = "",
           settings: Mapping[str, Any] | None = None) -> int:
    """Record that the configuration ``hash_`` (:func:`config_hash`) was scored on the tree; returns how many
    distinct configurations have been scored on it, this one included. An identical configuration adds no line.

    Args:
        where: the study's config (the ledger beside its ``split`` tree), a ledger file, or a folder (its
            ``ledger.jsonl``).
        hash_: the configuration's hash.
        split: the tree's split (``test`` or ``replication``) when ``where`` is a config.
        scored: what was scored, in words (``"trained x 6 seeds, best_fixed, per_task, ..."``).
        settings: the settings hashed, kept on the line so a reader can see what differed.
    """
    if not isinstance(hash_, str) or len(hash_) < 16:
        raise ValueError(f"ledger.record: hash {hash_!r} is not a configuration hash; pass ledger.config_hash(...).")
    path = _path(where, split)
    rows = entries(path)
    if all(row["hash"] != hash_ for row in rows):
        line = {"hash": hash_, "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "scored": scored, **({"settings": dict(settings)} if settings is not None else {})}
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as f:  # append-only: one write of one whole line
            f.write(json.dumps(line, sort_keys=True, default=str, ensure_ascii=False) + "\n")
        rows.append(line)
    return len({row["hash"] for row in rows})
