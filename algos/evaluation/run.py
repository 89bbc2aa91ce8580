"""Play every planner mode over the problems and assemble the results dict of ``rsim eval``.

Evaluation is batched: ``batch`` problems x ``k`` samples are one :class:`rsim_env.EnvGroup`
played by :func:`algos.rollout.rollout` (one batched call per agent per round). With ``k == 1``
the reasoner decodes greedily (pass@1 with a fixed seed); with ``k > 1`` it samples at
``temperature`` and pass@k is reported too. Every batch is seeded on its own (``seed + start * k``),
so a batch's episodes do not depend on which batches ran before it: that is what lets an
interrupted evaluation resume (:mod:`.journal`) to the same results.

The env and reasoner settings are the evaluated run's unless overridden (:mod:`.settings`); code
problems need the sandbox as asked (:func:`algos.preflight.check_sandbox`), checked before any model loads.
"""

from __future__ import annotations

import dataclasses
import platform
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from agents.registry import AgentContext, Built, build_agent
from rsim_env.sources.data import load_problems
from rsim_env import record
from rsim_env.group import EnvGroup
from rsim_env.problem import Problem

from .. import analysis, threads
from ..preflight import check_sandbox
from ..protocols import CountsTokens, HasAdapter, ReportsUsage
from . import report, settings
from .config import EvalConfig, parse_sequence
from .journal import Journal, settings_of
from .looks import record_look

__all__ = ["load_eval_problems", "eval_device", "build_reasoner", "load_planner", "episode_tokens", "evaluate_mode", "run"]


def eval_device() -> Any:
    """The torch device evaluation runs its agents on: accelerate's, as training's (a GPU when one is visible;
    ``CUDA_VISIBLE_DEVICES=`` or ``ACCELERATE_USE_CPU=1`` keeps it on the CPU). Before, eval built every agent on
    the CPU even on a GPU machine (found by ``tools/gpu_check.sh`` on an H200)."""
    from accelerate import PartialState

    return PartialState().device


def load_eval_problems(cfg: EvalConfig) -> list[Problem]:
    """The first ``cfg.data.size`` problems of ``cfg.data.source`` (:func:`rsim_env.sources.data.load_problems`)."""
    d = cfg.data
    return load_problems(d.source, limit=d.size, seed=d.seed, split=d.split or None)


def build_reasoner(spec: str, cfg: EvalConfig, problems: Sequence[Problem], shared: dict | None = None) -> Built:
    """Reasoner for ``spec`` (greedy when ``k == 1``) plus a description of what was loaded."""
    from agents.reasoner import ReasonerConfig

    rc = dataclasses.replace(cfg.reasoner, max_answer_tokens=cfg.answer_tokens, greedy=cfg.k == 1,
                             temperature=cfg.temperature, seed=cfg.seed)
    assert isinstance(rc, ReasonerConfig)
    built = build_agent(spec, AgentContext("reasoner", config=rc, seed=cfg.seed, max_rounds=cfg.env.max_steps,
                                           problems=problems, shared={} if shared is None else shared,
                                           frozen=cfg.model.frozen, device=eval_device()))
    if cfg.model.frozen != "same" and isinstance(built.agent, HasAdapter) and built.agent.lora is not None:
        raise ValueError(f"model.frozen={cfg.model.frozen}: the reasoner {spec!r} is a LoRA adapter, which decodes on its merged "
                         f"sampler; export it first (rsim export {spec} --out DIR) and evaluate DIR/reasoner with --set model.frozen=...")
    return built


def load_planner(spec: str, cfg: EvalConfig, shared: dict | None = None) -> Built:
    """Greedy planner for ``spec`` plus what was loaded."""
    from agents.planners.llm import PlannerConfig

    return build_agent(spec, AgentContext("planner", config=PlannerConfig(greedy=True, seed=cfg.seed), seed=cfg.seed,
                                          max_rounds=cfg.env.max_steps, shared={} if shared is None else shared,
                                          device=eval_device()))


