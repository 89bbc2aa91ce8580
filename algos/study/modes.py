"""Every mode of a study as a :class:`algos.study.types.ModeResult` on a read-back table.

For a frozen greedy reasoner every plan policy's outcome is a lookup in the test :class:`Table`, so the baselines
that choose among the game's plans cost no decoding and are exact:

* ``best_fixed``: the one plan with the best mean planner reward on the selection tables (train + val);
* ``per_task``: per task, the plan best on that task's selection problems;
* ``bandit``: per seed, per-task Thompson sampling over the plans on the *train* table with as many episodes as the
  trained planner had, then per task its highest posterior mean (a task it never saw: the pooled best); it maximises
  the planner reward rescaled to [0, 1];
* ``random``: per seed, one uniformly random plan per problem (``info["expected_accuracy"]``: the exact expectation);
* ``trained``: each seed's greedy plan per test problem (:mod:`algos.study.heads`);
* ``none``: the reasoner alone (no planner), from its episodes on the test problems;
* ``sc``: self-consistency -- the majority answer of ``k`` sampled no-planner answers, ``k`` the planner's reasoner
  tokens per problem over one sample's (at least 1), from sampled episodes.

Plans are chosen by mean planner reward (the planner's own objective; ties: shortest, then smallest plan).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any, Mapping, Sequence

from .types import ModeResult, Outcome, Plan, Table

__all__ = ["choose", "play", "fixed_mode", "per_task_mode", "thompson", "bandit_mode", "random_mode", "trained_mode",
           "episode_mode", "majority_vote", "sc_mode", "ordered_plans"]


def ordered_plans(table: Table) -> list[Plan]:
    """The game's plans, shortest first (the order every seeded draw indexes)."""
    return sorted(table.plans(), key=lambda pl: (len(pl), pl))


def choose(tables: Sequence[Table]) -> dict[str, Any]:
    """``{"best_single": plan, "per_task_best": {task: plan}}`` chosen on ``tables`` pooled, by mean planner reward
    (:func:`algos.optimisation_gap.best_policies`)."""
    from algos.optimisation_gap import best_policies

    cells, tasks = {}, {}
    for t in tables:
        for p in t.ids():
            cells[p] = {plan: (float(o.correct), o.reward) for plan, o in t.outcomes[p].items()}
            tasks[p] = t.tasks[p]
    if not cells:
        raise ValueError("choose: the selection tables are empty; fill the train and val trees first.")
    return best_policies(cells, tasks)


def play(table: Table, plan_of: Mapping[str, Plan]) -> dict[str, Outcome]:
    """Each problem's outcome under ``plan_of[problem]``."""
    return {p: table.outcomes[p][tuple(plan_of[p])] for p in table.ids()}


def _single(name: str, table: Table, plan_of: Mapping[str, Plan], chosen_on: str, **info: Any) -> ModeResult:
    return ModeResult(name, {0: play(table, plan_of)}, {0: dict(plan_of)}, chosen_on, info)


def fixed_mode(test: Table, chosen: Mapping[str, Any], chosen_on: str) -> ModeResult:
    """``best_fixed``: the chosen single plan on every test problem."""
    plan = tuple(chosen["best_single"])
    return _single("best_fixed", test, {p: plan for p in test.ids()}, chosen_on, plan=list(plan))


def per_task_mode(test: Table, chosen: Mapping[str, Any], chosen_on: str,
                  tied: Mapping[str, Any] | None = None) -> ModeResult:
    """``per_task``: each task's chosen plan on its test problems (a test task with no selection problem raises);
    ``tied``: per task, the plans tied on the selection problems (:func:`algos.study.breakdown.tied_plans`), kept in
    ``info`` for the report's tie-break range."""
    by_task = chosen["per_task_best"]
    missing = sorted({test.tasks[p] for p in test.ids()} - set(by_task))
    if missing:
        raise ValueError(f"test tasks {missing} have no train / val problems to choose their plan on; fill those "
                         "trees for every task.")
    return _single("per_task", test, {p: tuple(by_task[test.tasks[p]]) for p in test.ids()}, chosen_on,
                   plans={t: list(pl) for t, pl in sorted(by_task.items())},
                   **({} if tied is None else {"tied": dict(tied)}))


