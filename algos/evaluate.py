"""``rsim eval``: accuracy, strategy use and token cost of a reasoner under planner modes.

Modes (``--modes``, comma-separated; default: all that apply):

* ``none``          plain chain of thought: ``env(planner=False)``, one generation per sample;
* ``random``        a uniformly random planner (seeded);
* ``fixed:1,3,8``   a fixed strategy sequence, then termination (``--fixed`` adds sequences;
  ``fixed`` in ``--modes`` means every sequence given, or :data:`DEFAULT_FIXED`);
* ``trained``       a planner loaded from ``--planner PATH`` and run greedily (argmax). PATH is a
  ``Planner.save_pretrained`` dir, a trainer checkpoint (``step_*``) or a run dir (its newest
  checkpoint), or ``untrained:SPEC`` (fresh random head on SPEC's backbone, a control).

Any reasoner works (``--reasoner``: ``default``, a hub id, a local path, a trainer checkpoint whose
reasoner was trained, ``tiny`` = random tiny LM, ``template[:p]`` = scripted), so a planner trained
with one reasoner is evaluated with another without training: the paper's plug-in result.

Evaluation is batched: ``--batch`` problems x ``--k`` samples are one :class:`rsim_env.EnvGroup`
played by :func:`algos.rollout.rollout` (one batched call per agent per round). With ``k == 1``
the reasoner decodes greedily (pass@1 with a fixed seed); with ``k > 1`` it samples at
``--temperature`` and pass@k is reported too. ``--out DIR`` writes ``results.json`` (every figure
and the exact configuration), ``episodes.jsonl`` (every step's text), ``table.md`` and PNG plots.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from rsim_env.group import EnvGroup
from rsim_env.problems import Problem
from rsim_env.strategies import NUM_STRATEGIES

from . import analysis

__all__ = ["EvalConfig", "DEFAULT_FIXED", "load_eval_problems", "build_reasoner", "load_planner",
           "evaluate_mode", "episode_tokens", "run", "parse", "main"]

DEFAULT_FIXED: tuple[tuple[int, ...], ...] = ((8,), (6, 8), (1, 6, 8), (7, 6, 8), (1, 3, 8), (2, 0, 8))
"""Fixed sequences evaluated by default: answer at once, continue, decompose, plan, decompose+check, think+reflect."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything ``rsim eval`` needs; saved verbatim into ``results.json``."""

    reasoner: str = "default"
    """Reasoner: "default" (embedded SmolLM2-135M), hub id, local path, trainer checkpoint, "tiny", "template[:p]"."""
    planner: str = ""
    """Trained planner for mode "trained": save_pretrained dir, checkpoint or run dir, or "untrained:SPEC"."""
    source: str = "curriculum:heldout"
    """Problems: "curriculum:heldout" (embedded curriculum, held-out split), "default" (gsm_symbolic + basic_arithmetic),
    "rg:TASK[+TASK]" (reasoning-gym), a loader name (gsm8k, math500, ...), a .jsonl path."""
    split: str = ""
    """Dataset split for loader names ("" = the loader's default)."""
    data_seed: int = 1000
    """Generator seed of procedural sources; rsim train's demo preset trains on seed 0, so 1000 is held out."""
    limit: int = 100
    """Problems to evaluate (the first ``limit`` of the source)."""
    modes: tuple[str, ...] = ()
    """Modes to run (see module docstring); () = none, random, every fixed sequence, and trained if --planner."""
    fixed: tuple[tuple[int, ...], ...] = DEFAULT_FIXED
    """Sequences the "fixed" mode expands to."""
    k: int = 1
    """Samples per problem; 1 = greedy pass@1, > 1 = sampled pass@1 and pass@k."""
    temperature: float = 0.7
    """Reasoner sampling temperature when k > 1."""
    seed: int = 0
    """Seed of environments, random planner and sampling (each mode restarts from it)."""
    batch: int = 16
    """Problems per batched rollout."""
    max_steps: int = 3
    """Planner rounds before truncation (rsim train --preset demo uses 3)."""
    max_step_tokens: int = 32
    """Reasoner token cap per step (demo preset: 32)."""
    max_answer_tokens: int = 0
    """Token cap of the single no-planner generation; 0 = max_steps * max_step_tokens (same budget)."""
    protocol: str = ""
    """Reasoner turn protocol (rsim_env.render.PROTOCOLS; "" = the environment's default)."""
    last_number_fallback: bool = False
    """Grade the last number of a response that states no explicit answer (the env's reward rule)."""
    out: str = ""
    """Output directory ("" = print only)."""
    plots: bool = True
    """Write PNG plots into ``out``."""
    progress: bool = True
    """tqdm progress bar on stderr."""

    def __post_init__(self) -> None:
        for name in ("limit", "k", "batch", "max_steps", "max_step_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"EvalConfig.{name}={v!r} is invalid: use an int >= 1.")
        if self.max_answer_tokens < 0:
            raise ValueError(f"EvalConfig.max_answer_tokens={self.max_answer_tokens!r}: use 0 (auto) or a positive int.")
        if not self.temperature > 0:
            raise ValueError(f"EvalConfig.temperature={self.temperature!r} is invalid: use a positive float.")
        if self.protocol:
            from rsim_env.render import protocol

            protocol(self.protocol)
        for seq in self.fixed:
            if not seq or any(not isinstance(s, int) or not 0 <= s < NUM_STRATEGIES for s in seq):
                raise ValueError(f"EvalConfig.fixed has sequence {seq!r}: use ints in 0..{NUM_STRATEGIES - 1}, "
                                 "e.g. --fixed 1,3,8.")
        for m in self.resolved_modes():
            if m == "trained" and not self.planner:
                raise ValueError("mode 'trained' needs --planner PATH (a saved planner, checkpoint or run dir).")

    def resolved_modes(self) -> list[str]:
        """Concrete mode names (``fixed`` expanded to one ``fixed:a,b,c`` per sequence)."""
        modes = list(self.modes) or ["none", "random", "fixed"] + (["trained"] if self.planner else [])
        out: list[str] = []
        for m in modes:
            if m == "fixed":
                out += [fixed_name(s) for s in self.fixed]
            elif m in ("none", "random", "trained") or m.startswith("fixed:"):
                if m.startswith("fixed:"):
                    parse_sequence(m[len("fixed:"):])
                out.append(m)
            else:
                raise ValueError(f"unknown mode {m!r}; use none, random, fixed, fixed:1,3,8 or trained.")
        return list(dict.fromkeys(out))

    @property
    def answer_tokens(self) -> int:
        return self.max_answer_tokens or self.max_steps * self.max_step_tokens


def fixed_name(seq: Sequence[int]) -> str:
    return "fixed:" + ",".join(str(s) for s in seq)


def parse_sequence(text: str) -> tuple[int, ...]:
    """``"1,3,8"`` -> ``(1, 3, 8)``, with an error that names the bad item."""
    try:
        seq = tuple(int(x) for x in text.replace(" ", "").split(",") if x != "")
    except ValueError as e:
        raise ValueError(f"fixed sequence {text!r}: expected comma-separated strategy indices, e.g. 1,3,8.") from e
    if not seq or any(not 0 <= s < NUM_STRATEGIES for s in seq):
        raise ValueError(f"fixed sequence {text!r}: use strategy indices in 0..{NUM_STRATEGIES - 1}, e.g. 1,3,8.")
    return seq


# ------------------------------------------------------------------------------------- inputs

def load_eval_problems(cfg: EvalConfig) -> list[Problem]:
    """The first ``cfg.limit`` problems of ``cfg.source`` (see :class:`EvalConfig`)."""
    from rsim_env.problems import default_source, reasoning_gym_problems

    src = cfg.source
    if src.startswith("curriculum"):
        from rsim_env.curriculum import curriculum_problems

        return curriculum_problems(cfg.limit, src.partition(":")[2] or "heldout", seed=cfg.data_seed)
    if src == "default":
        return default_source(size=cfg.limit, seed=cfg.data_seed)
    if src.startswith("rg:"):
        tasks = tuple(t for t in src[3:].split("+") if t)
        return reasoning_gym_problems(tasks, size=cfg.limit, seed=cfg.data_seed)
    from rsim_env.loaders import load_problems

    return load_problems(src, split=cfg.split or None, limit=cfg.limit)[: cfg.limit]


def _checkpoint_dir(path: Path) -> Path | None:
    """A trainer checkpoint at or under ``path`` (``step_*`` dir, run dir, or checkpoints dir)."""
    from .checkpoint import latest

    if (path / "state.json").is_file():
        return path
    return latest(path / "checkpoints") or latest(path)


def build_reasoner(spec: str, cfg: EvalConfig, problems: Sequence[Problem]) -> tuple[Any, dict[str, Any]]:
    """Reasoner policy for ``spec`` plus a description of what was loaded."""
    if spec.startswith("template"):
        from agents.scripted import TemplateReasoner

        p = float(spec.split(":", 1)[1]) if ":" in spec else 1.0
        oracle = {pr.question: pr.answer for pr in problems}
        return TemplateReasoner(oracle=oracle, p_correct=p, seed=cfg.seed), {"kind": "template", "p_correct": p}
    import torch

    from agents.reasoner import Reasoner, ReasonerConfig

    rc = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, max_answer_tokens=cfg.answer_tokens,
                        greedy=cfg.k == 1, temperature=cfg.temperature, seed=cfg.seed)
    if spec == "tiny":
        from agents.loading import tiny_model

        return Reasoner(*tiny_model("causal", seed=cfg.seed), config=rc), {"kind": "tiny"}
    ck = _checkpoint_dir(Path(spec)) if Path(spec).is_dir() else None
    if ck is not None:  # a trainer checkpoint: base model from its config, trained weights on top
        from safetensors.torch import load_model

        run = json.loads((ck / "config.json").read_text())
        weights = ck / "model.reasoner.safetensors"
        if not weights.is_file():
            raise ValueError(f"--reasoner {spec}: checkpoint {ck} has no trained reasoner (model.reasoner.safetensors); "
                             f"its learner ({run.get('learner')}) froze it. Pass its base model {run['model']['reasoner']!r}.")
        if run["model"]["reasoner"] == "tiny":  # the toy word-sampler of `rsim train --preset tiny`
            from algos.tiny_agents import TinyReasoner

            reasoner = TinyReasoner()
            load_model(reasoner.module, str(weights))
            reasoner.greedy = cfg.k == 1
        else:
            reasoner = Reasoner.from_spec(run["model"]["reasoner"], rc, dtype=torch.float32)
            load_model(reasoner.model, str(weights))
        return reasoner, {"kind": "checkpoint", "checkpoint": str(ck), "base": run["model"]["reasoner"],
                          "learner": run.get("learner")}
    return Reasoner.from_spec(spec, rc, dtype=torch.float32), {"kind": "model", "spec": spec}


