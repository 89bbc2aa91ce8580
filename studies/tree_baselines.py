"""The adaptive study's plan baselines on a held-out plan tree, beside a tree-trained planner, seed by seed.

For a frozen greedy reasoner every plan policy's held-out outcome is a read-back from the held-out tree, so the
baselines that choose among the 9 plans cost no decoding and are exact:

* ``best_fixed_exhaustive``: the one plan best on the selection rows (every plan of the tree played);
* ``per_task``: per task, the plan best on that task's selection rows;
* ``bandit``: per seed, per-task Thompson sampling over the plans on the *training* rows with as many episodes as
  the trained planner had (``episodes``), then per task its highest posterior mean (tasks it never saw: the pooled
  best); it maximises the same planner reward, rescaled to [0, 1];
* ``random``: per seed, one uniformly random plan per problem (``random_expected``: the exact expectation);
* ``trained``: the trained planner's greedy plan per held-out problem, per seed.

Plans are chosen by mean planner reward (the planner's own objective, :mod:`algos.optimisation_gap`); every mode
reports reward and accuracy, the headroom it captures in both currencies ((mode - best fixed) / (per task - best
fixed)), and ``tests``: ``trained`` against ``best_fixed_exhaustive`` and ``bandit`` at the seed level (exact sign
test over seeds, on reward and on accuracy) and pooled (seeds-then-problems bootstrap of the accuracy difference).
Modes that need new decoding are elsewhere: self-consistency at equal tokens on the tree's problems is
:mod:`studies.tree_sc`'s, ``none`` is ``rsim eval --modes none``. ::

    python -m studies.tree_baselines --result docs/training_results/tree_learner_adaptive_12_std.json

recomputes them for a :mod:`studies.tree_learner` result from the trees it names (seconds; no model is loaded).
With ``--planners DIR`` the committed heads (``DIR/<variant>_s<seed>``, as ``--planners-dir`` kept them) are
loaded and played greedily on the ``--heldout`` split's tree -- e.g. the test tree, which the study never used::

    python -m studies.tree_baselines --result docs/training_results/tree_learner_adaptive_12_std.json \
        --planners docs/training_results/planners/tree_adaptive_12_std --heldout test --select val
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["Config", "by_variant", "compare", "for_study", "main", "markdown", "play_kept", "tree_rows"]

MODES = ("random", "best_fixed_exhaustive", "per_task", "bandit", "trained")


def _thompson(table: Mapping[str, Mapping[tuple[int, ...], tuple[float, float]]], tasks: Mapping[str, str],
              episodes: int, seed: int) -> dict[str, Any]:
    """:func:`studies.efficacy_modes.train_bandit` (per-task Thompson sampling) on the table's planner reward,
    rescaled to [0, 1] (fractional updates); returns its choice and default as plans, and its pull counts."""
    from .efficacy_modes import plan_name, train_bandit

    ids = sorted(table)
    plans = sorted(table[ids[0]], key=lambda pl: (len(pl), pl))
    rewards = [v[1] for by in table.values() for v in by.values()]
    lo, span = min(rewards), (max(rewards) - min(rewards)) or 1.0
    scaled = {p: {plan_name(pl): (table[p][pl][1] - lo) / span for pl in plans} for p in ids}
    names = [plan_name(pl) for pl in plans]
    b = train_bandit(scaled, tasks, names, episodes, seed)
    of = dict(zip(names, plans))
    return {"choice": {t: of[n] for t, n in b["choice"].items()}, "default": of[b["default"]], "pulls": b["pulls"]}


def _play(table: Mapping[str, Mapping[tuple[int, ...], tuple[float, float]]], ids: Sequence[str],
          plan_of: Mapping[str, tuple[int, ...]]) -> dict[str, Any]:
    """Per-problem (correct, reward) of playing ``plan_of[problem]`` on ``ids`` (in that order), and the means."""
    cells = [table[p][plan_of[p]] for p in ids]
    return {"correct": [c >= 0.5 for c, _ in cells], "reward": [r for _, r in cells],
            "mean_reward": sum(r for _, r in cells) / len(cells), "accuracy": sum(c for c, _ in cells) / len(cells)}


def compare(train_rows: Sequence[dict[str, Any]], heldout_rows: Sequence[dict[str, Any]],
            trained_plans: Mapping[int, Mapping[str, Sequence[int]]], episodes: int,
            select_rows: Sequence[dict[str, Any]] | None = None, rounds: int = 4000) -> dict[str, Any]:
    """Every plan baseline and the trained planner on the held-out rows (module docstring).

    Args:
        train_rows: the training tree's outcome rows (``problem_id, task, plan, correct, reward``); the bandit
            trains on them.
        heldout_rows: the held-out tree's rows, where every mode is scored.
        trained_plans: per seed, the trained planner's greedy plan per held-out problem.
        episodes: the trained planner's training episodes (the bandit gets as many).
        select_rows: rows the fixed and per-task plans are chosen on (default ``train_rows``; e.g. training plus
            validation rows when ``heldout_rows`` is the test tree).
        rounds: bootstrap replicates.
    """
    from algos.optimisation_gap import best_policies, outcome_table
    from benchmarks.plans.seedstats import hierarchical_bootstrap, seed_sign_test

    if not trained_plans:
        raise ValueError("compare: no trained planner; pass each seed's greedy plans on the held-out problems.")
    held, tasks = outcome_table(heldout_rows)
    train = outcome_table(train_rows)
    chosen = best_policies(*(train if select_rows is None else outcome_table(select_rows)))
    ids = sorted(held)
    missing = sorted(set(tasks[p] for p in ids) - set(chosen["per_task_best"]))
    if missing:
        raise ValueError(f"tasks {missing} have no selection rows; choose plans on rows that cover every task.")
    plans = sorted(held[ids[0]], key=lambda pl: (len(pl), pl))
    seeds = sorted(trained_plans)
    per_seed: dict[str, dict[int, dict[str, Any]]] = {m: {} for m in MODES}
    bandits = {}
    fixed = _play(held, ids, {p: chosen["best_single"] for p in ids})  # the same for every seed
    top = _play(held, ids, {p: chosen["per_task_best"][tasks[p]] for p in ids})
    for s in seeds:
        got = trained_plans[s]
        lost = [p for p in ids if p not in got]
        if lost:
            raise ValueError(f"seed {s}: the trained planner has no plan for {len(lost)} held-out problems "
                             f"(e.g. {lost[0]!r}); score it on the held-out tree's problems.")
        per_seed["trained"][s] = _play(held, ids, {p: tuple(int(x) for x in got[p]) for p in ids})
        per_seed["best_fixed_exhaustive"][s], per_seed["per_task"][s] = fixed, top
        rng = random.Random(s)
        per_seed["random"][s] = _play(held, ids, {p: plans[rng.randrange(len(plans))] for p in ids})
        b = _thompson(*train, episodes, seed=s)
        bandits[s] = b
        per_seed["bandit"][s] = _play(held, ids, {p: b["choice"].get(tasks[p], b["default"]) for p in ids})

    def mean(xs: Sequence[float]) -> float:
        return sum(xs) / len(xs)

    modes = {}
    for m, by in per_seed.items():
        r, a = mean([v["mean_reward"] for v in by.values()]), mean([v["accuracy"] for v in by.values()])
        room_r, room_a = top["mean_reward"] - fixed["mean_reward"], top["accuracy"] - fixed["accuracy"]
        modes[m] = {"reward": r, "accuracy": a,
                    "reward_by_seed": [by[s]["mean_reward"] for s in seeds],
                    "accuracy_by_seed": [by[s]["accuracy"] for s in seeds],
                    "headroom_captured_reward": (r - fixed["mean_reward"]) / room_r if room_r > 0 else None,
                    "headroom_captured_accuracy": (a - fixed["accuracy"]) / room_a if room_a > 0 else None}
    rand_exp = [mean([held[p][pl][1] for pl in plans]) for p in ids], [mean([held[p][pl][0] for pl in plans]) for p in ids]

    def test(a: str, b: str) -> dict[str, Any]:
        return {"seed_sign_reward": seed_sign_test(modes[a]["reward_by_seed"], modes[b]["reward_by_seed"]),
                "seed_sign_accuracy": seed_sign_test(modes[a]["accuracy_by_seed"], modes[b]["accuracy_by_seed"]),
                "bootstrap_accuracy": hierarchical_bootstrap({s: per_seed[a][s]["correct"] for s in seeds},
                                                             {s: per_seed[b][s]["correct"] for s in seeds}, rounds)}

    return {"problems": len(ids), "tasks": len(set(tasks.values())), "seeds": seeds, "episodes": episodes,
            "plans": {"best_fixed_exhaustive": list(chosen["best_single"]),
                      "per_task": {t: list(p) for t, p in chosen["per_task_best"].items()},
                      "bandit": {str(s): {t: list(p) for t, p in b["choice"].items()} for s, b in bandits.items()}},
            "bandit_pulls": {str(s): b["pulls"] for s, b in bandits.items()},
            "random_expected": {"reward": mean(rand_exp[0]), "accuracy": mean(rand_exp[1])},
            "modes": modes,
            "tests": {"trained_vs_best_fixed_exhaustive": test("trained", "best_fixed_exhaustive"),
                      "trained_vs_bandit": test("trained", "bandit"),
                      "trained_vs_per_task": test("trained", "per_task")}}


def for_study(c: Mapping[str, Any], runs: Sequence[dict[str, Any]], train_rows: Sequence[dict[str, Any]],
              heldout_rows: Sequence[dict[str, Any]], heldout: str, select: str = "",
              planners: str | None = None) -> dict[str, Any]:
    """:func:`by_variant` for a :mod:`studies.tree_learner` config ``c`` (as a dict): the bandit gets the study's
    episode count, and ``select`` (a split) joins the training rows in choosing the plans."""
    select_rows = list(train_rows) + tree_rows(c["tree_dir"], select, c["per_task"], c.get("tasks", 0)) if select else None
    return by_variant(list(dict.fromkeys(r["variant"] for r in runs)), runs, train_rows, heldout_rows,
                      c["steps"] * c["groups_per_step"] * c["group_size"], select_rows,
                      [c["train_split"]] + ([select] if select else []), heldout, planners)


def by_variant(variants: Sequence[str], runs: Sequence[dict[str, Any]], train_rows: Sequence[dict[str, Any]],
               heldout_rows: Sequence[dict[str, Any]], episodes: int, select_rows: Sequence[dict[str, Any]] | None,
               select: Sequence[str], heldout: str, planners: str | None = None) -> dict[str, Any]:
    """:func:`compare` for each variant of a :mod:`studies.tree_learner` run list (each run's held-out plans under
    ``plans["test"]``); ``select`` names the splits the plans were chosen on, ``heldout`` the scoring split,
    ``planners`` where the heads were loaded from (None: the plans the study recorded)."""
    out = {}
    for v in variants:
        plans = {r["seed"]: r["plans"]["test"] for r in runs if r["variant"] == v}
        out[v] = compare(train_rows, heldout_rows, plans, episodes, select_rows) | {
            "select": list(select), "heldout": heldout, "planners": planners}
    return out


def markdown(b: Mapping[str, Any]) -> str:
    """The baselines table (reward and accuracy, by seed, headroom captured) and the seed-level tests."""
    lines = ["| mode | reward (mean) | accuracy (mean) | reward by seed | headroom captured (reward / accuracy) |",
             "| --- | --- | --- | --- | --- |"]
    for m, v in b["modes"].items():
        cap = " / ".join("--" if x is None else f"{100 * x:.0f} %"
                         for x in (v["headroom_captured_reward"], v["headroom_captured_accuracy"]))
        lines.append(f"| `{m}` | {v['reward']:.3f} | {100 * v['accuracy']:.1f} % | "
                     f"{', '.join(f'{x:.3f}' for x in v['reward_by_seed'])} | {cap} |")
    lines += ["", "| test | seeds above / below / tied (reward) | sign p (reward) | seeds above (accuracy) | "
              "accuracy difference, 95 % CI (seeds, then problems) |", "| --- | --- | --- | --- | --- |"]
    for name, t in b["tests"].items():
        sr, sa, bo = t["seed_sign_reward"], t["seed_sign_accuracy"], t["bootstrap_accuracy"]
        lines.append(f"| {name.replace('_vs_', ' vs ')} | {sr['wins']} / {sr['losses']} / {sr['ties']} | "
                     f"{sr['p_value']:.3f} | {sa['wins']} of {len(b['seeds'])} | {100 * bo['difference']:+.1f} "
                     f"({100 * bo['ci95'][0]:+.1f}, {100 * bo['ci95'][1]:+.1f}) |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Config:
    """Recompute a tree-learner result's baselines from the trees it names."""

    result: str = ""
    """A :mod:`studies.tree_learner` JSON (its config names the trees, its runs hold each seed's held-out plans)."""
    select: str = ""
    """Another split whose tree joins the training tree in choosing the fixed and per-task plans (e.g. ``val``
    when the held-out tree is ``test``; "" = the training tree alone, as the trained planner)."""
    planners: str = ""
    """A directory of kept planners (``<variant>_s<seed>`` run dirs): play them on the held-out tree instead of
    reading the result's held-out plans ("" = the result's)."""
    heldout: str = ""
    """The split whose tree scores every mode ("" = the result's ``test_split``); another split needs ``--planners``."""
    out: str = ""
    """Write the result (the input JSON with ``baselines`` added) here ("" = print only)."""