def thompson(train: Table, episodes: int, seed: int) -> dict[str, Any]:
    """Per-task Thompson sampling (Beta(1, 1) priors) over the plans on ``train``'s planner reward rescaled to [0, 1]
    (fractional updates): each episode draws a problem, samples a plan from its task's posterior and reads the
    outcome. Returns the greedy policy (``choice``: per task the highest posterior mean; ``default``: the pooled
    best) and the pull counts."""
    import numpy as np

    if episodes < 1:
        raise ValueError(f"thompson: episodes={episodes}; give at least 1 (the trained planner's episodes).")
    plans, ids = ordered_plans(train), train.ids()
    rewards = [o.reward for p in ids for o in train.outcomes[p].values()]
    lo, span = min(rewards), (max(rewards) - min(rewards)) or 1.0
    scaled = {p: [(train.outcomes[p][pl].reward - lo) / span for pl in plans] for p in ids}
    rng = np.random.default_rng(seed)
    names = sorted({train.tasks[p] for p in ids})
    wins = {t: np.ones(len(plans)) for t in names}
    losses = {t: np.ones(len(plans)) for t in names}
    for _ in range(episodes):
        pid = ids[int(rng.integers(len(ids)))]
        t = train.tasks[pid]
        j = int(np.argmax(rng.beta(wins[t], losses[t])))
        r = scaled[pid][j]
        wins[t][j] += r
        losses[t][j] += 1.0 - r

    def best(mean: Any) -> int:
        mean = np.asarray(mean)
        return int(np.flatnonzero(mean == mean.max())[0])

    pooled = sum(wins.values()) / (sum(wins.values()) + sum(losses.values()))
    return {"choice": {t: plans[best(wins[t] / (wins[t] + losses[t]))] for t in names},
            "default": plans[best(pooled)],
            "pulls": {t: {",".join(map(str, plans[j])): int(round(wins[t][j] + losses[t][j] - 2))
                          for j in range(len(plans)) if wins[t][j] + losses[t][j] > 2} for t in names}}


def bandit_mode(train: Table, test: Table, episodes: int, seeds: Sequence[int]) -> ModeResult:
    """``bandit``: per seed, :func:`thompson` on the train table, its per-task choice played on test."""
    outcomes, plans, choices = {}, {}, {}
    for s in seeds:
        b = thompson(train, episodes, s)
        plans[s] = {p: b["choice"].get(test.tasks[p], b["default"]) for p in test.ids()}
        outcomes[s] = play(test, plans[s])
        choices[str(s)] = {t: list(pl) for t, pl in b["choice"].items()}
    return ModeResult("bandit", outcomes, plans, "train episodes", {"episodes": episodes, "choice": choices})


def random_mode(test: Table, seeds: Sequence[int]) -> ModeResult:
    """``random``: per seed one uniformly random plan per test problem; the exact expectation in ``info``."""
    order, ids = ordered_plans(test), test.ids()
    outcomes, plans = {}, {}
    for s in seeds:
        rng = random.Random(s)
        plans[s] = {p: order[rng.randrange(len(order))] for p in ids}
        outcomes[s] = play(test, plans[s])
    expected = sum(test.outcomes[p][pl].correct for p in ids for pl in order) / (len(ids) * len(order))
    return ModeResult("random", outcomes, plans, "", {"expected_accuracy": expected})


