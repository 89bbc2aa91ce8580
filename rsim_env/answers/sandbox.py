"""A pool of persistent worker processes that run the sympy part of a check under a time bound.

Why a subprocess and not ``signal.alarm`` (Math-Verify's approach): signals only work on the main
thread, so a threaded reward server would have to turn the timeout off. A worker process can be
killed from any thread of any process, and a killed worker takes its memory with it.

Time bound per call, queue included: :meth:`WorkerPool.run` has one deadline, ``timeout`` seconds
from the moment the call has a worker or could start one. The pool grows (up to ``max_workers``)
instead of queueing, and keeps one started spare, so a batch of expression bombs -- each holding
its worker until its own deadline -- does not make an innocent check wait behind them. Only past
``max_workers`` concurrent calls does a call queue, and its wait counts against its deadline.
Starting a worker (importing sympy, about a second) is not charged to the check; it is bounded
by :data:`STARTUP_TIMEOUT_S`. A request still running after :data:`DEMOTE_AFTER_S` is reniced
so that, on a machine with few cores, bombs burn only the CPU that ordinary checks leave. Pools inherited through ``fork`` are dropped (the child starts its own).

Failures are typed, each with the ``reason`` that :func:`rsim_env.answers.check` reports:
:class:`WorkerTimeout` (``"timeout"``: this call's sympy work ran out of time; the worker is
killed), :class:`PoolBusy` (``"overloaded"``: no worker became free before the deadline; nothing
ran), :class:`WorkerCrashed` (``"worker_crashed"``: the worker died, e.g. on its memory cap, or
could not start), :class:`ProtocolError` (``"protocol_error"``: the reply was not the expected
JSON line).
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
from typing import Mapping

STARTUP_TIMEOUT_S = 60.0
DEMOTE_AFTER_S = 0.5
"""A request still running after this long gets a lower CPU priority (an ordinary check takes
milliseconds to a few hundred ms), so expression bombs share the CPU behind innocent checks."""
DEMOTED_NICE = 15
MAX_REPLY_BYTES = 1 << 20
_PKG_ROOT = str(Path(__file__).resolve().parents[2])
WORKER_ARGV = (sys.executable, "-m", "rsim_env.answers.worker")


class WorkerFailure(Exception):
    """Base of the pool's failures; ``reason`` is what ``check`` reports."""

    reason = "worker_error"


class WorkerTimeout(WorkerFailure):
    """This call's request did not finish within its time bound (the worker has been killed)."""

    reason = "timeout"


class PoolBusy(WorkerFailure):
    """Every worker stayed busy until this call's deadline; the request never ran."""

    reason = "overloaded"


class WorkerCrashed(WorkerFailure):
    """The worker process died (memory cap, signal) or could not be started."""

    reason = "worker_crashed"


class ProtocolError(WorkerFailure):
    """The worker answered something other than one JSON object line."""

    reason = "protocol_error"


