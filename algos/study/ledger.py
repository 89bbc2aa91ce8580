"""The ledger of a test set: every look at its problems, with the p-value each look's primary comparison gave.

A test split is sealed only if every look at it is counted, whoever scored it and from where. So a ledger belongs to
a *test set*, the content of its problems, not to a tree's path, a study's ``--name`` or a reasoner (trained arms are
other reasoners scored on the same problems; their looks count together):

* **key** (:func:`test_set_key`): SHA-256 of the JSON list of the set's question texts, sorted. A copied tree under
  another name, another folder or another reasoner has the same key;
* **file**: ``<folder>/<key[:16]>.ledger.jsonl``. Its first line is a header (``{"ledger": 2, "test_set": key,
  "questions": [...], "problems": n, "described": ...}``; ``questions`` are the SHA-256 digests, 16 hex digits, of
  every question text, so a scoring of *any* of them finds the ledger: :func:`touching`); every other line is one look
  (:func:`look`): ``hash`` (the configuration, :func:`config_hash`), ``time``, ``command`` (``rsim study`` / ``rsim
  eval`` / ``historical``), ``scored`` (what, in words), ``p_value`` (the look's primary comparison; None where it
  has none, e.g. an ``rsim eval``, or a historical look whose p cannot be recomputed: counted as p = 1),
  ``problems`` (how many of the set it scored), ``settings`` and, for a historical look, ``historical: true`` and a
  ``note`` saying where git history shows it;
* **where** (:func:`folders`): a study's ledger is created beside its trees (``tree_dir``) and its path registered in
  the user's ledger index (``$RSIM_LEDGER_HOME/ledgers.txt``, default ``$XDG_DATA_HOME/rsim`` or
  ``~/.local/share/rsim``), so a command run from anywhere, an installed wheel included, finds it. Searched, in
  order: the command's own folders (a study's tree dir; ``rsim eval --ledger-dir``), then either the folders of
  ``$RSIM_LEDGER_DIR`` (``os.pathsep``-separated; set, it replaces the rest and new ledgers go to its first folder),
  or the repository's committed ledgers (:data:`COMMITTED`, when run from a checkout) and the index.

A look is any scoring that includes any problem of the set: ``rsim study``'s score stage records one in the ledger of
its test (or replication) set and in every other ledger its problems touch; ``rsim eval`` records one in every ledger
its problems touch (it creates none: its data is not a sealed split). An identical configuration adds no line (the same
settings give the same scores). The report corrects its headline p-value by Holm's step-down over the ledger's
looks (:func:`holm_of`). A line that is not JSON raises: the count would be wrong, and it cannot be rebuilt.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .config import StudyConfig
from .paths import StudyPaths

__all__ = ["COMMITTED", "Ledger", "question_digest", "test_set_key", "folders", "home_index", "read", "find",
           "touching", "create", "look", "record", "record_scoring", "family", "holm_of", "tree_fingerprint",
           "config_hash", "score_settings", "scoring_hash", "study_folders"]

SCHEMA = 2
"""Version of the ledger's layout (the header's ``ledger``)."""
COMMITTED = "docs/study_results/*/trees"
"""The repository's committed ledgers (beside the committed trees), relative to the checkout's root."""


def question_digest(text: str) -> str:
    """SHA-256 of one question text, 16 hex digits (the header's ``questions``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def test_set_key(questions: Iterable[str]) -> str:
    """The key of a test set: SHA-256 of the JSON list of its question texts, sorted (duplicates kept once)."""
    texts = sorted(set(questions))
    if not texts:
        raise ValueError("test_set_key: no question texts; a ledger belongs to a non-empty set of problems.")
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Ledger:
    """One ledger file: its path, its test set's key, its question digests and every look in file order."""

    path: Path
    key: str
    questions: frozenset[str]
    described: str
    looks: tuple[dict[str, Any], ...]


def _home() -> Path:
    if os.environ.get("RSIM_LEDGER_HOME"):
        return Path(os.environ["RSIM_LEDGER_HOME"])
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "rsim"


def home_index() -> Path:
    """The user's ledger index: one ledger path a line, written when a ledger is created outside ``$RSIM_LEDGER_DIR``."""
    return _home() / "ledgers.txt"


def _committed() -> list[Path]:
    """The committed studies' tree folders (:data:`COMMITTED`) when run from a checkout; [] from an install."""
    root = Path(__file__).resolve().parents[2]
    return sorted(d for d in root.glob(COMMITTED) if d.is_dir()) if (root / "pyproject.toml").is_file() else []


def folders(own: Sequence[str | os.PathLike] = ()) -> list[Path]:
    """The folders searched for ledgers, in order (module docstring): ``own``, then ``$RSIM_LEDGER_DIR`` or the
    committed folder and the parents of the index's ledgers."""
    out = [Path(p) for p in own]
    env = os.environ.get("RSIM_LEDGER_DIR", "")
    if env:
        out += [Path(p) for p in env.split(os.pathsep) if p]
    else:
        out += _committed()
        index = home_index()
        if index.is_file():
            out += [Path(line).parent for line in index.read_text(encoding="utf-8").splitlines() if line.strip()]
    seen, unique = set(), []
    for d in out:
        r = d.resolve()
        if r not in seen:
            seen.add(r)
            unique.append(d)
    return unique


def read(path: str | os.PathLike) -> Ledger:
    """Read one ledger file.

    Raises:
        ValueError: a line that is not JSON, a first line that is not a header, or a look without a ``hash``
            (the message names the file and line and the fix).
    """
    path = Path(path)
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path} line {i} is not JSON ({e}); repair it by hand: the ledger is the count of looks "
                             "at the test set and cannot be rebuilt.") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path} line {i} is not a JSON object.")
        rows.append((i, row))
    if not rows or rows[0][1].get("ledger") != SCHEMA or not isinstance(rows[0][1].get("test_set"), str):
        raise ValueError(f"{path} has no ledger header on its first line ({{'ledger': {SCHEMA}, 'test_set': KEY, "
                         "'questions': [...]}): a ledger of the earlier layout (found by a tree's path) must be "
                         "migrated to its test set's key (docs/study.md, 'The ledger').")
    head = rows[0][1]
    for i, row in rows[1:]:
        if not isinstance(row.get("hash"), str):
            raise ValueError(f"{path} line {i} has no 'hash': every look is {{'hash', 'time', 'command', 'p_value', "
                             "...}}.")
    return Ledger(path, head["test_set"], frozenset(head.get("questions", [])), str(head.get("described", "")),
                  tuple(row for _, row in rows[1:]))


