"""Two rSIM jobs on one machine: each concurrent run's seconds per step over one run's alone.

Tried as a new user would, a ``make demo`` next to another rSIM job on the same 2 cores took 231-396 s
per step instead of 11-20 s: two processes with 2 busy-waiting OpenMP threads each. ``rsim`` now
makes idle threads sleep and picks its thread count from the free cores (:mod:`algos.threads`).

Each setting runs ``rsim train --preset PRESET --steps N`` (the real entry point, in fresh processes)
once alone, then twice at the same time:

* ``default``: rSIM's defaults (passive wait, automatic thread count; the caller's ``OMP_*`` variables
  are removed so that the defaults act);
* ``old``: the setting before, for comparison: libgomp's own busy wait (``GOMP_SPINCOUNT=300000``, its
  default when ``OMP_WAIT_POLICY`` is unset) and ``--threads old_threads`` per run.

``concurrent_slowdown`` is the slower of the two concurrent runs' s/step over the lone run's (target
<= 2.5), ``concurrent_slowdown_each`` both, ``concurrent_slowdown_old`` the same under the old setting.
A concurrent run's s/step counts only its steps that ran while the other run was training too (both
runs' loops, from their step times); ``overlapped_steps`` says how many. Before each leg the script
waits up to ``settle_s`` for the 1-minute load to fall below ``quiet_load`` (the automatic thread
count reads it), and records the load it started at.

    python -m benchmarks.runtime.concurrency --out results/concurrency.json
    python -m benchmarks.runtime.concurrency --cpus 0,1 ...   # all jobs on 2 CPUs of a larger machine
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
WAIT_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
"""Removed from every run's environment: each setting sets its own."""


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    preset: str = "demo"
    """``rsim train`` preset of every run ("tiny" for a smoke test)."""
    steps: int = 3
    """Training steps per run, including warmup."""
    warmup: int = 1
    """Leading steps of each run not counted."""
    old_threads: int = 2
    """Threads per run in the old setting (torch took every core: 2 on the 2-core machine where the slowdown was found)."""
    settings: str = "default,old"
    """Comma list of settings to run: default, old, passive (named), spin1000 (a llamacpp: run's wait)."""
    cpus: str = ""
    """Run every job on these CPUs only (e.g. "0,1"; sched_setaffinity); "" = every CPU."""
    settle_s: float = 180.0
    """Wait at most this long before each leg for the 1-minute load to fall below quiet_load."""
    quiet_load: float = 0.5
    """1-minute load average taken as a quiet machine."""
    timeout_s: float = 3600.0
    """Give up on a leg after this long."""
    output_dir: str = ""
    """Scratch dir for the runs ("" = a temporary dir)."""
    out: str = ""
    """Where to write the JSON result ("" = print only)."""

    def __post_init__(self) -> None:
        if self.steps <= self.warmup or self.warmup < 0:
            raise ValueError(f"Config.steps={self.steps} must exceed warmup={self.warmup} (>= 0) to measure anything.")
        bad = [s for s in self.settings.split(",") if s not in SETTINGS]
        if bad or not self.settings:
            raise ValueError(f"Config.settings={self.settings!r}: unknown {bad}; use a comma list of {tuple(SETTINGS)}.")
        if self.old_threads < 1:
            raise ValueError(f"Config.old_threads={self.old_threads!r} is invalid: use an int >= 1.")
        self.cpu_set()

    def cpu_set(self) -> set[int] | None:
        """``cpus`` as a set (None = every CPU); a bad list raises ``ValueError``."""
        if not self.cpus:
            return None
        try:
            return {int(c) for c in self.cpus.split(",")}
        except ValueError:
            raise ValueError(f"Config.cpus={self.cpus!r} is invalid: use CPU numbers such as 0,1.") from None


SETTINGS: dict[str, Any] = {
    "default": lambda cfg: ({}, []),
    "old": lambda cfg: ({"GOMP_SPINCOUNT": "300000"}, ["--threads", str(cfg.old_threads)]),
    "passive": lambda cfg: ({"OMP_WAIT_POLICY": "PASSIVE"}, []),  # = default, named
    "spin1000": lambda cfg: ({"GOMP_SPINCOUNT": "1000"}, []),  # what a llamacpp: run gets (algos/threads.py)
}
"""Setting -> ``cfg -> (extra environment, extra rsim train flags)``."""


def _child(argv: list[str]) -> None:
    """Entry of each run's process: ``OUT_JSON rsim-train-argv...``. Imports the ``rsim`` entry before torch."""
    out_path, *rsim_argv = argv
    from algos.cli import main  # sets the wait policy before torch loads, as the `rsim` script does

    out = main(rsim_argv)
    end = time.time()
    Path(out_path).write_text(json.dumps({
        "step_times": [m["step_time"] for m in out["history"]], "loop_start": end - out["seconds"], "loop_end": end,
        "threads": out["threads"], "wait": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}}))


def _load1() -> float:
    return os.getloadavg()[0]


def _settle(cfg: Config) -> float:
    """Wait (at most ``settle_s``) for a quiet machine; return the 1-minute load the leg starts at."""
    t0 = time.monotonic()
    while _load1() >= cfg.quiet_load and time.monotonic() - t0 < cfg.settle_s:
        time.sleep(5)
    return _load1()


