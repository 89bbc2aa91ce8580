"""A pool of persistent worker processes that run the sympy part of a check under a time bound.

Why a subprocess and not ``signal.alarm`` (Math-Verify's approach): signals only work on the main
thread, so a threaded reward server would have to turn the timeout off. A worker process can be
killed from any thread of any process, and a killed worker takes its memory with it. Workers are
started lazily, reused (sympy is imported once per worker, not per check), killed and replaced on
timeout, and dropped if the pool is inherited through ``fork`` (the child starts its own).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

STARTUP_TIMEOUT_S = 60.0
_PKG_ROOT = str(Path(__file__).resolve().parents[2])


class WorkerTimeout(Exception):
    """The worker did not answer within the time bound (it has been killed)."""


class _Worker:
    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rsim_env.answers.worker"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, close_fds=True,
        )
        self.buf = b""
        self.ready = False

    def readline(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WorkerTimeout()
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerTimeout()  # worker died (e.g. killed by the memory cap)
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def request(self, payload: dict, timeout: float) -> dict:
        if not self.ready:
            self.readline(time.monotonic() + STARTUP_TIMEOUT_S)
            self.ready = True
        self.proc.stdin.write((json.dumps(payload) + "\n").encode())
        self.proc.stdin.flush()
        return self.readline(time.monotonic() + timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class WorkerPool:
    """Thread-safe pool: each call borrows an idle worker or starts one (up to ``max_workers``)."""

    def __init__(self, max_workers: int = 2) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers={max_workers}; need at least 1 worker process.")
        self.max_workers = max_workers
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._count = 0
        self._pid = os.getpid()

    def _acquire(self, deadline: float) -> _Worker:
        with self._cond:
            if self._pid != os.getpid():  # inherited through fork: the parent owns those pipes
                self._idle, self._count, self._pid = [], 0, os.getpid()
            while not self._idle and self._count >= self.max_workers:
                if not self._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise WorkerTimeout()
            if self._idle:
                return self._idle.pop()
            self._count += 1
        try:
            return _Worker()
        except OSError:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise

    def _release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.kill()
        with self._cond:
            if healthy:
                self._idle.append(worker)
            else:
                self._count -= 1
            self._cond.notify()

    def run(self, payload: dict, timeout: float) -> dict:
        """Send ``payload`` to a worker; raise :class:`WorkerTimeout` after ``timeout`` seconds."""
        worker = self._acquire(time.monotonic() + timeout + STARTUP_TIMEOUT_S)
        try:
            reply = worker.request(payload, timeout)
        except (WorkerTimeout, OSError, ValueError):
            self._release(worker, healthy=False)
            raise WorkerTimeout() from None
        self._release(worker, healthy=True)
        return reply

    def close(self) -> None:
        """Kill all idle workers (busy ones are killed when they come back unhealthy)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._count -= len(idle)
        for w in idle:
            w.kill()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def default_pool() -> WorkerPool:
    """The process-wide pool, created on first use and closed at exit."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool(max_workers=max(1, min(4, os.cpu_count() or 1)))
            atexit.register(_POOL.close)
        return _POOL
