"""Confinement a sandboxed harness applies to itself before any untrusted code runs.

Self-contained (stdlib only, no ``from __future__``): its source is prepended to the harness
scripts that run inside the sandbox with ``python -I -S``.
"""

import ctypes
import os
import resource
import signal

_RLIMITS = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU, "nproc": resource.RLIMIT_NPROC,
            "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000


def apply_limits(limits):
    """Lower this process's limits (inherited by anything it starts; they cannot be raised again).

    ``limits`` maps ``as``/``cpu``/``nproc``/``fsize``/``nofile``/``core`` to an int. CPU time gets
    SIGXCPU at the limit and SIGKILL one second later; an over-long write raises ``OSError``.
    """
    for name, value in limits.items():
        soft = hard = int(value)
        if name == "cpu":
            hard = soft + 1
        resource.setrlimit(_RLIMITS[name], (soft, hard))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def cut_network():
    """Move this process into a new, empty network namespace (only a down loopback: no route anywhere).

    As root a plain ``unshare(CLONE_NEWNET)``; otherwise together with a new user namespace, which
    needs no privilege where the kernel allows unprivileged user namespaces. Raises ``OSError`` when
    the kernel refuses (the caller then must not run untrusted code).
    """
    flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
    libc = ctypes.CDLL(None, use_errno=True)  # os.unshare exists only from Python 3.12
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "unshare(network namespace): " + os.strerror(err))


def drop_to(uid):
    """Become ``uid`` (its own group, no supplementary groups) for good; root only."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.geteuid() != uid or os.getuid() != uid:
        raise OSError("could not drop privileges to uid %d" % uid)


def confine(cfg):
    """Everything before the first untrusted line, in order: network namespace, uid, resource limits.

    ``cfg`` keys: ``limits`` (see :func:`apply_limits`), ``netns`` (bool: :func:`cut_network`),
    ``drop_uid`` (int or None: :func:`drop_to`, used when the process starts as root so that it can
    make the namespace first).
    """
    if cfg.get("netns"):
        cut_network()
    if cfg.get("drop_uid") is not None:
        drop_to(cfg["drop_uid"])
    apply_limits(cfg["limits"])
