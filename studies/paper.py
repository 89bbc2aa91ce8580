"""The paper's main comparison at a chosen scale: base vs +GRPO vs +rSIM vs +plug-in planner.

One table (and ``paper.json``) over one problem set, every row an :func:`algos.evaluation.run`:

=====================  ===========================================  ==========================
row                    reasoner                                      planner
=====================  ===========================================  ==========================
base                   ``--reasoner`` (untrained)                    none (plain CoT)
+GRPO                  reasoner of ``--grpo`` (``--learner grpo``)   none
+rSIM                  reasoner of ``--rsim`` (stackelberg run)      planner of ``--rsim``
+planner (plug-in)     ``--reasoner`` (untrained)                    ``--planner`` (default: ``--rsim``'s)
other base / +planner  ``--other-reasoner``                          none / the same planner
=====================  ===========================================  ==========================

Checkpoints are trainer run dirs (or ``step_*`` dirs). A row whose checkpoint is missing is
listed under ``missing`` with the command that makes it; ``--train-missing`` runs those commands
with the demo preset (minutes on a CPU; a demo-scale model shows the pipeline, not the paper's
numbers)::

    python -m studies.paper --rsim runs/demo --grpo runs/demo-grpo --limit 50 --out results/paper
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from algos.config import PRESETS
from algos.config import DataConfig, ModelConfig
from algos.evaluation import EvalConfig, run

TRAIN = {"grpo": ["train", "--preset", "demo", "--learner", "grpo"], "rsim": ["train", "--preset", "demo"]}


@dataclass(frozen=True)
class PaperConfig:
    """Which systems to compare, on which problems, at which scale."""

    reasoner: str = "default"
    """Base reasoner model spec."""
    grpo: str = ""
    """Run dir of `rsim train --learner grpo` (its reasoner is the +GRPO row)."""
    rsim: str = ""
    """Run dir of `rsim train` (stackelberg): its reasoner + planner are the +rSIM row."""
    planner: str = ""
    """Planner plugged into the base reasoner ("" = the +rSIM run's planner)."""
    other_reasoner: str = ""
    """Another reasoner (size/family) for the cross-model plug-in rows ("" = skip)."""
    train_missing: bool = False
    """Train missing checkpoints with the demo preset (under out/)."""
    source: str = "default"
    """Problems: a data spec (as rsim eval --data)."""
    data_seed: int = 1000
    """Held-out seed for procedural sources (training uses 0)."""
    limit: int = 50
    """Problems per row."""
    k: int = 1
    """Samples per problem."""
    seed: int = 0
    """Evaluation seed."""
    batch: int = 25
    """Problems per batched rollout."""
    max_steps: int = PRESETS["demo"]["env.max_steps"]
    """Planner rounds (those of the demo preset that trains the checkpoints)."""
    max_step_tokens: int = PRESETS["demo"]["reasoner.max_step_tokens"]
    """Reasoner tokens per step (the demo preset's)."""
    out: str = "results/paper"
    """Output directory (paper.json, table.md, one eval dir per row)."""

    def __post_init__(self) -> None:
        if self.limit < 1 or self.k < 1 or self.batch < 1:
            raise ValueError(f"PaperConfig limit/k/batch must be >= 1, got {self.limit}/{self.k}/{self.batch}.")


def _rows(cfg: PaperConfig) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """The rows that can run with what was given, and what is missing (with how to make it)."""
    rows = [{"system": "base", "reasoner": cfg.reasoner, "planner": "", "mode": "none"}]
    missing = []
    have = {"grpo": cfg.grpo and Path(cfg.grpo).exists(), "rsim": cfg.rsim and Path(cfg.rsim).exists()}
    if have["grpo"]:
        rows.append({"system": "+GRPO", "reasoner": cfg.grpo, "planner": "", "mode": "none"})
    else:
        missing.append({"system": "+GRPO", "needs": "--grpo RUN_DIR", "make": "rsim " + " ".join(TRAIN["grpo"])})
    planner = cfg.planner or (cfg.rsim if have["rsim"] else "")
    if have["rsim"]:
        rows.append({"system": "+rSIM", "reasoner": cfg.rsim, "planner": cfg.rsim, "mode": "trained"})
    else:
        missing.append({"system": "+rSIM", "needs": "--rsim RUN_DIR", "make": "rsim " + " ".join(TRAIN["rsim"])})
    if planner:
        rows.append({"system": "+planner (plug-in)", "reasoner": cfg.reasoner, "planner": planner, "mode": "trained"})
    else:
        missing.append({"system": "+planner (plug-in)", "needs": "--planner PATH or --rsim RUN_DIR",
                        "make": "rsim " + " ".join(TRAIN["rsim"])})
    if cfg.other_reasoner:
        rows.append({"system": "other base", "reasoner": cfg.other_reasoner, "planner": "", "mode": "none"})
        if planner:
            rows.append({"system": "other +planner (plug-in)", "reasoner": cfg.other_reasoner, "planner": planner,
                         "mode": "trained"})
    return rows, missing


def _train_missing(cfg: PaperConfig) -> PaperConfig:
    from algos.cli import main as rsim

    changes = {}
    for key in ("grpo", "rsim"):
        if not getattr(cfg, key) or not Path(getattr(cfg, key)).exists():
            out = str(Path(cfg.out) / f"train-{key}")
            print(f"[paper] training the missing {key} checkpoint: rsim {' '.join(TRAIN[key])} --out {out}", flush=True)
            rsim([*TRAIN[key], "--out", out])
            changes[key] = out
    return dataclasses.replace(cfg, **changes)


def _reasoner_has_weights(spec: str) -> bool:
    """A run dir counts as a reasoner only if its learner trained the reasoner (planner_only does not)."""
    from agents.runs import find_checkpoint, weights_file

    ck = find_checkpoint(spec)
    return ck is None or weights_file(ck, "reasoner").is_file()


def main(cfg: PaperConfig) -> dict[str, Any]:
    """Evaluate every available row; write ``paper.json`` + ``table.md``; print the table."""
    t0 = time.perf_counter()
    if cfg.train_missing:
        cfg = _train_missing(cfg)
    rows, missing = _rows(cfg)
    out = Path(cfg.out)
    results = []
    for i, row in enumerate(rows):
        reasoner = row["reasoner"]
        if not _reasoner_has_weights(reasoner):  # e.g. planner_only run: its reasoner is the frozen base
            reasoner = cfg.reasoner
            row = dict(row, note="checkpoint has no trained reasoner; its base reasoner was used")
        named = {"env.max_steps": cfg.max_steps, "reasoner.max_step_tokens": cfg.max_step_tokens}
        ecfg = EvalConfig(model=ModelConfig(reasoner=reasoner, planner=row["planner"]),
                          data=DataConfig(source=cfg.source, seed=cfg.data_seed, size=cfg.limit),
                          modes=(row["mode"],), k=cfg.k, seed=cfg.seed, batch=cfg.batch,
                          set=tuple((k, str(v)) for k, v in named.items() if v),
                          out=str(out / f"row{i}"), progress=sys.stderr.isatty())
        res = run(ecfg)
        m = res["modes"][row["mode"]]
        results.append({**row, "reasoner_used": reasoner, "accuracy": m["accuracy"], "ci95": m["ci95"],
                        **({f"pass@{cfg.k}": m[f"pass@{cfg.k}"]} if cfg.k > 1 else {}),
                        "mean_distinct_strategies": m["mean_distinct_strategies"], "mean_rounds": m["mean_rounds"],
                        "tokens_total_mean": m["token_cost"]["total_mean"],
                        "wall_s_per_problem": m["token_cost"]["wall_s_per_problem"],
                        "planner_info": res["planner"], "reasoner_info": res["reasoner"]})
    table = markdown(results)
    doc = {"config": dataclasses.asdict(cfg), "rows": results, "missing": missing, "table_md": table,
           "wall_s": time.perf_counter() - t0}
    out.mkdir(parents=True, exist_ok=True)
    (out / "paper.json").write_text(json.dumps(doc, indent=1, default=str))
    (out / "table.md").write_text(table + "\n")
    print("\n" + table)
    for m in missing:
        print(f"missing {m['system']}: pass {m['needs']} (make one with: {m['make']}), or use --train-missing")
    return doc


def markdown(results: Sequence[dict[str, Any]]) -> str:
    head = ["system", "reasoner", "planner", "accuracy %", "95% CI", "distinct strategies", "tokens/problem",
            "s/problem"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        f = lambda x, d=1: "-" if x is None else f"{x:.{d}f}"
        lines.append("| " + " | ".join([
            r["system"], f"`{r['reasoner_used']}`", f"`{r['planner']}`" if r["planner"] else "none",
            f(100 * r["accuracy"]), f"[{100 * r['ci95'][0]:.1f}, {100 * r['ci95'][1]:.1f}]",
            f(r["mean_distinct_strategies"], 2), f(r["tokens_total_mean"], 0), f(r["wall_s_per_problem"], 2)]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, PaperConfig, "python -m studies.paper", __doc__)
