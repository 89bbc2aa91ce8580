"""Run an untrusted program against tests in a sandbox: :func:`execute` and :class:`Executor`.

Each execution starts two sandboxed processes (see :mod:`.isolation` for the confinement):

* the **candidate** loads the program and answers function calls (``harness_candidate``);
* the **checker** runs the tests, calling the candidate through a pipe (``harness_checker``).

The verdict travels from the checker to this process on a pipe the candidate never holds, and only
plain data crosses from the candidate (:mod:`.wire`), so a program that prints "PASS", patches the
harness, calls ``sys.exit(0)``/``os._exit(0)``, kills its parent or returns an object that equals
everything cannot turn a failure into a pass. Both processes are killed (process group, then every
process of their sandbox uids) and their temp dirs deleted when the execution ends, whatever happens.
"""

from __future__ import annotations

import ast
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from . import isolation
from .harness_checker import instrument
from .result import ExecResult, SandboxConfig, pairs_to_check

_HERE = Path(__file__).resolve().parent


def _script(harness: str) -> str:
    """Self-contained source run with ``python -I -S -c``: limits + wire + the harness."""
    return "\n\n".join((_HERE / f).read_text(encoding="utf-8") for f in ("limits.py", "wire.py", harness))


_CANDIDATE_SRC = _script("harness_candidate.py")
_CHECKER_SRC = _script("harness_checker.py")


@dataclass
class _Proc:
    popen: subprocess.Popen
    out_fd: int
    uid: int | None


