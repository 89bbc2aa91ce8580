"""``rsim`` command line: ``rsim train [--preset NAME] [--FLAG VALUE ...] [--set key=value ...] [--resume DIR]``,
``rsim eval ...`` (:mod:`algos.evaluation`), ``rsim study ...`` (:mod:`algos.study.cli`) and
``rsim export RUN_DIR --out DIR`` (:mod:`algos.export`).

Multi-GPU / multi-process: ``accelerate launch [--num_processes N] -m algos.cli train ...`` runs the
same code. ``main(cfg)`` is the programmatic entry (tests call it with a :class:`RunConfig`).

Before any model is loaded, :func:`preflight` checks the output dir, the resume point (and which
config changes a resume may make, :mod:`algos.resume_check`), the model specs and the data. On the
console every error is one line and a non-zero exit (:mod:`algos.console`; ``--debug`` or
``RSIM_DEBUG=1`` for the traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import console, threads

if TYPE_CHECKING:
    from .config import RunConfig
    from .learners import Learner

# Importing this module reads no sys.argv and loads no torch: main() sets the OpenMP wait policy first,
# because libgomp reads it once, when torch loads it (algos/threads.py). So the rest is imported where used.

__all__ = ["build_problems", "build_learner", "build_agents", "train", "parse", "main"]


def build_learner(cfg: RunConfig) -> Learner:
    """The learner ``cfg.learner`` names (:func:`algos.learners.build_learner`)."""
    from .learners import build_learner as build

    return build(cfg)


def build_problems(cfg: RunConfig) -> list:
    """The training problems named by ``cfg.data`` (:func:`rsim_env.sources.data.load_problems`)."""
    from rsim_env.sources.data import load_problems

    d = cfg.data
    return load_problems(d.source, limit=d.size, seed=d.seed, split=d.split or None)


def build_agents(cfg: RunConfig, learner: Any, device: Any, problems: Sequence[Any] = ()) -> dict[str, Any]:
    """Agents for ``learner`` on ``device`` from ``cfg.model`` specs (:func:`algos.build.build_agents`)."""
    from .build import build_agents as build

    return build(cfg, learner, device, problems)


def preflight(cfg: RunConfig) -> tuple[Path | None, int]:
    """Check everything that can be checked without a model; return the resume point and its step.

    Raises ``ValueError`` for a bad output dir, model spec or resume point, and
    :class:`algos.resume_check.ResumeError` for a config change a resume may not make.
    """
    from . import preflight as pre
    from .config import config_from_saved
    from .resume_check import check_config_change
    from .trainer import to_dict

    point, step = None, 0
    if cfg.resume:
        point, saved, step = pre.read_resume_point(cfg.resume)
        check_config_change(to_dict(config_from_saved(saved, str(point))), to_dict(cfg), cfg.allow_config_change,
                            where=str(point))
    pre.check_output_dir(cfg.train.output_dir, point)
    from agents.registry import check_spec

    for role in ("planner", "reasoner") if build_learner(cfg).env_planner else ("reasoner",):
        check_spec(getattr(cfg.model, role), role)
    return point, step


def _already_complete(point: Path, step: int, steps: int, out: str) -> dict[str, Any]:
    from .checkpoint_checks import remove_debris
    from .resume_check import check_not_complete

    if os.environ.get("RANK", "0") == "0":
        remove_debris(Path(out) / "checkpoints")  # a save killed earlier left it: sweep it even with nothing to train
        print(check_not_complete(step, steps, str(point)), file=sys.stderr)
    return {"steps": step, "already_complete": True, "checkpoint": str(point), "history": [], "params": {},
            "is_main_process": os.environ.get("RANK", "0") == "0"}


def train(cfg: RunConfig) -> dict[str, Any]:
    """Build everything from ``cfg`` and train (resuming if ``cfg.resume``)."""
    from accelerate.utils import set_seed

    from . import preflight as pre
    from .protocols import RepeatsFinalTexts
    from .resume_check import check_not_complete
    from .trainer import Trainer, make_accelerator, to_dict

    point, step = preflight(cfg)
    if point is not None and check_not_complete(step, cfg.train.steps, str(point)):
        return _already_complete(point, step, cfg.train.steps, cfg.train.output_dir)
    problems = build_problems(cfg)  # a bad data file fails here, before any model is loaded
    sandbox = pre.check_sandbox(problems)  # code problems: bubblewrap or an explicit opt-in, before any model
    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)  # same init on every process
    cfg = dataclasses.replace(cfg, threads=threads.use_threads(cfg.threads))  # the saved config records the count used
    learner = build_learner(cfg)
    agents = build_agents(cfg, learner, acc.device, problems)
    trainer = Trainer(cfg.train, learner, agents, problems, acc, run_config=to_dict(cfg), env=cfg.env)
    if isinstance(agents["reasoner"], RepeatsFinalTexts) and agents["reasoner"].grades_repeat:  # a plan tree
        from rsim_env.grading import GradeCache

        trainer.env_options["grader"] = GradeCache()
    if cfg.resume:
        trainer.resume(cfg.resume)
    t0 = time.perf_counter()
    start = trainer.step
    out = trainer.train()
    steps = out["steps"] - start
    out["threads"] = cfg.threads
    out["seconds"] = time.perf_counter() - t0
    out["seconds_per_step"] = out["seconds"] / max(1, steps)
    out["is_main_process"] = acc.is_main_process
    if sandbox is not None:
        out["sandbox"] = sandbox
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


def _parser() -> argparse.ArgumentParser:
    """``rsim`` and its ``train`` flags: generated from :class:`RunConfig` (:mod:`algos.dataclass_cli`, as ``rsim eval``'s)."""
    from agents.registry import spec_help as agent_specs
    from rsim_env import __version__
    from rsim_env.sources.data import spec_help

    from .config import PRESETS, RunConfig
    from .dataclass_cli import ArgumentParser, add_fields
    from .learners import LEARNERS

    p = ArgumentParser(prog="rsim", description="rSIM: planner + reasoner LLMs, Stackelberg GRPO.")
    p.add_argument("--version", action="version", version=f"rsim {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("eval", add_help=False, help="evaluate planner modes (see `rsim eval --help`; algos/evaluation/)")
    sub.add_parser("view", add_help=False, help="write a static HTML page of rollouts (see `rsim view --help`)")
    sub.add_parser("export", add_help=False, help="merged standalone models from a run (see `rsim export --help`)")
    sub.add_parser("study", add_help=False, help="does a trained planner help this reasoner? fill, train, score, "
                   "report (see `rsim study --help`; algos/study/)")
    epilog = (f"agent specs (--planner / --reasoner, the same in rsim eval):\n  {agent_specs()}\n"
              f"data specs (--data, the same in rsim eval):\n  {spec_help()}\n"
              f"learners (--learner): {', '.join(LEARNERS)}, or your own as package.module:factory")
    t = sub.add_parser("train", help="train a learner (see --preset)", epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (demo: CPU minutes; planner: the "
                   "README's planner recipe; paper: GPUs); flags and --set override it")
    t.add_argument("--init-planner", metavar="RUN_DIR",
                   help="continue training an existing planner (backbone, head and strategy order): a run or "
                        "checkpoint dir that holds a trained planner, or a saved planner dir; it is --planner "
                        "RUN_DIR after checking that it holds one (e.g. math -> code with "
                        "--learner planner_only --data code_tasks)")
    t.add_argument("--debug", action="store_true", help="show the traceback of an error (or set RSIM_DEBUG=1)")
    t.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    add_fields(t, RunConfig)
    return p


def parse(argv: Sequence[str]) -> tuple[str, RunConfig, bool]:
    """``rsim train`` flags -> ``(command, config, print_only)``; a bad flag or value raises ``ValueError``."""
    from . import preflight as pre
    from .config import RunConfig, resolve, resolve_resumed
    from .dataclass_cli import given

    p = _parser()
    a = p.parse_args(argv)
    overrides = given(RunConfig, a)
    if a.init_planner is not None:
        if "model.planner" in overrides:
            p.error("--init-planner and --planner both set the planner; pass one of them.")
        why = init_planner_problem(a.init_planner)
        if why:
            p.error(f"--init-planner {a.init_planner}: {why}")
        overrides["model.planner"] = a.init_planner
    if overrides.get("resume"):  # the saved config is the base: no silent fall-back to the defaults
        overrides.setdefault("threads", 0)  # but the thread count is chosen again, for the machine as it is now
        point, saved, _ = pre.read_resume_point(overrides["resume"])
        return a.command, resolve_resumed(saved, a.preset, overrides, where=str(point)), a.print_config
    return a.command, resolve(a.preset, overrides), a.print_config


def main(cfg: RunConfig | Sequence[str] | None = None) -> dict[str, Any] | None:
    """Programmatic: ``main(RunConfig)`` or ``main(["train", ...])`` -> summary dict.

    Console (``rsim ...``, no argument): parses ``sys.argv``; an error is one line on stderr and
    exit status 1 (:func:`algos.console.run`), success returns None (exit status 0). A command line
    (console or list) first sets the OpenMP wait policy for the process (:func:`algos.threads.wait_policy_env`),
    which takes effect if torch has not been loaded yet.
    """
    if cfg is None or isinstance(cfg, (list, tuple)):  # a command line, not a RunConfig
        argv = sys.argv[1:] if cfg is None else list(cfg)
        os.environ.update(threads.wait_policy_env(os.environ, argv))  # before torch loads (see the imports)
    if cfg is None:
        status = console.run(_run, argv)
        if status:
            sys.exit(status)
        return None
    return _run(cfg)


def _run(cfg: RunConfig | Sequence[str]) -> dict[str, Any]:
    from .config import RunConfig
    from .trainer import to_dict

    if not isinstance(cfg, RunConfig) and list(cfg)[:1] == ["export"]:
        from .export import main as export  # `rsim export RUN_DIR --out DIR`: merged standalone models

        return export(list(cfg)[1:])
    if not isinstance(cfg, RunConfig) and list(cfg)[:1] == ["eval"]:
        from .evaluation import main as evaluate  # `rsim eval ...`: all of it lives in algos/evaluation/

        return evaluate(list(cfg)[1:])
    if not isinstance(cfg, RunConfig) and list(cfg)[:1] == ["study"]:
        from .study.cli import main as study  # `rsim study ...`: all of it lives in algos/study/

        return study(list(cfg)[1:])
    if not isinstance(cfg, RunConfig) and list(cfg)[:1] == ["view"]:
        from .viewer import main as view  # `rsim view DIR --out FILE.html`: all of it lives in algos/viewer/

        return view(list(cfg)[1:])
    if not isinstance(cfg, RunConfig):
        command, cfg, print_only = parse(list(cfg))
        if print_only:
            print(json.dumps(to_dict(cfg), indent=1))
            return {"config": to_dict(cfg)}
    out = train(cfg)
    if out["is_main_process"] and not out.get("already_complete"):
        from .summary import report  # what ran, where it is, what next; the numbers go to RUN_DIR/summary.json

        print(report(cfg, out))
    return out


if __name__ == "__main__":
    main()
