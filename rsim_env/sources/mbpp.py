"""MBPP (``google-research-datasets/mbpp``, ``full`` or ``sanitized`` layout) from the hub or a
local file. The asserts of ``test_list`` become one ``check`` whose tests call the function by
name; the reference code (parsed with ``ast`` for its function name, never run here) is kept as
``Problem.answer``.
"""

from __future__ import annotations

import ast

from .loaders import _require, _rows, _take
from ..problem import Problem
from ..render import code_question


def main_function(code: str) -> str | None:
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
        entry = main_function(row["code"])
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