class _Worker:
    def __init__(self, argv: tuple[str, ...], env_extra: Mapping[str, str] | None = None) -> None:
        env = {**os.environ, **(env_extra or {})}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PKG_ROOT, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            close_fds=True,
        )
        self.buf = b""
        self.demoted = False

    def readline(self, deadline: float, demote_at: float | None = None) -> dict:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buf:
            now = time.monotonic()
            left = deadline - now
            if demote_at is not None and now >= demote_at:
                self.demote()
                demote_at = None
            wait = left if demote_at is None else min(left, demote_at - now)
            if left <= 0:
                raise WorkerTimeout()
            if not select.select([fd], [], [], max(0.0, wait))[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkerCrashed(f"worker exited with code {self.proc.poll()}")
            self.buf += chunk
            if len(self.buf) > MAX_REPLY_BYTES:
                raise ProtocolError(f"reply longer than {MAX_REPLY_BYTES} bytes")
        line, _, self.buf = self.buf.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            raise ProtocolError(f"reply is not JSON: {line[:80]!r}") from None
        if not isinstance(reply, dict):
            raise ProtocolError(f"reply is not a JSON object: {line[:80]!r}")
        return reply

    def wait_ready(self) -> None:
        try:
            self.readline(time.monotonic() + STARTUP_TIMEOUT_S)
        except WorkerTimeout:
            raise WorkerCrashed(f"worker did not start within {STARTUP_TIMEOUT_S} s") from None

    def request(self, payload: dict, deadline: float) -> dict:
        try:
            self.proc.stdin.write((json.dumps(payload) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerCrashed(f"cannot write to worker: {exc}") from None
        return self.readline(deadline, time.monotonic() + DEMOTE_AFTER_S)

    def demote(self) -> None:
        """Lower this worker's CPU priority: a long check must not slow the short ones down.

        The priority cannot be raised back without privileges, so a demoted worker is retired
        after its request (see :meth:`WorkerPool.run`)."""
        self.demoted = True
        try:
            os.setpriority(os.PRIO_PROCESS, self.proc.pid, DEMOTED_NICE)
        except (AttributeError, OSError):  # pragma: no cover - not Unix, or the process is gone
            pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class WorkerPool:
    """Thread-safe, elastic pool of worker processes (see module docstring).

    Args:
        max_workers: Most worker processes alive at once (each ~80 MB resident, capped at
            :data:`rsim_env.answers.worker.MEMORY_LIMIT` of address space).
        keep_idle: Idle workers kept for reuse; more are stopped when they come back.
        argv: Command that starts one worker (tests substitute a fake worker).
        env: Environment variables set for the workers on top of this process's (e.g. ``PYTHONHASHSEED``).
    """

    def __init__(self, max_workers: int = 16, keep_idle: int = 2, argv: tuple[str, ...] = WORKER_ARGV,
                 env: Mapping[str, str] | None = None) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers={max_workers}; need at least 1 worker process.")
        if keep_idle < 1:
            raise ValueError(f"keep_idle={keep_idle}; keep at least 1 idle worker (the warm spare).")
        self.max_workers, self.keep_idle, self.argv = max_workers, keep_idle, tuple(argv)
        self.env = dict(env or {})
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._count = 0  # workers alive or starting (idle + busy + starting)
        self._spare_starting = False
        self._pid = os.getpid()

    def stats(self) -> dict[str, int]:
        """``{"alive": ..., "idle": ..., "busy": ...}`` (for benchmarks and tests)."""
        with self._cond:
            return {"alive": self._count, "idle": len(self._idle), "busy": len(self._live) - len(self._idle)}

    def _start(self) -> _Worker:
        """Start one worker and wait until it is ready; the slot was reserved by the caller."""
        worker = None
        try:
            worker = _Worker(self.argv, self.env)
            worker.wait_ready()
        except (OSError, WorkerFailure) as exc:
            if worker is not None:
                worker.kill()
            with self._cond:
                self._count -= 1
                self._cond.notify_all()
            raise exc if isinstance(exc, WorkerFailure) else WorkerCrashed(f"cannot start worker: {exc}") from None
        with self._cond:
            self._live.add(worker)
        return worker

    def _start_spare(self) -> None:
        try:
            worker = self._start()
        except WorkerFailure:
            worker = None
        with self._cond:
            self._spare_starting = False
            if worker is not None:
                self._idle.append(worker)
                self._cond.notify_all()

    def _maybe_spare(self) -> None:
        """Keep one started spare while the pool can grow (called with the lock held)."""
        if not self._idle and not self._spare_starting and self._count < self.max_workers:
            self._spare_starting = True
            self._count += 1
            threading.Thread(target=self._start_spare, name="rsim-answers-spare", daemon=True).start()

    def _acquire(self, timeout: float) -> tuple[_Worker, float]:
        """A ready worker and this call's deadline (see module docstring)."""
        with self._cond:
            if self._pid != os.getpid():  # inherited through fork: the parent owns those pipes
                self._idle, self._live, self._count, self._pid = [], set(), 0, os.getpid()
                self._spare_starting = False
            deadline = time.monotonic() + timeout
            while not self._idle and self._count >= self.max_workers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PoolBusy(f"all {self.max_workers} answer workers stayed busy for {timeout} s")
                self._cond.wait(left)
            if self._idle:
                worker = self._idle.pop()
                self._maybe_spare()
                return worker, deadline
            self._count += 1  # reserve a slot, start outside the lock
        worker = self._start()
        with self._cond:
            self._maybe_spare()
        return worker, time.monotonic() + timeout  # start-up is not charged to the check

    def _release(self, worker: _Worker, healthy: bool) -> None:
        with self._cond:
            keep = healthy and len(self._idle) < self.keep_idle and worker in self._live
            if keep:
                self._idle.append(worker)
            else:
                self._live.discard(worker)
                self._count -= 1
            self._cond.notify_all()
        if not keep:
            worker.kill()

    def run(self, payload: dict, timeout: float) -> dict:
        """Send ``payload`` to a worker and return its reply within ``timeout`` seconds.

        Raises:
            WorkerFailure: One of its subclasses (timeout, overloaded, crashed, protocol error).
        """
        worker, deadline = self._acquire(timeout)
        try:
            reply = worker.request(payload, deadline)
        except BaseException:
            self._release(worker, healthy=False)
            raise
        self._release(worker, healthy=not worker.demoted)  # a demoted worker is replaced, not reused
        return reply

    def close(self) -> None:
        """Kill every worker, busy ones included (their calls end with ``WorkerCrashed``)."""
        with self._cond:
            idle, self._idle = self._idle, []
            for w in idle:
                self._live.discard(w)
                self._count -= 1
            busy = list(self._live)
        for w in idle + busy:
            w.kill()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()
POOL_SIZE_ENV = "RSIM_ANSWER_WORKERS"


def default_pool() -> WorkerPool:
    """The process-wide pool, created on first use and closed at exit.

    Its ``max_workers`` is 16, or the value of the ``RSIM_ANSWER_WORKERS`` environment variable.
    """
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            raw = os.environ.get(POOL_SIZE_ENV, "16")
            if not raw.isdigit() or int(raw) < 1:
                raise ValueError(f"{POOL_SIZE_ENV}={raw!r}; set it to a positive number of worker processes.")
            _POOL = WorkerPool(max_workers=int(raw))
            atexit.register(_POOL.close)
        return _POOL
