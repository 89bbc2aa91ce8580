"""Run a command while busy processes keep every core loaded: ``python -m tools.cpu_load [--procs N] -- CMD...``.

``make test`` runs the tests that start processes, threads, servers or timers under it (``make test-load``),
so a test that only passes on a quiet machine fails there rather than on a user's laptop. The busy processes
spin in pure Python, stop when the command ends (or when this process dies: each checks its parent), and
never outlive ``--max-s``. The exit code is the command's.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time


def _spin(parent: int, max_s: float) -> None:
    """Burn one core until the parent is gone or ``max_s`` has passed."""
    end = time.monotonic() + max_s
    while time.monotonic() < end and os.getppid() == parent:
        for _ in range(200_000):
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cpu_load", description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 2, help="busy processes (default: one a core)")
    parser.add_argument("--max-s", type=float, default=3600.0, help="the busy processes stop after this long")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: python -m tools.cpu_load -- pytest tests/test_x.py")
    if args.procs < 0:
        parser.error(f"--procs {args.procs} must be >= 0")
    spinners = [mp.Process(target=_spin, args=(os.getpid(), args.max_s), daemon=True) for _ in range(args.procs)]
    for p in spinners:
        p.start()
    print(f"tools.cpu_load: {args.procs} busy processes beside: {' '.join(command)}", file=sys.stderr, flush=True)
    try:
        return subprocess.call(command)
    finally:
        for p in spinners:
            p.terminate()
        for p in spinners:
            p.join(10)


if __name__ == "__main__":
    sys.exit(main())
