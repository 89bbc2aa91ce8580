"""``rsim`` command line: ``rsim train [--preset demo|paper|tiny] [--set key=value ...] [--resume DIR]``,
``rsim eval ...`` (:mod:`algos.evaluation`) and ``rsim export RUN_DIR --out DIR`` (:mod:`algos.export`).

Multi-GPU / multi-process: ``accelerate launch [--num_processes N] -m algos.cli train ...`` runs the
same code. ``main(cfg)`` is the programmatic entry (tests call it with a :class:`RunConfig`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, Sequence

from agents.registry import spec_help as agent_specs
from rsim_env.data import spec_help

from .config import PRESETS, RunConfig, resolve
from .learners import LEARNERS, build_learner
from .trainer import Trainer, make_accelerator, to_dict

__all__ = ["build_problems", "build_learner", "build_agents", "train", "parse", "main"]


def build_problems(cfg: RunConfig) -> list:
    """The training problems named by ``cfg.data`` (:func:`rsim_env.data.load_problems`)."""
    from rsim_env.data import load_problems

    d = cfg.data
    return load_problems(d.source, limit=d.size, seed=d.seed, split=d.split or None)


def build_agents(cfg: RunConfig, learner: Any, device: Any, problems: Sequence[Any] = ()) -> dict[str, Any]:
    """Agents for ``learner`` on ``device`` from ``cfg.model`` specs (identical init on every process: seed first)."""
    from agents.registry import AgentContext, build_agent

    roles = ("planner", "reasoner") if learner.env_planner else ("reasoner",)
    shared: dict = {}  # LoRA agents on the same base spec share one frozen copy of it
    return {role: build_agent(getattr(cfg.model, role), AgentContext(
        role=role, config=getattr(cfg, role), dtype=cfg.model.dtype, device=device, seed=cfg.train.seed,
        max_rounds=cfg.env.max_steps, problems=problems, lora=getattr(cfg.model, f"{role}_lora"),
        frozen="same" if role in learner.trained else cfg.model.frozen, shared=shared)).agent for role in roles}


def train(cfg: RunConfig) -> dict[str, Any]:
    """Build everything from ``cfg`` and train (resuming if ``cfg.resume``)."""
    from accelerate.utils import set_seed

    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)  # same init on every process
    learner = build_learner(cfg)
    problems = build_problems(cfg)
    agents = build_agents(cfg, learner, acc.device, problems)
    trainer = Trainer(cfg.train, learner, agents, problems, acc, run_config=to_dict(cfg), env=cfg.env)
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


def init_planner_problem(path: str) -> str | None:
    """Why ``path`` cannot seed a planner (None if it can): it must hold trained planner weights."""
    from pathlib import Path

    from agents.runs import find_checkpoint, weights_file

    p = Path(path)
    if not p.is_dir():
        return "no such directory; pass the run dir of an earlier `rsim train` (or a saved planner dir)."
    if (p / "planner.json").is_file():
        return None
    ck = find_checkpoint(p)
    if ck is None:
        return "holds no complete checkpoint (checkpoints/step_*/state.json) and no planner.json."
    if not weights_file(ck, "planner").is_file():
        learner = json.loads((ck / "config.json").read_text()).get("learner")
        return (f"its checkpoint {ck.name} has no trained planner (learner {learner!r} did not train one); "
                "use a run trained with --learner stackelberg or planner_only.")
    return None


SPEC_EPILOG = f"""agent specs (model.planner / model.reasoner; the same as rsim eval --planner / --reasoner):
  {agent_specs()}
data specs (data.source; the same as rsim eval --source):
  {spec_help()}"""


def parse(argv: Sequence[str]) -> tuple[str, RunConfig, bool]:
    p = argparse.ArgumentParser(prog="rsim", description="rSIM: planner + reasoner LLMs, Stackelberg GRPO.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("eval", add_help=False, help="evaluate planner modes (see `rsim eval --help`; algos/evaluation/)")
    sub.add_parser("export", add_help=False, help="merged standalone models from a run (see `rsim export --help`)")
    t = sub.add_parser("train", help="train a learner (see --preset)", epilog=SPEC_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (demo: CPU minutes; paper: GPUs)")
    t.add_argument("--learner", choices=sorted(LEARNERS))
    t.add_argument("--steps", type=int, help="= --set train.steps=N")
    t.add_argument("--out", help="= --set train.output_dir=DIR")
    t.add_argument("--resume", help="checkpoint dir or run dir to continue from")
    t.add_argument("--planner", help="= --set model.planner=SPEC (agent specs below)")
    t.add_argument("--init-planner", metavar="RUN_DIR",
                   help="continue training an existing planner (backbone, head and strategy order): a run or "
                        "checkpoint dir that holds a trained planner, or a saved planner dir; = --set "
                        "model.planner=RUN_DIR after checking that it holds one (e.g. math -> code with "
                        "--learner planner_only --data code_tasks)")
    t.add_argument("--reasoner", help="= --set model.reasoner=SPEC (agent specs below)")
    t.add_argument("--data", help="= --set data.source=SPEC (data specs below)")
    t.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field, e.g. train.grpo.clip_eps_high=0.28, env.weights.follow=0.5, "
                        "env.check.timeout_s=5 (repeatable; list them with --print-config)")
    t.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    a = p.parse_args(argv)
    overrides: dict[str, Any] = {}
    for item in a.overrides:
        if "=" not in item:
            p.error(f"--set {item!r}: expected KEY=VALUE, e.g. train.steps=10")
        k, v = item.split("=", 1)
        overrides[k.strip()] = v.strip()
    if a.init_planner is not None:
        if a.planner is not None:
            p.error("--init-planner and --planner both set the planner; pass one of them.")
        why = init_planner_problem(a.init_planner)
        if why:
            p.error(f"--init-planner {a.init_planner}: {why}")
        a.planner = a.init_planner
    for flag, key in (("learner", "learner"), ("steps", "train.steps"), ("out", "train.output_dir"), ("resume", "resume"),
                      ("planner", "model.planner"), ("reasoner", "model.reasoner"), ("data", "data.source")):
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
    if not isinstance(cfg, RunConfig) and (sys.argv[1:] if cfg is None else list(cfg))[:1] == ["export"]:
        from .export import main as export  # `rsim export RUN_DIR --out DIR`: merged standalone models

        out = export((sys.argv[1:] if cfg is None else list(cfg))[1:])
        return None if console else out
    if not isinstance(cfg, RunConfig) and (sys.argv[1:] if cfg is None else list(cfg))[:1] == ["eval"]:
        from .evaluation import main as evaluate  # `rsim eval ...`: all of it lives in algos/evaluation/

        out = evaluate((sys.argv[1:] if cfg is None else list(cfg))[1:])
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
