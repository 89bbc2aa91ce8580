"""Planner training on a filled plan tree vs the live replay route: episodes per CPU-minute, same episodes.

1. **Fill** (:func:`agents.replay.plan_tree.fill`): every plan of <= ``max_rounds`` rounds (:func:`agents.replay.plan_tree.game_plans`,
   73 for L = 2) on the ``problems`` training problems, decoded once by the frozen greedy reasoner through the
   replay store; the tree file is written beside the JSON (a rerun reads it back).
2. Per planner (``head_only``: a linear head on the frozen LM's cached features; ``lora``: the study preset's
   adapter + head), ``rsim train --learner planner_only`` runs with the same seed and config:

   * ``replay``: ``--reasoner replay:SPEC`` on the warm store (today's live replay route: a store lookup per
     step, the reasoner loaded, every grade computed);
   * ``tree``: ``--reasoner tree:PATH`` (a dictionary lookup per step, no reasoner loaded, grades through a
     :class:`rsim_env.grading.GradeCache`; the head-only planner's features cached per context as always).

   The planner samples from the same seed, so both routes must play the same episodes: the benchmark compares
   every episode of the replay run (rewards and the whole info) with the tree run's first episodes and raises
   if one differs. The tree run of the head-only planner is longer (``tree_steps``): that is the figure.

Timed over ``Trainer.train()`` (rollout, planner update, logging, the final checkpoint) with process CPU time
(``time.process_time``: every thread) and wall time. ::

    OMP_NUM_THREADS=2 python -m benchmarks.plans.tree --out docs/plan_table_results/plan_tree_bench.json
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "train_run", "main"]

PLANNERS = {"head_only": {"planner.head_only": "true", "model.planner_lora.enabled": "false"},
            "lora": {"planner.head_only": "false", "model.planner_lora.enabled": "true"}}
"""The planners compared: ``--set`` overrides of each."""


@dataclass(frozen=True)
class Config:
    """Plan tree benchmark settings."""

    reasoner: str = "llamacpp:default"
    """Frozen reasoner spec (decoded greedily, once, into the tree)."""
    planner: str = "default"
    """Planner spec (default = the embedded LM + head)."""
    planners: tuple[str, ...] = ("head_only", "lora")
    """Which planners to train (keys of ``PLANNERS``)."""
    source: str = "curriculum"
    """Training problems (rsim_env.sources.data spec)."""
    problems: int = 16
    """Problems N in the tree (the training set)."""
    data_seed: int = 0
    """Generator seed of procedural sources."""
    max_rounds: int = 2
    """L: rounds per episode (env.max_steps); the tree holds every plan of <= L rounds."""
    max_step_tokens: int = 32
    """Longest reasoner step in tokens (as benchmarks/runtime/replay.py)."""
    max_answer_tokens: int = 64
    """Longest final answer in tokens."""
    group_size: int = 8
    """GRPO group size G."""
    groups_per_step: int = 16
    """Problems per GRPO step."""
    replay_steps: int = 2
    """GRPO steps of every replay-route run (and of the LoRA tree run); its episodes are compared with the tree's."""
    tree_steps: int = 40
    """GRPO steps of the head-only tree run (the figure)."""
    max_copies: int = 48
    """Episodes per fill rollout (the reasoner's batch)."""
    tree: str = ""
    """Tree file ("" = ``<out>.tree.json.gz``, or a temporary one without ``out``)."""
    store: str = ""
    """Replay store directory ("" = a temporary one)."""
    seed: int = 0
    """Training seed (the same in every run)."""
    out: str = ""
    """JSON path ("" = print only)."""

    def __post_init__(self) -> None:
        for name in ("problems", "max_rounds", "max_step_tokens", "max_answer_tokens", "group_size", "groups_per_step",
                     "replay_steps", "tree_steps", "max_copies"):
            if getattr(self, name) < 1:
                raise ValueError(f"Config.{name}={getattr(self, name)} must be >= 1.")
        bad = [p for p in self.planners if p not in PLANNERS]
        if bad or not self.planners:
            raise ValueError(f"Config.planners={self.planners!r}: use some of {sorted(PLANNERS)}.")
        if self.tree_steps < self.replay_steps:
            raise ValueError(f"Config.tree_steps={self.tree_steps} < replay_steps={self.replay_steps}: the tree run "
                             "must cover the replay run's episodes to compare them.")