def load_planner(path: str, cfg: EvalConfig) -> tuple[Any, dict[str, Any]]:
    """Greedy planner from ``path`` (see :class:`EvalConfig.planner`) plus what was loaded."""
    from agents.planner import Planner, PlannerConfig

    pc = PlannerConfig(greedy=True, seed=cfg.seed)
    if path.startswith("untrained:"):
        spec = path.split(":", 1)[1]
        if spec == "tiny":
            from agents.loading import tiny_model

            return Planner(*tiny_model("backbone", seed=cfg.seed), config=pc), {"kind": "untrained", "spec": spec}
        return Planner.from_spec(spec, pc), {"kind": "untrained", "spec": spec}
    p = Path(path)
    if (p / "planner.json").is_file():
        return Planner.from_pretrained(p, config=pc), {"kind": "save_pretrained", "path": str(p)}
    ck = _checkpoint_dir(p) if p.is_dir() else None
    if ck is None:
        raise ValueError(f"--planner {path!r} is neither a saved planner (planner.json) nor a trainer checkpoint / run "
                         "dir (state.json, checkpoints/step_*); train one with `rsim train` or pass untrained:SPEC.")
    from safetensors.torch import load_model

    run = json.loads((ck / "config.json").read_text())
    weights = ck / "model.planner.safetensors"
    if not weights.is_file():
        raise ValueError(f"--planner {path}: checkpoint {ck} has no planner weights; its learner "
                         f"({run.get('learner')}) trains no planner.")
    spec = run["model"]["planner"]
    info = {"kind": "checkpoint", "checkpoint": str(ck), "base": spec, "learner": run.get("learner"),
            "trained_with_reasoner": run["model"]["reasoner"], "train_data": run.get("data"),
            "step": json.loads((ck / "state.json").read_text()).get("step")}
    if spec == "tiny":  # the toy MLP planner of `rsim train --preset tiny`
        from algos.tiny_agents import TinyPlanner

        planner = TinyPlanner(max_rounds=run["train"]["env_max_steps"])
        load_model(planner.module, str(weights))
        planner.greedy = True
        return planner, info
    planner = Planner.from_spec(spec, pc)
    load_model(planner, str(weights))
    return planner, info


