"""The plan table: the outcome of every short plan on every problem, for one frozen greedy reasoner.

Does this reasoner leave room for *adaptive* planning? Every plan of at most ``max_rounds`` rounds
that ends in termination (index 8) is played on ``problems`` problems: with 8 non-terminal
strategies that is ``sum_{k<L} 8^k`` plans -- 9 for L = 2 (``[8]``, ``[s, 8]``), 73 for L = 3.
(Counting 9 choices per non-final round would give 10 and 91, but termination before the last round
ends the episode, so only 8 remain.) All steps go through the replay cache
(:mod:`agents.replay.reasoner`): a rerun, another L or an evaluation reads back every step already written.

The problems are split into validation and test by ``split_seed`` (``val_fraction``), and the
JSON reports (:mod:`benchmarks.plans.stats`):

* ``best_fixed``: the plan best on validation, with its test accuracy;
* ``per_task``: per task the plan best on that task's validation problems, scored on test;
* ``oracle``: per test problem, correct if *any* plan is (an upper bound, not a policy);
* ``headroom``: per_task - best_fixed on test, with a 95 % paired bootstrap interval over test problems
  (the plans are chosen once on validation; the interval ignores the choice's own noise).

Beside the JSON: ``<out>.episodes.jsonl.gz`` (one row per problem and plan, with the step texts)
and ``<out>.png`` (accuracy by first strategy x task). ::

    OMP_NUM_THREADS=1 python -m benchmarks.plans.table --problems 40 --out docs/plan_table_results/curriculum_L2.json
"""

from __future__ import annotations

import gzip
import itertools
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from rsim_env.strategies import STRATEGIES, TERMINATION, num_strategies

from . import stats as plan_stats

__all__ = ["Config", "all_plans", "TablePlanner", "task_of", "replay_reasoner", "play_table", "main"]


