"""How the ``rsim`` console script reports errors: one line on stderr and a non-zero exit.

A user mistake (missing model path, bad data file, ``--out`` naming a file, a corrupt checkpoint, a
refused resume) is one line that says what is wrong and what to do, never a traceback. ``--debug``
(anywhere on the command line) or ``RSIM_DEBUG=1`` re-raises instead, showing the traceback.
Programmatic calls (``algos.cli.main([...])``, ``main(RunConfig)``) raise as usual.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Sequence

DEBUG_FLAG = "--debug"
DEBUG_ENV = "RSIM_DEBUG"
USER_ERRORS = (ValueError, TypeError, OSError, ImportError, RuntimeError)
"""Exceptions whose message is meant for the user: bad input (ValueError/TypeError), files and
disks (OSError), missing extras (ImportError), a run that cannot go on (RuntimeError: diverged
training, out of GPU memory). Anything else (AttributeError, AssertionError, ...) is a bug."""
EXIT_ERROR = 1
"""Exit status of every user error, a bad command line included (argparse's own would be 2)."""
EXIT_INTERRUPTED = 130


class UsageError(ValueError):
    """A bad command line (unknown flag, missing or malformed value); its message names the ``--help`` to read."""


def debug_requested(argv: Sequence[str]) -> bool:
    """``--debug`` on the command line or ``RSIM_DEBUG`` set to anything but ``""`` / ``"0"``."""
    return DEBUG_FLAG in argv or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def one_line(e: BaseException) -> str:
    """The exception's message on one line (library messages often span several)."""
    text = " ".join(part.strip() for part in str(e).splitlines() if part.strip())
    return text or type(e).__name__


def run(entry: Callable[[list[str]], Any], argv: Sequence[str], prog: str = "rsim") -> int:
    """Call ``entry(argv without --debug)``; return the process exit status.

    Errors print ``<prog>: error: <message>`` on stderr; unexpected exception types (bugs) also
    name their type and ask for the ``--debug`` output.
    """
    debug = debug_requested(argv)
    args = [a for a in argv if a != DEBUG_FLAG]
    try:
        entry(args)
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - the console boundary: everything becomes one line
        if debug:
            raise
        if isinstance(e, UsageError):  # no traceback to offer: the command line itself is wrong
            print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        elif isinstance(e, USER_ERRORS):
            print(f"{prog}: error: {one_line(e)} (traceback: rerun with {DEBUG_FLAG} or {DEBUG_ENV}=1)", file=sys.stderr)
        else:
            print(f"{prog}: internal error ({type(e).__name__}): {one_line(e)}; this is a bug, please report it "
                  f"with the output of {DEBUG_FLAG}.", file=sys.stderr)
        return EXIT_ERROR
    return 0
