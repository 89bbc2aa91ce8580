"""The embedded training curriculum: easy procedural arithmetic, deduplicated and split by text.

Every task is a reasoning-gym generator with a fixed difficulty configuration (:data:`TASKS`).
:func:`curriculum_problems` draws problems round-robin from the chosen tasks, drops duplicate
question texts, and assigns each question to the ``"train"`` or ``"heldout"`` split by a hash of
its text (:func:`split_of`), so the two splits never share a question whatever seeds or sizes are
used. Which tasks form the default mix (:data:`DEFAULT_MIX`) was chosen by measurement with
``python -m studies.calibrate`` (see ``docs/interaction.md``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Sequence

from ..problem import Problem

__all__ = ["Task", "TASKS", "DEFAULT_MIX", "SPLITS", "split_of", "task_problems", "curriculum_problems"]


@dataclass(frozen=True)
class Task:
    """One curriculum task: a reasoning-gym generator at a fixed difficulty."""

    name: str
    """Short name used in specs and tables (``"add2_2d"``)."""
    generator: str
    """reasoning-gym dataset name."""
    config: tuple[tuple[str, Any], ...]
    """Keyword arguments of ``reasoning_gym.create_dataset`` (difficulty knobs)."""
    answer_type: str = "number"
    """Answer type passed to the checker."""


TASKS: dict[str, Task] = {t.name: t for t in (
    Task("add2_1d", "chain_sum", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1), ("max_digits", 1))),
    Task("add2_2d", "chain_sum", (("min_terms", 2), ("max_terms", 2), ("min_digits", 2), ("max_digits", 2))),
    Task("add3_1d", "chain_sum", (("min_terms", 3), ("max_terms", 3), ("min_digits", 1), ("max_digits", 1))),
    Task("arith2_1d", "basic_arithmetic", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1), ("max_digits", 1),
                                           ("operators", ("+", "-")))),
    Task("arith2_1d_mul", "basic_arithmetic", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1),
                                               ("max_digits", 1), ("operators", ("+", "-", "*")))),
    Task("arith2_2d", "basic_arithmetic", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1), ("max_digits", 2),
                                           ("operators", ("+", "-")))),
    Task("mul_1d", "products", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1), ("max_digits", 1))),
    # The name is historical: reasoning-gym draws 1-2 digits per problem, and every held-out question
    # of this task (data seed 1000, 153 of 400) is two-digit x two-digit, e.g. "37 * 22".
    Task("mul_2d1d", "products", (("min_terms", 2), ("max_terms", 2), ("min_digits", 1), ("max_digits", 2))),
    Task("eq_small", "simple_equations", (("min_terms", 2), ("max_terms", 2), ("min_value", 1), ("max_value", 9),
                                          ("operators", ("+", "-")), ("operators_weights", (0.5, 0.5)))),
)}
"""Candidate tasks, easiest first within each family (see module docstring)."""

DEFAULT_MIX: tuple[str, ...] = ("add2_1d", "mul_1d", "mul_2d1d", "arith2_2d")
"""Tasks of the default curriculum (chosen with ``studies.calibrate``; see docs/interaction.md)."""

SPLITS = ("train", "heldout", "all")
_HELDOUT_SHARE = 5  # one question in five (by text hash) is held out


def split_of(question: str) -> str:
    """``"heldout"`` for about one question text in five (stable sha1 of the text), else ``"train"``."""
    digest = hashlib.sha1(question.strip().encode("utf-8")).digest()
    return "heldout" if digest[0] % _HELDOUT_SHARE == 0 else "train"


def task_problems(name: str, size: int, seed: int) -> list[Problem]:
    """``size`` problems of task ``name`` (duplicates included) from reasoning-gym."""
    if name not in TASKS:
        raise ValueError(f"unknown curriculum task {name!r}; choose from {sorted(TASKS)}.")
    from ..kinds.rg_tasks import entries

    t = TASKS[name]
    return [Problem(id=f"{name}/{seed}/{i}", question=q, answer=a, answer_type=t.answer_type, source=f"curriculum:{name}")
            for i, (q, a) in enumerate(entries(t.generator, size, seed, dict(t.config)))]


def curriculum_problems(size: int, split: str = "train", tasks: Sequence[str] = DEFAULT_MIX,
                        seed: int = 0) -> list[Problem]:
    """``size`` distinct problems of ``split``, interleaved round-robin over ``tasks``.

    Args:
        size: Problems wanted (fewer come back only if the tasks run out of distinct questions).
        split: ``"train"``, ``"heldout"`` (disjoint by question text) or ``"all"``.
        tasks: Names from :data:`TASKS`.
        seed: Generator seed (the split does not depend on it).

    Raises:
        ValueError: Unknown split or task, or ``size < 1``.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r}; choose one of {SPLITS}.")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"size={size!r} must be an int >= 1.")
    if not tasks:
        raise ValueError("tasks is empty; name at least one of " + ", ".join(sorted(TASKS)))
    want = -(-size // len(tasks))
    # generators repeat questions: draw generously so each task can fill its share of distinct ones
    draw = max(2000, 4 * want * (_HELDOUT_SHARE if split == "heldout" else 2))
    columns = []
    for name in tasks:
        kept, seen = [], set()
        for p in task_problems(name, draw, seed):
            if p.question in seen or (split != "all" and split_of(p.question) != split):
                continue
            seen.add(p.question)
            kept.append(p)
        columns.append(kept)
    out, seen = [], set()
    for i in range(max(len(c) for c in columns)):
        for col in columns:
            if i < len(col) and col[i].question not in seen:
                seen.add(col[i].question)
                out.append(col[i])
    return out[:size]
