"""Seconds per optimizer step and tokens/s of the GRPO baseline, ours vs TRL's ``GRPOTrainer``.

Same model (the embedded default SmolLM2-135M-Instruct), same prompt (one reasoning-gym problem,
no planner), G completions of exactly ``completion_tokens`` tokens, one optimizer step per
rollout batch, no KL (TRL's default beta=0), fp32 on CPU. Both run in this process, one after the
other; the first ``warmup`` steps of each are not counted. TRL is optional
(``pip install rsim[trl]``); without it only our numbers are reported.

    python -m benchmarks.train_step --out results/train_step.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    model: str = "default"
    """Model spec for both trainers (see agents.loading)."""
    group_size: int = 4
    """G completions per problem (one problem per step)."""
    completion_tokens: int = 64
    """Tokens generated per completion (forced: no early stop)."""
    steps: int = 4
    """Optimizer steps per trainer, including warmup."""
    warmup: int = 1
    """Leading steps not counted."""
    lr: float = 1e-6
    """Learning rate (both)."""
    threads: int = 0
    """torch threads (0 = torch default)."""
    trl: bool = True
    """Also run TRL's GRPOTrainer when trl is installed."""
    seed: int = 0
    """Seed."""
    out: str | None = None
    """Where to write the JSON result."""
    output_dir: str = "runs/bench_train_step"
    """Scratch dir for both trainers' logs."""

    def __post_init__(self) -> None:
        if self.steps <= self.warmup:
            raise ValueError(f"Config.steps={self.steps} must exceed warmup={self.warmup} to measure anything.")


def _problem():
    from rsim_env.problems import reasoning_gym_problems

    return reasoning_gym_problems(size=2, seed=0)[0]


def run_ours(cfg: Config, skip_zero_std: bool) -> dict:
    from accelerate.utils import set_seed

    from agents.reasoner import Reasoner, ReasonerConfig
    from algos.grpo import GRPOConfig
    from algos.grpo_baseline import GRPOBaseline
    from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator

    tcfg = TrainConfig(steps=cfg.steps, groups_per_step=1, seed=cfg.seed, output_dir=cfg.output_dir + f"/ours_skip{int(skip_zero_std)}",
                       progress=False, mixed_precision="no", save_every=0,
                       skip_zero_std_groups=skip_zero_std,
                       grpo=GRPOConfig(group_size=cfg.group_size, max_length=cfg.completion_tokens),
                       reasoner_optim=OptimConfig(lr=cfg.lr))
    acc = make_accelerator(tcfg)
    set_seed(cfg.seed)
    reasoner = Reasoner.from_spec(cfg.model, ReasonerConfig(
        max_step_tokens=cfg.completion_tokens, max_answer_tokens=cfg.completion_tokens, stop_at_delimiter=False))
    trainer = Trainer(tcfg, GRPOBaseline(), {"reasoner": reasoner}, [_problem()], acc)
    times, tokens, updated = [], [], []
    for _ in range(cfg.steps):
        m = trainer.train_step()
        times.append(m["step_time"]); tokens.append(m["completions/mean_length"] * cfg.group_size)
        updated.append(m.get("reasoner/skipped", 1.0) == 0.0)
    acc.end_training()
    return dict(_summary(times[cfg.warmup:], tokens[cfg.warmup:]), updated_steps=sum(updated[cfg.warmup:]))


def run_trl(cfg: Config) -> dict:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig as TRLConfig, GRPOTrainer

    from agents.loading import resolve
    from rsim_env.answers import check
    from rsim_env.render import no_planner_chat

    p = _problem()
    data = Dataset.from_list([{"prompt": no_planner_chat(p.question), "answer": p.answer}] * (cfg.steps * 2))

    def acc_reward(completions, answer, **_):
        return [float(check(c[0]["content"] if isinstance(c, list) else c, a).correct) for c, a in zip(completions, answer)]

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.t0 = [], 0.0

        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.times.append(time.perf_counter() - self.t0)

    path = resolve(cfg.model)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    args = TRLConfig(output_dir=cfg.output_dir + "/trl", per_device_train_batch_size=cfg.group_size,
                     num_generations=cfg.group_size, max_completion_length=cfg.completion_tokens,
                     generation_kwargs={"min_new_tokens": cfg.completion_tokens}, max_steps=cfg.steps,
                     learning_rate=cfg.lr, logging_steps=1, report_to="none", use_cpu=True, bf16=False,
                     save_strategy="no", seed=cfg.seed, beta=0.0, disable_tqdm=True)
    timer = Timer()
    trainer = GRPOTrainer(model=model, reward_funcs=acc_reward, args=args, train_dataset=data,
                          processing_class=tok, callbacks=[timer])
    trainer.train()
    lengths = [h["completions/mean_length"] for h in trainer.state.log_history if "completions/mean_length" in h]
    return _summary(timer.times[cfg.warmup:], [n * cfg.group_size for n in lengths[cfg.warmup:]])


def _summary(times: list[float], tokens: list[float]) -> dict:
    return {"seconds_per_step": statistics.median(times), "step_times": times,
            "tokens_per_step": statistics.mean(tokens) if tokens else None,
            "tokens_per_s": (sum(tokens) / sum(times)) if tokens else None}


def main(cfg: Config) -> dict:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    # "ours" always runs the backward pass (like TRL, which cannot skip); "ours_skip" is the default
    # behaviour, which skips groups whose rewards are all equal (often every group, early on).
    result: dict = {"config": asdict(cfg), "torch_threads": torch.get_num_threads(),
                    "ours": run_ours(cfg, skip_zero_std=False), "ours_skip": run_ours(cfg, skip_zero_std=True)}
    try:
        import trl  # noqa: F401

        have_trl = True
    except ImportError:
        have_trl = False
    if cfg.trl and have_trl:
        result["trl"] = run_trl(cfg)
        result["trl_version"] = trl.__version__
        result["speedup_vs_trl"] = result["trl"]["seconds_per_step"] / result["ours"]["seconds_per_step"]
    else:
        result["trl"] = None
    _print(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _print(r: dict) -> None:
    print(f"{'trainer':>9} {'s/step':>8} {'tokens/step':>12} {'tokens/s':>9}")
    for name in ("ours", "ours_skip", "trl"):
        x = r.get(name)
        if x:
            print(f"{name:>9} {x['seconds_per_step']:>8.2f} {x['tokens_per_step'] or 0:>12.1f} {x['tokens_per_s'] or 0:>9.1f}")
    if r.get("speedup_vs_trl"):
        print(f"TRL s/step / ours s/step = {r['speedup_vs_trl']:.2f}")


def parse(argv: list[str]) -> Config:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for f in dataclasses.fields(Config):
        kind = {bool: lambda s: s.lower() in ("1", "true", "yes")}.get(type(f.default), type(f.default))
        p.add_argument(f"--{f.name}", type=kind if f.default is not None else str, default=f.default)
    return Config(**vars(p.parse_args(argv)))


if __name__ == "__main__":
    main(parse(sys.argv[1:]))