def trained_mode(test: Table, plans: Mapping[int, Mapping[str, Plan]], **info: Any) -> ModeResult:
    """``trained``: each seed's greedy plans on test (every test problem needs one)."""
    for s, by in plans.items():
        lost = [p for p in test.ids() if p not in by]
        if lost:
            raise ValueError(f"trained seed {s} has no plan for {len(lost)} test problems (e.g. {lost[0]!r}); play the "
                             "heads on the test tree's problems.")
    return ModeResult("trained", {s: play(test, by) for s, by in plans.items()},
                      {s: {p: tuple(by[p]) for p in test.ids()} for s, by in plans.items()}, "train", info)


def _tokens(row: Mapping[str, Any]) -> float:
    tok = row.get("tokens") or {}
    if tok.get("reasoner_written") is None:
        raise ValueError(f"episode of {row.get('problem_id')!r} counts no reasoner_written tokens; use episodes of "
                         "rsim eval (its rows carry tokens).")
    return float(tok["reasoner_written"])


def _by_problem(test: Table, rows: Sequence[Mapping[str, Any]], what: str) -> dict[str, list[Mapping[str, Any]]]:
    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        if r.get("problem_id") in test.outcomes:
            by.setdefault(str(r["problem_id"]), []).append(r)
    lost = [p for p in test.ids() if p not in by]
    if lost:
        raise ValueError(f"the {what} episodes miss {len(lost)} of the {len(test.ids())} {test.split} problems (e.g. "
                         f"{lost[0]!r}); draw them on exactly the tree's problems (rsim eval --modes none).")
    return by


def episode_mode(name: str, test: Table, rows: Sequence[Mapping[str, Any]], source: str) -> ModeResult:
    """A mode read from episodes (``none``: the reasoner alone), sample 0 of each test problem. It plays no plan and
    earns no planner reward (``reward`` is NaN)."""
    by = _by_problem(test, rows, name)
    first = {p: min(rs, key=lambda r: int(r.get("sample", 0))) for p, rs in by.items()}
    out = {p: Outcome(bool(r["correct"]), float("nan"), _tokens(r)) for p, r in first.items()}
    return ModeResult(name, {0: out}, None, "", {"episodes": source, "tokens": "reasoner tokens written"})


def majority_vote(samples: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the most frequent extracted answer among ``samples`` (in sample order; ties: the one seen first;
    samples with no answer do not vote) was graded correct."""
    answers = [(str(r["extracted"]).strip(), bool(r["correct"])) for r in samples
               if r.get("extracted") is not None and str(r["extracted"]).strip()]
    if not answers:
        return False
    counts = Counter(a for a, _ in answers)
    top = max(counts.values())
    winner = next(a for a, _ in answers if counts[a] == top)
    return next(c for a, c in answers if a == winner)


def sc_mode(test: Table, rows: Sequence[Mapping[str, Any]], budget: float, source: str) -> ModeResult:
    """``sc``: the majority of the first ``k`` samples per test problem, ``k`` = ``budget`` (the planner's reasoner
    tokens per problem) over one sample's mean tokens, rounded, at least 1. Too few samples drawn raises."""
    by = _by_problem(test, rows, "self-consistency")
    per_sample = sum(_tokens(r) for rs in by.values() for r in rs) / sum(len(rs) for rs in by.values())
    k = max(1, round(budget / per_sample)) if per_sample > 0 else 1
    out = {}
    for p, rs in by.items():
        got = sorted((r for r in rs if int(r.get("sample", 0)) < k), key=lambda r: int(r.get("sample", 0)))
        if len(got) < k:
            raise ValueError(f"{p}: {len(got)} samples, fewer than k={k} at equal tokens; draw them (rsim eval --modes "
                             f"none --k {k} --temperature 0.7).")
        out[p] = Outcome(majority_vote(got), float("nan"), sum(_tokens(r) for r in got))
    return ModeResult("sc", {0: out}, None, "", {"k": k, "budget_tokens_per_problem": budget,
                                                 "tokens_per_sample": per_sample, "tokens": "reasoner tokens written",
                                                 "episodes": source})
