"""How a sandboxed process is started, confined and cleaned up.

Two modes (chosen once per process by :func:`detect`, or forced by ``SandboxConfig.isolation``):

* ``"bwrap"`` -- bubblewrap: new user, pid, network, ipc, uts and mount namespaces; the root is
  only ``/usr`` (+ the interpreter's prefix) mounted read-only, a private size-capped tmpfs for
  ``/tmp`` and the working directory, no network devices at all, ``--die-with-parent``.
* ``"rlimits"`` -- an explicit opt-in only (``SandboxConfig(isolation="rlimits")`` or the
  environment variable ``RSIM_SANDBOX=rlimits``): resource limits, a dedicated uid, a new session,
  a private temp dir and, where the kernel allows it without extra packages, a new empty network
  namespace (:func:`netns_works`). The readable parts of the filesystem and the other processes
  of the machine are NOT hidden (docs/sandbox.md lists what remains exposed).

``"auto"`` (the default) is bubblewrap or nothing: without a working bubblewrap :func:`detect`
raises :class:`SandboxUnavailable` naming the fix and the opt-in -- untrusted code never runs less
isolated than the user asked for. ``RSIM_SANDBOX`` (``auto`` | ``bwrap`` | ``rlimits``) replaces
an ``"auto"`` of the config, so a command line opts in without code; ``RSIM_SANDBOX=bwrap`` also
overrides a config's ``"rlimits"`` (the stronger request wins).

In both modes, when this process runs as root, every sandboxed process runs under a dedicated
unprivileged uid taken from a pool guarded by lock files (so concurrent executions, even from other
processes on the machine, never share one). That uid is what makes ``RLIMIT_NPROC`` bind (root is
exempt from it) so a fork bomb stops at a few processes, what keeps the candidate from signalling
anything but itself, and what lets :func:`sweep` find and kill every process it left behind.
Not root: the uid is our own, ``RLIMIT_NPROC`` is set relative to our current process count and
cleanup relies on the process group (and the pid namespace under bwrap).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Collection

MODES = ("auto", "bwrap", "rlimits")
"""Accepted values of ``SandboxConfig.isolation``."""
OPT_IN_ENV = "RSIM_SANDBOX"
"""Environment variable that replaces ``isolation="auto"``; ``RSIM_SANDBOX=rlimits`` is the opt-in."""
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap, or make sandbox-tools)"


class SandboxUnavailable(RuntimeError):
    """``isolation="auto"`` (or ``"bwrap"``) was asked for and bubblewrap does not work here."""
_LOCK_DIR = Path(tempfile.gettempdir()) / "rsim-sandbox-uids"
_detected: dict[tuple[str, int], str] = {}  # "" = bwrap works, else why not
_netns: dict[tuple[str, int], bool] = {}
_detect_lock = threading.Lock()


def is_root() -> bool:
    return os.geteuid() == 0


def _world_executable(path: str) -> bool:
    """True if every directory on the way to ``path`` and the file itself are usable by others."""
    real = Path(os.path.realpath(path))
    for parent in list(real.parents)[::-1]:
        if not os.stat(parent).st_mode & 0o001:
            return False
    return bool(os.stat(real).st_mode & 0o005 == 0o005)


def find_python(explicit: str | None = None) -> str:
    """An interpreter an unprivileged sandbox uid can run (the harnesses need only the stdlib)."""
    if explicit:
        return explicit
    candidates = [sys.executable] if not is_root() else []
    candidates += ["/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3") or "", sys.executable]
    for c in candidates:
        if c and os.path.exists(c) and (not is_root() or _world_executable(c)):
            return c
    raise RuntimeError("No Python interpreter that an unprivileged uid may execute (tried "
                       f"{[c for c in candidates if c]}); install python3 system-wide or pass "
                       "SandboxConfig(python=...).")


class UidPool:
    """Dedicated sandbox uids, each held through an exclusive ``flock`` (cross-process safe)."""

    def __init__(self, base: int, count: int) -> None:
        self.base, self.count = base, count
        self._next = 0
        self._mutex = threading.Lock()

    def acquire(self, timeout_s: float = 30.0) -> tuple[int, int]:
        """Lock a free uid; returns ``(uid, lock fd)``. Raises ``RuntimeError`` when none frees up.

        The lock file holds ``dirty`` from acquire until a release that confirmed the uid clean;
        a uid found dirty (its last holder died mid-run) is swept before it is handed out.
        """
        _LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
        deadline = time.monotonic() + timeout_s
        while True:
            with self._mutex:
                start, self._next = self._next, (self._next + 1) % self.count
            for k in range(self.count):
                uid = self.base + (start + k) % self.count
                fd = os.open(_LOCK_DIR / f"{uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    if os.pread(fd, 5, 0) == b"dirty":
                        sweep([uid])
                    os.pwrite(fd, b"dirty", 0)
                    return uid, fd
                except BlockingIOError:
                    os.close(fd)
            if time.monotonic() > deadline:
                raise RuntimeError(f"all {self.count} sandbox uids from {self.base} are busy; raise uid_count.")
            time.sleep(0.05)

    @staticmethod
    def release(fd: int, clean: bool) -> None:
        """Unlock; ``clean`` = no process of the uid is left (then the dirty mark is cleared)."""
        if clean:
            os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor drops the flock


def pids_of_uid(uid: int) -> list[int]:
    """Every live process whose real or effective uid is ``uid`` (``/proc/<pid>/status``; zombies skipped)."""
    return pids_of_uids(range(uid, uid + 1))


def pids_of_uids(uids: Collection[int]) -> list[int]:
    """Every live process whose real or effective uid is in ``uids`` (one scan of ``/proc``)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as fh:
                for line in fh:
                    if line.startswith(b"State:") and b"Z" in line.split()[1]:
                        break  # a zombie is dead already; its parent (maybe us) reaps it
                    if line.startswith(b"Uid:"):
                        real, eff = line.split()[1:3]
                        if int(real) in uids or int(eff) in uids:
                            out.append(int(name))
                        break
        except OSError:
            continue
    return out