def episode_tokens(planner: Any, planner_rec: Any, reasoner: Any, reasoner_rec: Any) -> dict[str, Any]:
    """Token counts of one episode from the agents' own ``token_usage`` (``None`` where an agent gives none).

    ``planner`` is None in mode ``none`` (the planner then costs 0 tokens).
    """
    out: dict[str, Any] = dict.fromkeys(analysis.TOKEN_KEYS)
    if planner is None:
        out["planner_read"] = out["planner_context"] = 0
    for agent, rec in ((planner, planner_rec), (reasoner, reasoner_rec)):
        if isinstance(agent, CountsTokens) and rec:
            out.update(agent.token_usage(rec))
    return out


def _row(mode: str, problem: Problem, traj: dict[str, Any], sample: int, planner: Any, reasoner: Any) -> dict[str, Any]:
    """One ``episodes.jsonl`` row: the episode's :class:`rsim_env.record.EpisodeRecord` (question and injected
    texts included) with its mode, sample and token counts."""
    tokens = episode_tokens(planner, traj.get("planner"), reasoner, traj.get("reasoner"))
    return record.from_outcome(traj, mode=mode, sample=sample, tokens=tokens).to_dict()


def make_planner(mode: str, cfg: EvalConfig, trained: Any) -> Any:
    from agents.scripted.policies import FixedPlanner, RandomPlanner

    if mode == "none":
        return None
    if mode == "random":
        return RandomPlanner(seed=cfg.seed)
    if mode.startswith("fixed:"):
        return FixedPlanner(parse_sequence(mode[len("fixed:"):]))
    return trained


def _reseed(agent: Any, seed: int) -> None:
    """Restart an agent's sampling generator, so a batch's results depend on neither mode order nor earlier batches."""
    if agent is not None:  # no planner in mode none
        try:
            agent.reset(0, seed=seed)
        except TypeError:  # an agent without a seedable generator (a plug-in): nothing to restart
            pass