# ------------------------------------------------------------------------------------ episodes

def episode_tokens(planner_rec: dict[str, Any], reasoner_rec: dict[str, Any], has_planner: bool,
                   planner_cached: bool = True) -> dict[str, Any]:
    """Token counts of one episode, from the agents' records (``None`` where an agent keeps none).

    * ``planner_read``: tokens the planner encoded over the episode: its longest context when it
      keeps a KV cache across rounds (``PlannerConfig.use_cache``), else the sum of its context
      lengths (it re-encodes the whole context at every decision);
    * ``planner_context``: length of its longest context;
    * ``reasoner_read``: tokens fed to the reasoner that it did not write (prompt, injected
      strategy prompts, delimiters); each is encoded once thanks to its KV cache;
    * ``reasoner_written``: tokens it generated.
    """
    out: dict[str, Any] = dict.fromkeys(analysis.TOKEN_KEYS)
    if not has_planner:
        out["planner_read"] = out["planner_context"] = 0
    elif "positions" in planner_rec:
        out["planner_context"] = max((p + 1 for p in planner_rec["positions"]), default=0)
        out["planner_read"] = (out["planner_context"] if planner_cached
                               else sum(p + 1 for p in planner_rec["positions"]))
    if "gen_mask" in reasoner_rec:
        written = int(sum(reasoner_rec["gen_mask"]))
        out["reasoner_written"] = written
        out["reasoner_read"] = len(reasoner_rec["input_ids"]) - written
    elif "tokens" in reasoner_rec:  # algos.tiny_agents.TinyReasoner: words drawn per step, no prompt
        out["reasoner_written"] = sum(len(t) for t in reasoner_rec["tokens"])
    return out


