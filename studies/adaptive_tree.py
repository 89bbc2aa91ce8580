"""The adaptive study on the plan tree, part 1: decode the frozen reasoner's whole game once, per split.

For a frozen greedy reasoner a planner episode is a function of (problem, plan), so the study's data are the
plan trees of its splits (:mod:`agents.replay.plan_tree`): this script fills them for the ``adaptive`` source, a few
problems a task at a time, so that whatever has been decoded when it stops is a balanced tree (the first ``k``
problems of every task) that training can use, and a rerun resumes where it stopped (the tree file is
rewritten after every rollout; the replay store keeps an interrupted rollout's steps).

The game is the study's: the embedded SmolLM2 on llama.cpp as the greedy reasoner, at the ``study`` preset's
step lengths (48 tokens a step, 144 for the answer), two rounds, and ``env.terminate_last_round``: the last
round may only terminate, so the planner's game is the 9 plans ``[8]`` and ``[s, 8]`` -- the plans every
baseline of the study chooses among -- and a problem's tree is 17 steps, not the 81 of the unrestricted game
(whose non-terminating plans the env truncates). ::

    OMP_NUM_THREADS=1 python -m studies.adaptive_tree --split train --per-task 40 --increment 2
    OMP_NUM_THREADS=1 python -m studies.adaptive_tree --split val --per-task 20

Each increment prints one line; the JSON beside the tree (``<tree>.json``) records the problems, the steps,
the replay stats (catch-up mismatches must stay 0) and the decoding time of every increment.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "argv", "split_problems", "main"]

SETS = {"reasoner.greedy": "true", "env.max_steps": 2, "env.terminate_last_round": "true",
        "model.planner_lora.enabled": "false", "model.reasoner_lora.enabled": "false", "planner.head_only": "true",
        "train.progress": "false"}
"""The study's game (module docstring), as ``--set`` overrides of the ``study`` preset."""


@dataclass(frozen=True)
class Config:
    """Tree fill settings."""

    split: str = "train"
    """Adaptive split to fill: train, val, test or replication."""
    per_task: int = 40
    """Problems a task in the finished tree (a task with fewer distinct questions in the split keeps what it has)."""
    increment: int = 2
    """Problems a task added per increment (the tree is balanced after each)."""
    reasoner: str = "llamacpp:default#threads=1"
    """The frozen reasoner (decoded greedily through the replay store)."""
    planner: str = "default"
    """The planner spec of the run the fill is built from (it plays no part in the tree)."""
    tasks: int = 0
    """The first this many tasks of :data:`rsim_env.sources.adaptive.TASKS` (0 = all; fewer for a smoke run)."""
    max_step_tokens: int = 48
    """Longest reasoner step (the ``study`` preset's)."""
    max_answer_tokens: int = 144
    """Longest final answer (the ``study`` preset's)."""
    out_dir: str = "docs/efficacy_results/tree"
    """Where the tree (``adaptive_<split>.tree.json.gz``) and its JSON go."""
    max_copies: int = 48
    """Episodes per rollout (the reasoner's batch)."""

    def __post_init__(self) -> None:
        if self.split not in ("train", "val", "test", "replication"):
            raise ValueError(f"Config.split={self.split!r} is invalid: use train, val or test.")
        if not isinstance(self.tasks, int) or self.tasks < 0:
            raise ValueError(f"Config.tasks={self.tasks!r} is invalid: use an int >= 0 (0 = every task).")
        for f in ("per_task", "increment", "max_copies", "max_step_tokens", "max_answer_tokens"):
            if not isinstance(getattr(self, f), int) or getattr(self, f) < 1:
                raise ValueError(f"Config.{f}={getattr(self, f)!r} is invalid: use an int >= 1.")


def argv(cfg: Config, reasoner: str, extra: dict[str, Any] | None = None) -> list[str]:
    """``rsim train`` arguments of the study's game with ``reasoner`` (on two problems of ``adaptive:<split>``:
    the fill and the studies pass their problems themselves)."""
    sets = {**SETS, "data.size": 2, "reasoner.max_step_tokens": cfg.max_step_tokens,
            "reasoner.max_answer_tokens": cfg.max_answer_tokens, **(extra or {})}
    return ["train", "--preset", "study", "--learner", "planner_only", "--planner", cfg.planner, "--reasoner", reasoner,
            "--data", f"adaptive:{cfg.split}", *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


def split_problems(split: str, per_task: int, tasks: int = 0) -> list[Any]:
    """The first ``per_task`` problems of every task (the first ``tasks``; 0 = all) of ``adaptive:<split>``,
    round-robin over the tasks."""
    from rsim_env.sources.adaptive import TASKS, adaptive_problems
    from rsim_env.sources.data import load_problems

    chosen = TASKS[:tasks] if tasks else TASKS
    return adaptive_problems(lambda spec, n, seed: load_problems(spec, n, seed=seed), per_task * len(chosen), split,
                             tasks=chosen)


def main(cfg: Config) -> dict[str, Any]:
    """Fill the split's tree ``increment`` problems a task at a time up to ``per_task``; write the JSON."""
    from agents.replay.plan_tree import fill, terminal_plans
    from benchmarks.plans.tree import _build

    out = Path(cfg.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path, info_path = out / f"adaptive_{cfg.split}.tree.json.gz", out / f"adaptive_{cfg.split}.tree.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {"increments": []}
    trainer = _build(argv(cfg, f"replay:{cfg.reasoner}", {"train.output_dir": str(out / "_fill_run")}))
    env = dataclasses.replace(trainer.env_cfg, planner=True)
    reasoner = trainer.agents["reasoner"]
    for k in range(cfg.increment, cfg.per_task + cfg.increment, cfg.increment):
        k = min(k, cfg.per_task)
        problems = split_problems(cfg.split, k, cfg.tasks)
        w, c, before = time.perf_counter(), time.process_time(), dict(reasoner.stats)
        tree = fill(path, problems, reasoner, env, plans=terminal_plans(2), max_copies=cfg.max_copies,
                    log=lambda m: print(f"[adaptive_tree] {cfg.split} {m}", file=sys.stderr, flush=True))
        stats = {s: v - before.get(s, 0) for s, v in reasoner.stats.items()}
        row = {"per_task": k, "problems": len(problems), **tree.summary(), "wall_s": round(time.perf_counter() - w, 1),
               "cpu_s": round(time.process_time() - c, 1), "replay": stats}
        if stats.get("misses") or not info["increments"]:
            info["increments"].append(row)
        info.update(config=asdict(cfg), meta={k2: tree.meta[k2] for k2 in ("root", "fingerprint", "kind", "env")},
                    problems=len(problems), per_task=k, steps=tree.summary().get("steps"))
        info_path.write_text(json.dumps(info, indent=1) + "\n")
        print(f"[adaptive_tree] {cfg.split}: {k} a task, {len(problems)} problems, {row}", flush=True)
        if stats.get("catchup_mismatch"):
            raise RuntimeError(f"catch-up mismatches {stats['catchup_mismatch']}: the tree is not exact replay.")
    return info


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.adaptive_tree", __doc__)
