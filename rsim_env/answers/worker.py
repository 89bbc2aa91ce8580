"""Worker process entry point: ``python -m rsim_env.answers.worker``.

Reads one JSON request per line on stdin (``{"pred": ..., "gold": ..., "type": ...}``, both
already normalised), answers one JSON line on stdout (``{"correct": bool, "reason": str}``).
Its address space is capped so a blow-up fails here with MemoryError instead of eating the
host; the parent kills and restarts it on timeout (see :mod:`.sandbox`).
"""

from __future__ import annotations

import json
import sys
from typing import Callable

MEMORY_LIMIT = 1536 * 1024**2
"""Address-space cap of a worker; a legitimate check needs under 300 MB."""


def handle(req: dict) -> dict:
    """Decide one request with the sympy backend."""
    from .compare import equal
    from .numeric import TooLarge
    from .parser import ParseError
    from .structure import parse_answer
    from .symbolic import sympy_leaf

    try:
        result = equal(parse_answer(req["pred"]), parse_answer(req["gold"]), req["type"], sympy_leaf)
    except TooLarge as exc:
        return {"correct": False, "reason": "too_large", "detail": str(exc)[:200]}
    except ParseError as exc:
        return {"correct": False, "reason": "unparsable", "detail": str(exc)[:200]}
    except (MemoryError, RecursionError, OverflowError, ZeroDivisionError, TypeError, ValueError,
            AttributeError) as exc:  # sympy raising on a hostile value: record it, don't crash
        return {"correct": False, "reason": "sympy_error", "detail": f"{type(exc).__name__}: {exc}"[:200]}
    return {"correct": bool(result), "reason": "ok"}


def limit_memory() -> None:
    """Cap this worker's address space at :data:`MEMORY_LIMIT` (Linux; elsewhere a no-op)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    except (ImportError, ValueError, OSError):  # pragma: no cover - non-Linux
        pass


def serve(handle: Callable[[dict], dict], failed: dict, detail_chars: int = 200) -> None:
    """Say ready, then answer each JSON request line on stdin with one JSON line until stdin closes.

    ``failed`` is the reply to a request whose ``handle`` raised, with its exception as ``detail``: a bug must
    not kill the worker silently (the pool reports it upstream).
    """
    out = sys.stdout
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        try:
            reply = handle(json.loads(line))
        except Exception as exc:
            reply = {**failed, "reason": "worker_error", "detail": f"{type(exc).__name__}: {exc}"[:detail_chars]}
        out.write(json.dumps(reply) + "\n")
        out.flush()


def main() -> None:
    """Serve requests until stdin closes."""
    limit_memory()
    sys.setrecursionlimit(5000)
    warm_up()
    serve(handle, {"correct": False})


WARM_UP = (
    {"pred": "\\frac{x^{2}}{2}+\\sqrt{8}", "gold": "\\frac{x^{2}+4\\sqrt{2}}{2}", "type": "expression"},
    {"pred": "\\sin 2x", "gold": "2\\sin x\\cos x", "type": "expression"},
    {"pred": "\\ln(e^2)+\\log_2 8", "gold": "5", "type": "expression"},
)
"""Checks decided before the worker says it is ready (algebra and radicals, a trigonometric identity, logarithms),
so that the first real check of each family is not charged for the lazy imports and first-call caches of sympy
and the checker (0.5 s for the first trigonometric identity: past the pool's demotion threshold, so on a loaded
machine a correct answer came back "timeout"). Start-up is not charged to any check."""


def warm_up() -> None:
    """Decide every :data:`WARM_UP` check once (the results are discarded: only the imports and caches they fill matter)."""
    for req in WARM_UP:
        handle(dict(req))


if __name__ == "__main__":
    main()
