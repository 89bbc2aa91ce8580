"""Which part of the reasoner's final step is the program (the documented extraction rule).

Rule, applied to the **final step** only:

1. If the step contains fenced code blocks (```` ``` ```` or ``~~~``), the program is the **last**
   block whose info string is empty or names Python (``python``, ``py``, ``python3``); blocks
   tagged with another language are ignored. A closing fence stands alone on its line (as in
   CommonMark: "``` \\boxed{4}" does not close); a fence never closed runs to the end of the step.
2. If the step has no fence at all, the whole step (stripped) is the program.
3. Otherwise (only non-Python fences) or if the result is blank, there is no program (``None``).

``R_format`` is 1 when a program was extracted **and** it parses (:func:`program_parses`, which
only calls :func:`ast.parse` -- nothing is executed here).
"""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([^\n`]*)$", re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3"}
MAX_PARSE_CHARS = 100_000
"""Longer text is not parsed (counts as not parsing)."""


def _blocks(step: str) -> list[tuple[str, str]]:
    """``(tag, body)`` of each fenced block, in order."""
    out, pos = [], 0
    while True:
        m = _FENCE.search(step, pos)
        if not m:
            return out
        fence, tag = m.group(1), m.group(2).strip().lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = close.search(step, m.end())
        body = step[m.end() + 1: end.start()] if end else step[m.end() + 1:]
        out.append((tag.split()[0] if tag else "", body))
        if not end:
            return out
        pos = end.end()


def extract_program(step: str | None) -> str | None:
    """The program in ``step`` by the module's rule, or ``None``."""
    if not step or not step.strip():
        return None
    if not _FENCE.search(step):
        return step.strip()
    python = [body for tag, body in _blocks(step) if tag in _PYTHON_TAGS]
    program = python[-1].strip("\n") if python else ""
    return program if program.strip() else None


def program_parses(program: str | None) -> bool:
    """True if ``program`` is non-blank Python that ``ast.parse`` accepts (never executed)."""
    if not program or not program.strip() or len(program) > MAX_PARSE_CHARS or "\x00" in program:
        return False
    try:
        ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
