"""The fill stage: decode the frozen reasoner's whole game once per split, into plan trees.

For a frozen greedy reasoner an episode is a function of (problem, plan), so a split's data are its plan tree
(:mod:`agents.replay.plan_tree`): every step under every plan prefix of the game, for every problem. This stage fills
``<tree_dir>/<name>_<split>.tree.json.gz`` through :func:`agents.replay.plan_tree.fill` for any reasoner spec (wrapped
in ``replay:``), an increment of problems a task at a time, so that whatever is decoded when it stops is a balanced
tree (the first ``k`` problems of every task) and a rerun resumes there (the tree is rewritten after every rollout;
the replay store keeps an interrupted rollout's steps). A split whose problems are all in its tree decodes nothing
and loads no model.

Before decoding it prints the cost: per split the steps to decode (a problem's tree is one step per plan prefix:
17 for two rounds whose last terminates, 145 for three) and the time at the backend's measured rate -- read from the
info JSON beside a tree filled by the same reasoner, or measured on a warm-up rollout (whose steps go into the
tree). While decoding, a progress bar shows steps/s and the ETA. A served reasoner (``openai:MODEL@URL``) is sent
each rollout's copies as concurrent requests (``max_concurrency`` = ``max_copies`` unless the spec sets it).

The info JSON beside each tree (``<tree>.json``) records the problems, the steps, and every increment that decoded
(its wall / CPU seconds and replay stats: catch-up mismatches must stay 0, else the fill stops).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, TextIO

from .config import StudyConfig, game, run_overrides
from .paths import StudyPaths
from .splits import external, first_per_task, problems
from .tables import plans_of

if TYPE_CHECKING:
    from agents.replay.plan_tree import PlanTree
    from agents.replay.reasoner import ReplayReasoner
    from rsim_env import Problem
    from rsim_env.game import EnvConfig

__all__ = ["load_tree", "steps_per_problem", "missing_steps", "measured_rate", "cost",
           "print_cost", "reasoner_spec", "build_reasoner", "fill_split", "run"]

INFO_KEYS = ("reasoner", "max_step_tokens", "max_answer_tokens")
"""Settings of the info JSON's ``config`` a tree must share with the study (the tree's root is checked too, when a
reasoner is built)."""


def steps_per_problem(game_plans: Sequence[Sequence[int]]) -> int:
    """Steps a problem's tree holds: one per distinct plan prefix (17 for the 9 plans of two rounds, 145 for the 73
    of three)."""
    return len({tuple(p[:r + 1]) for p in game_plans for r in range(len(p))})


def _prefixes(game_plans: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    return sorted({tuple(p[:r + 1]) for p in game_plans for r in range(len(p))})


def missing_steps(tree: PlanTree | None, items: Sequence[Problem], game_plans: Sequence[Sequence[int]]) -> int:
    """Steps of ``items``' trees not in ``tree`` (None: an empty tree)."""
    prefixes = _prefixes(game_plans)
    if tree is None:
        return len(items) * len(prefixes)
    return sum((p.id, pre) not in tree.nodes for p in items for pre in prefixes)


def load_tree(path: Path) -> PlanTree | None:
    """The plan tree at ``path`` (None when there is none yet)."""
    from agents.replay.plan_tree import PlanTree

    return PlanTree.load(path) if path.exists() else None


def _read_info(cfg: StudyConfig, split: str) -> dict[str, Any]:
    path = StudyPaths.of(cfg).info(split)
    return json.loads(path.read_text()) if path.exists() else {"increments": []}


def _check_info(cfg: StudyConfig, split: str, info: dict[str, Any]) -> None:
    """Refuse a tree whose info JSON names another reasoner or other step lengths than the study's."""
    was = info.get("config", {})
    differ = [f"{k}: {was[k]!r} (tree) vs {getattr(cfg, k)!r} (study)" for k in INFO_KEYS
              if k in was and was[k] != getattr(cfg, k)]
    if differ:
        raise ValueError(f"the {split} tree at {StudyPaths.of(cfg).tree(split)} was filled with other settings ({'; '.join(differ)})"
                         "; give the study those settings, or another tree_dir / name to fill a new tree.")


def measured_rate(info: dict[str, Any]) -> float | None:
    """Decoded steps per wall second over the increments of an info JSON that decoded (None: none did)."""
    rows = [r for r in info.get("increments", []) if r.get("replay", {}).get("misses") and r.get("wall_s")]
    if not rows:
        return None
    return sum(r["replay"]["misses"] for r in rows) / sum(r["wall_s"] for r in rows)


