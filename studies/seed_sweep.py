"""Where do the training-outcome tests' runs end, over seeds and float kernels? (the data behind their margins)

The tests marked ``training_outcome`` (studies/tests/test_contextual_sanity.py, test_learning_sanity.py) assert where a short
training run ends. That end state moves with the seed and with the kernels torch picks for the CPU
(``ATEN_CPU_CAPABILITY``: AVX-512, AVX2, scalar ``default``; thread count), so each test asserts a property
that every run here met with a margin. This script plays the tests' configurations on several seeds, one
JSON line per run, appended to ``out`` (resumable: a (config, seed, capability) row already there is
skipped). Run it once per capability; the variable must be set before torch is imported::

    for cap in avx512 avx2 default; do
      ATEN_CPU_CAPABILITY=$cap OMP_NUM_THREADS=1 python -m studies.seed_sweep --seeds 0,1,2,3,4 \\
        --out docs/contextual_results/seed_sweep.jsonl
    done
    python -m studies.seed_sweep --summary docs/contextual_results/seed_sweep.jsonl
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONTEXTUAL = {
    "learn": dict(families="two_step", lr=3e-3, entropy_coef=0.1, steps=160, groups_per_step=4, eval_problems=64,
                  eval_every=20),
    "collapse": dict(families="two_step", lr=1e-2, entropy_coef=0.1, steps=80, eval_every=80, groups_per_step=4,
                     eval_problems=64),
    "bonus": dict(families="default", lr=1e-2, entropy_coef=0.2, groups_per_step=4, score_flat_groups=True, steps=60,
                  eval_every=60, eval_problems=64),
    "nobonus": dict(families="default", lr=1e-2, entropy_coef=0.0, groups_per_step=4, score_flat_groups=False,
                    steps=60, eval_every=60, eval_problems=64),
}
"""The contextual tests' settings (tiny random-init LM planner), by name."""
CONFIGS = (*CONTEXTUAL, "learning_sanity", "learning_sanity_old")
"""learning_sanity: the test's settings; learning_sanity_old: the settings it had before (lr 0.05, 80 steps)."""


@dataclass(frozen=True)
class Config:
    """Sweep settings."""

    configs: str = ",".join(CONFIGS)
    """Comma-separated names from CONFIGS."""
    seeds: str = "0,1"
    """Comma-separated seeds."""
    threads: int = 1
    """torch threads (the contextual tests pin 1)."""
    out: str = "docs/contextual_results/seed_sweep.jsonl"
    """JSONL file the rows are appended to."""
    summary: str = ""
    """Only summarise this JSONL file (no runs)."""

    def __post_init__(self) -> None:
        bad = [c for c in self.configs.split(",") if c not in CONFIGS]
        if bad:
            raise ValueError(f"Config.configs has {bad}: choose from {CONFIGS}.")
        if self.threads < 1:
            raise ValueError(f"Config.threads={self.threads}: use >= 1.")


def run_one(name: str, seed: int) -> dict[str, Any]:
    """One training run of configuration ``name``: where it ended."""
    with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(io.StringIO()):
        if name.startswith("learning_sanity"):
            from studies.learning_sanity import Config as LConfig, main as lmain

            old = dict(steps=80, lr=0.05) if name == "learning_sanity_old" else dict(steps=150)
            r = lmain(LConfig(eval_every=10, output_dir=d, seed=seed, **old))
            return {"success_after": r["success_after"], "plan": r["greedy_plan_after"], "updates": r.get("updates")}
        from studies.contextual_sanity import Config as CConfig, main as cmain

        r = cmain(CConfig(model="tiny", output_dir=d, seed=seed, **CONTEXTUAL[name]))
    return {"distinct": r["heldout"]["distinct"], "mutual_info": round(r["heldout"]["mutual_info"], 3),
            "accuracy": {k: f["accuracy"] for k, f in r["families"].items()},
            "plan": {k: f["plan"] for k, f in r["families"].items()}, "updates": r["updates"], "passed": r["passed"]}


def summarise(path: str) -> dict[str, Any]:
    """Per configuration: runs, and the range of the figures the tests assert on."""
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    by = defaultdict(list)
    for row in rows:
        by[row["config"]].append(row)
    out = {}
    for name, rs in by.items():
        s: dict[str, Any] = {"runs": len(rs), "capabilities": sorted({r["capability"] for r in rs}),
                             "seeds": sorted({r["seed"] for r in rs})}
        if name.startswith("learning_sanity"):
            s["found"] = sum(r["success_after"] >= 0.9 for r in rs)
            s["success_after"] = [min(r["success_after"] for r in rs), max(r["success_after"] for r in rs)]
        else:
            worst = [min(r["accuracy"].values()) for r in rs]
            s |= {"worse_family": [min(worst), max(worst)], "mul": [min(r["accuracy"]["mul"] for r in rs),
                                                                     max(r["accuracy"]["mul"] for r in rs)],
                  "mutual_info": [min(r["mutual_info"] for r in rs), max(r["mutual_info"] for r in rs)],
                  "passed": sum(r["passed"] for r in rs), "updates": [min(r["updates"] for r in rs),
                                                                      max(r["updates"] for r in rs)]}
        out[name] = s
    for name, s in out.items():
        print(name, json.dumps(s))
    return out


def main(cfg: Config) -> dict[str, Any]:
    if cfg.summary:
        return summarise(cfg.summary)
    import torch

    torch.set_num_threads(cfg.threads)
    cap = os.environ.get("ATEN_CPU_CAPABILITY", "") or torch.backends.cpu.get_cpu_capability().lower()
    path = Path(cfg.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if path.is_file():
        done = {(r["config"], r["seed"], r["capability"]) for r in map(json.loads, path.read_text().splitlines())}
    rows = []
    for name in cfg.configs.split(","):
        for seed in (int(s) for s in cfg.seeds.split(",")):
            if (name, seed, cap) in done:
                continue
            t0 = time.perf_counter()
            row = {"config": name, "seed": seed, "capability": cap, "threads": cfg.threads, **run_one(name, seed),
                   "seconds": round(time.perf_counter() - t0, 1)}
            print(json.dumps(row), flush=True)
            with path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            rows.append(row)
    return {"rows": rows}


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.seed_sweep", __doc__)
