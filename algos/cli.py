"""``rsim`` command line: ``rsim train [--preset demo|paper|tiny] [--set key=value ...] [--resume DIR]``.

Multi-GPU / multi-process: ``accelerate launch [--num_processes N] -m algos.cli train ...`` runs the
same code. ``main(cfg)`` is the programmatic entry (tests call it with a :class:`RunConfig`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

from .config import LEARNERS, PRESETS, RunConfig, resolve
from .trainer import Trainer, make_accelerator, to_dict


def build_problems(cfg: RunConfig) -> list:
    """The training problems named by ``cfg.data``."""
    from rsim_env.problems import Problem, load_jsonl, reasoning_gym_problems

    d = cfg.data
    if d.source == "tiny":
        import random

        rng = random.Random(d.seed)
        out = []
        for i in range(d.size):
            a = rng.randint(0, 9)
            b = rng.randint(0, 9 - a)
            out.append(Problem(id=f"tiny/{i}", question=f"What is {a} + {b}?", answer=str(a + b), source="tiny"))
        return out
    if d.source == "reasoning_gym":
        return reasoning_gym_problems(size=d.size, seed=d.seed)
    if d.source == "jsonl":
        return load_jsonl(d.path)[: d.size]
    from rsim_env.loaders import load_problems  # hub sets (gsm8k, math): datasets.load_dataset by name

    return load_problems(d.source, limit=d.size)


def build_learner(cfg: RunConfig) -> Any:
    from .grpo_baseline import GRPOBaseline
    from .plugin import PlannerOnly
    from .stackelberg import StackelbergGRPO

    return {"stackelberg": lambda: StackelbergGRPO(cfg.schedule), "grpo": GRPOBaseline,
            "planner_only": PlannerOnly}[cfg.learner]()


def build_agents(cfg: RunConfig, learner: Any, device: Any) -> dict[str, Any]:
    """Agents for ``learner`` on ``device`` (identical init on every process: seed first)."""
    m = cfg.model
    if m.reasoner == "tiny":
        from algos.tiny_agents import TinyPlanner, TinyReasoner

        agents = {"reasoner": TinyReasoner(device=device)}
        if learner.env_planner:
            agents["planner"] = TinyPlanner(max_rounds=cfg.train.env_max_steps, device=device)
        return agents
    import torch

    from agents.reasoner import Reasoner, ReasonerConfig

    from .adapters import TrainablePlanner, TrainableReasoner

    dtype = getattr(torch, m.dtype)
    reasoner = Reasoner.from_spec(m.reasoner, ReasonerConfig(
        max_step_tokens=m.max_step_tokens, max_answer_tokens=m.max_answer_tokens, temperature=m.temperature), dtype=dtype)
    reasoner.model.to(device)
    agents: dict[str, Any] = {"reasoner": TrainableReasoner(reasoner)}
    if learner.env_planner:
        try:
            from agents.planner import Planner, PlannerConfig
        except ImportError as e:
            raise ValueError("learner needs the LLM planner (agents/planner.py), which is not in this checkout yet; "
                             "use --learner grpo, or model.planner=tiny with model.reasoner=tiny.") from e
        planner = Planner.from_spec(m.planner, PlannerConfig(temperature=m.temperature), dtype=dtype)
        planner.to(device)
        agents["planner"] = TrainablePlanner(planner)
    return agents


def train(cfg: RunConfig) -> dict[str, Any]:
    """Build everything from ``cfg`` and train (resuming if ``cfg.resume``)."""
    from accelerate.utils import set_seed

    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)  # same init on every process
    learner = build_learner(cfg)
    agents = build_agents(cfg, learner, acc.device)
    trainer = Trainer(cfg.train, learner, agents, build_problems(cfg), acc, run_config=to_dict(cfg))
    if cfg.resume:
        trainer.resume(cfg.resume)
    t0 = time.perf_counter()
    start = trainer.step
    out = trainer.train()
    steps = out["steps"] - start
    out["seconds"] = time.perf_counter() - t0
    out["seconds_per_step"] = out["seconds"] / max(1, steps)
    out["is_main_process"] = acc.is_main_process
    out["params"] = {r: trainer.agents[r].module for r in learner.trained}  # for tests; dropped when printed
    return out


def parse(argv: Sequence[str]) -> tuple[str, RunConfig, bool]:
    from rsim_env import __version__

    p = argparse.ArgumentParser(prog="rsim", description="rSIM: planner + reasoner LLMs, Stackelberg GRPO.")
    p.add_argument("--version", action="version", version=f"rsim {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("eval", add_help=False, help="evaluate planner modes (see `rsim eval --help`; algos/evaluate.py)")
    sub.add_parser("view", add_help=False, help="write a static HTML page of rollouts (see `rsim view --help`)")
    t = sub.add_parser("train", help="train a learner (see --preset)")
    t.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (demo: CPU minutes; paper: GPUs)")
    t.add_argument("--learner", choices=LEARNERS)
    t.add_argument("--steps", type=int, help="= --set train.steps=N")
    t.add_argument("--out", help="= --set train.output_dir=DIR")
    t.add_argument("--resume", help="checkpoint dir or run dir to continue from")
    t.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field, e.g. train.grpo.clip_eps_high=0.28 (repeatable)")
    t.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    a = p.parse_args(argv)
    overrides: dict[str, Any] = {}
    for item in a.overrides:
        if "=" not in item:
            p.error(f"--set {item!r}: expected KEY=VALUE, e.g. train.steps=10")
        k, v = item.split("=", 1)
        overrides[k.strip()] = v.strip()
    for flag, key in (("learner", "learner"), ("steps", "train.steps"), ("out", "train.output_dir"), ("resume", "resume")):
        if getattr(a, flag) is not None:
            overrides[key] = getattr(a, flag)
    try:
        cfg = resolve(a.preset, overrides)
    except ValueError as e:
        p.error(str(e))
    return a.command, cfg, a.print_config


def main(cfg: RunConfig | Sequence[str] | None = None) -> dict[str, Any] | None:
    """Programmatic: ``main(RunConfig)`` or ``main(["train", ...])`` -> summary dict.

    Console (``rsim ...``, no argument): parses ``sys.argv`` and returns None (exit status 0).
    """
    console = cfg is None
    if not isinstance(cfg, RunConfig) and (sys.argv[1:] if cfg is None else list(cfg))[:1] == ["eval"]:
        from .evaluate import main as evaluate  # `rsim eval ...`: all of it lives in algos/evaluate.py

        out = evaluate((sys.argv[1:] if cfg is None else list(cfg))[1:])
        return None if console else out
    if not isinstance(cfg, RunConfig) and (sys.argv[1:] if cfg is None else list(cfg))[:1] == ["view"]:
        from .viewer import main as view  # `rsim view DIR --out FILE.html`: all of it lives in algos/viewer/

        out = view((sys.argv[1:] if cfg is None else list(cfg))[1:])
        return None if console else out
    if not isinstance(cfg, RunConfig):
        command, cfg, print_only = parse(sys.argv[1:] if cfg is None else list(cfg))
        if print_only:
            print(json.dumps(to_dict(cfg), indent=1))
            return None if console else {"config": to_dict(cfg)}
    out = train(cfg)
    if out["is_main_process"]:
        shown = {k: v for k, v in out.items() if k not in ("history", "params")}
        last = out["history"][-1] if out["history"] else {}
        shown["last"] = {k: round(v, 4) for k, v in last.items() if "/" not in k or k.endswith("/reward")}
        print(json.dumps(shown, indent=1))
    return None if console else out


if __name__ == "__main__":
    main()
