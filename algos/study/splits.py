"""A study's problems per split, each with its task: no question text in two splits, nor in two tasks.

Every problem belongs to one split by a hash of its question text (:func:`rsim_env.sources.adaptive.split_of`: 60 %
``train``, 20 % ``val``, 20 % ``test``), whatever the sizes asked for; and a text asked by two tasks belongs to the
first of them (in the order the data lists its tasks): a later task skips it. The ``adaptive`` source splits this way
itself (and draws each split from its own generator seed); any other data spec is drawn once (``data_seed``) and cut
by the same rule here. ``replication`` is a second test draw: the test hash bucket of another generator seed
(``replication_seed``; the ``adaptive`` source's own), less every text of the first draw, so it is disjoint by text
from every other split. A source that is not a generator (a file) has no second draw: its replication split is
empty and asking for it raises.

**A reviewer's own problems.** ``test_data`` / ``replication_data`` (a JSONL / parquet file whose ``task_column``
labels each problem with one of the study's tasks) replace the study's test / replication split: every problem of
the file (ids ``SPLIT/ID``), scored with the study's heads and the plans chosen on its train + val. A text also in
train or val (or, for ``replication_data``, in the test split) is refused, naming the problems, and so is a task the
study does not have; :func:`external` gives the file and the SHA-256 of its bytes (the report names both).

Generator seeds: ``data_seed`` draws a procedural source's train / val / test; ``replication_seed`` the replication
draw of any generator, the ``adaptive`` source included (whose train / val / test come from its own fixed seeds: a
``data_seed`` other than 0 is refused there, as any seed for a file, which is not drawn).

A problem's task (:func:`task_of`): the ``task`` of its metadata (set here for every non-adaptive problem), else
the task in an ``adaptive`` id (``adaptive/SPLIT/TASK/...``), else its source (``reasoning_gym:gcd``,
``curriculum:add2_1d``; a local file's ``task_column``). Problems come round-robin over the tasks, the first
``per_task`` of each (:func:`first_per_task` cuts a balanced prefix: the fill's increments).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, Sequence

from .config import SPLITS, StudyConfig

__all__ = ["task_of", "problems", "first_per_task", "by_task", "external", "external_file"]

_SHARE = {"train": 0.6, "val": 0.2, "test": 0.2, "replication": 0.2}
"""The share of a draw each split's hash bucket holds (:func:`rsim_env.sources.adaptive.split_of`)."""
_CACHE: dict[tuple[Any, ...], list[Any]] = {}
"""Split problems by the settings that decide them (drawing the adaptive source's 31 tasks takes seconds)."""


def task_of(problem: Any) -> str:
    """The task label of ``problem`` (module docstring)."""
    task = (problem.metadata or {}).get("task")
    if isinstance(task, str) and task:
        return task
    parts = problem.id.split("/")
    if parts[0] == "adaptive" and len(parts) > 3:
        return parts[2]
    return problem.source


def by_task(items: Sequence[Any]) -> dict[str, list[Any]]:
    """``items`` grouped by :func:`task_of`, tasks in order of first appearance."""
    out: dict[str, list[Any]] = {}
    for p in items:
        out.setdefault(task_of(p), []).append(p)
    return out


def _round_robin(columns: Sequence[Sequence[Any]]) -> list[Any]:
    return [c[i] for i in range(max(map(len, columns), default=0)) for c in columns if i < len(c)]


def first_per_task(items: Sequence[Any], k: int) -> list[Any]:
    """The first ``k`` problems of every task of ``items``, round-robin over the tasks (a balanced prefix)."""
    return _round_robin([c[:k] for c in by_task(items).values()])


def _is_file(spec: str) -> bool:
    return Path(spec.partition("?")[0]).suffix in (".jsonl", ".json", ".parquet", ".arrow")


def _adaptive(cfg: StudyConfig, split: str) -> list[Any]:
    from rsim_env.sources.adaptive import TASKS, adaptive_problems
    from rsim_env.sources.data import load_problems

    tasks = TASKS[:cfg.tasks] if cfg.tasks else TASKS
    return adaptive_problems(lambda spec, n, seed: load_problems(spec, n, seed=seed), cfg.per_task(split) * len(tasks),
                             split, tasks=tasks, seed=cfg.replication_seed if split == "replication" else None)


def external_file(cfg: StudyConfig, split: str) -> str:
    """The file that replaces ``split`` (``test_data`` / ``replication_data``), or "" (the study's own draw)."""
    return {"test": cfg.test_data, "replication": cfg.replication_data}.get(split, "")


def external(cfg: StudyConfig, split: str) -> dict[str, str] | None:
    """``{"file", "sha256"}`` of the file that replaces ``split`` (SHA-256 of its bytes), or None."""
    from .paths import file_sha256

    path = external_file(cfg, split)
    return {"file": path, "sha256": file_sha256(path, split)} if path else None


