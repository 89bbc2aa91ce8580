"""CodeAlpaca-20k (``sahil2801/CodeAlpaca-20k``: ``instruction``, ``input``, ``output``).

It has **no tests**: a row becomes a code problem only if its reference output defines a function,
and the only test is that the program loads and defines a callable of that name. Its R_acc therefore
means "a loadable program with the right function", not "a correct program": use it to train the
format and the plan, never to measure accuracy (``metadata["weak_tests"]`` marks these problems).
"""

from __future__ import annotations

from .loaders import _require, _rows, _take
from ..problem import Problem
from ..render import code_question
from .mbpp import main_function


def codealpaca(source: str | None = None, split: str = "train", limit: int | None = None) -> list[Problem]:
    """CodeAlpaca-20k: ``instruction``, ``input``, ``output``; only rows whose output defines a function.

    See the module docstring: the test only checks that the program defines the function.
    """
    out, skipped = [], 0
    for i, row in enumerate(_take(_rows("sahil2801/CodeAlpaca-20k", source, split, None), None)):
        if limit is not None and len(out) >= limit:
            break
        _require(row, ("instruction", "input", "output"), "CodeAlpaca-20k")
        entry = main_function(row["output"])
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