def sweep(uids: Collection[int], timeout_s: float = 5.0) -> int:
    """SIGKILL every process of dedicated sandbox uids until none is left; returns how many died.

    Repeats because a fork bomb may fork between the scan and the kill; ``RLIMIT_NPROC`` keeps the
    number small, and killed processes cannot fork, so this converges in a few rounds.
    """
    if 0 in uids or os.getuid() in uids:
        raise ValueError(f"sweep(uids={uids}) would kill our own processes; it is only for sandbox uids.")
    killed, deadline = 0, time.monotonic() + timeout_s
    while True:
        pids = pids_of_uids(uids)
        if not pids:
            return killed
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes of sandbox uids {uids} survive SIGKILL: {pids[:10]}")
        time.sleep(0.01)


WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")
"""Directories any uid may write to; the rlimits fallback sweeps them for the sandbox uid's files."""


def sweep_files(uid: int) -> int:
    """Delete top-level entries owned by a sandbox uid in the world-writable dirs (rlimits mode)."""
    if uid == 0 or uid == os.getuid():
        raise ValueError(f"sweep_files(uid={uid}) would delete our own files; it is only for sandbox uids.")
    removed = 0
    for d in {tempfile.gettempdir(), *WORLD_WRITABLE}:
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
                removed += 1
            except OSError:
                continue
    return removed


def bwrap_prefix(python: str, workdir_mb: int, extra_ro: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """bubblewrap arguments up to (not including) the command."""
    args = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session", "--disable-userns",
            "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            args += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            args += ["--ro-bind", str(target), f"/{link}"]
    prefix = Path(os.path.realpath(python)).parents[1]
    if not str(prefix).startswith("/usr"):
        args += ["--ro-bind", str(prefix), str(prefix)]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(workdir_mb << 20), "--tmpfs", "/tmp",
             "--size", str(workdir_mb << 20), "--tmpfs", "/sandbox"]
    for src, dest in extra_ro:
        args += ["--ro-bind", src, dest]
    return args + ["--remount-ro", "/", "--chdir", "/sandbox", "--clearenv"]


def clean_env(home: str) -> dict[str, str]:
    """The whole environment a sandboxed process sees."""
    return {"PATH": "/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0"}


