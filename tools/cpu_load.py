"""Run a command while busy processes keep every core loaded: ``python -m tools.cpu_load [--procs N] -- CMD...``.

``make test`` runs the tests that start processes, threads, servers or timers under it (``make test-load``),
so a test that only passes on a quiet machine fails there rather than on a user's laptop. The busy processes
spin in pure Python, stop when the command ends (or when this process dies: each checks its parent), and
never outlive ``--max-s``. The exit code is the command's.

``--beside 'SHELL COMMAND'`` makes useful work the load for as long as it runs: CI's studies' tests (two pytest
workers) keep the two cores over-full beside the process tests instead of a busy process that computes nothing, and
the busy processes start only once it has ended. Its output is kept and printed whole when it ends; the exit code is
the command's if that failed, else the ``--beside`` command's.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import threading
import time


def _spin(parent: int, max_s: float) -> None:
    """Burn one core until the parent is gone or ``max_s`` has passed."""
    end = time.monotonic() + max_s
    while time.monotonic() < end and os.getppid() == parent:
        for _ in range(200_000):
            pass


class _Beside:
    """The ``--beside`` shell command: started at once, its output kept in a file and printed whole when it ends;
    ``then`` runs after it ends (the busy processes' start)."""

    def __init__(self, command: str, then) -> None:
        self.command = command
        self.log = tempfile.TemporaryFile(mode="w+b")
        self.proc = subprocess.Popen(command, shell=True, stdout=self.log, stderr=subprocess.STDOUT)
        self.status: int | None = None
        self._then = then
        self._thread = threading.Thread(target=self._wait, daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        self.status = self.proc.wait()
        self._print()
        self._then()

    def _print(self) -> None:
        self.log.seek(0)
        sys.stdout.flush()
        print(f"tools.cpu_load: the load command ended (exit status {self.status}): {self.command}", flush=True)
        sys.stdout.buffer.write(self.log.read())
        sys.stdout.flush()
        self.log.close()

    def join(self) -> int:
        self._thread.join()
        return int(self.status)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.cpu_load", description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 2, help="busy processes (default: one a core)")
    parser.add_argument("--max-s", type=float, default=3600.0, help="the busy processes stop after this long")
    parser.add_argument("--beside", metavar="SHELL_COMMAND", default=None,
                        help="a shell command that is the load while it runs; the busy processes start when it ends")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given: python -m tools.cpu_load -- pytest tests/test_x.py")
    if args.procs < 0:
        parser.error(f"--procs {args.procs} must be >= 0")
    if args.beside is not None and not args.beside.strip():
        parser.error("--beside needs a command: --beside 'make test-studies'")
    spinners = [mp.Process(target=_spin, args=(os.getpid(), args.max_s), daemon=True) for _ in range(args.procs)]
    lock, finished = threading.Lock(), threading.Event()

    def start_spinners() -> None:
        with lock:  # not once the command has ended: the spinners would outlive their purpose
            if not finished.is_set():
                for p in spinners:
                    p.start()

    beside = None
    if args.beside is None:
        start_spinners()
        print(f"tools.cpu_load: {args.procs} busy processes beside: {' '.join(command)}", file=sys.stderr, flush=True)
    else:
        beside = _Beside(args.beside, start_spinners)
        print(f"tools.cpu_load: {args.beside!r} beside: {' '.join(command)}, then {args.procs} busy processes",
              file=sys.stderr, flush=True)
    status = None
    try:
        status = subprocess.call(command)
    finally:
        with lock:
            finished.set()
        for p in spinners:
            if p.pid is not None:
                p.terminate()
        for p in spinners:
            if p.pid is not None:
                p.join(10)
        if beside is not None and status is None:  # interrupted: the load goes with the command
            beside.stop()
    if beside is not None:
        load_status = beside.join()
        if status == 0 and load_status != 0:
            print(f"tools.cpu_load: the load command failed (exit status {load_status}): {args.beside}",
                  file=sys.stderr, flush=True)
            return load_status
    return status


if __name__ == "__main__":
    sys.exit(main())
