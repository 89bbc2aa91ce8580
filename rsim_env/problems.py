"""Problems and problem sources.

A :class:`Problem` is one question with its ground-truth answer. A *problem source* is any
object with ``__len__`` and ``__getitem__(i) -> Problem`` (a plain ``list`` of problems works);
on ``reset(seed=...)`` the environment picks an index with a generator seeded by ``seed`` (same
seed, same problem).

The offline default source is procedural and comes from the PyPI package ``reasoning-gym``
(no network, deterministic for a seed). Hub datasets (GSM8K, MATH, ...) live in
:mod:`rsim_env.loaders`; :func:`rsim_env.data.load_problems` builds any source from one spec.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

ANSWER_TYPES = ("auto", "number", "expression", "choice", "bool", "list", "text")
"""Answer types understood by :func:`rsim_env.answers.check` (``auto`` guesses from the gold)."""


def __getattr__(name: str) -> Any:
    if name == "KINDS":  # live: the registered problem kinds (rsim_env.kinds), e.g. ("math", "code")
        from . import kinds  # kinds -> echo -> answers -> problems: import at use

        return kinds.names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


DEFAULT_TASKS = ("gsm_symbolic", "basic_arithmetic")
"""reasoning-gym tasks mixed into the embedded default source."""


@dataclass(frozen=True)
class Problem:
    """One question with its ground truth.

    Attributes:
        id: Stable identifier, unique within its source (e.g. ``"gsm_symbolic/17"``).
        question: The question text shown to both agents.
        answer: Ground truth as the dataset writes it (``"72"``, ``"\\frac{1}{2}"``, ``"B"``).
        answer_type: One of :data:`ANSWER_TYPES`; tells the checker how to compare.
        source: Name of the dataset or generator the problem came from.
        choices: Multiple-choice options in letter order, empty when not multiple choice.
        metadata: Free-form JSON-serialisable extras (difficulty, reference solution, ...).
        kind: A registered kind (:data:`rsim_env.kinds.KINDS`: math, code); decides the answer-asking
            texts and how the episode is graded.
        tests: Code problems: HumanEval-style source defining ``check(candidate)`` (see
            :func:`rsim_env.code.execute`); ``answer`` then holds a reference solution (or "").
        entry_point: Code problems: the function the program must define.
    """

    id: str
    question: str
    answer: str
    answer_type: str = "auto"
    source: str = "custom"
    choices: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    kind: str = "math"
    tests: str = ""
    entry_point: str = ""

    def __post_init__(self) -> None:
        for name in ("id", "question", "answer", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Problem.{name} must be str, got {type(value).__name__} ({value!r:.60}).")
        if not self.question.strip():
            raise ValueError(f"Problem {self.id!r} has an empty question; every problem needs question text.")
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(
                f"Problem.answer_type={self.answer_type!r} is not one of {ANSWER_TYPES}; "
                "use 'auto' if unsure."
            )
        object.__setattr__(self, "choices", tuple(self.choices))
        from . import kinds  # kinds -> echo -> answers -> problems: import at use

        if self.kind not in kinds.KINDS:
            raise ValueError(f"Problem.kind={self.kind!r} is not one of {kinds.names()} (rsim_env.kinds.register adds one).")
        kinds.KINDS[self.kind].validate(self)  # e.g. code problems need tests and an entry point

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (inverse of ``Problem(**d)``)."""
        d = asdict(self)
        d["choices"] = list(self.choices)
        return d


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
            then ``math``); ``"math"`` or ``"rg"`` forces the kind for every task.
        **options: Passed to every task's generator (``reasoning_gym.create_dataset``), e.g. ``min_terms=3``.

    Returns:
        ``size`` problems with ids ``"<task>/<index>"``.
    """
    try:
        import reasoning_gym
    except ImportError as exc:  # pragma: no cover - declared dependency
        raise ImportError("The default problem source needs reasoning-gym: pip install reasoning-gym") from exc
    if not tasks:
        raise ValueError("tasks is empty; give at least one reasoning-gym task, e.g. ('gsm_symbolic',).")
    if size < len(tasks):
        raise ValueError(f"size={size} is smaller than the number of tasks ({len(tasks)}); raise size.")
    if grading not in GRADINGS:
        raise ValueError(f"grading={grading!r}; choose one of {GRADINGS} (auto: by the golds).")
    per_task = [size // len(tasks) + (1 if i < size % len(tasks) else 0) for i in range(len(tasks))]
    columns = []
    for task, n in zip(tasks, per_task):
        items = list(reasoning_gym.create_dataset(task, size=n, seed=seed, **options))
        if _rg_kind(task, [str(item["answer"]) for item in items], grading):
            from .kinds.rgym import spec  # kinds -> echo -> answers -> problems: import at use

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
    from .kinds.rgym import REFUSED, is_number

    return task not in DEFAULT_TASKS and task not in REFUSED and not all(map(is_number, golds))


def default_source(size: int = 1000, seed: int = 0) -> list[Problem]:
    """The embedded default problem source: ``gsm_symbolic`` + ``basic_arithmetic``."""
    return reasoning_gym_problems(DEFAULT_TASKS, size=size, seed=seed)


def load_jsonl(path: str | Path, source: str | None = None) -> list[Problem]:
    """Load problems from a JSONL file, one object per line.

    Each line needs ``question`` and ``answer`` (strings); ``id`` (string or int),
    ``answer_type``, ``source``, ``choices`` (list of strings), ``metadata`` (object) and (code
    problems) ``kind``, ``tests``, ``entry_point`` (strings) are optional (ids default to
    ``"<file stem>/<line number>"``). Blank lines are skipped. ``Problem.to_dict()`` writes exactly
    this form.

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: A line is not UTF-8, not JSON, not an object, lacks a required key or holds a
            value of the wrong type (``path:line`` is named).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No JSONL problem file at {path}; pass an existing file path.")
    problems = [_problem_from_row(row, f"{path}:{lineno}", f"{path.stem}/{lineno}", source or path.stem)
                for lineno, row in iter_jsonl(path)]
    if not problems:
        raise ValueError(f"{path} holds no problems; add at least one JSON line.")
    return problems


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