@dataclass(frozen=True)
class Config:
    """Plan table settings."""

    reasoner: str = "default"
    """Reasoner spec (agent registry); decoded greedily and replayed from ``store``."""
    source: str = "curriculum"
    """Problem source (rsim_env.sources.data spec)."""
    problems: int = 40
    """Problems N (each is played under every plan)."""
    data_seed: int = 0
    """Generator seed of procedural sources."""
    max_rounds: int = 2
    """L: the longest plan, in rounds (the env's max_steps)."""
    val_fraction: float = 0.5
    """Share of the problems in the validation split (the rest is test)."""
    split_seed: int = 0
    """Seed of the validation/test split."""
    batch: int = 4
    """Problems per rollout (each with one copy per plan)."""
    max_step_tokens: int = 48
    """Longest reasoner step in tokens (the study preset's)."""
    max_answer_tokens: int = 144
    """Longest final answer in tokens (the study preset's)."""
    protocol: str = ""
    """Turn protocol ("" = the env's default)."""
    store: str = ""
    """Replay store file ("" = $RSIM_REPLAY_DIR/steps.sqlite, see agents.replay.reasoner)."""
    bootstrap: int = 10000
    """Bootstrap resamples of the headroom interval."""
    seed: int = 0
    """Seed of the bootstrap and of the reasoner's random init (tiny)."""
    out: str = ""
    """JSON path ("" = print only); the episodes file and the PNG are written beside it."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_rounds <= 4:
            raise ValueError(f"Config.max_rounds={self.max_rounds}: use 1..4 (L = 5 is already 4681 plans).")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"Config.val_fraction={self.val_fraction}: use a share in (0, 1), e.g. 0.5.")
        for name in ("problems", "batch", "max_step_tokens", "max_answer_tokens", "bootstrap"):
            if getattr(self, name) < 1:
                raise ValueError(f"Config.{name}={getattr(self, name)} must be >= 1.")


def all_plans(max_rounds: int) -> list[tuple[int, ...]]:
    """Every plan of at most ``max_rounds`` rounds ending in termination, shortest first."""
    body = [s for s in range(num_strategies()) if s != TERMINATION]
    return [(*p, TERMINATION) for k in range(max_rounds) for p in itertools.product(body, repeat=k)]


class TablePlanner:
    """Plays ``plans[copy % len(plans)]``: one copy per plan for every problem of an EnvGroup."""

    role = "planner"

    def __init__(self, plans: Sequence[Sequence[int]]) -> None:
        self.plans = [tuple(p) for p in plans]

    def reset(self, num_copies: int) -> None:
        self.num_copies = num_copies

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        return [self.plans[c % len(self.plans)][int(o["round"])] for c, o in zip(copy_ids, observations)]

    def records(self) -> list[None]:
        return [None] * self.num_copies


def task_of(problem: Any) -> str:
    """The task a problem belongs to: its source without the ``curriculum:`` prefix."""
    return problem.source.split(":", 1)[-1] if problem.source else problem.id.split("/")[0]


def replay_reasoner(cfg: Config, problems: Sequence[Any]) -> Any:
    """``cfg.reasoner`` decoding greedily, every step through the replay store ``cfg.store``."""
    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent
    from agents.replay.reasoner import ReplayReasoner, StepStore, default_store_path

    rc = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, max_answer_tokens=cfg.max_answer_tokens, greedy=True,
                        seed=cfg.seed)
    spec = cfg.reasoner[len("replay:"):] if cfg.reasoner.startswith("replay:") else cfg.reasoner
    inner = build_agent(spec, AgentContext("reasoner", config=rc, seed=cfg.seed, problems=problems)).agent
    return ReplayReasoner(inner, StepStore(cfg.store or default_store_path()))


def play_table(cfg: Config, problems: Sequence[Any], plans: Sequence[tuple[int, ...]], reasoner: Any,
               log: Any = None) -> list[dict[str, Any]]:
    """One row per (problem, plan): correct, extracted answer, reason and the step texts."""
    from algos.rollout import rollout
    from rsim_env.game import EnvConfig
    from rsim_env.group import EnvGroup

    env = EnvConfig(max_steps=cfg.max_rounds, **({"protocol": cfg.protocol} if cfg.protocol else {}))
    rows: list[dict[str, Any]] = []
    for b in range(0, len(problems), cfg.batch):
        chunk = list(problems[b:b + cfg.batch])
        t0 = time.perf_counter()
        result = rollout(EnvGroup(chunk, group_size=len(plans), config=env), reasoner, TablePlanner(plans), seed=0)
        for t in sorted(result.trajectories, key=lambda t: t["copy_id"]):
            info, p = t["info"], chunk[t["problem_index"]]
            plan = plans[t["copy"] % len(plans)]
            assert tuple(info["strategies"]) == plan, (info["strategies"], plan)
            rows.append({"problem_id": p.id, "task": task_of(p), "plan": list(plan), "correct": bool(info["correct"]),
                         "extracted": info["extracted"], "reason": info["reason"], "answer": p.answer,
                         "question": p.question, "steps": info["steps"], "shown_steps": info["shown_steps"]})
        if log:
            log(f"problems {b + len(chunk)}/{len(problems)}: {time.perf_counter() - t0:.1f} s, "
                f"replay {getattr(reasoner, 'stats', {})}")
    return rows


def _heatmap(table: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks, rows = table["tasks"], table["rows"]
    fig, ax = plt.subplots(figsize=(4.5 + 0.9 * len(tasks), 4.5))
    im = ax.imshow(table["accuracy"], vmin=0, vmax=1, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(tasks)), tasks, rotation=45, ha="right")
    ax.set_yticks(range(len(rows)), [f"{s} {STRATEGIES[s].name}" for s in rows])
    for i, row in enumerate(table["accuracy"]):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="w" if v < 0.5 else "k", fontsize=8)
    ax.set_xlabel("task")
    ax.set_ylabel("first strategy of the plan (8 = answer at once)")
    fig.colorbar(im, ax=ax, label="accuracy (all problems, plans starting so)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(cfg: Config) -> dict[str, Any]:
    """Build the table through the replay cache; print the summary; write JSON, episodes and PNG."""
    from rsim_env.sources.data import load_problems

    t0 = time.perf_counter()
    problems = load_problems(cfg.source, limit=cfg.problems, seed=cfg.data_seed)
    plans = all_plans(cfg.max_rounds)
    reasoner = replay_reasoner(cfg, problems)
    rows = play_table(cfg, problems, plans, reasoner, log=lambda m: print(f"[plan_table] {m}", file=sys.stderr, flush=True))
    result = plan_stats.summarise(rows, [p.id for p in problems], plans, cfg.val_fraction, cfg.split_seed,
                                  cfg.bootstrap, cfg.seed)
    result |= {"config": asdict(cfg), "replay": {**reasoner.stats, "fingerprint": reasoner.fingerprint,
                                                  "store": str(reasoner.store.path), "catch_up": reasoner.catch_up},
               "wall_s": round(time.perf_counter() - t0, 1)}
    print(plan_stats.markdown(result))
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        episodes = out.with_suffix(".episodes.jsonl.gz")
        with gzip.open(episodes, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        result["per_problem"] = {"file": episodes.name, "rows": len(rows)}
        _heatmap(result["heatmap"], out.with_suffix(".png"))
        out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.table", __doc__)
