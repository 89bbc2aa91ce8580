"""CPU threads of a run and how its idle threads wait, so that jobs sharing a machine stay fast.

torch's CPU kernels run on an OpenMP pool (libgomp in the CPU wheels), and two of its defaults hurt
when two jobs share the cores: the pool takes every core, and a pool thread with nothing to do
busy-waits (libgomp spins about 3 ms after each parallel region before it sleeps). Each job's
spinning threads then take the cores that the other job's working threads need: one demo
step took 231-396 s next to another rSIM job, against 11-20 s alone.

The ``rsim`` entry (``algos.cli.main``, before torch loads; importing the module changes nothing) therefore

* sets ``OMP_WAIT_POLICY=PASSIVE`` before torch is imported (:func:`wait_policy_env`): an idle thread
  sleeps at once. libgomp reads the variable once, when it is loaded, so it cannot be changed later
  in the process. A wait policy the user set (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT``,
  ``KMP_BLOCKTIME``) is kept. Except when the command line names a ``llamacpp:`` reasoner: llama.cpp's
  CPU backend shares torch's libgomp (one ``libgomp.so.1`` per process) and ends every graph node with
  an OpenMP barrier, several hundred per decoded token, so under PASSIVE each barrier is a sleep and a
  wake-up (a LoRA engine rollout inside ``rsim train`` took 50 s instead of 18 s). Such a run gets
  ``GOMP_SPINCOUNT=1000`` (some microseconds of spinning, then sleep). Not for every run: two
  concurrent demo runs slowed 1.29x under PASSIVE and up to 2.57x under the short spin (``docs/lean.md``);
* picks the thread count (:func:`resolve_threads`, applied by :func:`use_threads`): ``--threads N``
  (the config's ``threads``) wins; else ``OMP_NUM_THREADS`` if set (``accelerate launch`` sets it
  per process); else :func:`auto_threads`: the physical cores this process may run on, less the cores
  other jobs keep busy by the 1-minute load average, and at least 1.

``benchmarks/runtime/concurrency.py`` measures two concurrent demo runs against one alone, under these
defaults and under the old ones.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import sys
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger("rsim.threads")

WAIT_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
"""Variables that set an OpenMP wait policy (libgomp, Intel OpenMP): any one of them is the user's choice."""

SPIN_COUNT = "1000"
"""libgomp spins of an idle thread before it sleeps in a ``llamacpp:`` run (libgomp's default 300000 is ~3 ms)."""

SYSFS_CPU = Path("/sys/devices/system/cpu")
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def wait_policy_env(environ: Mapping[str, str], argv: Sequence[str] = ()) -> dict[str, str]:
    """The variables to add to ``environ`` before torch loads, unless the user chose a wait policy:
    a short spin when ``argv`` names a ``llamacpp:`` reasoner (see module docstring), else a passive wait."""
    if any(k in environ for k in WAIT_VARS):
        return {}
    if any("llamacpp:" in str(a) for a in argv):
        return {"GOMP_SPINCOUNT": SPIN_COUNT}
    return {"OMP_WAIT_POLICY": "PASSIVE"}


def usable_cpus() -> list[int]:
    """Logical CPUs this process may run on (its affinity mask)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return list(range(os.cpu_count() or 1))


def physical_cores(cpus: list[int], sysfs: Path = SYSFS_CPU) -> int:
    """Distinct physical cores among ``cpus`` (hyper-thread siblings count once); ``len(cpus)`` if unknown."""
    cores = set()
    for c in cpus:
        try:
            cores.add((sysfs / f"cpu{c}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            return len(cpus)
    return len(cores) or len(cpus)


def cgroup_cpu_limit(path: Path = CGROUP_CPU_MAX) -> float | None:
    """CPUs a container's cgroup v2 quota allows (``"200000 100000"`` -> 2.0); None without a quota."""
    try:
        quota, period = path.read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        return None


def auto_threads(cores: int, cpus: int, host_cpus: int, load1: float) -> int:
    """Threads for a job on ``cores`` physical cores (``cpus`` logical), given the host's 1-minute load.

    The load average counts the runnable threads of the whole host (``host_cpus`` logical CPUs, more
    than ``cpus`` in a container with a CPU set), so the share of it on this job's CPUs is
    ``load1 * cpus / host_cpus``; each whole busy thread in it is taken to hold one core (a fraction, such
    as a desktop's background load, takes none). At least 1.
    """
    busy = load1 * cpus / max(cpus, host_cpus)
    return max(1, min(cores, cores - math.floor(busy)))


def resolve_threads(requested: int = 0, environ: Mapping[str, str] | None = None,
                    load1: float | None = None) -> tuple[int, str]:
    """``(threads, why)``: ``requested`` if > 0, else ``OMP_NUM_THREADS``, else :func:`auto_threads`.

    ``load1=None`` reads this machine's load once per process and keeps that answer, so every run in
    one process uses the same count (a resumed run in the same process adds up floats the same way).

    Raises:
        ValueError: ``requested`` is not an int >= 0.
    """
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
        raise ValueError(f"threads={requested!r} is invalid: use an int >= 1, or 0 to choose automatically.")
    if requested:
        return requested, "--threads"
    environ = os.environ if environ is None else environ
    env = environ.get("OMP_NUM_THREADS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env), "OMP_NUM_THREADS"
    return _machine_threads() if load1 is None else _auto(load1)


def _auto(load1: float) -> tuple[int, str]:
    cpus = usable_cpus()
    cores = physical_cores(cpus)
    limit = cgroup_cpu_limit()
    if limit is not None:
        cores = max(1, min(cores, math.floor(limit)))
    n = auto_threads(cores, len(cpus), os.cpu_count() or len(cpus), load1)
    return n, f"auto: {cores} physical cores" + (f", 1-minute load {load1:.1f} from other jobs" if n < cores else "")


@functools.cache
def _machine_threads() -> tuple[int, str]:
    try:
        load1 = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this OS
        load1 = 0.0
    return _auto(load1)


_pending: list[str] = []  # the notice of a lowered count, said once the run starts working (:func:`announce`)


def use_threads(requested: int = 0) -> int:
    """Set torch's intra-op thread count from :func:`resolve_threads`; return it (for the run's config).

    A count lowered for other jobs' load is said on stderr by :func:`announce`, with the flag that
    overrides it: the runs call that once their first training step or evaluation batch has been played,
    so that a run refused for bad input (a flag, a file, a server that cannot serve) still says why in
    one line, whatever the machine's load.
    """
    import torch

    n, why = resolve_threads(requested)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    log.info("torch CPU threads: %d (%s), OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s", n, why,
             os.environ.get("OMP_WAIT_POLICY", "unset"), os.environ.get("GOMP_SPINCOUNT", "unset"))
    _pending.clear()
    if "load" in why and os.environ.get("RANK", "0") == "0":
        _pending.append(f"rsim: {n} CPU thread{'s' * (n > 1)} ({why}); --threads N to choose")
    return n


def announce() -> None:
    """Print the pending notice of :func:`use_threads` (if any) on stderr, once."""
    for line in _pending:
        print(line, file=sys.stderr)
    _pending.clear()