def _argv(cfg: Config, reasoner: str, planner: str, steps: int, out: Path) -> list[str]:
    sets = {"reasoner.greedy": "true", "train.groups_per_step": cfg.groups_per_step,
            "train.grpo.group_size": cfg.group_size, "env.max_steps": cfg.max_rounds,
            "reasoner.max_step_tokens": cfg.max_step_tokens, "reasoner.max_answer_tokens": cfg.max_answer_tokens,
            "train.progress": "false", "train.seed": cfg.seed, "data.size": cfg.problems, "data.seed": cfg.data_seed,
            **PLANNERS[planner]}
    return ["train", "--learner", "planner_only", "--planner", cfg.planner, "--reasoner", reasoner, "--data",
            cfg.source, "--steps", str(steps), "--out", str(out), *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


def _build(argv: list[str]) -> Any:
    """The Trainer ``rsim train ARGV`` builds (the grade cache on a plan tree, as ``algos.cli.train`` sets it)."""
    from accelerate.utils import set_seed

    from algos import cli
    from algos.trainer import Trainer, make_accelerator, to_dict
    from rsim_env.grading import GradeCache

    _, cfg, _ = cli.parse(argv)
    problems = cli.build_problems(cfg)
    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)
    learner = cli.build_learner(cfg)
    agents = cli.build_agents(cfg, learner, acc.device, problems)
    trainer = Trainer(cfg.train, learner, agents, problems, acc, run_config=to_dict(cfg), env=cfg.env)
    if getattr(agents["reasoner"], "grades_repeat", False):
        trainer.env_options["grader"] = GradeCache()
    return trainer


def train_run(argv: list[str], before: Any = None) -> tuple[list[Any], dict[str, Any]]:
    """Train as ``rsim train ARGV`` does; return every episode (rewards, info) and the timings.

    ``before(trainer)`` runs first, untimed (the fill uses the run's own replay reasoner).
    """
    trainer = _build(argv)
    if before is not None:
        before(trainer)
    episodes: list[Any] = []
    roll = {"wall_s": 0.0, "cpu_s": 0.0}
    play = trainer.rollout

    def tapped(problems: Any, seed: int) -> Any:
        w, c = time.perf_counter(), time.process_time()
        results, records = play(problems, seed)
        roll["wall_s"] += time.perf_counter() - w
        roll["cpu_s"] += time.process_time() - c
        episodes.extend((r["rewards"], r["info"]) for r in results)
        return results, records

    trainer.rollout = tapped
    start = dict(getattr(trainer.agents["reasoner"], "stats", {}))  # the fill's counts are not this run's
    features = dict(getattr(trainer.agents["planner"], "feature_stats", {}))  # nor a warm-up's
    w, c = time.perf_counter(), time.process_time()
    trainer.train()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    planner, reasoner = trainer.agents["planner"], trainer.agents["reasoner"]
    grader = trainer.env_options.get("grader")
    return episodes, {"episodes": len(episodes), "steps": trainer.step, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
                      "episodes_per_cpu_min": round(60 * len(episodes) / cpu, 1),
                      "episodes_per_wall_min": round(60 * len(episodes) / wall, 1),
                      "rollout_wall_s": round(roll["wall_s"], 3), "rollout_cpu_s": round(roll["cpu_s"], 3),
                      "reasoner": type(reasoner).__name__, "reasoner_stats": {k: v - start.get(k, 0) for k, v in getattr(reasoner, "stats", {}).items()},
                      "feature_cache": ({k: v - features.get(k, 0) for k, v in planner.feature_stats.items()}
                                        if planner.config.head_only else None),
                      "grade_cache": dict(grader.stats) if grader is not None else None}


def _compare(name: str, replay: list[Any], tree: list[Any]) -> int:
    for i, (a, b) in enumerate(zip(replay, tree)):
        if a != b:
            raise AssertionError(f"{name}: the tree route played another episode than the replay route at episode {i}: "
                                 f"{a[1].get('problem_id')} {a[1].get('strategies')} {a[1].get('steps')!r:.200} vs "
                                 f"{b[1].get('problem_id')} {b[1].get('strategies')} {b[1].get('steps')!r:.200}")
    if len(tree) < len(replay):
        raise AssertionError(f"{name}: the tree run played {len(tree)} episodes, fewer than the replay run's {len(replay)}")
    return len(replay)


def _fill(cfg: Config, path: Path, fill_info: dict[str, Any]) -> Any:
    def before(trainer: Any) -> None:
        from agents.replay.plan_tree import fill, game_plans

        w, c = time.perf_counter(), time.process_time()
        env = dataclasses.replace(trainer.env_cfg, planner=True)
        reasoner = trainer.agents["reasoner"]
        tree = fill(path, trainer.problems, reasoner, env, plans=game_plans(cfg.max_rounds), max_copies=cfg.max_copies,
                    log=lambda m: print(f"[plan_tree] fill {m}", file=sys.stderr, flush=True))
        fill_info.update(tree.summary(), plans=len(game_plans(cfg.max_rounds)), wall_s=round(time.perf_counter() - w, 1),
                         cpu_s=round(time.process_time() - c, 1), replay=dict(reasoner.stats), path=str(path),
                         fingerprint=tree.meta["fingerprint"])
    return before


