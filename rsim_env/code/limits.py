"""Resource limits a sandboxed harness applies to itself before any untrusted code runs.

Self-contained (stdlib only, no ``from __future__``): its source is prepended to the harness
scripts that run inside the sandbox with ``python -I -S``.
"""

import resource
import signal

_RLIMITS = {"as": resource.RLIMIT_AS, "cpu": resource.RLIMIT_CPU, "nproc": resource.RLIMIT_NPROC,
            "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE, "core": resource.RLIMIT_CORE}


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
