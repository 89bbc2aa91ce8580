"""Which part of the reasoner's final step is the program (the documented extraction rule).

Rule, applied to the **final step** only:

1. If the step contains fenced code blocks (```` ``` ```` or ``~~~``), the program is the **last**
   block whose info string is empty or names Python (``python``, ``py``, ``python3``); blocks
   tagged with another language are ignored. A closing fence stands alone on its line (as in
   CommonMark: "``` \\boxed{4}" does not close); a fence never closed runs to the end of the step.
   Blank blocks are skipped.
2. If the step has no fence at all, the whole step (stripped) is the program.
3. Otherwise (only non-Python fences) or if the result is blank, there is no program (``None``).

**Lead-in-opened blocks.** The code termination lead-in of the ``lead`` protocols
(:data:`rsim_env.render.KIND_TEXTS`) ends with an opening fence line, so the step as generated is the
program and its closing fence, without the opening one. The text the rule reads is then the lead-in
followed by the step (:func:`answer_text`), when the lead-in leaves a fenced block open **and** the step
opens no tagged block of its own (a line such as ```` ```python ````: a reasoner that ignores the
opened block and starts its own, maybe after some prose, is read alone). Any other lead-in ("Next,")
is not part of the answer and the generated step is read alone.

``R_format`` is 1 when a program was extracted **and** it parses (:func:`program_parses`, which
only calls :func:`ast.parse` -- nothing is executed here).
"""

from __future__ import annotations

import ast
import re

_FENCE = re.compile(r"^[ \t]*(```+|~~~+)[ \t]*([^\n`]*)$", re.MULTILINE)
_PYTHON_TAGS = {"", "python", "py", "python3"}
CODE_FENCE_OPEN = "```\n"
"""A bare opening fence line (prepended to a step whose block its lead-in opened)."""
MAX_PARSE_CHARS = 100_000
"""Longer text is not parsed (counts as not parsing)."""


def _blocks(step: str) -> list[tuple[str, str, bool, int, int]]:
    """``(tag, body, closed, start, stop)`` of each fenced block, in order (``step[start:stop]`` is the
    block with its fences)."""
    out, pos = [], 0
    while True:
        m = _FENCE.search(step, pos)
        if not m:
            return out
        fence, tag = m.group(1), m.group(2).strip().lower()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = close.search(step, m.end())
        body = step[m.end() + 1: end.start()] if end else step[m.end() + 1:]
        out.append((tag.split()[0] if tag else "", body, end is not None, m.start(), end.end() if end else len(step)))
        if not end:
            return out
        pos = end.end()


def extract_program(step: str | None) -> str | None:
    """The program in ``step`` by the module's rule, or ``None``."""
    if not step or not step.strip():
        return None
    if not _FENCE.search(step):
        return step.strip()
    python = [body.strip("\n") for tag, body, *_ in _blocks(step) if tag in _PYTHON_TAGS and body.strip()]
    return python[-1] if python else None


def program_parses(program: str | None) -> bool:
    """True if ``program`` is non-blank Python that ``ast.parse`` accepts (never executed)."""
    if not program or not program.strip() or len(program) > MAX_PARSE_CHARS or "\x00" in program:
        return False
    try:
        ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def leaves_open(text: str) -> bool:
    """True if ``text`` ends inside a fenced block (its last opening fence is never closed)."""
    blocks = _blocks(text)
    return bool(blocks) and not blocks[-1][2]


def answer_text(lead: str, step: str) -> str:
    """The text the extraction rule reads for a final step written after ``lead`` (see module docstring)."""
    if not lead or not leaves_open(lead) or any(m.group(2).strip() for m in _FENCE.finditer(step)):
        return step
    return lead + step


def closes_program(text: str) -> bool:
    """True once ``text`` holds a closed fenced Python block with a non-blank body (the reasoner's
    code stop rule, the analogue of a closed non-empty ``\\boxed{}``)."""
    if "```" not in text and "~~~" not in text:
        return False
    return any(closed and tag in _PYTHON_TAGS and body.strip() for tag, body, closed, *_ in _blocks(text))


def prose(step: str, opened: bool = False) -> str:
    """``step`` without its code: every fenced block (fences included) removed, and a step with no fence
    that parses as a program (:func:`defines_function`) removed whole. ``opened``: the step continues a
    block its lead-in opened, so its text up to the first closing fence is code too."""
    text = CODE_FENCE_OPEN + step if opened else step
    if not _FENCE.search(text):
        return "" if defines_function(text.strip()) else text
    out, pos = [], 0
    for *_, start, stop in _blocks(text):
        out.append(text[pos:start])
        pos = stop
    return "".join(out) + text[pos:]


def defines_function(program: str | None) -> bool:
    """True if ``program`` parses (:func:`program_parses`) and defines a function at its top level."""
    if not program_parses(program):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) for node in ast.parse(program).body)
