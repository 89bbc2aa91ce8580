"""Decoding speed by torch thread count and OpenMP wait policy, at the batch sizes the presets decode.

For every (wait policy, threads) cell a fresh process (libgomp reads its wait policy once, when torch loads it)
times, at each batch size, our cached multi-turn decode (:func:`benchmarks.runtime.rollout.run_cached`, (a) there) and one
raw ``model.generate`` writing as many tokens ((c) there), greedy fp32, after a warm-up. Policies:

* ``libgomp``: none set, libgomp's own busy wait (~3 ms of spinning after each parallel region); what a bare
  ``python`` script, such as the benchmarks, gets;
* ``passive``: ``OMP_WAIT_POLICY=PASSIVE``, an idle thread sleeps at once; what ``rsim`` sets for torch runs;
* ``spin1000``: ``GOMP_SPINCOUNT=1000``, a short spin; what ``rsim`` sets for ``llamacpp:`` runs (algos/threads.py).

The cells run one after the other, so a machine that gets busier during the run shows up as a drift between
cells: read the ratios within a cell (cached / generate) before comparing cells.

    python -m studies.decode_threads --out results/decode_threads.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

POLICIES = {"libgomp": {}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"}, "spin1000": {"GOMP_SPINCOUNT": "1000"}}
"""Wait-policy name -> environment of the cell's process (the variables below are cleared first)."""
CLEARED = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    model: str = "default"
    """Model spec (see agents.hf.loading); "tiny" for smoke tests."""
    batches: tuple[int, ...] = (8, 16)
    """Conversations decoded together (the demo preset decodes 2 groups x 4, the study preset 2 x 8)."""
    threads: tuple[int, ...] = (1, 2)
    """torch intra-op thread counts to measure."""
    policies: tuple[str, ...] = ("libgomp", "passive", "spin1000")
    """Wait policies to measure (see module docstring)."""
    rounds: int = 2
    """Turns per conversation in the cached decode."""
    tokens_per_round: int = 24
    """Forced new tokens per turn (generate writes rounds x this many)."""
    cell_timeout_s: float = 300.0
    """A cell still running after this long is stopped and recorded as timed out (two spinning threads next to
    another job can slow decoding tenfold)."""
    out: str | None = None
    """JSON result path (None: do not write)."""
    cell: str = ""
    """Internal: "POLICY,THREADS" runs that one cell in this process and prints its JSON."""

    def __post_init__(self):
        bad = [p for p in self.policies if p not in POLICIES]
        if bad:
            raise ValueError(f"policies {bad} unknown: use some of {sorted(POLICIES)}")
        if min(self.batches + self.threads + (self.rounds, self.tokens_per_round)) < 1:
            raise ValueError("batches, threads, rounds and tokens_per_round must all be >= 1")


def run_cell(cfg: Config, threads: int) -> dict[str, Any]:
    """This process's cell: tok/s of the cached decode and of generate at each batch size."""
    import torch

    from agents.hf.loading import load_causal_lm, tiny_model
    from benchmarks.runtime.rollout import BenchConfig, run_cached, run_generate

    torch.set_num_threads(threads)
    model, tok = tiny_model("causal") if cfg.model == "tiny" else load_causal_lm(cfg.model)
    model.eval()
    out: dict[str, Any] = {"torch_threads": torch.get_num_threads()}
    with torch.inference_mode():
        for batch in cfg.batches:
            bench = BenchConfig(model=cfg.model, batch=batch, rounds=cfg.rounds, tokens_per_round=cfg.tokens_per_round,
                                threads=threads, variants=(), engine="")
            run_generate(model, tok, BenchConfig(**{**asdict(bench), "rounds": 1, "tokens_per_round": 2}))  # warm-up
            row = {}
            for name, fn in (("cached", run_cached), ("generate", run_generate)):
                t0 = time.perf_counter()
                tokens = fn(model, tok, bench)
                row[f"{name}_tok_s"] = tokens / (time.perf_counter() - t0)
            row["cached_vs_generate"] = row["cached_tok_s"] / row["generate_tok_s"]
            out[str(batch)] = row
    return out


def main(cfg: Config) -> dict[str, Any]:
    if cfg.cell:
        policy, threads = cfg.cell.split(",")
        result = run_cell(cfg, int(threads))
        print(json.dumps(result))
        return result
    results: dict[str, Any] = {"config": asdict(cfg), "cells": {}}
    base_env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    for policy in cfg.policies:
        for threads in cfg.threads:
            args = [sys.executable, "-m", "studies.decode_threads", "--cell", f"{policy},{threads}", "--model",
                    cfg.model, "--batches", ",".join(map(str, cfg.batches)), "--rounds", str(cfg.rounds),
                    "--tokens-per-round", str(cfg.tokens_per_round)]
            t0 = time.time()
            try:
                done = subprocess.run(args, env={**base_env, **POLICIES[policy]}, capture_output=True, text=True,
                                      timeout=cfg.cell_timeout_s)
            except subprocess.TimeoutExpired:
                results["cells"][f"{policy},{threads}"] = {"timed_out_s": cfg.cell_timeout_s, "env": POLICIES[policy]}
                print(f"[bench] {policy}, {threads} thread(s): timed out", flush=True)
                continue
            if done.returncode:
                raise RuntimeError(f"cell {policy},{threads} failed:\n{done.stderr[-2000:]}")
            cell = json.loads(done.stdout.strip().splitlines()[-1])
            cell["env"] = POLICIES[policy]
            cell["started"] = time.strftime("%H:%M:%S", time.gmtime(t0))
            results["cells"][f"{policy},{threads}"] = cell
            print(f"[bench] {policy}, {threads} thread(s): done", flush=True)
    print_table(results)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(results, indent=2))
    return results


def print_table(r: dict[str, Any]) -> None:
    c = r["config"]
    print(f"\ndecode tok/s, model={c['model']}, {c['rounds']} rounds x {c['tokens_per_round']} forced tokens, greedy fp32")
    print(f"{'policy':>9s} {'threads':>7s} {'batch':>5s} {'cached':>8s} {'generate':>8s} {'cached/gen':>10s}")
    for key, cell in r["cells"].items():
        policy, threads = key.split(",")
        if "timed_out_s" in cell:
            print(f"{policy:>9s} {threads:>7s}  timed out after {cell['timed_out_s']:.0f} s")
            continue
        for batch in c["batches"]:
            v = cell[str(batch)]
            print(f"{policy:>9s} {threads:>7s} {batch:5d} {v['cached_tok_s']:8.1f} {v['generate_tok_s']:8.1f} "
                  f"{v['cached_vs_generate']:10.2f}")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.decode_threads", __doc__)