def _probe_bwrap(python: str, uid: int | None) -> str | None:
    """None if a trivial sandboxed command runs, else why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed"
    kw = {"user": uid, "group": uid, "extra_groups": []} if uid is not None else {}
    cmd = bwrap_prefix(python, 1) + [python, "-I", "-S", "-c", "print('ok')"]
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=20, stdin=subprocess.DEVNULL, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap failed to start: {exc}"
    if r.returncode != 0 or r.stdout.strip() != b"ok":
        return f"bwrap cannot create namespaces here (exit {r.returncode}: {r.stderr.decode(errors='replace')[:200]})"
    return None


def requested(isolation: str) -> str:
    """The mode asked for: ``isolation``, or ``$RSIM_SANDBOX`` when ``isolation`` is ``"auto"``;
    ``RSIM_SANDBOX=bwrap`` wins over everything (the stronger request is kept)."""
    if isolation not in MODES:
        raise ValueError(f"isolation={isolation!r}; use one of {MODES}.")
    env = os.environ.get(OPT_IN_ENV, "").strip()
    if env and env not in MODES:
        raise ValueError(f"{OPT_IN_ENV}={env!r}; use one of {MODES} (rlimits is the explicit opt-in to weaker "
                         "isolation) or unset it.")
    if env == "bwrap":
        return "bwrap"
    return env if isolation == "auto" and env else isolation


def detect(isolation: str, python: str, pool: UidPool | None) -> str:
    """Resolve the mode once per process: ``"bwrap"`` or, when explicitly asked for, ``"rlimits"``.

    Raises :class:`SandboxUnavailable` (one line: what is missing, the fix, the opt-in) when
    bubblewrap was asked for (``"auto"`` included) and does not work here.
    """
    mode = requested(isolation)
    if mode == "rlimits":
        return "rlimits"
    with _detect_lock:
        key = (python, os.getpid())
        if key not in _detected:
            uid, fd = pool.acquire() if pool else (None, None)
            try:
                _detected[key] = _probe_bwrap(python, uid) or ""
            finally:
                if fd is not None:
                    UidPool.release(fd, clean=not pids_of_uid(uid))
        why = _detected[key]
    if why:
        raise SandboxUnavailable(
            f"code problems run model-written programs in a sandbox that needs bubblewrap, but {why}: "
            f"{INSTALL_HINT}, or opt in to weaker isolation (resource limits, a dedicated uid, no network "
            f"where the kernel allows) with {OPT_IN_ENV}=rlimits or SandboxConfig(isolation='rlimits'); "
            "see docs/sandbox.md.")
    return "bwrap"


_NETNS_PROBE = """
import json, socket, sys
confine(json.loads(sys.argv[1]))
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[2])))
    print("connected")
except OSError:
    print("cut")
"""


def netns_works(python: str, pool: UidPool | None) -> bool:
    """Whether a sandboxed process can be put in an empty network namespace here (cached per process).

    Probed the way executions run it (:func:`rsim_env.code.limits.confine`): as root, unshare then
    drop to a pool uid; otherwise a user + network namespace. True only if the probe then fails
    to reach a listener of ours on 127.0.0.1.
    """
    import json
    import socket

    with _detect_lock:
        key = (python, os.getpid())
        if key in _netns:
            return _netns[key]
        uid, fd = pool.acquire() if pool else (None, None)
        src = (Path(__file__).with_name("limits.py")).read_text(encoding="utf-8") + _NETNS_PROBE
        cfg = {"limits": {}, "netns": True, "drop_uid": uid}
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            try:
                r = subprocess.run([python, "-I", "-S", "-c", src, json.dumps(cfg), str(listener.getsockname()[1])],
                                   capture_output=True, timeout=20, stdin=subprocess.DEVNULL, env=clean_env("/"))
                ok = r.returncode == 0 and r.stdout.strip() == b"cut"
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            finally:
                if fd is not None:
                    UidPool.release(fd, clean=not pids_of_uid(uid))
        if not ok:
            warnings.warn("rsim_env.code: isolation 'rlimits' cannot make a network namespace here; sandboxed "
                          "programs can reach the network (docs/sandbox.md).", RuntimeWarning, stacklevel=3)
        _netns[key] = ok
        return ok
