"""Problem sources: the embedded default and the reasoning-gym builder behind it.

A problem source is any object with ``__len__`` and ``__getitem__(i) -> Problem``
(:class:`rsim_env.problem.Problem`; a plain ``list`` of problems works).

The offline default source is procedural and comes from the PyPI package ``reasoning-gym``
(no network, deterministic for a seed). Hub datasets (GSM8K, MATH, ...) live in
:mod:`rsim_env.sources.loaders`; :func:`rsim_env.sources.data.load_problems` builds any source from one spec.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..problem import Problem
from ..kinds.rg_tasks import REFUSED, is_number, spec
from ..kinds.rg_tasks import entries as rg_entries
from ..kinds.scorer_check import require_sound

DEFAULT_TASKS = ("gsm_symbolic", "basic_arithmetic")
"""reasoning-gym tasks mixed into the embedded default source."""


def reasoning_gym_problems(
    tasks: Sequence[str] = DEFAULT_TASKS, size: int = 1000, seed: int = 0, grading: str = "auto", **options: Any
) -> list[Problem]:
    """Build the embedded default source from ``reasoning-gym`` (offline, deterministic).

    Args:
        tasks: reasoning-gym dataset names, interleaved round-robin (``gsm_symbolic``, ...).
        size: Total number of problems, split evenly across ``tasks``.
        seed: Generator seed; the same seed gives the same problems.
        grading: ``"auto"``: a task whose golds are all plain numbers is a ``math`` problem (as always),
            any other task is graded by its generator's own ``score_answer`` (kind ``rg``,
            :mod:`rsim_env.kinds.rgym`) unless that scorer is refused (:data:`rsim_env.kinds.rgym.REFUSED`:
            then ``math``); ``"math"`` or ``"rg"`` forces the kind for every task. A task graded by its own
            scorer must pass the scorer sanity check (:mod:`rsim_env.kinds.scorer_check`: no full credit to a known-wrong
            answer), else it is refused.
        **options: Passed to every task's generator (``reasoning_gym.create_dataset``), e.g. ``min_terms=3``.

    Returns:
        ``size`` problems with ids ``"<task>/<index>"``.

    Raises:
        ValueError: a bad argument, or a task graded by its own scorer fails the scorer sanity check (the
            message names the task and the wrong answer its scorer gives full credit).
    """
    try:
        import reasoning_gym  # noqa: F401  (fails early with the install hint)
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise ImportError("The default problem source needs reasoning-gym: pip install reasoning-gym") from exc
    if not tasks:
        raise ValueError("tasks is empty; give at least one reasoning-gym task, e.g. ('gsm_symbolic',).")
    if size < len(tasks):
        raise ValueError(f"size={size} is smaller than the number of tasks ({len(tasks)}); raise size.")
    if grading not in GRADINGS:
        raise ValueError(f"grading={grading!r}; choose one of {GRADINGS} (auto: by the golds).")
    refused = [t for t in tasks if grading == "rg" and t in REFUSED]
    if refused:
        raise ValueError(f"grading='rg' for {refused}: their scorers run sympy.parse_expr on the answer, which is "
                         "unsafe on model text; use grading='auto' or 'math' for them.")
    per_task = [size // len(tasks) + (1 if i < size % len(tasks) else 0) for i in range(len(tasks))]
    columns = []
    for task, n in zip(tasks, per_task):
        items = [{"question": q, "answer": a} for q, a in rg_entries(task, n, seed, options)]  # one hash seed
        if _rg_kind(task, [str(item["answer"]) for item in items], grading):
            require_sound(task, options)  # its scorer is the grader: it must tell right from wrong
            columns.append([Problem(id=f"{task}/{i}", question=str(item["question"]), answer=str(item["answer"]),
                                    answer_type="text", source=f"reasoning_gym:{task}", kind="rg",
                                    metadata={"rg": spec(task, options, seed, n, i)})
                            for i, item in enumerate(items)])
            continue
        columns.append(
            [
                Problem(
                    id=f"{task}/{i}",
                    question=str(item["question"]),
                    answer=str(item["answer"]),
                    answer_type="number" if task in ("gsm_symbolic", "basic_arithmetic") else "auto",
                    source=f"reasoning_gym:{task}",
                )
                for i, item in enumerate(items)
            ]
        )
    out: list[Problem] = []
    for i in range(max(per_task)):
        out.extend(col[i] for col in columns if i < len(col))
    return out


GRADINGS = ("auto", "math", "rg")
"""How :func:`reasoning_gym_problems` grades a task (see its ``grading`` argument)."""


def _rg_kind(task: str, golds: Sequence[str], grading: str) -> bool:
    """True when ``task``'s problems are graded by the generator's own scorer (kind ``rg``)."""
    if grading != "auto":
        return grading == "rg"
    return task not in DEFAULT_TASKS and task not in REFUSED and not all(map(is_number, golds))


def default_source(size: int = 1000, seed: int = 0) -> list[Problem]:
    """The embedded default problem source: ``gsm_symbolic`` + ``basic_arithmetic``."""
    return reasoning_gym_problems(DEFAULT_TASKS, size=size, seed=seed)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line of a JSONL file.

    Raises:
        ValueError: A line is not UTF-8 or not JSON (``path:line`` and the fix are named).
    """
    path = Path(path)
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{path}:{lineno} is not UTF-8 (bad byte at column {exc.start + 1}); "
                                 "re-save the file as UTF-8.") from exc
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno} is not valid JSON ({exc.msg}).") from exc
