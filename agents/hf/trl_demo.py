"""``python -m agents.hf.trl_demo``: TRL's ``GRPOTrainer`` for a few steps, with and without rSIM's strategy injection.

Two routes on the same problems, model, seed and optimizer, one table:

* ``injected`` -- GRPOTrainer with ``rollout_func=StrategyInjection(...)`` (:mod:`agents.hf.trl_rollout`): a
  planner (``--planner``, default a fixed plan) injects a strategy before each step, the reward is the env's
  reasoner reward (``R_acc + R_format + R_follow``);
* ``plain`` -- plain TRL GRPO: TRL generates one answer to rSIM's no-planner prompt, rewarded by
  :mod:`rsim_env.integrations.trl_rewards` (``R_acc + R_format``, the env's no-planner reward: there is no plan to follow).

Each row is the mean over the run's optimizer steps of TRL's own logged metrics (``reward``,
``rewards/<name>/mean``, ``completions/mean_length``: tokens the reasoner wrote) plus the injected tokens per
episode and seconds per step. A few steps move nothing measurable: the table shows what each route feeds TRL,
not a training result.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, fields
from typing import Any

__all__ = ["DemoConfig", "main"]

ROUTES = ("injected", "plain")


@dataclass(frozen=True)
class DemoConfig:
    """What the demo runs (each field is a ``--flag``)."""

    model: str = "default"
    """Reasoner model spec (:mod:`agents.hf.loading`: ``default`` = the embedded SmolLM2-135M-Instruct, a hub id, a
    path; ``tiny`` = a random-init tiny Llama, for tests)."""
    data: str = "default"
    """Data spec (:func:`rsim_env.sources.data.load_problems`)."""
    problems: int = 8
    """Problems to load."""
    routes: str = "injected,plain"
    """Comma list of routes to run: injected, plain."""
    planner: str = "fixed:1"
    """The injecting planner (``fixed:...``, ``random`` or a planner spec; :class:`agents.hf.trl_rollout.InjectionConfig`)."""
    steps: int = 2
    """Optimizer steps per route."""
    num_generations: int = 4
    """Completions per prompt (GRPO's G); one prompt per step."""
    max_step_tokens: int = 48
    """Token cap of each injected-route step."""
    max_completion_length: int = 96
    """Token cap of a plain-route completion (the injected route writes at most rounds * max_step_tokens)."""
    learning_rate: float = 1e-5
    """AdamW learning rate of both routes."""
    seed: int = 0
    """Seed of TRL, the data order, the planner and sampling."""
    out: str = "/tmp/rsim_trl_demo"
    """TRL's output directory (nothing is saved there but its logs)."""

    def __post_init__(self):
        bad = [r for r in self.routes.split(",") if r not in ROUTES]
        if bad:
            raise ValueError(f"routes={self.routes!r}: {bad} not in {ROUTES}; e.g. --routes injected,plain.")
        if self.num_generations < 2:
            raise ValueError(f"num_generations={self.num_generations}: GRPO compares a group, use >= 2.")


def _trainer(cfg: DemoConfig, route: str, problems: list, injection: Any) -> Any:
    import torch
    from trl import GRPOConfig, GRPOTrainer

    from rsim_env.integrations.trl_rewards import accuracy_reward, format_reward

    from .loading import load_causal_lm, tiny_model
    from .trl_rollout import problem_dataset

    model, tok = tiny_model(seed=cfg.seed) if cfg.model == "tiny" else load_causal_lm(cfg.model, dtype=torch.float32)
    if route == "injected":
        funcs, weights = injection.reward_funcs()
    else:
        funcs, weights = [accuracy_reward, format_reward], [1.0, 1.0]
    args = GRPOConfig(output_dir=os.path.join(cfg.out, route), per_device_train_batch_size=cfg.num_generations,
                      num_generations=cfg.num_generations, max_steps=cfg.steps, learning_rate=cfg.learning_rate,
                      logging_steps=1, report_to=[], save_strategy="no", seed=cfg.seed, use_cpu=True, bf16=False,
                      reward_weights=weights, temperature=1.0, max_completion_length=cfg.max_completion_length,
                      disable_tqdm=True)
    return GRPOTrainer(model=model, processing_class=tok, reward_funcs=funcs, args=args,
                       train_dataset=problem_dataset(problems),
                       rollout_func=injection if route == "injected" else None)


def run_route(cfg: DemoConfig, route: str, problems: list) -> dict[str, Any]:
    """Train ``cfg.steps`` steps on ``route``; the means of TRL's logged metrics, injected tokens and seconds per step."""
    from rsim_env.game import EnvConfig

    from .trl_rollout import InjectionConfig, StrategyInjection

    injection, injected = None, []
    if route == "injected":
        inner = StrategyInjection(problems, InjectionConfig(planner=cfg.planner, env=EnvConfig(max_steps=4),
                                                            max_step_tokens=cfg.max_step_tokens, seed=cfg.seed))

        def injection(prompts, trainer):  # counts what the planner's route fed the reasoner
            out = inner(prompts, trainer)
            injected.extend(len(m) - sum(m) for m in out["env_mask"])
            return out

        injection.reward_funcs = inner.reward_funcs
    trainer = _trainer(cfg, route, problems, injection)
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    logs = [h for h in trainer.state.log_history if "reward" in h]

    def mean(key: str) -> float | None:
        vals = [h[key] for h in logs if key in h]
        return sum(vals) / len(vals) if vals else None

    acc = "rewards/rsim_acc/mean" if route == "injected" else "rewards/accuracy_reward/mean"
    fmt = "rewards/rsim_format/mean" if route == "injected" else "rewards/format_reward/mean"
    return {"route": route, "steps": len(logs), "reward": mean("reward"), "acc": mean(acc), "format": mean(fmt),
            "follow": mean("rewards/rsim_follow/mean"), "written_tokens": mean("completions/mean_length"),
            "injected_tokens": sum(injected) / len(injected) if injected else 0.0,
            "loss": mean("loss"), "s_per_step": seconds / max(1, len(logs))}


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    cols = ["route", "steps", "reward", "acc", "format", "follow", "written_tokens", "injected_tokens", "s_per_step"]
    fmt = [(str(r[c]) if not isinstance(r[c], float) else f"{r[c]:.3g}") if r[c] is not None else "-"
           for r in rows for c in cols]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt[i * len(cols):(i + 1) * len(cols)]) + " |" for i in range(len(rows))]
    return "\n".join(lines)


def main(cfg: DemoConfig) -> dict[str, Any]:
    """Run every route in ``cfg.routes``; print and return the table's rows."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from rsim_env.sources.data import load_problems

    problems = load_problems(cfg.data, limit=cfg.problems, seed=cfg.seed)
    rows = [run_route(cfg, route, problems) for route in cfg.routes.split(",")]
    print(table(rows))
    return {"rows": rows}


def parse(argv: list[str]) -> DemoConfig:
    """``--field value`` for every field of :class:`DemoConfig`."""
    p = argparse.ArgumentParser(prog="python -m agents.hf.trl_demo", description=__doc__.splitlines()[0])
    for f in fields(DemoConfig):
        p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default)
    return DemoConfig(**vars(p.parse_args(argv)))


if __name__ == "__main__":
    main(parse(sys.argv[1:]))
