"""Loaders for the paper's datasets, returning lists of :class:`~rsim_env.problem.Problem`.

Each loader reads a hub dataset by name through ``datasets.load_dataset`` (imported lazily, so
``rsim_env`` never needs it at import time) or a local file/dir (``.jsonl``, ``.json``,
``.parquet``) laid out with the hub's exact columns. Callers use the one data factory,
:func:`rsim_env.sources.data.load_problems` (re-exported here), which finds these loaders by name in
:data:`LOADERS`: a new hub dataset is one loader function plus its line in that table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from ..answers.extract import boxed_spans
from ..answers.idioms import THEOREMQA_REL_TOL
from ..problem import Problem
from .problems import iter_jsonl

_LOCAL_EXT = (".jsonl", ".json", ".parquet", ".arrow")


def _read_arrow(path: Path) -> list[dict[str, Any]]:
    """Rows of an Arrow IPC file (``.arrow``: the file format, or the stream format ``datasets`` writes)."""
    try:
        import pyarrow as pa
    except ImportError as e:
        raise ImportError(f"reading {path} needs pyarrow: pip install pyarrow (it comes with 'rsim[train]').") from e
    with pa.memory_map(str(path)) as src:
        try:
            table = pa.ipc.open_file(src).read_all()
        except pa.ArrowInvalid:
            src.seek(0)
            table = pa.ipc.open_stream(src).read_all()
    return table.to_pylist()


def _read_local(path: Path) -> list[dict[str, Any]]:
    files = sorted(p for p in path.rglob("*") if p.suffix in _LOCAL_EXT) if path.is_dir() else [path]
    if not files:
        raise FileNotFoundError(f"No {_LOCAL_EXT} files under {path}; point at a data file or folder.")
    rows: list[dict[str, Any]] = []
    for f in files:
        if f.suffix == ".jsonl":
            rows += [row for _, row in iter_jsonl(f)]
        elif f.suffix == ".json":
            try:
                data = json.loads(f.read_bytes().decode("utf-8-sig"))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise ValueError(f"{f} is not a UTF-8 JSON file ({e}); re-save it as UTF-8 JSON.") from e
            rows += data if isinstance(data, list) else data.get("data", [data]) if isinstance(data, dict) else [data]
        elif f.suffix == ".parquet":
            import pandas as pd  # lazy: only for parquet files

            rows += pd.read_parquet(f).to_dict("records")
        elif f.suffix == ".arrow":
            rows += _read_arrow(f)
        else:
            raise ValueError(f"Unsupported file type {f.suffix!r} for {f}; use one of {_LOCAL_EXT}.")
    return rows


def _rows(hub_name: str, source: str | None, split: str, config: str | None) -> Iterable[dict[str, Any]]:
    """Rows from a local path (if ``source`` is one) or from the hub."""
    if source is not None and (Path(source).exists() or Path(source).suffix in _LOCAL_EXT):
        if not Path(source).exists():
            raise FileNotFoundError(f"No dataset file at {source}; pass an existing path or a hub name.")
        return _read_local(Path(source))
    import datasets  # lazy: heavy, optional at import time

    name = source or hub_name
    return datasets.load_dataset(name, config, split=split) if config else datasets.load_dataset(name, split=split)


def _take(rows: Iterable[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if limit is not None and len(out) >= limit:
            break
        out.append(dict(row))
    return out


def _require(row: dict[str, Any], keys: tuple[str, ...], dataset: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise ValueError(f"{dataset} row lacks columns {missing} (has {sorted(row)}); "
                         "is this the right dataset or file?")


def last_boxed(solution: str) -> str:
    """The content of the last ``\\boxed{}`` in a reference solution (MATH's answer)."""
    spans = boxed_spans(solution)
    if not spans:
        raise ValueError(f"No \\boxed{{}} answer in solution {solution[-120:]!r}.")
    return spans[-1][2].strip()


def gsm8k(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """openai/gsm8k (config ``main``): ``question``, ``answer`` ending in ``#### 72``."""
    out = []
    for i, row in enumerate(_take(_rows("openai/gsm8k", source, split, "main" if source is None else None), limit)):
        _require(row, ("question", "answer"), "gsm8k")
        sol, _, final = str(row["answer"]).rpartition("####")
        if not _:
            raise ValueError(f"gsm8k row {i} answer has no '#### <number>' line: {row['answer'][-80:]!r}.")
        out.append(Problem(f"gsm8k/{split}/{i}", row["question"], final.strip().replace(",", ""), "number",
                           "gsm8k", metadata={"solution": sol.strip()}))
    return out


MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra",
                 "number_theory", "prealgebra", "precalculus")
"""Configs of the hub's EleutherAI/hendrycks_math (one per subject); all are concatenated."""


def _math_rows(source: str | None, split: str) -> Iterable[dict[str, Any]]:
    if source is not None:
        return _rows("EleutherAI/hendrycks_math", source, split, None)
    return (row for subject in MATH_SUBJECTS for row in _rows("EleutherAI/hendrycks_math", None, split, subject))


def math(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """hendrycks MATH: ``problem``, ``level``, ``type``, ``solution`` (answer = last boxed)."""
    out = []
    for i, row in enumerate(_take(_math_rows(source, split), limit)):
        _require(row, ("problem", "solution"), "MATH")
        out.append(Problem(f"math/{split}/{i}", row["problem"], last_boxed(row["solution"]), "auto", "math",
                           metadata={"level": row.get("level"), "type": row.get("type"),
                                     "solution": row["solution"]}))
    return out


def math500(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """HuggingFaceH4/MATH-500: ``problem``, ``solution``, ``answer``, ``subject``, ``level``, ``unique_id``."""
    out = []
    for row in _take(_rows("HuggingFaceH4/MATH-500", source, split, None), limit):
        _require(row, ("problem", "answer", "unique_id"), "MATH-500")
        out.append(Problem(f"math500/{row['unique_id']}", row["problem"], str(row["answer"]), "auto", "math500",
                           metadata={"subject": row.get("subject"), "level": row.get("level"),
                                     "solution": row.get("solution")}))
    return out


def aime2024(source: str | None = None, split: str = "train", limit: int | None = None) -> list[Problem]:
    """Maxwell-Jia/AIME_2024: ``ID``, ``Problem``, ``Solution``, ``Answer`` (an integer 0-999)."""
    out = []
    for row in _take(_rows("Maxwell-Jia/AIME_2024", source, split, None), limit):
        _require(row, ("ID", "Problem", "Answer"), "AIME 2024")
        out.append(Problem(f"aime2024/{row['ID']}", row["Problem"], str(row["Answer"]), "number", "aime2024",
                           metadata={"solution": row.get("Solution")}))
    return out


def mmlu_pro(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """TIGER-Lab/MMLU-Pro: ``question_id``, ``question``, ``options`` (up to 10), ``answer`` letter."""
    out = []
    for row in _take(_rows("TIGER-Lab/MMLU-Pro", source, split, None), limit):
        _require(row, ("question_id", "question", "options", "answer"), "MMLU-Pro")
        options = [str(o) for o in row["options"]]
        letters = "ABCDEFGHIJ"[: len(options)]
        listing = "\n".join(f"({c}) {o}" for c, o in zip(letters, options))
        out.append(Problem(f"mmlu_pro/{row['question_id']}", f"{row['question']}\n\n{listing}",
                           str(row["answer"]).strip(), "choice", "mmlu_pro", choices=tuple(options),
                           metadata={"category": row.get("category"), "src": row.get("src"),
                                     "answer_index": row.get("answer_index")}))
    return out


_THEOREMQA_TYPES = {"integer": "number", "float": "number", "bool": "bool", "option": "choice"}
_THEOREMQA_REL_TOL = {"float": THEOREMQA_REL_TOL}
"""``Answer_type``s that TheoremQA's evaluator grades within a relative tolerance of the gold."""


def theoremqa(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """TIGER-Lab/TheoremQA: ``Question``, ``Answer``, ``Answer_type``, ``Picture``.

    ``Answer_type`` maps to :data:`~rsim_env.problem.ANSWER_TYPES`: integer/float -> number,
    bool -> bool, option -> choice, ``list of integer``/``list of float`` -> list. Float answers carry
    ``metadata["rel_tol"] = 0.04``, TheoremQA's own tolerance (:func:`rsim_env.answers.check`).
    """
    out = []
    for i, row in enumerate(_take(_rows("TIGER-Lab/TheoremQA", source, split, None), limit)):
        _require(row, ("Question", "Answer", "Answer_type"), "TheoremQA")
        kind = str(row["Answer_type"]).strip()
        answer_type = "list" if kind.startswith("list") else _THEOREMQA_TYPES.get(kind, "auto")
        answer = str(row["Answer"])
        if answer_type == "choice":
            answer = re.sub(r"[()\s]", "", answer).upper()
        meta = {"answer_kind": kind, "has_picture": bool(row.get("Picture"))}
        if kind in _THEOREMQA_REL_TOL:  # graded by TheoremQA's own rule: within 4 % of the gold
            meta["rel_tol"] = _THEOREMQA_REL_TOL[kind]
        out.append(Problem(f"theoremqa/{i}", row["Question"], answer, answer_type, "theoremqa", metadata=meta))
    return out


LOADERS: dict[str, Callable[..., list[Problem]]] = {
    "gsm8k": gsm8k, "math": math, "math500": math500, "aime2024": aime2024,
    "mmlu_pro": mmlu_pro, "theoremqa": theoremqa,
}
"""Loader per dataset name; :func:`rsim_env.sources.data.load_problems` finds hub names here."""
_ALIASES = {"openai/gsm8k": "gsm8k", "hendrycks_math": "math", "math-500": "math500",
            "huggingfaceh4/math-500": "math500", "maxwell-jia/aime_2024": "aime2024", "aime_2024": "aime2024",
            "tiger-lab/mmlu-pro": "mmlu_pro", "mmlu-pro": "mmlu_pro", "tiger-lab/theoremqa": "theoremqa"}


def _code_loader(name: str) -> Callable[..., list[Problem]]:
    """Code datasets (kind="code") live one file each beside this module; imported on first use
    because they build on the row helpers of this module."""
    def load(**kwargs: Any) -> list[Problem]:
        import importlib

        return getattr(importlib.import_module(f".{name}", __package__), name)(**kwargs)
    load.__name__ = load.__qualname__ = name
    return load


LOADERS.update({name: _code_loader(name) for name in ("humaneval", "mbpp", "codealpaca")})
_ALIASES.update({"openai/openai_humaneval": "humaneval", "openai_humaneval": "humaneval",
                 "google-research-datasets/mbpp": "mbpp", "sahil2801/codealpaca-20k": "codealpaca",
                 "codealpaca-20k": "codealpaca"})