def _ledgers(dirs: Sequence[Path]) -> list[Ledger]:
    out, seen = [], set()
    for d in dirs:
        for path in sorted(d.glob("*.ledger.jsonl")) if d.is_dir() else []:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                out.append(read(path))
    return out


def find(key: str, own: Sequence[str | os.PathLike] = ()) -> Ledger | None:
    """The ledger of the test set ``key`` in the searched folders (:func:`folders`), or None."""
    for d in folders(own):
        path = d / f"{key[:16]}.ledger.jsonl"
        if path.is_file():
            ledger = read(path)
            if ledger.key == key:
                return ledger
    return None


def touching(questions: Iterable[str], own: Sequence[str | os.PathLike] = ()) -> list[tuple[Ledger, int]]:
    """Every ledger in the searched folders whose test set shares a question with ``questions``, with how many."""
    digests = {question_digest(q) for q in questions}
    return [(lg, n) for lg in _ledgers(folders(own)) if (n := len(lg.questions & digests))]


def create(folder: str | os.PathLike, questions: Iterable[str], described: str = "") -> Ledger:
    """A new, empty ledger of the test set ``questions`` in ``folder`` (or ``$RSIM_LEDGER_DIR``'s first folder when
    set), registered in the user's index unless ``$RSIM_LEDGER_DIR`` is set; an existing one is returned as is."""
    texts = sorted(set(questions))
    key = test_set_key(texts)
    env = [p for p in os.environ.get("RSIM_LEDGER_DIR", "").split(os.pathsep) if p]
    path = (Path(env[0]) if env else Path(folder)) / f"{key[:16]}.ledger.jsonl"
    if path.is_file():
        return read(path)
    head = {"ledger": SCHEMA, "test_set": key, "problems": len(texts), "described": described,
            "questions": sorted(question_digest(q) for q in texts)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(head, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    if not env:
        index = home_index()
        known = index.read_text(encoding="utf-8").splitlines() if index.is_file() else []
        if str(path.resolve()) not in known:
            index.parent.mkdir(parents=True, exist_ok=True)
            with open(index, "a", encoding="utf-8") as f:
                f.write(str(path.resolve()) + "\n")
    return read(path)


def look(hash_: str, *, command: str, scored: str, p_value: float | None, problems: int,
         settings: Mapping[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """One look's line (module docstring), timed now.

    Raises:
        ValueError: ``hash_`` is not a configuration hash, or ``p_value`` is not None or in [0, 1].
    """
    if not isinstance(hash_, str) or len(hash_) < 16:
        raise ValueError(f"ledger.look: hash {hash_!r} is not a configuration hash; pass ledger.config_hash(...).")
    if p_value is not None and not 0.0 <= float(p_value) <= 1.0:
        raise ValueError(f"ledger.look: p_value={p_value!r}; give the primary comparison's p in [0, 1], or None.")
    return {"hash": hash_, "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "command": command, "scored": scored, "p_value": None if p_value is None else float(p_value),
            "problems": int(problems), **({"settings": dict(settings)} if settings is not None else {}), **extra}


def record(ledger: Ledger | str | os.PathLike, line: Mapping[str, Any]) -> Ledger:
    """Append the look ``line`` (:func:`look`) unless a look of the same configuration hash is there already; returns
    the ledger as it now is. Append-only: one write of one whole line."""
    lg = read(ledger.path if isinstance(ledger, Ledger) else ledger)  # as the file is now, not as it was passed
    if any(row["hash"] == line["hash"] for row in lg.looks):
        return lg
    with open(lg.path, "a", encoding="utf-8") as f:
        f.write(json.dumps(dict(line), sort_keys=True, default=str, ensure_ascii=False) + "\n")
    return read(lg.path)


def record_scoring(questions: Sequence[str], line: Mapping[str, Any], *, own: Sequence[str | os.PathLike] = (),
                   create_in: str | os.PathLike | None = None, described: str = "") -> list[Ledger]:
    """Record the look ``line`` in every ledger the scored ``questions`` touch (:func:`touching`); with ``create_in``
    (a study's sealed split) the ledger of exactly these questions is created there first when none exists, listing
    every look of the ledgers that touch them as inherited (p = null: counted as p = 1 in its Holm family, since a
    look at some of a set's problems is a look at the set). Returns the ledgers written to, the exact one first."""
    out: list[Ledger] = []
    if create_in is not None:
        exact = find(test_set_key(questions), own)
        if exact is None:  # a new set: every earlier look at any of its problems is counted in it (inherited)
            earlier = touching(questions, own)
            exact = create(create_in, questions, described)
            for lg, n in earlier:
                for row in (r for r in lg.looks if r["hash"] != line["hash"]):  # this look is recorded below
                    exact = record(exact, {**row, "p_value": None, "problems": n, "inherited_from": lg.key,
                                           "scored": f"inherited from the ledger of {lg.described or lg.key[:16]} "
                                                     f"({n} of its problems are in this set): {row.get('scored', '')}"})
        out.append(record(exact, {**line, "problems": len(set(questions))}))
    for lg, n in touching(questions, own):  # another set: this look's p is not of it (counted as p = 1 there)
        if all(lg.path.resolve() != o.path.resolve() for o in out):
            out.append(record(lg, {**line, "problems": n, "p_value": None,
                                   "p_note": "a look at some of this set's problems within another set: its p-value "
                                             "is of that set, so it counts as p = 1 here"}))
    return out


def family(ledger: Ledger) -> list[dict[str, Any]]:
    """The ledger's looks as Holm's family: one member per distinct configuration hash (its first line), with
    ``p`` (the kept p-value, or 1.0 where it is None) and ``p_kept``."""
    seen, out = set(), []
    for row in ledger.looks:
        if row["hash"] in seen:
            continue
        seen.add(row["hash"])
        p = row.get("p_value")
        out.append({"hash": row["hash"], "p": 1.0 if p is None else float(p), "p_kept": p is not None,
                    "historical": bool(row.get("historical")), "command": row.get("command", ""),
                    "time": row.get("time", ""), "scored": row.get("scored", "")})
    return out


def holm_of(ledger: Ledger, hash_: str) -> dict[str, Any]:
    """The look ``hash_``'s p-value corrected by Holm's step-down over the ledger's family (:func:`family`):
    ``p_value`` (kept), ``p_holm``, ``m``, ``p_as_one`` (members counted as p = 1 because none is kept),
    ``historical`` and ``family`` (each member's hash, p and adjusted p).

    Raises:
        ValueError: the look is not in the ledger, or has no p-value (run the score stage, which records it).
    """
    from .stats import holm

    fam = family(ledger)
    mine = [i for i, f in enumerate(fam) if f["hash"] == hash_]
    if not mine:
        raise ValueError(f"the configuration {hash_[:16]}… has no look in {ledger.path}: run rsim study --stage score, "
                         "which records it.")
    if not fam[mine[0]]["p_kept"]:
        raise ValueError(f"the look {hash_[:16]}… in {ledger.path} has no p-value: rescore (rsim study --stage score).")
    adjusted = holm([f["p"] for f in fam])
    return {"p_value": fam[mine[0]]["p"], "p_holm": adjusted[mine[0]], "m": len(fam),
            "p_as_one": sum(not f["p_kept"] for f in fam), "historical": sum(f["historical"] for f in fam),
            "path": str(ledger.path), "test_set": ledger.key,
            "family": [{**f, "p_holm": a} for f, a in zip(fam, adjusted)]}


# ----------------------------------------------------------------------------------------------- a study's scoring


def study_folders(cfg: StudyConfig) -> list[Path]:
    """A study's own ledger folders: beside its trees, and beside the trees of the splits it reads from your own
    files (``<out>/trees``)."""
    paths = StudyPaths.of(cfg)
    return [paths.trees] + ([paths.out / "trees"] if paths.out / "trees" != paths.trees else [])


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
"""The :class:`StudyConfig` fields that decide a scoring (with the tree, the heads' weights, the features and the
episodes' content): not where things are written, how the fill batches, or the threads."""


def digest_files(files: Iterable[Path], root: Path | None = None) -> str:
    """SHA-256 of the files' names (relative to ``root``) and bytes, in sorted order ("" when there are none)."""
    h, n = hashlib.sha256(), 0
    for p in sorted(files):
        h.update(str(p.relative_to(root) if root else p.name).encode())
        h.update(p.read_bytes())
        n += 1
    return h.hexdigest() if n else ""


def _heads_digest(heads: Path) -> str:
    """SHA-256 of every weights file (``model.*``) under ``heads`` ("" when there are none): retrained heads are another
    look at the test set even under the same settings; a log or state file written beside them is not."""
    return digest_files((p for p in heads.rglob("model.*") if p.is_file()), heads)


def _episodes_digest(cfg: StudyConfig, kind: str, split: str) -> str:
    path, _ = StudyPaths.of(cfg).episodes(kind, split)
    return digest_files([path]) if path.is_file() else ""


def score_settings(cfg: StudyConfig, split: str = "test") -> dict[str, Any]:
    """The settings that decide a scoring of ``cfg`` (:data:`SCORE_KEYS`, the digest of the heads scored and of the
    ``none`` / ``sc`` episodes read)."""
    from dataclasses import asdict

    d = asdict(cfg)
    heads = StudyPaths.of(cfg).scored_heads()
    return {**{k: d[k] for k in SCORE_KEYS}, "heads": _heads_digest(heads) if heads.is_dir() else "",
            "episodes": {k: _episodes_digest(cfg, k, split) for k in ("none", "sc")}}


def scoring_hash(cfg: StudyConfig, split: str = "test", extra: Mapping[str, Any] | None = None) -> tuple[str, dict]:
    """``(hash, settings)`` of scoring ``cfg`` on its ``split`` tree: :func:`score_settings` (plus ``extra``: the
    score stage passes the digest of the features it plays on) and the tree's fingerprint."""
    settings = {**score_settings(cfg, split), **(extra or {})}
    return config_hash(settings, tree_fingerprint(StudyPaths.of(cfg).tree(split))), settings
