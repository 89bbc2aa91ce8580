"""The ``adaptive`` source: the atlas's tasks, where a per-task choice of plan beats the best single plan.

The atlas (``docs/atlas.md``) played every plan of two rounds on 40 problems of each task it kept, at the
difficulty its pilot chose. Over all of them, a per-task plan chosen on validation beat the best single plan
(``[3, 8]``) on the test problems with a 95 % interval above 0 (``mix_all`` of
``docs/atlas_results/atlas.json``): the one mix it found with headroom. This source is that mix, each task at
the atlas's setting, for ``rsim train`` / ``rsim eval`` / the benchmarks (``--data adaptive:train``).

**Splits by generator seed, disjoint by question text**: ``val`` is seed 0 (the atlas's own problems),
``train`` seed 1, ``test`` seed 2, a seed nothing else uses. ``test`` drops the questions ``val`` has; ``train``
drops those of ``val`` and ``test`` (small tasks repeat questions across seeds, so a task's ``test`` may hold
fewer than its share). Problems are interleaved round-robin over the tasks; ids are ``adaptive/SPLIT/ID``.

:data:`TASKS` is the atlas's list (a test checks it against the committed atlas JSON).
"""

from __future__ import annotations

import dataclasses

from .problems import Problem

__all__ = ["TASKS", "SEEDS", "SPLITS", "adaptive_problems"]

TASKS: tuple[str, ...] = ()
"""The atlas's main-pass tasks, each as the setting it was played at (an ``rg:`` data spec or
``curriculum_task:NAME``), in the atlas's order."""

SEEDS = {"val": 0, "train": 1, "test": 2}
SPLITS = tuple(SEEDS)
PER_TASK = 40
"""Problems per task in ``val`` and ``test`` (the atlas's N) when no limit is given; ``train`` takes 5x."""


def _task(label: str, n: int, seed: int) -> list[Problem]:
    if label.startswith("curriculum_task:"):
        from .curriculum import curriculum_problems

        return curriculum_problems(n, "train", tasks=(label.partition(":")[2],), seed=seed)
    from .data import load_problems

    return load_problems(label, n, seed=seed)


def _columns(split: str, per_task: int, tasks: tuple[str, ...]) -> list[list[Problem]]:
    drop: set[str] = set()
    for other in {"val": (), "test": ("val",), "train": ("val", "test")}[split]:
        drop |= {p.question for col in _columns(other, PER_TASK, tasks) for p in col}
    cols = []
    for label in tasks:
        # draw more than needed so that dropping shared questions still leaves the share where it can
        ps = _task(label, per_task + (2 * per_task if drop else 0), SEEDS[split])
        cols.append([p for p in ps if p.question not in drop][:per_task])
    return cols


def adaptive_problems(limit: int | None = None, split: str = "train", tasks: tuple[str, ...] | None = None) -> list[Problem]:
    """``limit`` problems of ``split`` (``train`` / ``val`` / ``test``), round-robin over :data:`TASKS`.

    Raises:
        ValueError: unknown split, a limit below 1, or no tasks.
    """
    if split not in SEEDS:
        raise ValueError(f"adaptive split {split!r}; choose one of {SPLITS} (e.g. --data adaptive:test).")
    tasks = TASKS if tasks is None else tuple(tasks)
    if not tasks:
        raise ValueError("the adaptive source has no tasks: rsim_env.adaptive.TASKS is empty (run the atlas first).")
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit={limit!r} must be >= 1.")
    per_task = -(-limit // len(tasks)) if limit else PER_TASK * (5 if split == "train" else 1)
    cols = _columns(split, per_task, tasks)
    out = [dataclasses.replace(c[i], id=f"adaptive/{split}/{c[i].id}")
           for i in range(max(map(len, cols))) for c in cols if i < len(c)]
    return out[:limit] if limit else out
