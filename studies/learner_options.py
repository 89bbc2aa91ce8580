"""What each planner learner option buys: planner-only GRPO on scripted task families, measured against the table.

The reasoner is :class:`agents.scripted.families.FamilyReasoner` (a problem is solved only under its family's
plan), so the outcome of every plan on every problem is known exactly: the study fills that table
(every terminating plan of at most ``max_steps`` rounds on every training problem and every held-out one),
trains the planner with each variant of the learner options (docs/training.md) over a few seeds, and
reports the greedy planner's reward and accuracy against the best single plan and the per-task best plan
(:func:`algos.optimisation_gap.optimisation_gap`) on the training table (optimisation) and the held-out one
(generalisation), with curves, the share of sampled plans that never terminated and the sampled entropy.

Variants: ``default`` (the paper), ``last_round`` (``env.terminate_last_round``), ``per_term``
(``train.grpo.per_term_advantages``), ``both``. Planner ``toy`` (:class:`agents.scripted.toy.ToyPlanner`, sees only the
round and the previous strategy: it can reach the best single plan, not the per-task best) or ``tiny`` (a
random-init tiny LM planner that reads the question).

    OMP_NUM_THREADS=1 python -m studies.learner_options --out docs/training_results/learner_options_toy.json
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from agents.scripted.families import FamilyReasoner, families, family_problems
from algos.grpo import GRPOConfig
from algos.optimisation_gap import optimisation_gap
from algos.planner_only import PlannerOnly
from algos.rollout import rollout
from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator
from benchmarks.plans.table import TablePlanner, all_plans
from rsim_env import EnvConfig, EnvGroup

VARIANTS: dict[str, dict[str, bool]] = {
    "default": {}, "last_round": {"terminate_last_round": True}, "per_term": {"per_term_advantages": True},
    "both": {"terminate_last_round": True, "per_term_advantages": True},
}
"""Variant name -> the options it turns on."""


@dataclass(frozen=True)
class Config:
    """Study settings."""

    variants: str = "default,last_round,per_term,both"
    """Comma-separated names of :data:`VARIANTS`."""
    seeds: int = 3
    """Seeds per variant (0 .. seeds-1)."""
    planner: str = "toy"
    """"toy" (round + previous strategy only) or "tiny" (a random-init tiny LM that reads the question)."""
    families: str = "two_step"
    """Family set (agents.scripted.families.FAMILY_SETS)."""
    max_steps: int = 3
    """env.max_steps: the longest plan (73 terminating plans for 3)."""
    steps: int = 40
    """Optimizer steps per run."""
    groups_per_step: int = 4
    """Problems per step."""
    group_size: int = 8
    """G."""
    lr: float = 1e-2
    """Planner learning rate."""
    entropy_coef: float = 0.0
    """Entropy bonus of the planner's GRPO loss (``train.grpo.entropy_coef``)."""
    train_problems: int = 16
    """Training problems (round-robin over the families)."""
    test_problems: int = 16
    """Held-out problems (another generator seed)."""
    eval_every: int = 10
    """Steps between greedy evaluations on the training table (the curve)."""
    out: str = ""
    """Where to write the JSON ("" = nowhere)."""
    output_dir: str = "runs/learner_options"
    """TensorBoard logs (one subdir per run)."""

    def __post_init__(self) -> None:
        unknown = [v for v in self.variants.split(",") if v not in VARIANTS]
        if unknown:
            raise ValueError(f"Config.variants has unknown {unknown}; choose from {sorted(VARIANTS)}.")
        if not self.output_dir:
            raise ValueError("Config.output_dir is empty: name a directory for the runs' TensorBoard logs.")
        if self.planner not in ("toy", "tiny"):
            raise ValueError(f"Config.planner={self.planner!r} is invalid: use 'toy' or 'tiny'.")
        for f in ("seeds", "max_steps", "steps", "groups_per_step", "train_problems", "test_problems", "eval_every"):
            if not isinstance(getattr(self, f), int) or getattr(self, f) < 1:
                raise ValueError(f"Config.{f}={getattr(self, f)!r} is invalid: use an int >= 1.")


TaskOf = Callable[[str], str] | None
"""A problem id's task (None: :mod:`algos.optimisation_gap`'s default, the id's first path segment)."""


def plan_rows(problems: Sequence[Any], reasoner: Any, env: EnvConfig, task_of: TaskOf = None,
              **env_options: Any) -> list[dict[str, Any]]:
    """The outcome table: every terminating plan of at most ``env.max_steps`` rounds on every problem
    (``env_options``: e.g. ``grader=`` a :class:`rsim_env.grading.GradeCache`)."""
    plans = all_plans(env.max_steps)
    out = rollout(EnvGroup(list(problems), len(plans), config=env, **env_options), reasoner, TablePlanner(plans), seed=0)
    return [_row(t, task_of) for t in out.trajectories]