def _warm(path: Path, info: dict[str, Any]) -> Any:
    def before(trainer: Any) -> None:
        from agents.replay.plan_tree import PlanTree, warm_planner

        w, c = time.perf_counter(), time.process_time()
        info["contexts"] = warm_planner(trainer.agents["planner"], PlanTree.load(path), trainer.problems)
        info.update(wall_s=round(time.perf_counter() - w, 2), cpu_s=round(time.process_time() - c, 2))
    return before


def main(cfg: Config) -> dict[str, Any]:
    """Fill the tree, train on both routes per planner, check the episodes agree; print a table; write JSON."""
    rows: dict[str, dict[str, Any]] = {}
    same: dict[str, int] = {}
    fill_info: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(cfg.tree or (Path(cfg.out).with_suffix(".tree.json.gz") if cfg.out else Path(tmp) / "tree.json.gz"))
        old = os.environ.get("RSIM_REPLAY_DIR")
        os.environ["RSIM_REPLAY_DIR"] = cfg.store or str(Path(tmp) / "replay")
        try:
            for i, planner in enumerate(cfg.planners):
                replay_spec = f"replay:{cfg.reasoner}"
                before = _fill(cfg, tree, fill_info) if i == 0 else None
                replay, rows[f"{planner}/replay"] = train_run(
                    _argv(cfg, replay_spec, planner, cfg.replay_steps, Path(tmp) / f"{planner}-replay"), before)
                print(f"[plan_tree] {planner}/replay: {rows[f'{planner}/replay']}", file=sys.stderr, flush=True)
                steps = cfg.tree_steps if planner == "head_only" else cfg.replay_steps
                warm: dict[str, Any] = {}
                on_tree, rows[f"{planner}/tree"] = train_run(
                    _argv(cfg, f"tree:{tree}", planner, steps, Path(tmp) / f"{planner}-tree"),
                    _warm(tree, warm) if planner == "head_only" else None)
                if warm:  # the features of every tree context, computed once before training: a one-time cost
                    r = rows[f"{planner}/tree"]
                    r["features"] = warm
                    r["episodes_per_cpu_min_with_features"] = round(60 * r["episodes"] / (r["cpu_s"] + warm["cpu_s"]), 1)
                print(f"[plan_tree] {planner}/tree: {rows[f'{planner}/tree']}", file=sys.stderr, flush=True)
                same[planner] = _compare(planner, replay, on_tree)
                if rows[f"{planner}/replay"]["reasoner_stats"].get("misses"):
                    raise AssertionError(f"{planner}/replay decoded {rows[f'{planner}/replay']['reasoner_stats']['misses']} "
                                         "steps on a filled store; expected none")
        finally:
            if old is None:
                os.environ.pop("RSIM_REPLAY_DIR", None)
            else:
                os.environ["RSIM_REPLAY_DIR"] = old
    speedup = {p: round(rows[f"{p}/tree"]["episodes_per_cpu_min"] / rows[f"{p}/replay"]["episodes_per_cpu_min"], 1)
               for p in cfg.planners}
    result = {"config": asdict(cfg), "fill": fill_info, "rows": rows, "same_episodes": same,
              "speedup_cpu": speedup, "threads": os.environ.get("OMP_NUM_THREADS")}
    print("| run | steps | episodes | wall s | CPU s | episodes / CPU-min | episodes / wall-min |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for name, r in rows.items():
        print(f"| {name} | {r['steps']} | {r['episodes']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
              f"{r['episodes_per_cpu_min']:,.0f} | {r['episodes_per_wall_min']:,.0f} |")
    for name, r in rows.items():
        if "features" in r:
            print(f"\n{name}: features of {r['features']['contexts']} tree contexts computed once before training in "
                  f"{r['features']['cpu_s']} s CPU; with them counted: {r['episodes_per_cpu_min_with_features']:,.0f} "
                  "episodes / CPU-min")
    print(f"\nfill: {fill_info.get('steps')} steps of {fill_info.get('problems')} problems x {fill_info.get('plans')} plans "
          f"in {fill_info.get('wall_s')} s wall ({fill_info.get('cpu_s')} s CPU); same episodes as the replay route: "
          + ", ".join(f"{p} {n}" for p, n in same.items()) + "; tree/replay per CPU-minute: "
          + ", ".join(f"{p} {s}x" for p, s in speedup.items()))
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.tree", __doc__)
