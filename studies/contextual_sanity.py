"""Can the LM planner learn a plan that depends on the problem?

Two task families (:data:`agents.scripted.families.FAMILY_SETS`, default ``two_step``): "Add a and b."
is solved only under ``validation -> termination``, "Multiply a by b." only under ``decomposition ->
termination`` (``--families default``: ``decomposition -> prioritization -> termination``; a scripted
reasoner, :class:`agents.scripted.families.FamilyReasoner`). One
constant plan solves at most half the problems, so >= 95 % on *each* family means the planner reads
the question. The planner is the real one (:class:`agents.planners.llm.Planner`: LM + linear head, with
the study preset's LoRA), trained by the planner-only learner on the shared trainer.

Reported, on held-out problems (greedy): accuracy and plan per family, plan diversity (distinct
plans, entropy) and the mutual information between plan and family (bits; its maximum is H(family)
= 1 bit for two balanced families); the same per evaluation in the curve and in TensorBoard
(``heldout/*``), with the training diagnostics (``planner/entropy``, ``planner/frac_reward_zero_std``,
batch ``plans/*``).

    python -m studies.contextual_sanity --out docs/contextual_results/embedded_two_step_lr3e-4.json
    python -m studies.contextual_sanity --model tiny --lr 3e-3 --steps 160   # seconds: random-init tiny LM
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from agents.hf.lora import LoraSpec
from agents.planners.llm import PlannerConfig
from agents.registry import AgentContext, build_agent
from agents.scripted.families import Family, FamilyReasoner, families, family_problems, plan_names
from algos.grpo import GRPOConfig
from algos.metrics import plan_stats, task_of
from algos.planner_only import PlannerOnly
from algos.rollout import rollout
from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator
from rsim_env import EnvConfig, EnvGroup, RewardWeights


@dataclass(frozen=True)
class Config:
    """Benchmark settings (defaults: the fix this benchmark found; see docs/contextual.md)."""

    families: str = "two_step"
    """Family set (agents.scripted.families.FAMILY_SETS): "default" (add: [3, 8], mul: [1, 5, 8]), "two_step", "three"."""
    model: str = "default"
    """Planner backbone spec (agents.registry): "default" = the embedded SmolLM2-135M, "tiny" = random-init tiny LM."""
    lora: bool = True
    """Planner as a LoRA adapter (the study preset's: rank 16, alpha 32) + its head; False trains every weight."""
    head_only: bool = False
    """Train only the head on the frozen backbone's features (PlannerConfig.head_only; the efficacy study's
    planner form); needs lora=False."""
    steps: int = 60
    """Maximum optimizer steps."""
    groups_per_step: int = 2
    """Problems per step."""
    group_size: int = 8
    """G: rollouts per problem."""
    lr: float = 3e-4
    """Planner learning rate, adapter and head (the study preset uses 1e-3: it collapses more often, docs/contextual.md)."""
    entropy_coef: float = 0.1
    """GRPOConfig.entropy_coef: entropy bonus on the strategy distribution."""
    score_flat_groups: bool = True
    """Score groups whose rewards are all equal (TrainConfig.skip_zero_std_groups=False): their advantage is 0,
    but the entropy bonus still acts there; skipped, a group whose G copies all play one plan never moves again."""
    scale_rewards: bool = True
    """GRPOConfig.scale_rewards: divide advantages by the group std (False: mean baseline only)."""
    w_terminal: float = 1.0
    """Weight of R_terminal in the planner's reward."""
    w_penalty: float = 1.0
    """Weight of R_penalty in the planner's reward."""
    head_init_std: float = 0.02
    """PlannerConfig.head_init_std."""
    train_problems: int = 256
    """Training problems (half per family)."""
    eval_problems: int = 32
    """Held-out problems per evaluation (half per family; another generator seed)."""
    eval_every: int = 10
    """Steps between held-out evaluations."""
    stop_at: float = 0.95
    """Stop once every family's held-out greedy accuracy reaches this."""
    seed: int = 0
    """Seeds the model init, sampling and problems."""
    out: str = ""
    """Where to write the JSON result ("" = nowhere)."""
    output_dir: str = "runs/contextual_sanity"
    """TensorBoard logs."""

    def __post_init__(self) -> None:
        for f in ("steps", "groups_per_step", "train_problems", "eval_problems", "eval_every"):
            if not isinstance(getattr(self, f), int) or getattr(self, f) < 1:
                raise ValueError(f"Config.{f}={getattr(self, f)!r} is invalid: use an int >= 1.")
        if self.head_only and self.lora:
            raise ValueError("Config.head_only=True trains the head on a frozen backbone: set lora=False too "
                             "(--no-lora).")
        n = len(families(self.families))  # raises for an unknown set
        if self.eval_problems < n:
            raise ValueError(f"Config.eval_problems={self.eval_problems} is invalid: use >= {n} (one per family).")


def evaluate(planner: Any, reasoner: FamilyReasoner, problems: list, env: EnvConfig,
             fams: Sequence[Family]) -> dict[str, Any]:
    """Greedy episodes on ``problems``: accuracy and plans per family, and :func:`algos.metrics.plan_stats`."""
    sampling = planner.config
    planner.config = dataclasses.replace(sampling, greedy=True)
    try:
        with torch.no_grad():
            out = rollout(EnvGroup(problems, 1, config=env), reasoner, planner, seed=0)
    finally:
        planner.config = sampling
    plans = [tuple(t["info"]["strategies"]) for t in out.trajectories]
    tasks = [task_of(t["info"]["problem_id"]) for t in out.trajectories]
    correct = [bool(t["info"]["correct"]) for t in out.trajectories]
    families = {}
    for fam in fams:
        idx = [i for i, t in enumerate(tasks) if t == fam.name]
        counts = Counter(plans[i] for i in idx)
        families[fam.name] = {
            "accuracy": sum(correct[i] for i in idx) / len(idx), "n": len(idx),
            "required_plan": plan_names(fam.plan), "plan": plan_names(counts.most_common(1)[0][0]),
            "plans": {",".join(map(str, p)): c for p, c in counts.most_common()},
        }
    return {"accuracy": sum(correct) / len(correct), "families": families, **plan_stats(plans, tasks)}


def _log(trainer: Trainer, ev: dict[str, Any]) -> None:
    scalars = {f"heldout/{k}": ev[k] for k in ("accuracy", "distinct", "entropy", "mutual_info", "mi_fraction")}
    scalars |= {f"heldout/accuracy_{name}": f["accuracy"] for name, f in ev["families"].items()}
    trainer.acc.log(scalars, step=trainer.step)


def _build(cfg: Config) -> tuple[Any, FamilyReasoner, Trainer, list, EnvConfig, tuple[Family, ...]]:
    torch.manual_seed(cfg.seed)
    fams = families(cfg.families)
    train_set = family_problems(fams, cfg.train_problems, seed=cfg.seed)
    eval_set = family_problems(fams, cfg.eval_problems, seed=cfg.seed + 10_000)
    heldout = {p.question for p in eval_set} - {p.question for p in train_set}
    eval_set = [p for p in eval_set if p.question in heldout]  # disjoint from training by question text
    reasoner = FamilyReasoner(train_set + eval_set, fams)
    lora = LoraSpec(enabled=cfg.lora)
    pcfg = PlannerConfig(seed=cfg.seed, head_init_std=cfg.head_init_std, head_only=cfg.head_only)
    planner = build_agent(cfg.model, AgentContext(role="planner", config=pcfg, seed=cfg.seed, lora=lora)).agent
    env = EnvConfig(max_steps=max(len(f.plan) for f in fams),
                    weights=RewardWeights(terminal=cfg.w_terminal, penalty=cfg.w_penalty))
    tcfg = TrainConfig(
        steps=cfg.steps, groups_per_step=cfg.groups_per_step, seed=cfg.seed, output_dir=cfg.output_dir,
        progress=False, sample_rollouts=1, save_every=0, mixed_precision="no",
        skip_zero_std_groups=not cfg.score_flat_groups,
        grpo=GRPOConfig(group_size=cfg.group_size, entropy_coef=cfg.entropy_coef, scale_rewards=cfg.scale_rewards),
        planner_optim=OptimConfig(lr=cfg.lr),
    )
    trainer = Trainer(tcfg, PlannerOnly(), {"planner": planner, "reasoner": reasoner}, train_set,
                      make_accelerator(tcfg), run_config={"benchmark": "contextual_sanity", **asdict(cfg)}, env=env)
    return planner, reasoner, trainer, eval_set, env, fams


def main(cfg: Config) -> dict[str, Any]:
    """Train the planner until every family passes ``stop_at`` (or ``steps``); return (and write) the result."""
    t_start = time.perf_counter()
    planner, reasoner, trainer, eval_set, env, fams = _build(cfg)
    before = evaluate(planner, reasoner, eval_set, env, fams)
    t0 = time.perf_counter()
    curve, ev = [], before
    while trainer.step < cfg.steps:
        m = trainer.train_step()
        row = {"step": trainer.step, **{k: m.get(k) for k in _TRAIN_KEYS}}
        if trainer.step % cfg.eval_every == 0 or trainer.step == cfg.steps:
            ev = evaluate(planner, reasoner, eval_set, env, fams)
            _log(trainer, ev)
            row |= {"heldout_" + k: ev[k] for k in ("accuracy", "distinct", "entropy", "mutual_info")}
            row |= {f"heldout_accuracy_{n}": f["accuracy"] for n, f in ev["families"].items()}
            if min(f["accuracy"] for f in ev["families"].values()) >= cfg.stop_at:
                curve.append(row)
                break
        curve.append(row)
    train_s = time.perf_counter() - t0
    trainer.acc.end_training()
    if curve and "heldout_accuracy" not in curve[-1]:  # stopped between evaluations: evaluate the final planner
        ev = evaluate(planner, reasoner, eval_set, env, fams)
    result = {
        "families": ev["families"], "accuracy": ev["accuracy"],
        "min_family_accuracy": min(f["accuracy"] for f in ev["families"].values()),
        "passed": min(f["accuracy"] for f in ev["families"].values()) >= cfg.stop_at,
        "heldout": {k: ev[k] for k in ("distinct", "entropy", "mutual_info", "mi_fraction")},
        "before": {"families": before["families"], **{k: before[k] for k in ("accuracy", "distinct", "mutual_info")}},
        "eval_problems": len(eval_set), "updates": trainer.step,
        "episodes": trainer.step * cfg.groups_per_step * cfg.group_size,
        "train_seconds": train_s, "wall_seconds": time.perf_counter() - t_start,
        "torch_threads": torch.get_num_threads(), "curve": curve, "config": asdict(cfg),
    }
    _print(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


_TRAIN_KEYS = ("planner/reward", "planner/reward_std", "planner/frac_reward_zero_std", "planner/entropy",
               "planner/grad_norm", "accuracy", "plans/distinct", "plans/entropy", "plans/mutual_info")


def _print(r: dict[str, Any]) -> None:
    print(f"{'family':<8} {'required plan':<48} {'greedy plan (most frequent)':<48} {'accuracy':>8}")
    for name, f in r["families"].items():
        print(f"{name:<8} {' -> '.join(f['required_plan']):<48} {' -> '.join(f['plan']):<48} {f['accuracy']:>8.3f}")
    h = r["heldout"]
    print(f"held-out: {r['eval_problems']} problems, {h['distinct']:.0f} distinct plans, plan entropy {h['entropy']:.2f} bits, "
          f"I(plan; family) {h['mutual_info']:.2f} bits ({h['mi_fraction']:.0%} of H(family)); before training "
          f"{r['before']['mutual_info']:.2f} bits")
    print(f"{'passed' if r['passed'] else 'FAILED'}: {r['updates']} updates, {r['episodes']} episodes, "
          f"train {r['train_seconds']:.1f} s, wall {r['wall_seconds']:.1f} s ({r['torch_threads']} threads)")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.contextual_sanity", __doc__)