def _tree(tree_dir: str, split: str, per_task: int, tasks: int) -> tuple[Any, list[Any]]:
    from pathlib import Path

    from agents.replay.plan_tree import PlanTree
    from studies.tree_game import tree_problems

    tree = PlanTree.load(Path(tree_dir) / f"adaptive_{split}.tree.json.gz")
    problems = tree_problems(tree, split, per_task, tasks)
    if not problems:
        raise ValueError(f"the {split} tree in {tree_dir} holds no complete problem; fill it first "
                         f"(python -m studies.adaptive_tree --split {split}).")
    return tree, problems


def tree_rows(tree_dir: str, split: str, per_task: int, tasks: int) -> list[dict[str, Any]]:
    """Every plan's outcome row on the complete problems of ``adaptive_<split>``'s tree (first ``per_task`` a task)."""
    from agents.replay.plan_tree import TreeReasoner
    from rsim_env.grading import GradeCache
    from studies.learner_options import plan_rows
    from studies.tree_game import adaptive_task
    from studies.tree_game import game as _game

    tree, problems = _tree(tree_dir, split, per_task, tasks)
    return plan_rows(problems, TreeReasoner(tree), _game(), task_of=adaptive_task, grader=GradeCache())


def play_kept(planners_dir: str, tree_dir: str, split: str, per_task: int, tasks: int
              ) -> dict[str, dict[int, dict[str, list[int]]]]:
    """Each kept planner's greedy plan on every complete problem of ``split``'s tree: ``{variant: {seed: {problem:
    plan}}}``. The frozen backbone's features are computed once (the first planner) and shared: they do not
    depend on the head, which holds the standardisation it was trained with."""
    import re
    from pathlib import Path

    from agents.replay.plan_tree import TreeReasoner, warm_planner
    from algos.evaluation.config import EvalConfig
    from algos.evaluation.run import load_planner
    from rsim_env.grading import GradeCache
    from studies.learner_options import greedy_rows
    from studies.tree_game import adaptive_task
    from studies.tree_game import game as _game

    dirs = sorted((d for d in Path(planners_dir).iterdir() if d.is_dir() and re.fullmatch(r".+_s\d+", d.name)),
                  key=lambda d: (d.name.rsplit("_s", 1)[0], int(d.name.rsplit("_s", 1)[1]))) \
        if Path(planners_dir).is_dir() else []
    if not dirs:
        raise ValueError(f"--planners {planners_dir!r}: no <variant>_s<seed> planner dirs there; give the directory "
                         "studies.tree_learner --planners-dir wrote.")
    tree, problems = _tree(tree_dir, split, per_task, tasks)
    reasoner, grader, env, shared = TreeReasoner(tree), GradeCache(), _game(), {}
    features = None
    out: dict[str, dict[int, dict[str, list[int]]]] = {}
    for d in dirs:
        variant, seed = d.name.rsplit("_s", 1)
        planner = load_planner(str(d), EvalConfig(env=env), shared).agent
        if features is None:
            warm_planner(planner, tree, problems)
            features = planner._features
        planner._features = features
        rows = greedy_rows(planner, problems, reasoner, env, task_of=adaptive_task, grader=grader)
        out.setdefault(variant, {})[int(seed)] = {r["problem_id"]: r["plan"] for r in rows}
    return out


