"""The atlas restated after two fixes, from its committed per-problem outcomes (no decoding).

1. **Leaks**: a test problem whose question text is also a validation problem of the same task is dropped (the
   greedy reasoner plays the same text the same way, so its validation outcome is its test outcome).
2. **Scorers**: a reasoning-gym task whose scorer fails the sanity check (:mod:`rsim_env.kinds.scorer_check`) is dropped
   with the reason (``game_of_life_halting``: every non-empty answer gets full credit).

Then ``mix_all`` again (every remaining task; per-task plan vs best single plan, each chosen on validation, on test,
paired bootstrap), in two currencies: accuracy, and the planner reward of :mod:`rsim_env.rewards` (``R_acc +
R_terminal + R_penalty``, default weights: ``[8]`` earns 0.5 less than any ``[x, 8]`` for the same answer).

**Tie-breaking.** Two choices of "the best plan of a task" differ on validation ties: the atlas's task table
(:func:`benchmarks.plans.atlas_stats.task_stats`) takes the shortest plan (``[8]`` first); ``mix_all``'s per-task policy
(:func:`benchmarks.plans.stats.best_plan` with ``prefer``) keeps the mix's best single plan when it is among the tied,
so it leaves the common plan only when validation says strictly better. The JSON lists the tasks where they differ and
both policies' test accuracy; the headroom uses ``mix_all``'s rule. ::

    python -m studies.atlas_restate --out docs/atlas_results/atlas_restated.json
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.plans import atlas_stats
from benchmarks.plans import stats as plan_stats
from benchmarks.plans import table as plan_table
from benchmarks.plans.atlas import read_rows

__all__ = ["Config", "restate", "docs_table", "main"]


@dataclass(frozen=True)
class Config:
    """Restatement settings."""

    outcomes: str = "docs/atlas_results/atlas.outcomes.jsonl.gz"
    """The committed per-problem outcomes of the atlas."""
    atlas: str = "docs/atlas_results/atlas.json"
    """The atlas JSON (its main-pass tasks and settings)."""
    bootstrap: int = 10000
    """Bootstrap resamples of the headroom interval."""
    seed: int = 0
    """Seed of the bootstrap."""
    out: str = "docs/atlas_results/atlas_restated.json"
    """Where the restated JSON is written."""


def _scorer_reason(setting: str) -> str:
    from rsim_env.sources.data import _option
    from rsim_env.kinds.scorer_check import check

    if not setting.startswith("rg:"):
        return ""
    name, _, query = setting[3:].partition("?")
    return check(name, {k: _option(v) for k, _, v in (i.partition("=") for i in query.split("&") if i)})


def _reward(plan: list[int], correct: bool) -> float:
    from rsim_env.rewards import r_acc, r_penalty, r_terminal

    return r_acc(correct) + r_terminal(plan) + r_penalty(plan)


def _reward_headroom(rows_of: dict[str, list[dict]], plans: list[tuple[int, ...]], bootstrap: int, seed: int) -> dict:
    """mix_all in reward: per task the val-best plan by mean reward (ties kept on the common plan) vs the val-best common plan."""
    val_r, test_r = {}, {}
    for t, rows in rows_of.items():
        for r in rows:
            (val_r if r["split"] == "val" else test_r).setdefault(t, {}).setdefault(tuple(r["plan"]), []).append(
                _reward(list(r["plan"]), r["correct"]))
    pooled_val = np.array([np.concatenate([val_r[t][p] for t in rows_of]).mean() for p in plans])
    best = plan_stats.best_plan(pooled_val)
    diff, fixed, per = [], [], []
    for t in rows_of:
        j = plan_stats.best_plan(np.array([np.mean(val_r[t][p]) for p in plans]), prefer=best)
        a, b = np.array(test_r[t][plans[j]]), np.array(test_r[t][plans[best]])
        diff.append(a - b)
        fixed.append(b)
        per.append(a)
    d = np.concatenate(diff)
    return {"best_fixed": list(plans[best]), "best_fixed_test": float(np.concatenate(fixed).mean()),
            "per_task_test": float(np.concatenate(per).mean()), "point": float(d.mean()),
            "ci95": plan_stats._bootstrap(d, bootstrap, seed)}


def restate(rows: list[dict[str, Any]], atlas: dict[str, Any], bootstrap: int, seed: int) -> dict[str, Any]:
    """The restated atlas (module docstring) from outcome rows and the atlas JSON."""
    n = atlas["config"]["problems"]
    kept, refused, leaks, rows_of, stats = [], [], {}, {}, []
    for t in atlas["tasks"]:
        why = _scorer_reason(t["setting"])
        if why:
            refused.append({"task": t["task"], "reason": why})
            continue
        task_rows = [r for r in rows if r["row"] == "outcome" and r["task"] == t["task"]
                     and r["setting"] == t["setting"] and r["index"] < n]
        val_q = {r["question"] for r in task_rows if r["split"] == "val"}
        leaked = {r["problem_id"] for r in task_rows if r["split"] == "test" and r["question"] in val_q}
        if leaked:
            leaks[t["task"]] = len(leaked)
        rows_of[t["task"]] = [r for r in task_rows if r["problem_id"] not in leaked]
        stats.append(atlas_stats.task_stats(t["task"], t["setting"], rows_of[t["task"]], atlas["config"]["close"]))
        kept.append(t["task"])
    plans = plan_table.all_plans(2)
    m = atlas_stats.mix(rows_of, plans, len(rows_of), bootstrap, seed)
    ties = []
    for s in stats:
        chosen = m["per_task"]["tasks"][s["task"]]
        if chosen["plan"] != s["best_plan"]:
            ties.append({"task": s["task"], "table_plan": s["best_plan"], "mix_plan": chosen["plan"],
                         "val_accuracy": s["best_val"], "table_test": s["best_test"],
                         "mix_test": chosen["test_accuracy"]})
    table_mean = float(np.mean([s["best_test"] for s in stats]))
    mix_mean = float(np.mean([m["per_task"]["tasks"][s["task"]]["test_accuracy"] for s in stats]))
    return {
        "tasks": kept, "refused": refused, "leaked_test_problems": leaks, "n_leaked": sum(leaks.values()),
        "n_test": m["n_test"], "n_val": m["n_val"],
        "accuracy": {"best_fixed": m["best_fixed"], "per_task_test": m["per_task"]["test_accuracy"],
                     "oracle_test": m["oracle"]["test_accuracy"], "headroom": m["headroom"]},
        "reward": _reward_headroom(rows_of, list(plans), bootstrap, seed),
        "ties": {"tasks": ties, "table_mean_test": table_mean, "mix_mean_test": mix_mean,
                 "rule": "task table: shortest plan on a validation tie; mix_all: the best single plan if tied"},
        "per_task": {s["task"]: {"best_plan": s["best_plan"], "best_val": s["best_val"], "best_test": s["best_test"],
                                 "n_val": s["n_val"], "n_test": s["n_test"]} for s in stats},
    }


def docs_table(res: dict[str, Any]) -> str:
    """The table docs/atlas.md copies."""
    a, r = res["accuracy"], res["reward"]
    lo, hi = (100 * x for x in a["headroom"]["ci95"])
    rlo, rhi = r["ci95"]
    lines = ["| currency | tasks | test problems | best single plan (val) | its test | per-task policy test | "
             "headroom (95 % CI) |", "| --- " * 7 + "|",
             f"| accuracy, % | {len(res['tasks'])} | {res['n_test']} | `{a['best_fixed']['plan']}` | "
             f"{100 * a['best_fixed']['test_accuracy']:.1f} | {100 * a['per_task_test']:.1f} | "
             f"{100 * a['headroom']['point']:+.1f} ({lo:+.1f}, {hi:+.1f}) |",
             f"| planner reward | {len(res['tasks'])} | {res['n_test']} | `{r['best_fixed']}` | {r['best_fixed_test']:.3f} | "
             f"{r['per_task_test']:.3f} | {r['point']:+.3f} ({rlo:+.3f}, {rhi:+.3f}) |", "",
             f"Dropped: {res['n_leaked']} test problems whose text is a validation problem of the same task "
             f"({', '.join(f'{t} {k}' for t, k in res['leaked_test_problems'].items())}); "
             f"{', '.join(x['task'] for x in res['refused'])} (scorer check). Ties: "
             + "; ".join(f"{x['task']} table `{x['table_plan']}` vs mix `{x['mix_plan']}` (val {100 * x['val_accuracy']:.0f}, "
                         f"test {100 * x['table_test']:.0f} vs {100 * x['mix_test']:.0f})" for x in res["ties"]["tasks"])
             + f"; mean over tasks of the per-task plan's test accuracy {100 * res['ties']['table_mean_test']:.1f} % "
             f"(table) vs {100 * res['ties']['mix_mean_test']:.1f} % (mix_all)."]
    return "\n".join(lines)


def main(cfg: Config) -> dict[str, Any]:
    """Restate the atlas, write the JSON, print the docs table."""
    res = restate(read_rows(cfg.outcomes), json.loads(Path(cfg.atlas).read_text()), cfg.bootstrap, cfg.seed)
    res["config"] = asdict(cfg)
    Path(cfg.out).write_text(json.dumps(res, indent=1) + "\n")
    print(docs_table(res))
    return res


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.atlas_restate", __doc__)