def cost(cfg: StudyConfig, splits: Sequence[str]) -> dict[str, Any]:
    """Per split: problems, steps a problem, steps in the tree, steps to decode; and the rate known from the info JSONs
    of trees the same reasoner filled (``rate``: steps/s or None, ``rate_from``), with the time at that rate."""
    game_plans = plans_of(game(cfg))
    rows, rates = {}, []
    for split in splits:
        items = problems(cfg, split)
        info = _read_info(cfg, split)
        _check_info(cfg, split, info)
        tree = load_tree(StudyPaths.of(cfg).tree(split))
        rows[split] = {"problems": len(items), "steps_per_problem": steps_per_problem(game_plans),
                       "steps_in_tree": 0 if tree is None else len(tree.steps),
                       "to_decode": missing_steps(tree, items, game_plans)}
        rate = measured_rate(info)
        if rate:
            rates.append((rate, str(StudyPaths.of(cfg).info(split))))
    total = sum(r["to_decode"] for r in rows.values())
    rate, where = (rates[0] if rates else (None, ""))
    return {"splits": rows, "to_decode": total, "rate": rate, "rate_from": where,
            "eta_s": None if not rate else total / rate}


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min" if seconds >= 90 else \
        f"{seconds:.0f} s"


def print_cost(c: dict[str, Any], file: TextIO | None = None) -> None:
    """The cost table (:func:`cost`), one line per split and a total line."""
    file = file or sys.stderr
    print("| split | problems | steps a problem | steps in tree | steps to decode |", file=file)
    print("| --- | --- | --- | --- | --- |", file=file)
    for split, r in c["splits"].items():
        print(f"| {split} | {r['problems']} | {r['steps_per_problem']} | {r['steps_in_tree']} | {r['to_decode']} |",
              file=file)
    if not c["to_decode"]:
        print("[rsim study] fill: every problem is in its tree; nothing to decode.", file=file)
    elif c["rate"]:
        print(f"[rsim study] fill: {c['to_decode']} steps to decode, about {_duration(c['eta_s'])} at "
              f"{c['rate']:.2f} steps/s (measured: {c['rate_from']}).", file=file)
    else:
        print(f"[rsim study] fill: {c['to_decode']} steps to decode; the rate is measured on a warm-up rollout first.",
              file=file)
    file.flush()


def reasoner_spec(cfg: StudyConfig) -> str:
    """The spec the fill decodes through: ``replay:`` + the reasoner (as given when it is one), a served reasoner with
    ``max_concurrency`` = ``max_copies`` unless its spec sets one."""
    spec = cfg.reasoner if cfg.reasoner.startswith("replay:") else f"replay:{cfg.reasoner}"
    if spec.startswith("replay:openai:") and "max_concurrency=" not in spec:
        spec += ("&" if "#" in spec else "#") + f"max_concurrency={cfg.max_copies}"
    return spec


def build_reasoner(cfg: StudyConfig) -> tuple[ReplayReasoner, EnvConfig]:
    """``(replay reasoner, env config)`` of the study's game, built as ``rsim train`` builds its reasoner (same
    decoding settings and device, so the replay keys and a tree's root are the ones ``rsim train`` and the committed
    trees use)."""
    from agents.registry import AgentContext, build_agent
    from algos.config import resolve as resolve_run
    from algos.trainer import make_accelerator

    run = resolve_run("study", run_overrides(cfg, reasoner_spec(cfg)))
    device = make_accelerator(run.train).device
    built = build_agent(run.model.reasoner, AgentContext(
        role="reasoner", config=run.reasoner, dtype=run.model.dtype, device=device, seed=run.train.seed,
        max_rounds=run.env.max_steps, lora=dataclasses.replace(run.model.reasoner_lora, enabled=False),
        frozen=run.model.frozen, shared={}))
    return built.agent, dataclasses.replace(run.env, planner=True)


def _bar(total: int, split: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"fill {split}", unit="step", smoothing=0.1, mininterval=2.0, dynamic_ncols=True)