def main(cfg: Config) -> dict[str, Any]:
    """Load the result and its trees, compare every variant's seeds with the baselines, print (and write)."""
    import json
    from pathlib import Path

    if not cfg.result or not Path(cfg.result).is_file():
        raise ValueError(f"--result {cfg.result!r}: give a studies.tree_learner JSON that exists.")
    result = json.loads(Path(cfg.result).read_text())
    c = result["config"]
    if not c.get("test_split"):
        raise ValueError(f"{cfg.result}: the run had no held-out tree (--test-split \"\"); baselines need one.")
    args = (c["tree_dir"], c["per_task"], c.get("tasks", 0))
    heldout = cfg.heldout or c["test_split"]
    if heldout != c["test_split"] and not cfg.planners:
        raise ValueError(f"--heldout {heldout!r}: the result holds plans on {c['test_split']!r} only; give --planners "
                         "(the kept heads) to play them on another tree.")
    train = tree_rows(args[0], c["train_split"], *args[1:])
    held = tree_rows(args[0], heldout, *args[1:])
    runs = result["runs"]
    if cfg.planners:
        played = play_kept(cfg.planners, args[0], heldout, *args[1:])
        runs = [{"variant": v, "seed": s, "plans": {"test": plans}} for v, by in played.items() for s, plans in by.items()]
    out = for_study(c, runs, train, held, heldout, cfg.select, cfg.planners or None)
    for v, b in out.items():
        print(f"## {v}: held-out {heldout} ({b['problems']} problems)\n\n{markdown(b)}\n")
    if cfg.out:
        key = "baselines" if heldout == c["test_split"] and not cfg.planners else f"baselines_{heldout}"
        result[key] = out
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return out


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.tree_baselines", __doc__)