def _problem_from_row(row: Any, where: str, default_id: str, default_source: str) -> Problem:
    """One JSONL object as a :class:`Problem`; ``where`` (``path:line``) prefixes every error."""
    if not isinstance(row, dict):
        raise ValueError(f"{where} is a JSON {_json_type(row)}, not an object; "
                         'each line must look like {"question": "...", "answer": "..."}.')
    missing = [k for k in ("question", "answer") if k not in row]
    if missing:
        raise ValueError(f"{where} lacks {missing}; each line needs 'question' and 'answer'.")
    for key in ("question", "answer", "answer_type", "source", "kind", "tests", "entry_point"):
        if key in row and not isinstance(row[key], str):
            raise ValueError(f"{where}: {key!r} must be a string, got {_json_type(row[key])} ({row[key]!r:.60}); "
                             f'write it in quotes, e.g. "{key}": "42".')
    pid = row.get("id", default_id)
    if isinstance(pid, bool) or not isinstance(pid, (str, int)):
        raise ValueError(f"{where}: 'id' must be a string or an integer, got {_json_type(pid)} ({pid!r:.60}).")
    choices = row.get("choices", [])
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise ValueError(f"{where}: 'choices' must be a list of strings, got {choices!r:.80}.")
    metadata = row.get("metadata", {})
    if not isinstance(metadata, dict):
        raise ValueError(f"{where}: 'metadata' must be an object, got {_json_type(metadata)} ({metadata!r:.60}).")
    try:
        return Problem(id=str(pid), question=row["question"], answer=row["answer"],
                       answer_type=row.get("answer_type", "auto"), source=row.get("source", default_source),
                       choices=tuple(choices), metadata=metadata, kind=row.get("kind", "math"),
                       tests=row.get("tests", ""), entry_point=row.get("entry_point", ""))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _json_type(v: Any) -> str:
    """The JSON name of a parsed value's type (``null``, ``number``, ...)."""
    if v is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(v)]