class Executor:
    """Runs executions in parallel (``cfg.max_parallel`` at a time) without blocking the caller.

    ``submit`` returns a ``Future`` at once; ``execute`` waits for one; ``run_many`` for a batch.
    Each execution is bounded by its own ``timeout_s`` from the moment its processes start.
    """

    def __init__(self, cfg: SandboxConfig | None = None) -> None:
        self.cfg = cfg or SandboxConfig()
        self.python = isolation.find_python(self.cfg.python)
        self.pool = isolation.UidPool(self.cfg.uid_base, self.cfg.uid_count) if isolation.is_root() else None
        self.requested = isolation.requested(self.cfg.isolation)
        """The mode asked for (``cfg.isolation``, or ``$RSIM_SANDBOX`` in place of ``"auto"``)."""
        self.mode = isolation.detect(self.cfg.isolation, self.python, self.pool)
        """The mode in force: ``"bwrap"`` or ``"rlimits"`` (only when asked for)."""
        self.netns = self.mode == "rlimits" and isolation.netns_works(self.python, self.pool)
        """rlimits mode only: each sandboxed process runs in its own empty network namespace."""
        self._threads = ThreadPoolExecutor(self.cfg.max_parallel, thread_name_prefix="rsim-sandbox")

    def describe(self) -> dict[str, Any]:
        """How programs are confined, for results and logs: ``isolation`` and ``network``."""
        net = "none (bubblewrap)" if self.mode == "bwrap" else "none (network namespace)" if self.netns else "host"
        return {"isolation": self.mode, "network": net, "asked": self.requested}

    def submit(self, program: str | None, tests: str | Sequence[Any], entry_point: str = "solution",
               timeout_s: float | None = None) -> Future:
        """Start an execution in the background; the Future's result is an :class:`ExecResult`."""
        job = self._prepare(program, tests, entry_point, timeout_s)
        if isinstance(job, ExecResult):
            done: Future = Future()
            done.set_result(job)
            return done
        return self._threads.submit(self._run, *job)

    def execute(self, program: str | None, tests: str | Sequence[Any], entry_point: str = "solution",
                timeout_s: float | None = None) -> ExecResult:
        """Run one program against its tests and wait for the verdict."""
        return self.submit(program, tests, entry_point, timeout_s).result()

    def run_many(self, jobs: Sequence[dict[str, Any]]) -> list[ExecResult]:
        """Run ``execute(**job)`` for each job, in parallel; results in job order."""
        return [f.result() for f in [self.submit(**job) for job in jobs]]

    def close(self) -> None:
        self._threads.shutdown(wait=True)

    # -- preparation (caller's thread): validate, parse, never execute --------------------------
    def _prepare(self, program, tests, entry_point, timeout_s):
        timeout_s = self.cfg.timeout_s if timeout_s is None else timeout_s
        if not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= 600:
            raise ValueError(f"timeout_s={timeout_s!r}; pass seconds in (0, 600].")
        if not isinstance(entry_point, str) or not entry_point.isidentifier():
            raise ValueError(f"entry_point={entry_point!r} is not a Python identifier (e.g. 'solution').")
        tests_src = tests if isinstance(tests, str) else pairs_to_check(tests)
        try:
            _, total = instrument(tests_src)
        except SyntaxError as exc:
            raise ValueError(f"tests do not parse as Python ({exc.msg}, line {exc.lineno}); fix the test source.") from None
        early = dict(passed=False, fraction=0.0, tests_passed=0, tests_total=total, isolation=self.mode)
        if program is None or not str(program).strip():
            return ExecResult(reason="no_program", detail="nothing to run", **early)
        if not isinstance(program, str):
            raise TypeError(f"program must be str or None, got {type(program).__name__}.")
        if "\x00" in program or len(program.encode("utf-8", "surrogatepass")) > self.cfg.max_program_bytes:
            return ExecResult(reason="too_large", detail=f"program over {self.cfg.max_program_bytes} bytes "
                              "or contains NUL", **early)
        try:
            ast.parse(program)  # parse only: the program never runs in this process
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return ExecResult(reason="syntax_error", detail=f"{type(exc).__name__}: {exc}"[:300], **early)
        return program, tests_src, entry_point, float(timeout_s), total

    # -- one execution (worker thread) ----------------------------------------------------------
    def _run(self, program: str, tests_src: str, entry_point: str, timeout_s: float, total: int) -> ExecResult:
        held = [self.pool.acquire() for _ in range(2)] if self.pool else []
        uids = [u for u, _ in held] or [None, None]
        tmp = Path(tempfile.mkdtemp(prefix="rsim-code-", dir=self.cfg.tmp_dir))
        fds: list[int] = []
        procs: list[_Proc] = []
        clean = False
        try:
            return self._supervise(program, tests_src, entry_point, timeout_s, total, uids, tmp, fds, procs)
        finally:
            try:
                self._cleanup(procs, uids, fds, tmp)
                clean = True
            finally:
                for _, fd in held:
                    isolation.UidPool.release(fd, clean)

    def _spawn(self, cmd, uid, cwd, pass_fds, home) -> _Proc:
        out_r, out_w = os.pipe()
        # rlimits as root: the harness makes its network namespace as root, then drops to ``uid`` (confine)
        as_uid = None if self.mode == "rlimits" else uid
        kw = {"user": as_uid, "group": as_uid, "extra_groups": []} if as_uid is not None else {}
        try:
            popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=out_w, pass_fds=pass_fds,
                                     close_fds=True, env=isolation.clean_env(home), cwd=cwd,
                                     start_new_session=True, **kw)
        finally:
            os.close(out_w)
        return _Proc(popen, out_r, uid)

    def _limits(self, timeout_s: float, nproc: int) -> dict[str, int]:
        c = self.cfg
        return {"as": c.memory_mb << 20, "cpu": int(timeout_s) + 1, "nproc": nproc,
                "fsize": c.max_file_mb << 20, "nofile": 256, "core": 0}

    def _nproc(self) -> int:
        if self.pool is not None:
            return self.cfg.max_processes
        return len(isolation.pids_of_uid(os.getuid())) + self.cfg.max_processes  # shared with our own uid

    def _dirs(self, tmp: Path, uids) -> tuple[Path, Path]:
        os.chmod(tmp, 0o711)
        dirs = []
        for name, uid in zip(("candidate", "checker"), uids):
            d = tmp / name
            d.mkdir(mode=0o700)
            if uid is not None:
                os.chown(d, uid, uid)
            dirs.append(d)
        return dirs[0], dirs[1]

    def _supervise(self, program, tests_src, entry_point, timeout_s, total, uids, tmp, fds, procs) -> ExecResult:
        cand_dir, check_dir = self._dirs(tmp, uids)
        tests_path = check_dir / "tests.py"
        tests_path.write_text(tests_src, encoding="utf-8")
        if uids[1] is not None:
            os.chown(tests_path, uids[1], uids[1])
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        res_r, res_w = os.pipe()
        fds += [req_r, req_w, rep_r, rep_w, res_r, res_w]
        bw = self.mode == "bwrap"
        nproc = self._nproc()
        cand_cfg = {"limits": self._limits(timeout_s, nproc), "req_fd": req_r, "rep_fd": rep_w,
                    "entry_point": entry_point, "netns": self.netns, "drop_uid": None if bw else uids[0]}
        check_cfg = {"limits": self._limits(timeout_s, nproc), "req_fd": req_w, "rep_fd": rep_r, "res_fd": res_w,
                     "netns": self.netns, "drop_uid": None if bw else uids[1],
                     "entry_point": entry_point, "max_reply_bytes": self.cfg.max_reply_mb << 20,
                     "tests_path": "/checker/tests.py" if bw else str(tests_path)}
        py = [self.python, "-I", "-S", "-u", "-c"]  # -u: output reaches us even though we kill the process
        start = time.monotonic()
        cand_cmd = py + [_CANDIDATE_SRC, json.dumps(cand_cfg), program]
        check_cmd = py + [_CHECKER_SRC, json.dumps(check_cfg)]
        if bw:
            cand_cmd = isolation.bwrap_prefix(self.python, self.cfg.workdir_mb) + cand_cmd
            check_cmd = isolation.bwrap_prefix(self.python, 1, ((str(check_dir), "/checker"),)) + check_cmd
        procs.append(self._spawn(cand_cmd, uids[0], cand_dir, (req_r, rep_w), "/sandbox" if bw else str(cand_dir)))
        procs.append(self._spawn(check_cmd, uids[1], check_dir, (req_w, rep_r, res_w),
                                 "/sandbox" if bw else str(check_dir)))
        for fd in (req_r, req_w, rep_r, rep_w, res_w):  # only the children hold these now
            os.close(fd)
            fds.remove(fd)
        return self._collect(procs, res_r, start + timeout_s, total, start)

    def _collect(self, procs, res_r, deadline, total, start) -> ExecResult:
        msgs, buf = [], b""
        out = {p.out_fd: bytearray() for p in procs}
        seen = {p.out_fd: 0 for p in procs}
        open_fds = {res_r, *out}
        why = None
        while res_r in open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timeout"
                break
            ready, _, _ = select.select(list(open_fds), [], [], left)
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    open_fds.discard(fd)
                elif fd == res_r:
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    msgs += [m for m in map(_parse_line, lines) if m is not None]
                else:
                    seen[fd] += len(chunk)
                    keep = self.cfg.keep_output_bytes - len(out[fd])
                    if keep > 0:
                        out[fd] += chunk[:keep]
            if any(n > self.cfg.max_output_bytes for n in seen.values()):
                why = "output_limit"
                break
            if any(m.get("done") for m in msgs):
                break
        rcode = procs[0].popen.poll()
        text = out[procs[0].out_fd].decode("utf-8", "replace")
        return _verdict(msgs, why, rcode, total, time.monotonic() - start, self.mode, text,
                        max(seen.values()))

    def _cleanup(self, procs, uids, fds, tmp) -> None:
        for p in procs:
            try:
                os.killpg(p.popen.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            if uids[0] is not None:
                isolation.sweep(uids)  # raises if something survives SIGKILL: the uids then stay marked dirty
                if self.mode == "rlimits":  # no private /tmp: remove what the program left there
                    for uid in uids:
                        isolation.sweep_files(uid)
        finally:
            for p in procs:
                if p.popen.poll() is None:
                    p.popen.kill()
                p.popen.wait()
                os.close(p.out_fd)
            for fd in fds:
                os.close(fd)
            shutil.rmtree(tmp, ignore_errors=True)


def _parse_line(line: bytes) -> dict | None:
    """One result line from the checker (a malformed one is dropped, never trusted)."""
    try:
        m = json.loads(line)
    except ValueError:
        return None
    return m if isinstance(m, dict) else None


_XCPU = {-24, 128 + 24, -9}  # SIGXCPU / SIGKILL at the hard CPU limit (bwrap reports 128+sig)


def _verdict(msgs, why, rcode, total, elapsed, mode, output, out_bytes) -> ExecResult:
    results = {m["test"]: m for m in msgs if "test" in m}
    n_ok = sum(1 for m in results.values() if m["ok"])
    crashed = next((m["crashed"] for m in msgs if "crashed" in m), None)
    error = next((m["tests_error"] for m in msgs if "tests_error" in m), None)
    aborted = next((m["aborted"] for m in msgs if "aborted" in m), None)
    failures = [m.get("error", "") for m in results.values() if not m["ok"]]
    done = any(m.get("done") for m in msgs)
    if why == "output_limit":
        reason, detail = "output_limit", f"printed over {out_bytes} bytes"
    elif why == "timeout" or (crashed and rcode in _XCPU):
        reason, detail = "timeout", "wall-clock or CPU-time limit reached"
    elif error is not None:
        reason, detail = "sandbox_error", f"the tests failed to run: {error}"
    elif crashed is not None:
        reason, detail = "crashed", crashed
    elif not done:
        reason, detail = "sandbox_error", "the checker process ended without a verdict"
    elif n_ok == total and not aborted:
        reason, detail = "ok", ""
    else:
        reason, detail = "failed", aborted or (failures[0] if failures else "")
    return ExecResult(passed=reason == "ok", fraction=n_ok / total if total else 0.0, reason=reason,
                      tests_passed=n_ok, tests_total=total, detail=str(detail)[:500], elapsed_s=elapsed,
                      isolation=mode, output=output)


_DEFAULT: Executor | None = None
_DEFAULT_LOCK = threading.Lock()


def default_executor() -> Executor:
    """The process-wide executor (made on first use with :class:`SandboxConfig` defaults).

    Rebuilt when the mode asked for changed since (``RSIM_SANDBOX`` set or unset in between), so
    it always confines as the environment asks now. Raises
    :class:`~rsim_env.code.isolation.SandboxUnavailable` when bubblewrap is needed and missing.
    """
    global _DEFAULT
    with _DEFAULT_LOCK:
        old = _DEFAULT
        if old is None or old.requested != isolation.requested(old.cfg.isolation):
            _DEFAULT = Executor(old.cfg if old is not None else None)
            if old is not None:
                old._threads.shutdown(wait=False)  # running executions finish and clean up
        return _DEFAULT


def configure(cfg: SandboxConfig) -> Executor:
    """Replace the process-wide executor (used by env grading and :func:`execute`) with one for ``cfg``."""
    global _DEFAULT
    if not isinstance(cfg, SandboxConfig):
        raise TypeError(f"configure() takes a SandboxConfig, got {type(cfg).__name__}.")
    new = Executor(cfg)
    with _DEFAULT_LOCK:
        old, _DEFAULT = _DEFAULT, new
    if old is not None:
        old.close()
    return new


def execute(program: str | None, tests: str | Sequence[Any], timeout_s: float = 10.0,
            entry_point: str = "solution", executor: Executor | None = None) -> ExecResult:
    """Run ``program`` against ``tests`` in the sandbox and return the verdict.

    Args:
        program: Python source defining ``entry_point`` (untrusted; never run in this process).
        tests: HumanEval-style source defining ``check(candidate)``, or input/output pairs
            ``[(args, expected), ...]`` (see :func:`~rsim_env.code.result.pairs_to_check`).
        timeout_s: Wall-clock limit from process start; CPU time is capped at ``int(timeout_s)+1``.
        entry_point: Name of the function the tests call as ``candidate`` (also bound by name).
        executor: Where to run it; default: the shared :func:`default_executor`.
    """
    return (executor or default_executor()).execute(program, tests, entry_point, timeout_s)