def fill_split(cfg: StudyConfig, split: str, reasoner: ReplayReasoner, env: EnvConfig, *, limit: int | None = None,
               log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Fill ``split``'s tree an increment of problems a task at a time up to ``cfg.per_task(split)`` (or its first
    ``limit`` problems only: the warm-up); write and return its info JSON."""
    from agents.replay.plan_tree import fill

    path, game_plans = StudyPaths.of(cfg).tree(split), plans_of(game(cfg))
    path.parent.mkdir(parents=True, exist_ok=True)
    info = _read_info(cfg, split)
    _check_info(cfg, split, info)
    everything = problems(cfg, split)
    top = max(map(len, _columns(everything)))  # per_task, or a file's largest task
    if limit is not None:
        steps = [everything[:limit]]
    else:
        ks = sorted({min(k, top) for k in range(cfg.increment, top + cfg.increment, cfg.increment)})
        steps = [first_per_task(everything, k) for k in ks]
    tree = load_tree(path)
    left = missing_steps(tree, everything if limit is None else steps[0], game_plans)
    bar = _bar(left, split) if left and limit is None else None
    try:
        for items in steps:
            if not missing_steps(tree, items, game_plans):
                continue
            w, c, before = time.perf_counter(), time.process_time(), dict(reasoner.stats)
            seen = [before.get("misses", 0)]

            def progress(message: str, seen: list[int] = seen) -> None:
                if bar is not None:
                    bar.update(max(0, min(reasoner.stats["misses"] - seen[0], bar.total - bar.n)))
                    seen[0] = reasoner.stats["misses"]
                if log:
                    log(message)

            tree = fill(path, items, reasoner, env, plans=game_plans, max_copies=cfg.max_copies, log=progress)
            stats = {s: v - before.get(s, 0) for s, v in reasoner.stats.items()}
            k = max(map(len, _columns(items)))
            info["increments"].append({"per_task": k, "problems": len(items), **tree.summary(),
                                       "wall_s": round(time.perf_counter() - w, 1),
                                       "cpu_s": round(time.process_time() - c, 1), "replay": stats})
            _write_info(cfg, split, info, tree, k, len(items))
            if stats.get("catchup_mismatch"):
                raise RuntimeError(f"{split} tree: {stats['catchup_mismatch']} catch-up mismatches, the tree is not "
                                   "exact replay; fill another tree with a fresh replay store (RSIM_REPLAY_DIR).")
    finally:
        if bar is not None:
            bar.close()
    return info


def _columns(items: Sequence[Problem]) -> list[list[Problem]]:
    from .splits import by_task

    return list(by_task(items).values())


def _write_info(cfg: StudyConfig, split: str, info: dict[str, Any], tree: PlanTree, per_task: int, n: int) -> None:
    info.update(config={"split": split, "per_task": cfg.per_task(split), "increment": cfg.increment,
                        "reasoner": cfg.reasoner, "planner": cfg.planner, "tasks": cfg.tasks, "data": cfg.data,
                        "max_step_tokens": cfg.max_step_tokens, "max_answer_tokens": cfg.max_answer_tokens,
                        "out_dir": str(StudyPaths.of(cfg).tree(split).parent), "max_copies": cfg.max_copies,
                        **({"file": external(cfg, split)} if external(cfg, split) else {})},
                meta={k: tree.meta[k] for k in ("root", "fingerprint", "kind", "env")},
                problems=n, per_task=per_task, steps=tree.summary().get("steps"))
    StudyPaths.of(cfg).info(split).write_text(json.dumps(info, indent=1) + "\n")


def run(cfg: StudyConfig, splits: Sequence[str] | None = None) -> dict[str, Any]:
    """The fill stage: print the cost of ``splits`` (default ``cfg.fill_splits``, and ``replication`` with
    ``cfg.replicate``), then fill each tree that lacks steps (a warm-up rollout first when no rate is known). Returns
    the cost, the rate used and each split's info."""
    splits = list(splits or cfg.fill_split_list() + (["replication"] if cfg.replicate else []))
    splits = list(dict.fromkeys(splits))
    c = cost(cfg, splits)
    print_cost(c)
    out: dict[str, Any] = {"cost": c, "decoded": 0, "splits": {}}
    if not c["to_decode"]:
        return out
    w = time.perf_counter()
    reasoner, env = build_reasoner(cfg)
    out["load_s"] = round(time.perf_counter() - w, 1)
    todo = [s for s in splits if c["splits"][s]["to_decode"]]
    if not c["rate"]:
        first = todo[0]
        warm = max(1, math.ceil(cfg.max_copies / len(plans_of(game(cfg)))))
        w, before = time.perf_counter(), reasoner.stats.get("misses", 0)
        fill_split(cfg, first, reasoner, env, limit=warm)
        decoded = reasoner.stats.get("misses", 0) - before
        rate = decoded / max(1e-9, time.perf_counter() - w)
        left = cost(cfg, splits)["to_decode"]
        out["warmup"] = {"problems": warm, "steps": decoded, "rate": rate}
        print(f"[rsim study] fill: warm-up decoded {decoded} steps at {rate:.2f} steps/s: {left} steps left, about "
              f"{_duration(left / rate if rate else None)}.", file=sys.stderr, flush=True)
    before = reasoner.stats.get("misses", 0)
    for split in todo:
        out["splits"][split] = fill_split(cfg, split, reasoner, env)
    out["decoded"] = reasoner.stats.get("misses", 0) - before + out.get("warmup", {}).get("steps", 0)
    out["replay"] = dict(reasoner.stats)
    return out