def _row(t: dict[str, Any], task_of: TaskOf = None) -> dict[str, Any]:
    info = t["info"]
    row = {"problem_id": info["problem_id"], "plan": list(info["strategies"]), "correct": bool(info["correct"]),
           "reward": float(t["rewards"]["planner"])}
    return row | {"task": task_of(row["problem_id"])} if task_of else row


def greedy_rows(planner: Any, problems: Sequence[Any], reasoner: Any, env: EnvConfig, task_of: TaskOf = None,
                **env_options: Any) -> list[dict[str, Any]]:
    """The planner's greedy episodes on ``problems`` (its sampling setting restored afterwards)."""
    toy = not hasattr(planner, "config")
    before = planner.greedy if toy else planner.config
    if toy:
        planner.greedy = True
    else:
        planner.config = dataclasses.replace(before, greedy=True)
    try:
        with torch.no_grad():
            out = rollout(EnvGroup(list(problems), 1, config=env, **env_options), reasoner, planner, seed=0)
    finally:
        if toy:
            planner.greedy = before
        else:
            planner.config = before
    return [_row(t) for t in out.trajectories]


def _planner(cfg: Config, seed: int) -> Any:
    torch.manual_seed(seed)
    if cfg.planner == "toy":
        from agents.scripted.toy import ToyPlanner

        return ToyPlanner(max_rounds=cfg.max_steps)
    from agents.hf.loading import tiny_model
    from agents.planners.llm import Planner, PlannerConfig

    backbone, tok = tiny_model("backbone", seed=seed)
    return Planner(backbone, tok, PlannerConfig(seed=seed))


def train_run(cfg: Config, variant: str, seed: int, data: dict[str, Any]) -> dict[str, Any]:
    """One training run of ``variant``: its curve and final gaps on the training and held-out tables.

    ``data``: ``train`` / ``test`` problems, their ``*_table``, the ``reasoner`` (or one per split:
    ``train_reasoner`` / ``test_reasoner``), optionally ``planner(seed)`` (a factory; default :func:`_planner`) and
    ``env_options`` (passed to every env: a grade cache on a plan tree) and ``task_of`` (a problem id's task);
    with ``save`` true the trained planner is checkpointed at the end (``checkpoint`` in the result), under
    ``run_config`` (the planner's own build's run config: the checkpoint then evaluates with ``rsim eval``)."""
    opts = VARIANTS[variant]
    env = EnvConfig(max_steps=cfg.max_steps, terminate_last_round=opts.get("terminate_last_round", False))
    planner = data["planner"](seed) if "planner" in data else _planner(cfg, seed)
    play = {s: data.get(f"{s}_reasoner", data["reasoner"] if "reasoner" in data else None) for s in ("train", "test")}
    options = {**data.get("env_options", {}), "task_of": data.get("task_of")}
    tcfg = TrainConfig(steps=cfg.steps, groups_per_step=cfg.groups_per_step, seed=seed, progress=False,
                       output_dir=f"{cfg.output_dir}/{variant}_s{seed}", sample_rollouts=0, save_every=0,
                       mixed_precision="no", planner_optim=OptimConfig(lr=cfg.lr),
                       grpo=GRPOConfig(group_size=cfg.group_size, entropy_coef=cfg.entropy_coef,
                                       per_term_advantages=opts.get("per_term_advantages", False)))
    run_config = {"study": "learner_options", "variant": variant}
    if "run_config" in data:  # the run config of the planner's own build: a saved checkpoint then evaluates
        base = data["run_config"]
        run_config = {**base, "env": {**base.get("env", {}), **asdict(env)},
                      "train": {**base.get("train", {}), "steps": cfg.steps, "groups_per_step": cfg.groups_per_step,
                                "seed": seed, "output_dir": tcfg.output_dir,
                                "planner_optim": {**base.get("train", {}).get("planner_optim", {}), "lr": cfg.lr},
                                "grpo": {**base.get("train", {}).get("grpo", {}), "group_size": cfg.group_size,
                                         "entropy_coef": cfg.entropy_coef,
                                         "per_term_advantages": opts.get("per_term_advantages", False)}}}
    trainer = Trainer(tcfg, PlannerOnly(), {"planner": planner, "reasoner": play["train"]}, data["train"],
                      make_accelerator(tcfg), run_config=run_config, env=env)
    trainer.env_options.update(data.get("env_options", {}))
    curve = []
    while trainer.step < cfg.steps:
        m = trainer.train_step()
        row = {"step": trainer.step, "batch_reward": m["planner/reward"], "accuracy": m["accuracy"],
               "unterminated": (1 - m["rewards/terminal/mean"]) / 2, "entropy": m.get("planner/entropy")}
        if trainer.step % cfg.eval_every == 0 or trainer.step == cfg.steps:
            g = optimisation_gap(data["train_table"], greedy_rows(planner, data["train"], play["train"], env, **options))
            row |= {"greedy_reward": g["trained"]["reward"], "greedy_accuracy": g["trained"]["accuracy"]}
        curve.append(row)
    saved = trainer.save() if data.get("save") else None
    trainer.acc.end_training()
    gaps, plans = {}, {}
    for split in ("train", "test") if data.get("test") else ("train",):
        rows = greedy_rows(planner, data[split], play[split], env, **options)
        gaps[split] = optimisation_gap(data[f"{split}_table"], rows, select=data["train_table"])
        plans[split] = {r["problem_id"]: r["plan"] for r in rows}
    return {"variant": variant, "seed": seed, "curve": curve, "gap": gaps, "plans": plans,
            **({"checkpoint": str(saved)} if saved else {})}