def _row(mode: str, problem: Problem, traj: dict[str, Any], sample: int, has_planner: bool,
         planner_cached: bool) -> dict[str, Any]:
    info = traj["info"]
    return {
        "mode": mode, "problem_id": problem.id, "sample": sample, "answer": problem.answer,
        "extracted": info["extracted"], "correct": bool(info["correct"]), "reason": info["reason"],
        "format": float(info["components"].get("format", 0.0)), "rounds": info["num_rounds"],
        "terminated": bool(info["terminated"]), "truncated": bool(info["truncated"]),
        "injected": list(info["strategies"]) if has_planner else [],
        "detected": [list(d) for d in info["detected"]], "steps": list(info["steps"]),
        "shown_steps": list(info.get("shown_steps", info["steps"])), "echo": list(info.get("echo", [])),
        "final_text": (info.get("shown_steps") or info["steps"] or [""])[-1],
        "tokens": episode_tokens(traj.get("planner") or {}, traj.get("reasoner") or {}, has_planner, planner_cached),
    }


def make_planner(mode: str, cfg: EvalConfig, trained: Any) -> Any:
    from agents.scripted import FixedPlanner, RandomPlanner

    if mode == "none":
        return None
    if mode == "random":
        return RandomPlanner(seed=cfg.seed)
    if mode.startswith("fixed:"):
        return FixedPlanner(parse_sequence(mode[len("fixed:"):]))
    return trained


def _reseed(agent: Any, seed: int) -> None:
    """Restart an agent's sampling generator, so each mode's results do not depend on mode order."""
    inner = getattr(agent, "inner", agent)
    if getattr(inner, "generator", None) is not None and hasattr(inner, "reset"):
        try:
            inner.reset(0, seed=seed)
        except TypeError:
            pass