def _play_batch(mode: str, chunk: list[Problem], reasoner: Any, planner: Any, cfg: EvalConfig, seed: int
                ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One batch of ``mode``: its episode rows and timing."""
    import torch

    from ..rollout import rollout

    torch.manual_seed(seed)
    for agent in (reasoner, planner):
        _reseed(agent, seed)
    group = EnvGroup(chunk, group_size=cfg.k, config=dataclasses.replace(cfg.env, planner=mode != "none"))
    t0 = time.perf_counter()
    result = rollout(group, reasoner, planner, seed=seed)
    stats = {"wall_s": time.perf_counter() - t0}
    for agent in ("planner", "reasoner"):
        stats[f"{agent}_s"] = result.stats["seconds"][agent]
        stats[f"{agent}_calls"] = result.stats["calls"][agent]
    rows = []
    for traj in result.trajectories:
        sample = traj["copy"] - traj["problem_index"] * cfg.k  # copy ids run over all problems of the group
        rows.append(_row(mode, chunk[traj["problem_index"]], traj, sample, planner, reasoner))
    return rows, stats


def evaluate_mode(mode: str, problems: Sequence[Problem], reasoner: Any, planner: Any, cfg: EvalConfig,
                  bar: Any = None, journal: Journal | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play every problem ``cfg.k`` times under ``mode``; return episode rows and timing stats.

    With a ``journal``, batches it holds are taken from it and each new batch is recorded as it finishes.
    """
    rows: list[dict[str, Any]] = []
    stats = {"wall_s": 0.0, "planner_s": 0.0, "reasoner_s": 0.0, "planner_calls": 0, "reasoner_calls": 0}
    for b in range(0, len(problems), cfg.batch):
        chunk = list(problems[b: b + cfg.batch])
        keys = [(p.id, s) for p in chunk for s in range(cfg.k)]
        unit = journal.get(mode, b, keys) if journal is not None else None
        if unit is None:
            new_rows, new_stats = _play_batch(mode, chunk, reasoner, planner, cfg, cfg.seed + b * cfg.k)
            if journal is not None:
                journal.append(mode, b, new_rows, new_stats)
                unit = journal.done[(mode, b)]
            else:
                unit = {"rows": new_rows, "stats": new_stats}
        rows += unit["rows"]
        for key in stats:
            stats[key] += unit["stats"][key]
        threads.announce()  # once a batch has been played: a run that fails at once still fails in one line
        if bar is not None:
            bar.update(len(chunk))
    return rows, stats


def _figures(modes: list[str], problems: list[Problem], reasoner: Any, trained: Any, cfg: EvalConfig,
             journal: Journal | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    bar = None
    if cfg.progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(modes) * len(problems), desc="rsim eval", unit="problem", file=sys.stderr)
    all_rows: list[dict[str, Any]] = []
    figures: dict[str, Any] = {}
    for mode in modes:
        if bar is not None:
            bar.set_postfix_str(mode)
        rows, stats = evaluate_mode(mode, problems, reasoner, make_planner(mode, cfg, trained), cfg, bar, journal)
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
    return all_rows, figures


def _agents(cfg: EvalConfig, modes: list[str], problems: list[Problem]) -> tuple[Any, Any, dict, dict | None]:
    """The reasoner and (mode ``trained``) the planner, with what was loaded."""
    shared: dict = {}  # LoRA agents of one run on the same base load that base once
    reasoner, reasoner_info = build_reasoner(cfg.model.reasoner, cfg, problems, shared)
    trained, planner_info = (load_planner(cfg.model.planner, cfg, shared) if "trained" in modes else (None, None))
    if planner_info is not None:  # plug-in: the planner plays with a reasoner it was not trained with
        base = planner_info.get("trained_with_reasoner")
        ck = reasoner_info.get("checkpoint")
        same_run = ck is not None and ck == planner_info.get("checkpoint")  # both agents out of one run
        planner_info["plugin"] = base is not None and base != cfg.model.reasoner and not same_run
    return reasoner, trained, reasoner_info, planner_info


def run(cfg: EvalConfig) -> dict[str, Any]:
    """Evaluate every mode of ``cfg``; return the full results dict (also written under ``cfg.out``).

    Before any model loads: the env and reasoner settings are resolved (the evaluated run's, then
    overrides; one line on stderr says which), code problems check the sandbox, and with ``--out`` a
    journal of an interrupted evaluation of the same settings is picked up (other settings: refused).
    """
    cfg, used = settings.resolve(cfg)
    modes = cfg.resolved_modes()
    t_start = time.perf_counter()
    problems = load_eval_problems(cfg)
    if not problems:
        raise ValueError(f"data {cfg.data.source!r} gave no problems.")
    sandbox = check_sandbox(problems)
    journal = Journal(Path(cfg.out), settings_of(cfg, [p.id for p in problems], used["from"]), cfg.resume) if cfg.out else None
    if journal is not None and journal.done:
        print(f"rsim eval: resuming {journal.path}: {len(journal.done)} finished batches kept", file=sys.stderr)
    t_load = time.perf_counter()
    reasoner, trained, reasoner_info, planner_info = _agents(cfg, modes, problems)
    load_s = time.perf_counter() - t_load
    all_rows, figures = _figures(modes, problems, reasoner, trained, cfg, journal)
    looks = record_look(cfg, problems, settings_of(cfg, [p.id for p in problems], used["from"]), modes)
    for path in looks:
        print(f"rsim eval: these problems include a sealed test split's: look recorded in {path}", file=sys.stderr)
    results = {
        "config": dataclasses.asdict(cfg) | {"modes_resolved": modes},
        "settings": used,
        "isolation": sandbox["isolation"] if sandbox else None, "sandbox": sandbox,
        # a served reasoner's requests, retries and tokens as counted by its client (this process's share of a resumed run)
        "reasoner": reasoner_info | ({"usage": reasoner.usage()} if isinstance(reasoner, ReportsUsage) else {}),
        "planner": planner_info,
        "data": {"source": cfg.data.source, "problems": len(problems), "first_ids": [p.id for p in problems[:5]],
                 "data_seed": cfg.data.seed},
        "modes": figures,
        "strategy_vs_accuracy": analysis.accuracy_by_strategy_count(all_rows),
        "per_problem": [{k: v for k, v in r.items() if k != "steps"} for r in all_rows],
        "ledgers": looks,  # the sealed test sets this evaluation looked at (algos.study.ledger)
        "timing": {"load_s": load_s, "total_s": time.perf_counter() - t_start},
        "environment": {"python": platform.python_version(), "platform": platform.platform(), **_versions()},
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
