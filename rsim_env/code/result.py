"""The sandbox's configuration, its verdict type, and the input/output-pairs test form."""

from __future__ import annotations

import ast
from dataclasses import dataclass, fields
from typing import Any, Sequence

REASONS = {
    "ok": "every test passed",
    "failed": "the program ran; at least one test failed (wrong value, exception, missing entry point call)",
    "timeout": "the wall-clock or CPU-time limit was reached (tests finished by then still count in fraction)",
    "crashed": "the candidate process failed to load the program (exception, exit, missing entry point) or died",
    "output_limit": "the program printed more than max_output_bytes",
    "no_program": "there was no program to run (None or blank)",
    "syntax_error": "the program does not parse as Python",
    "too_large": "the program is over max_program_bytes or contains a NUL byte",
    "sandbox_error": "the tests themselves failed to run (not the program's fault)",
}
"""Every value of :attr:`ExecResult.reason`, with its meaning."""


@dataclass(frozen=True)
class ExecResult:
    """Verdict of one sandboxed execution."""

    passed: bool
    """True iff every test passed (``reason == "ok"``)."""
    fraction: float
    """Test statements passed / all test statements (0.0 when nothing ran)."""
    reason: str
    """One of :data:`REASONS`."""
    tests_passed: int = 0
    """Number of test statements that passed."""
    tests_total: int = 0
    """Number of test statements in ``check`` (top-level statements that contain an assert)."""
    detail: str = ""
    """First failure, crash message or limit hit (truncated), for logs."""
    elapsed_s: float = 0.0
    """Seconds from process start to verdict (0 when nothing was started)."""
    isolation: str = ""
    """``"bwrap"`` or ``"rlimits"``: how the program was confined."""
    output: str = ""
    """Start of what the program printed (capped at ``keep_output_bytes``)."""


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and parallelism of the code sandbox."""

    timeout_s: float = 10.0
    """Default wall-clock limit per execution, from process start."""
    memory_mb: int = 1024
    """Address-space limit of each sandboxed process (RLIMIT_AS)."""
    max_processes: int = 16
    """RLIMIT_NPROC of the sandbox uid: bounds fork bombs."""
    max_output_bytes: int = 1 << 20
    """A program printing more than this is killed (reason ``output_limit``)."""
    keep_output_bytes: int = 4096
    """How much of the program's output is kept in ``ExecResult.output``."""
    max_file_mb: int = 16
    """Largest file a sandboxed process may write (RLIMIT_FSIZE)."""
    workdir_mb: int = 64
    """Size of the private tmpfs working dir and /tmp under bubblewrap."""
    max_reply_mb: int = 8
    """Largest single return value (encoded) accepted from the candidate."""
    max_program_bytes: int = 100_000
    """Longer programs are refused (``too_large``); they travel as one argv string."""
    max_parallel: int = 2
    """Executions running at once (each uses two processes)."""
    isolation: str = "auto"
    """``"auto"`` (bubblewrap if it works, else rlimits with a warning), ``"bwrap"`` or ``"rlimits"``."""
    uid_base: int = 61000
    """First dedicated sandbox uid (used when running as root)."""
    uid_count: int = 256
    """Size of the sandbox uid pool (two per running execution)."""
    python: str | None = None
    """Interpreter for the sandboxed processes (default: a system python3 any uid can run)."""
    tmp_dir: str | None = None
    """Where per-execution temp dirs are made (default: the system temp dir); must be traversable by others."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("isolation", "python", "tmp_dir"):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"SandboxConfig.{f.name}={v!r} must be a positive number.")
        if self.isolation not in ("auto", "bwrap", "rlimits"):
            raise ValueError(f"SandboxConfig.isolation={self.isolation!r}; use 'auto', 'bwrap' or 'rlimits'.")
        if self.uid_count < 2 * self.max_parallel:
            raise ValueError(f"SandboxConfig.uid_count={self.uid_count} < 2 * max_parallel={self.max_parallel}; "
                             "each execution needs two uids.")


def _literal(value: Any, what: str) -> str:
    text = repr(value)
    try:
        if ast.literal_eval(text) != value:
            raise ValueError
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
        raise ValueError(f"{what} {text[:80]} is not plain literal data (numbers, str, list, tuple, dict, set, "
                         "bool, None); I/O pairs must round-trip through repr().") from None
    return text


def pairs_to_check(pairs: Sequence[Any]) -> str:
    """HumanEval-style tests from input/output pairs ``[(args, expected), ...]``.

    ``args`` is a tuple/list of positional arguments (a non-sequence is one argument); the test is
    ``assert candidate(*args) == expected``, one test statement per pair.
    """
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence) or not pairs:
        raise ValueError("tests must be check() source (str) or a non-empty list of (args, expected) pairs.")
    lines = ["def check(candidate):"]
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"I/O pair {i} is {pair!r:.80}; each pair must be (args, expected).")
        args, expected = pair
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        call = ", ".join(_literal(a, f"pair {i} argument {j}") for j, a in enumerate(args))
        lines.append(f"    assert candidate({call}) == {_literal(expected, f'pair {i} expected')}")
    return "\n".join(lines) + "\n"