def _data(cfg: Config) -> dict[str, Any]:
    fams = families(cfg.families)
    train = family_problems(fams, cfg.train_problems, seed=0)
    test = family_problems(fams, cfg.test_problems, seed=10_000)
    reasoner = FamilyReasoner(train + test, fams)
    env = EnvConfig(max_steps=cfg.max_steps)
    return {"train": train, "test": test, "reasoner": reasoner,
            "train_table": plan_rows(train, reasoner, env), "test_table": plan_rows(test, reasoner, env)}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per variant: the mean over seeds of the final greedy reward, accuracy, ratio and the last batch's numbers."""
    out: dict[str, Any] = {}
    for v in dict.fromkeys(r["variant"] for r in runs):
        rs = [r for r in runs if r["variant"] == v]
        r0 = rs[0]
        mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
        out[v] = {
            "seeds": len(rs),
            **{f"{s}_{k}": mean([r["gap"][s]["trained"][k] for r in rs]) for s in r0["gap"]
               for k in ("reward", "accuracy")},
            "train_ratio": mean([r["gap"]["train"]["ratio"] or 0.0 for r in rs]),
            "train_rewards_by_seed": [r["gap"]["train"]["trained"]["reward"] for r in rs],
            "last_batch_reward": mean([r["curve"][-1]["batch_reward"] for r in rs]),
            "last_unterminated": mean([r["curve"][-1]["unterminated"] for r in rs]),
        }
    return out


def main(cfg: Config) -> dict[str, Any]:
    """Fill the tables, train every variant on every seed, summarise (and write) the result."""
    t0 = time.perf_counter()
    data = _data(cfg)
    runs = [train_run(cfg, v, s, data) for v in cfg.variants.split(",") for s in range(cfg.seeds)]
    first = runs[0]["gap"]
    result = {"config": asdict(cfg), "tables": {s: {k: first[s][k] for k in ("problems", "best_single", "per_task_best")}
                                                for s in ("train", "test")},
              "summary": summary(runs), "runs": runs, "wall_seconds": time.perf_counter() - t0,
              "torch_threads": torch.get_num_threads()}
    print_result(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def print_result(r: dict[str, Any]) -> None:
    for s, t in r["tables"].items():
        print(f"{s} table ({t['problems']} problems): best single {t['best_single']['plan']} reward "
              f"{t['best_single']['reward']:.3f} acc {t['best_single']['accuracy']:.3f}; per-task best "
              f"{t['per_task_best']['plans']} reward {t['per_task_best']['reward']:.3f} acc {t['per_task_best']['accuracy']:.3f}")
    print(f"{'variant':<11} {'train R':>8} {'train acc':>9} {'ratio':>6} {'test R':>7} {'batch R':>8} {'unterm':>7}  by seed")
    for v, x in r["summary"].items():
        print(f"{v:<11} {x['train_reward']:>8.3f} {x['train_accuracy']:>9.3f} {x['train_ratio']:>6.3f} "
              f"{x.get('test_reward', float('nan')):>7.3f} {x['last_batch_reward']:>8.3f} {x['last_unterminated']:>7.3f}  "
              f"{[round(v, 2) for v in x['train_rewards_by_seed']]}")
    print(f"wall {r['wall_seconds']:.1f} s ({r['torch_threads']} threads)")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.learner_options", __doc__)
