"""Does Stackelberg GRPO learn? A planner must discover a strategy sequence by reward alone.

Setup: a scripted reasoner (templated steps, so strategy detection works) whose final answer is
right only when the planner chose exactly ``target`` (default decomposition -> validation ->
termination). The planner is a tiny random-init MLP (``agents.scripted.toy.ToyPlanner``) trained with the
Stackelberg learner and its lambda schedule; the scripted follower cannot learn, so only the
leader updates (at lr * lambda). Reported: greedy success before and after training, the success
of a uniformly random planner (measured, and the exact ``num_strategies() ** -len(target)``), and updates used.

    python -m studies.learning_sanity --out results/learning_sanity.json
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from agents.scripted.policies import RandomPlanner, TemplateReasoner
from agents.scripted.toy import ToyPlanner
from algos.stackelberg import StackelbergConfig, StackelbergGRPO
from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator
from algos.grpo import GRPOConfig
from algos.rollout import rollout
from rsim_env import EnvGroup, STRATEGIES
from rsim_env.problem import Problem
from rsim_env.game import EnvConfig
from rsim_env.strategies import TERMINATION, by_name, example


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    target: tuple[int, ...] = tuple(by_name(n).index for n in ("decomposition", "validation", "termination"))
    """Strategy sequence that makes the reasoner right (must end with termination)."""
    steps: int = 150
    """Maximum optimizer steps."""
    groups_per_step: int = 8
    """Problems per step."""
    group_size: int = 8
    """G."""
    lr: float = 0.01
    """Planner base learning rate (scaled by lambda). At 0.05 the planner locked onto a wrong three-step plan
    (the shaping terms pay for any distinct plan) in 2 of 4 seeds before it sampled the target (1 in 729);
    at 0.01 it found the target in 5 of 6 seeds (docs/contextual_results/seed_sweep.jsonl)."""
    stage1_steps: int = 75
    """Steps at lambda = 0.7 before lambda = 0.3."""
    eval_problems: int = 64
    """Problems in each greedy evaluation."""
    stop_at: float = 0.95
    """Stop early once greedy success reaches this (checked every eval_every steps)."""
    eval_every: int = 10
    """Steps between greedy evaluations."""
    seed: int = 0
    """Seeds init, sampling and problems."""
    out: str | None = None
    """Where to write the JSON result."""
    output_dir: str = "runs/learning_sanity"
    """TensorBoard logs."""

    def __post_init__(self) -> None:
        if not self.target or self.target[-1] != TERMINATION:
            raise ValueError(f"Config.target={self.target!r} must end with termination ({TERMINATION}).")


class SequenceReasoner(TemplateReasoner):
    """Templated steps; the boxed answer is right only after exactly ``target[:-1]`` was planned."""

    def __init__(self, answers: dict[str, str], target: tuple[int, ...]) -> None:
        super().__init__()
        self.answers, self.prefix = answers, list(target[:-1])

    def act(self, copy_ids, observations):
        out = []
        for obs in observations:
            s = int(obs["strategy"])
            if s != TERMINATION:
                out.append(example(s))
                continue
            gold = self.answers[obs["question"]]
            right = list(obs["strategies"]) == self.prefix
            out.append(example(TERMINATION, gold if right else f"{gold}1"))
        return out


def _problems(n: int, seed: int, offset: int = 0) -> list[Problem]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        a, b = (int(x) for x in torch.randint(1, 50, (2,), generator=g))
        out.append(Problem(id=f"sum/{offset + i}", question=f"Compute {a} + {b}.", answer=str(a + b)))
    return out


def success(planner: Any, reasoner: Any, problems: list[Problem], max_steps: int, greedy: bool = True) -> float:
    """Fraction of problems solved with one rollout each."""
    if hasattr(planner, "greedy"):
        planner.greedy = greedy
    with torch.no_grad():
        out = rollout(EnvGroup(problems, 1, max_steps=max_steps), reasoner, planner, seed=0)
    if hasattr(planner, "greedy"):
        planner.greedy = False
    return sum(t["info"]["correct"] for t in out.trajectories) / len(problems)


def main(cfg: Config) -> dict:
    torch.manual_seed(cfg.seed)
    max_steps = len(cfg.target)
    train_set = _problems(256, cfg.seed)
    eval_set = _problems(cfg.eval_problems, cfg.seed + 1, offset=10_000)
    answers = {p.question: p.answer for p in train_set + eval_set}
    reasoner = SequenceReasoner(answers, cfg.target)
    planner = ToyPlanner(max_rounds=max_steps)
    tcfg = TrainConfig(
        steps=cfg.steps, groups_per_step=cfg.groups_per_step, seed=cfg.seed,
        output_dir=cfg.output_dir, progress=False, sample_rollouts=1,
        grpo=GRPOConfig(group_size=cfg.group_size), planner_optim=OptimConfig(lr=cfg.lr),
    )
    learner = dataclasses.replace(StackelbergGRPO(StackelbergConfig(stage1_steps=cfg.stage1_steps)),
                                  trained=("planner",))  # the scripted follower has nothing to learn
    trainer = Trainer(tcfg, learner, {"planner": planner, "reasoner": reasoner}, train_set, make_accelerator(tcfg),
                      run_config={"benchmark": "learning_sanity", **asdict(cfg)}, env=EnvConfig(max_steps=max_steps))
    before = success(planner, reasoner, eval_set, max_steps)
    rp = RandomPlanner(seed=cfg.seed)
    rand_problems = _problems(2000, cfg.seed + 2, offset=20_000)
    reasoner.answers.update({p.question: p.answer for p in rand_problems})
    rand = success(rp, reasoner, rand_problems, max_steps)
    t0 = time.perf_counter()
    curve = []
    after = before
    while trainer.step < cfg.steps:
        trainer.train_step()
        if trainer.step % cfg.eval_every == 0:
            after = success(planner, reasoner, eval_set, max_steps)
            curve.append({"step": trainer.step, "success": after,
                          "planner_reward": trainer.history[-1]["planner/reward"]})
            if after >= cfg.stop_at:
                break
    trainer.acc.end_training()
    after = success(planner, reasoner, eval_set, max_steps)
    greedy_plan = _greedy_plan(planner, max_steps)
    result = {
        "target": [STRATEGIES[i].name for i in cfg.target], "greedy_plan_after": greedy_plan,
        "success_before": before, "success_after": after, "success_random": rand,
        "success_random_exact": float(len(STRATEGIES)) ** -len(cfg.target), "updates": trainer.step,
        "episodes": trainer.step * cfg.groups_per_step * cfg.group_size, "seconds": time.perf_counter() - t0,
        "curve": curve, "config": asdict(cfg),
    }
    _print(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _greedy_plan(planner: ToyPlanner, max_steps: int) -> list[str]:
    names, prev = [], len(STRATEGIES)  # "no previous plan"
    with torch.no_grad():
        for r in range(max_steps):
            a = int(planner.module(planner._features([r], [prev])).argmax(-1))
            names.append(STRATEGIES[a].name)
            if a == TERMINATION:
                break
            prev = a
    return names


def _print(r: dict) -> None:
    print(f"target {' -> '.join(r['target'])}; greedy plan after training: {' -> '.join(r['greedy_plan_after'])}")
    print(f"{'success_random':>16} {'success_before':>15} {'success_after':>14} {'updates':>8} {'seconds':>8}")
    print(f"{r['success_random']:>16.4f} {r['success_before']:>15.3f} {r['success_after']:>14.3f} "
          f"{r['updates']:>8d} {r['seconds']:>8.1f}")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.learning_sanity", __doc__)