def evaluate_mode(mode: str, problems: Sequence[Problem], reasoner: Any, planner: Any, cfg: EvalConfig,
                  bar: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play every problem ``cfg.k`` times under ``mode``; return episode rows and timing stats."""
    from .rollout import rollout

    import torch

    torch.manual_seed(cfg.seed)
    _reseed(reasoner, cfg.seed)
    if planner is not None:
        _reseed(planner, cfg.seed)
    has_planner = mode != "none"
    cached = bool(getattr(getattr(planner, "config", None), "use_cache", False))  # planners older than the cache: False
    rows: list[dict[str, Any]] = []
    stats = {"wall_s": 0.0, "planner_s": 0.0, "reasoner_s": 0.0, "planner_calls": 0, "reasoner_calls": 0}
    for b in range(0, len(problems), cfg.batch):
        chunk = list(problems[b: b + cfg.batch])
        extra = {"protocol": cfg.protocol} if cfg.protocol else {}
        group = EnvGroup(chunk, group_size=cfg.k, planner=has_planner, max_steps=cfg.max_steps,
                         last_number_fallback=cfg.last_number_fallback, **extra)
        t0 = time.perf_counter()
        result = rollout(group, reasoner, planner, seed=cfg.seed + b * cfg.k)
        stats["wall_s"] += time.perf_counter() - t0
        for agent in ("planner", "reasoner"):
            stats[f"{agent}_s"] += result.stats["seconds"][agent]
            stats[f"{agent}_calls"] += result.stats["calls"][agent]
        for traj in result.trajectories:
            sample = traj["copy"] - traj["problem_index"] * cfg.k  # copy ids run over all problems of the group
            rows.append(_row(mode, chunk[traj["problem_index"]], traj, sample, has_planner, cached))
        if bar is not None:
            bar.update(len(chunk))
    return rows, stats


# ----------------------------------------------------------------------------------------- run

def run(cfg: EvalConfig) -> dict[str, Any]:
    """Evaluate every mode of ``cfg``; return the full results dict (also written under ``cfg.out``)."""
    from . import report

    modes = cfg.resolved_modes()
    t_start = time.perf_counter()
    problems = load_eval_problems(cfg)
    if not problems:
        raise ValueError(f"source {cfg.source!r} gave no problems.")
    t_load = time.perf_counter()
    reasoner, reasoner_info = build_reasoner(cfg.reasoner, cfg, problems)
    trained, planner_info = (load_planner(cfg.planner, cfg) if "trained" in modes else (None, None))
    if planner_info is not None:
        base = planner_info.get("trained_with_reasoner")
        planner_info["plugin"] = base is not None and base != cfg.reasoner
    load_s = time.perf_counter() - t_load

    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(modes) * len(problems), desc="rsim eval", unit="problem", file=sys.stderr)
    all_rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    for mode in modes:
        if bar is not None:
            bar.set_postfix_str(mode)
        rows, stats = evaluate_mode(mode, problems, reasoner, make_planner(mode, cfg, trained), cfg, bar)
        all_rows += rows
        figures[mode] = {**analysis.mode_figures(rows, cfg.k), "strategies": analysis.strategy_histograms(rows),
                         "accuracy_by_strategy_count": analysis.accuracy_by_strategy_count(rows),
                         "timing": stats}
    if bar is not None:
        bar.close()
    base = None
    if "none" in figures:
        base = analysis.token_cost([r for r in all_rows if r["mode"] == "none"], figures["none"]["timing"]["wall_s"])
    for mode in modes:
        rows = [r for r in all_rows if r["mode"] == mode]
        figures[mode]["token_cost"] = analysis.token_cost(rows, figures[mode]["timing"]["wall_s"],
                                                         None if mode == "none" else base)
    results = {
        "config": dataclasses.asdict(cfg) | {"modes_resolved": modes},
        "reasoner": reasoner_info, "planner": planner_info,
        "data": {"source": cfg.source, "problems": len(problems), "first_ids": [p.id for p in problems[:5]],
                 "data_seed": cfg.data_seed},
        "modes": figures,
        "strategy_vs_accuracy": analysis.accuracy_by_strategy_count(all_rows),
        "per_problem": [{k: v for k, v in r.items() if k != "steps"} for r in all_rows],
        "timing": {"load_s": load_s, "total_s": time.perf_counter() - t_start},
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        **_versions()},
    }
    table = report.markdown_table(results)
    results["table_md"] = table
    print(table)
    if cfg.out:
        results["files"] = report.write_all(results, all_rows, Path(cfg.out), plots=cfg.plots)
    return results


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for pkg in ("torch", "transformers", "rsim"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


# ------------------------------------------------------------------------------------- command line

def build_parser() -> argparse.ArgumentParser:
    d = EvalConfig()
    p = argparse.ArgumentParser(prog="rsim eval", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--reasoner", default=d.reasoner, help="reasoner model spec or trained checkpoint")
    p.add_argument("--planner", default=d.planner, help="trained planner (adds mode 'trained')")
    p.add_argument("--source", default=d.source, help="problems: default | rg:TASK[+TASK] | gsm8k | math500 | file.jsonl")
    p.add_argument("--split", default=d.split)
    p.add_argument("--data-seed", type=int, default=d.data_seed, help="seed of procedural sources (held out: != 0)")
    p.add_argument("--limit", type=int, default=d.limit, help="number of problems")
    p.add_argument("--modes", default="", help="comma list of none,random,fixed,fixed:1-3-8,trained (default: all)")
    p.add_argument("--fixed", action="append", default=[], metavar="1,3,8",
                   help="a fixed strategy sequence (repeatable); default: " + " ".join(
                       ",".join(map(str, s)) for s in DEFAULT_FIXED))
    p.add_argument("--k", type=int, default=d.k, help="samples per problem (pass@k; 1 = greedy pass@1)")
    p.add_argument("--temperature", type=float, default=d.temperature, help="sampling temperature when k > 1")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--batch", type=int, default=d.batch, help="problems per batched rollout")
    p.add_argument("--max-steps", type=int, default=d.max_steps)
    p.add_argument("--max-step-tokens", type=int, default=d.max_step_tokens)
    p.add_argument("--max-answer-tokens", type=int, default=d.max_answer_tokens, help="0 = max_steps*max_step_tokens")
    p.add_argument("--out", default=d.out, help="output directory (results.json, table.md, plots)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--no-progress", action="store_true")
    return p


def split_modes(text: str) -> tuple[str, ...]:
    """``"none,fixed:1,3,8,random"`` -> ``("none", "fixed:1,3,8", "random")`` (bare numbers extend the
    preceding fixed sequence; ``fixed:1-3-8`` is accepted too)."""
    out: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item.isdigit() and out and out[-1].startswith("fixed:"):
            out[-1] += "," + item
        else:
            out.append(item.replace("-", ",") if item.startswith("fixed:") else item)
    return tuple(out)


def parse(argv: Sequence[str]) -> EvalConfig:
    p = build_parser()
    a = p.parse_args(list(argv))
    modes = split_modes(a.modes)
    try:
        fixed = tuple(parse_sequence(s) for s in a.fixed) or DEFAULT_FIXED
        return EvalConfig(reasoner=a.reasoner, planner=a.planner, source=a.source, split=a.split,
                          data_seed=a.data_seed, limit=a.limit, modes=modes, fixed=fixed, k=a.k,
                          temperature=a.temperature, seed=a.seed, batch=a.batch, max_steps=a.max_steps,
                          max_step_tokens=a.max_step_tokens, max_answer_tokens=a.max_answer_tokens, out=a.out,
                          plots=not a.no_plots, progress=not a.no_progress)
    except ValueError as e:
        p.error(str(e))
        raise  # unreachable: p.error exits


def main(cfg: EvalConfig | Sequence[str] | None = None) -> dict[str, Any]:
    """``main(EvalConfig)``, ``main(["--limit", "10", ...])`` or console (``sys.argv``) -> results dict."""
    if not isinstance(cfg, EvalConfig):
        cfg = parse(sys.argv[1:] if cfg is None else cfg)
    return run(cfg)


if __name__ == "__main__":
    main()
