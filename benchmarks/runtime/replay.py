"""Planner-only training on a replayed reasoner vs live decoding: episodes per second, same episodes.

Three ``rsim train --learner planner_only`` runs with the same seed, config and greedy frozen reasoner:

* ``live``: the reasoner spec as given, every step decoded;
* ``replay_cold``: ``replay:SPEC`` on an empty store (decodes and stores every step: the wrapper's cost);
* ``replay_warm``: ``replay:SPEC`` again: every step is read back.

The planner samples from the same seed and sees the same observations, so the three runs must
play exactly the same episodes; the benchmark asserts that the step texts of every episode are
equal (it raises otherwise) and reports ``speedup`` = warm episodes/s over live episodes/s (the whole
training step: rollout, planner update, checkpoint). ::

    OMP_NUM_THREADS=1 python -m benchmarks.runtime.replay --out docs/plan_table_results/replay_bench.json
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "run_training", "main"]


@dataclass(frozen=True)
class Config:
    """Replay benchmark settings."""

    planner: str = "toy"
    """Planner spec (toy = MLP planner: the reasoner's cost dominates; default = the embedded LM + head)."""
    planner_lora: bool = False
    """Train the planner as a LoRA adapter (as the study preset does) instead of fully."""
    planner_head_only: bool = False
    """Train only the planner's head on the frozen backbone's cached features (``planner.head_only``)."""
    reasoner: str = "default"
    """Frozen reasoner spec, decoded greedily."""
    source: str = "curriculum"
    """Training problems (rsim_env.sources.data spec)."""
    steps: int = 3
    """GRPO steps per run."""
    groups_per_step: int = 2
    """Problems per step."""
    group_size: int = 4
    """GRPO group size G (episodes per problem)."""
    max_steps: int = 2
    """Rounds per episode (env.max_steps)."""
    max_step_tokens: int = 32
    """Longest reasoner step in tokens."""
    max_answer_tokens: int = 64
    """Longest final answer in tokens."""
    seed: int = 0
    """Training seed (the same in all three runs)."""
    out: str = ""
    """JSON path ("" = print only)."""


def _argv(cfg: Config, reasoner: str, out: Path) -> list[str]:
    sets = {"reasoner.greedy": "true", "train.groups_per_step": cfg.groups_per_step, "train.grpo.group_size": cfg.group_size,
            "env.max_steps": cfg.max_steps, "reasoner.max_step_tokens": cfg.max_step_tokens,
            "reasoner.max_answer_tokens": cfg.max_answer_tokens, "train.progress": "false", "train.seed": cfg.seed,
            "data.size": cfg.steps * cfg.groups_per_step, "model.planner_lora.enabled": str(cfg.planner_lora).lower(),
            "planner.head_only": str(cfg.planner_head_only).lower()}
    return ["train", "--learner", "planner_only", "--planner", cfg.planner, "--reasoner", reasoner, "--data", cfg.source,
            "--steps", str(cfg.steps), "--out", str(out), *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


def run_training(argv: list[str]) -> tuple[list[list[str]], dict[str, Any]]:
    """Train as ``rsim train`` does, recording the step texts of every episode; return them and timings."""
    from algos import cli

    _, cfg, _ = cli.parse(argv)
    from accelerate.utils import set_seed

    from algos.trainer import Trainer, make_accelerator, to_dict

    problems = cli.build_problems(cfg)
    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)
    learner = cli.build_learner(cfg)
    agents = cli.build_agents(cfg, learner, acc.device, problems)
    trainer = Trainer(cfg.train, learner, agents, problems, acc, run_config=to_dict(cfg), env=cfg.env)
    episodes: list[list[str]] = []
    rollout_s = [0.0]
    play = trainer.rollout

    def tapped(problems_: Any, seed: int) -> Any:
        t0 = time.perf_counter()
        results, records = play(problems_, seed)
        rollout_s[0] += time.perf_counter() - t0
        episodes.extend([r["info"]["problem_id"], *r["info"]["steps"]] for r in results)
        return results, records

    trainer.rollout = tapped
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    stats = dict(getattr(agents["reasoner"], "stats", {}))
    return episodes, {"wall_s": wall, "rollout_s": rollout_s[0], "episodes": len(episodes),
                      "episodes_per_s": len(episodes) / wall, "replay": stats}


def main(cfg: Config) -> dict[str, Any]:
    """Run live, replay_cold, replay_warm; assert equal episodes; print a table; write JSON."""
    import os

    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        old = os.environ.get("RSIM_REPLAY_DIR")
        os.environ["RSIM_REPLAY_DIR"] = str(Path(tmp) / "replay")  # a fresh store: cold, then warm
        try:
            texts = {}
            for name, spec in (("live", cfg.reasoner), ("replay_cold", f"replay:{cfg.reasoner}"),
                               ("replay_warm", f"replay:{cfg.reasoner}")):
                texts[name], rows[name] = run_training(_argv(cfg, spec, Path(tmp) / name))
                print(f"[replay] {name}: {rows[name]}", file=sys.stderr, flush=True)
        finally:
            if old is None:
                os.environ.pop("RSIM_REPLAY_DIR", None)
            else:
                os.environ["RSIM_REPLAY_DIR"] = old
    for name in ("replay_cold", "replay_warm"):
        if texts[name] != texts["live"]:
            bad = next(i for i, (a, b) in enumerate(zip(texts[name], texts["live"])) if a != b)
            raise AssertionError(f"{name} played different episodes than live (first at episode {bad}: "
                                 f"{texts[name][bad]!r} vs {texts['live'][bad]!r})")
    if rows["replay_warm"]["replay"].get("misses"):
        raise AssertionError(f"replay_warm decoded {rows['replay_warm']['replay']['misses']} steps; expected none")
    speedup = rows["replay_warm"]["episodes_per_s"] / rows["live"]["episodes_per_s"]
    result = {"config": asdict(cfg), "rows": rows, "same_episodes": True, "speedup": speedup,
              "rollout_speedup": rows["live"]["rollout_s"] / max(rows["replay_warm"]["rollout_s"], 1e-9),
              "example_episodes": texts["live"][:3]}
    print("| run | episodes | wall s | rollout s | episodes/s |\n| --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['episodes']} | {r['wall_s']:.2f} | {r['rollout_s']:.2f} | {r['episodes_per_s']:.1f} |")
    print(f"\nsame episodes: yes; speedup warm/live: {speedup:.1f}x (rollout only {result['rollout_speedup']:.1f}x)")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.replay", __doc__)