def _leg(cfg: Config, setting: str, copies: int, scratch: Path) -> list[dict]:
    """``copies`` runs of ``setting`` started together; each run's child record."""
    extra_env, flags = SETTINGS[setting](cfg)
    env = {k: v for k, v in os.environ.items() if k not in WAIT_VARS} | extra_env
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    cpus = cfg.cpu_set()
    procs = []
    for i in range(copies):
        run = scratch / f"{setting}_{copies}_{i}"
        argv = [sys.executable, "-c", "import sys; from benchmarks.runtime.concurrency import _child; _child(sys.argv[1:])",
                str(run / "child.json"), "train", "--preset", cfg.preset, "--steps", str(cfg.steps), "--out",
                str(run), "--set", "train.progress=false", "--set", "train.save_every=0", *flags]
        run.mkdir(parents=True)
        procs.append((run, subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                            text=True, preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)))
    out = []
    for run, p in procs:
        try:
            _, err = p.communicate(timeout=cfg.timeout_s)
        except subprocess.TimeoutExpired:
            for _, q in procs:
                q.kill()
            raise RuntimeError(f"{setting} x{copies}: a run took over timeout_s={cfg.timeout_s:.0f} s") from None
        if p.returncode:
            raise RuntimeError(f"{setting} x{copies}: run failed (exit {p.returncode}): {err.strip()[-1500:]}")
        out.append(json.loads((run / "child.json").read_text()))
    return out


def per_step(rec: dict, warmup: int, window: tuple[float, float] | None = None) -> tuple[float, int]:
    """Mean s/step of ``rec``'s steps after ``warmup`` (only those inside ``window``, if any is) and their count."""
    ends, t = [], rec["loop_start"]
    for s in rec["step_times"]:
        t += s
        ends.append(t)
    steps = [(e - s, e, s) for s, e in zip(rec["step_times"], ends)][warmup:]
    inside = [s for start, end, s in steps if window and start >= window[0] and end <= window[1]]
    if inside:
        return statistics.mean(inside), len(inside)
    return statistics.mean(s for _, _, s in steps), 0


def measure(cfg: Config, setting: str, scratch: Path) -> dict:
    """One setting: a run alone, then two together; the slowdown of each concurrent run."""
    load_alone = _settle(cfg)
    alone = _leg(cfg, setting, 1, scratch)[0]
    load_pair = _settle(cfg)
    pair = _leg(cfg, setting, 2, scratch)
    window = (max(r["loop_start"] for r in pair), min(r["loop_end"] for r in pair))
    alone_s, _ = per_step(alone, cfg.warmup)
    each = [per_step(r, cfg.warmup, window) for r in pair]
    return {"alone_s_per_step": alone_s, "concurrent_s_per_step": [s for s, _ in each],
            "overlapped_steps": [n for _, n in each], "slowdown_each": [s / alone_s for s, _ in each],
            "slowdown": max(s for s, _ in each) / alone_s, "threads_alone": alone["threads"],
            "threads_concurrent": [r["threads"] for r in pair], "wait": alone["wait"],
            "load1_at_start": {"alone": load_alone, "concurrent": load_pair}}


def main(cfg: Config) -> dict:
    """Every setting of ``cfg.settings``; prints a table, writes JSON if ``cfg.out``; returns the result dict."""
    result: dict[str, Any] = {"config": asdict(cfg), "settings": {}, "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(cfg.output_dir or tmp)
        for setting in cfg.settings.split(","):
            result["settings"][setting] = r = measure(cfg, setting, scratch)
            print(f"[concurrency] {setting}: alone {r['alone_s_per_step']:.2f} s/step, together "
                  f"{', '.join(f'{s:.2f}' for s in r['concurrent_s_per_step'])} s/step", flush=True)
    s = result["settings"]
    if "default" in s:
        result["concurrent_slowdown"] = s["default"]["slowdown"]
        result["concurrent_slowdown_each"] = s["default"]["slowdown_each"]
    if "old" in s:
        result["concurrent_slowdown_old"] = s["old"]["slowdown"]
    _print(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _print(res: dict) -> None:
    print(f"{'setting':>8} {'threads':>9} {'alone s/step':>12} {'together s/step':>16} {'slowdown':>12} "
          f"{'overlap steps':>13} {'load1 start':>11}")
    for name, r in res["settings"].items():
        threads = f"{r['threads_alone']}|{','.join(map(str, r['threads_concurrent']))}"
        together = ",".join(f"{s:.2f}" for s in r["concurrent_s_per_step"])
        slow = ",".join(f"{s:.2f}" for s in r["slowdown_each"])
        print(f"{name:>8} {threads:>9} {r['alone_s_per_step']:>12.2f} {together:>16} {slow:>12} "
              f"{','.join(map(str, r['overlapped_steps'])):>13} {r['load1_at_start']['concurrent']:>11.1f}")
    if "concurrent_slowdown" in res:
        print(f"concurrent_slowdown (default): {res['concurrent_slowdown']:.2f}   (target <= 2.5)")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.concurrency", __doc__)