def _overlap(split: str, got: Sequence[Any], against: dict[str, Sequence[Any]]) -> None:
    for name, items in against.items():
        texts = {p.question: p.id for p in items}
        hits = [(p.id, texts[p.question]) for p in got if p.question in texts]
        if hits:
            named = "; ".join(f"{a} is {name} {b}" for a, b in hits[:5])
            more = "; ..." if len(hits) > 5 else ""
            raise ValueError(f"--{split}-data: {len(hits)} problem(s) of the file ask a text of the study's {name} "
                             f"split ({named}{more}); the heads and plans were chosen on it: remove them from the file.")


def _from_file(cfg: StudyConfig, split: str) -> list[Any]:
    """The problems of ``split``'s file, checked against the study's tasks and earlier splits (module docstring)."""
    from rsim_env.sources.data import load_problems

    path = external_file(cfg, split)
    raw = load_problems(path, None, columns={"source": cfg.task_column})
    got = [dataclasses.replace(p, id=f"{split}/{p.id}", metadata={**(p.metadata or {}), "task": p.source})
           for p in raw]
    earlier = {s: problems(cfg, s) for s in ("train", "val") + (("test",) if split == "replication" else ())}
    known = {task_of(p) for s in ("train", "val") for p in earlier[s]}
    unknown = sorted({task_of(p) for p in got} - known)
    if unknown:
        raise ValueError(f"--{split}-data {path!r}: tasks {unknown} (column {cfg.task_column!r}) are not tasks of the "
                         f"study; its tasks are {sorted(known)}.")
    _overlap(split, got, earlier)
    return _round_robin(list(by_task(got).values()))


def _draw(cfg: StudyConfig, seed: int) -> list[Any]:
    """The data spec's problems at generator seed ``seed``: all of a file; enough of a generator that every split's
    hash bucket can fill its per-task count (with a margin)."""
    from rsim_env.sources.data import load_problems

    if _is_file(cfg.data):
        return load_problems(cfg.data, None, seed=seed, columns={"source": cfg.task_column})
    probe = load_problems(cfg.data, 64, seed=seed)
    tasks = max(1, len(by_task(probe)))
    need = max(math.ceil(cfg.per_task(s) / _SHARE[s]) for s in SPLITS)
    return load_problems(cfg.data, max(64, 2 * need * tasks), seed=seed)


def _cut(cfg: StudyConfig, drawn: Sequence[Any], bucket: str, split: str, owned: set[str]) -> list[list[Any]]:
    """Each task's problems of ``drawn`` in hash bucket ``bucket``, texts unique, none in ``owned`` or an earlier
    task's draw (``owned`` grows by every text a task draws)."""
    from rsim_env.sources.adaptive import split_of

    columns = list(by_task(drawn).items())
    if cfg.tasks:
        columns = columns[:cfg.tasks]
    out = []
    for task, items in columns:
        kept, seen = [], set()
        for p in items:
            if split_of(p.question) == bucket and p.question not in seen and p.question not in owned:
                seen.add(p.question)
                kept.append(dataclasses.replace(p, id=f"{split}/{p.id}", metadata={**p.metadata, "task": task}))
        owned |= {p.question for p in items}
        out.append(kept[:cfg.per_task(split)])
    return out


def _generic(cfg: StudyConfig, split: str) -> list[Any]:
    first = _draw(cfg, cfg.data_seed)
    if split != "replication":
        return _round_robin(_cut(cfg, first, split, split, set()))
    if _is_file(cfg.data):
        raise ValueError(f"data {cfg.data!r} is a file: it has no second draw, so no replication split; score the "
                         "replication on another file (a study with --data OTHER_FILE) or leave --replicate off.")
    return _round_robin(_cut(cfg, _draw(cfg, cfg.replication_seed), "test", split, {p.question for p in first}))


def problems(cfg: StudyConfig, split: str) -> list[Any]:
    """The problems of ``split`` (``train`` / ``val`` / ``test`` / ``replication``): the first ``cfg.per_task(split)``
    of every task, round-robin over the tasks (module docstring).

    Raises:
        ValueError: an unknown split, or a split with no problem (the message says what to change).
    """
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {SPLITS}.")
    file = external(cfg, split)
    key = (cfg.data, cfg.task_column, cfg.tasks, cfg.data_seed, cfg.replication_seed, cfg.per_task(split), split,
           file and file["sha256"], split == "replication" and cfg.test_data)
    if key not in _CACHE:
        got = (_from_file(cfg, split) if file else _adaptive(cfg, split) if cfg.data == "adaptive"
               else _generic(cfg, split))
        if not got:
            raise ValueError(f"data {cfg.data!r} gives no {split} problem (its questions' hash puts none there, or "
                             "every one is another task's); give more problems (a bigger file or another generator "
                             "seed) or other tasks.")
        _CACHE[key] = got
    return list(_CACHE[key])
