"""The baselines a reviewer asks for, for :mod:`studies.efficacy`.

Every choice is made on validation problems (the training split) and scored on the held-out test
problems the trained planner is scored on:

* :func:`validation_table` -- every plan of at most ``L`` rounds ending in termination, played by the
  frozen greedy base reasoner on every validation problem through the replay cache
  (:func:`benchmarks.plans.table.play_table`, :class:`agents.replay.reasoner.ReplayReasoner`);
* :func:`choose_fixed` / :func:`choose_per_task` -- ``best_fixed_exhaustive`` (the best plan of the whole
  table, not of a short candidate list) and ``per_task`` (the best plan per task);
* :func:`train_bandit` -- a contextual bandit planner: per-task Thompson sampling over the plans, each pull
  the replayed frozen reasoner's outcome on a training-split problem; then greedy (posterior mean);
* :func:`majority_vote` / :func:`sc_samples` -- self-consistency: the majority answer of ``k`` sampled
  no-planner answers, ``k`` set so its reasoner tokens match the planner modes';
* :func:`outcome_rows` / :func:`outcome_table` -- the per-problem outcome file and the table regenerated
  from it (:mod:`benchmarks.plans.seedstats`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from benchmarks.plans.stats import best_plan

__all__ = ["plan_name", "validation_table", "choose_fixed", "choose_per_task", "train_bandit", "majority_vote",
           "sc_samples", "reasoner_tokens", "outcome_rows", "outcome_table", "seed_level",
           "self_consistency"]


def plan_name(plan: Sequence[int]) -> str:
    """``(1, 3, 8)`` -> ``"1,3,8"`` (the one spelling of a plan)."""
    return ",".join(str(s) for s in plan)


def validation_table(problems: Sequence[Any], reasoner: Any, plans: Sequence[tuple[int, ...]], max_steps: int,
                     protocol: str, batch: int, store: str, log: Callable[[str], None] | None = None
                     ) -> tuple[dict[str, dict[str, bool]], list[dict[str, Any]], dict[str, Any]]:
    """Play every plan on every problem with the greedy ``reasoner`` wrapped in the replay cache.

    Returns ``({problem_id: {plan: correct}}, rows with the step texts, replay stats)``. The env runs with
    ``max_steps`` rounds (the evaluation's), so a plan's steps here are the ones it gets on the test set.
    """
    from agents.replay.reasoner import ReplayReasoner, StepStore, default_store_path

    from benchmarks.plans.table import Config as TableConfig, play_table

    replay = reasoner if isinstance(reasoner, ReplayReasoner) else ReplayReasoner(reasoner, StepStore(store or default_store_path()))
    tcfg = TableConfig(max_rounds=max_steps, batch=batch, protocol=protocol)
    rows = play_table(tcfg, problems, plans, replay, log=log)
    table: dict[str, dict[str, bool]] = {}
    for r in rows:
        table.setdefault(r["problem_id"], {})[plan_name(r["plan"])] = bool(r["correct"])
    return table, rows, dict(replay.stats)


def _accuracy(table: Mapping[str, Mapping[str, bool]], ids: Sequence[str], plans: Sequence[str]) -> list[float]:
    return [sum(table[i][p] for i in ids) / len(ids) for p in plans]


def choose_fixed(table: Mapping[str, Mapping[str, bool]], plans: Sequence[str]) -> tuple[str, dict[str, float]]:
    """The plan with the best validation accuracy, and every plan's validation accuracy."""
    if not table:
        raise ValueError("choose_fixed: the validation table is empty; give validation problems (--validation-limit).")
    acc = _accuracy(table, list(table), plans)
    return plans[best_plan(acc)], dict(zip(plans, acc))


def choose_per_task(table: Mapping[str, Mapping[str, bool]], tasks: Mapping[str, str], plans: Sequence[str]
                    ) -> dict[str, str]:
    """Per task, the plan best on that task's validation problems (ties: the overall best plan, then the shortest)."""
    best, _ = choose_fixed(table, plans)
    choice = {}
    for t in sorted(set(tasks[i] for i in table)):
        choice[t] = plans[best_plan(_accuracy(table, [i for i in table if tasks[i] == t], plans), prefer=plans.index(best))]
    return choice


def train_bandit(table: Mapping[str, Mapping[str, bool]], tasks: Mapping[str, str], plans: Sequence[str],
                 episodes: int, seed: int) -> dict[str, Any]:
    """Per-task Thompson sampling over ``plans`` (Beta(1, 1) priors), trained on the validation problems.

    Each episode draws a training problem, samples a plan from its task's posterior and reads the frozen
    greedy reasoner's outcome from ``table`` -- the replayed episode (greedy replay is exact, so looking it
    up equals playing it again). Returns the greedy policy (``choice``: per task, the highest posterior
    mean; ``default``: the pooled best, for tasks never seen in training) and the pull counts.
    """
    import numpy as np

    if episodes < 1:
        raise ValueError(f"train_bandit: episodes={episodes}; give at least 1 (--bandit-episodes).")
    rng = np.random.default_rng(seed)
    ids = sorted(table)
    names = sorted(set(tasks[i] for i in ids))
    wins = {t: np.ones(len(plans)) for t in names}
    losses = {t: np.ones(len(plans)) for t in names}
    for _ in range(episodes):
        pid = ids[int(rng.integers(len(ids)))]
        t = tasks[pid]
        j = int(np.argmax(rng.beta(wins[t], losses[t])))
        r = float(table[pid][plans[j]])
        wins[t][j] += r
        losses[t][j] += 1.0 - r
    mean = {t: (wins[t] / (wins[t] + losses[t])).tolist() for t in names}
    pooled = sum(wins.values()) / (sum(wins.values()) + sum(losses.values()))
    return {"choice": {t: plans[best_plan(mean[t])] for t in names}, "default": plans[best_plan(pooled)],
            "pulls": {t: {plans[j]: int(wins[t][j] + losses[t][j] - 2) for j in range(len(plans))
                          if wins[t][j] + losses[t][j] > 2} for t in names}, "episodes": episodes, "seed": seed}


def majority_vote(samples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Self-consistency: the most frequent extracted answer among ``samples`` (rows of one problem, in sample
    order); ties go to the answer seen first; samples with no answer do not vote. Correct if that answer was."""
    answers = [(str(r["extracted"]).strip(), bool(r["correct"])) for r in samples
               if r.get("extracted") is not None and str(r["extracted"]).strip()]
    if not answers:
        return {"answer": None, "votes": 0, "correct": False}
    counts = Counter(a for a, _ in answers)
    top = max(counts.values())
    winner = next(a for a, _ in answers if counts[a] == top)
    return {"answer": winner, "votes": top, "correct": next(c for a, c in answers if a == winner)}


def reasoner_tokens(row: Mapping[str, Any]) -> float | None:
    """Tokens the reasoner read and wrote in one episode (``None`` if it does not count what it wrote; a read
    count it does not report is 0: the toy agents read no prompt)."""
    tok = row.get("tokens") or {}
    written = tok.get("reasoner_written")
    return None if written is None else float(written + (tok.get("reasoner_read") or 0))


def sc_samples(budget: float | None, per_sample: float | None, fixed_k: int) -> int:
    """``k`` of self-consistency: ``fixed_k`` if given, else the planner modes' reasoner-token ``budget`` per
    problem over one no-planner sample's tokens, rounded (at least 1; 5 when the agents count no tokens)."""
    if fixed_k:
        return fixed_k
    if not budget or not per_sample:
        return 5
    return max(1, round(budget / per_sample))


def outcome_rows(per_seed: Mapping[str, Mapping[int, Mapping[str, bool]]], details: Mapping[str, Mapping[int, Any]],
                 problems: Sequence[Any], deterministic: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (mode, seed, problem) -- sample 0 -- plus ``details[mode][seed][problem_id]["samples"]``
    as samples 0..k-1 of mode ``<mode>_samples`` (self-consistency's individual answers).

    ``details[mode][seed][problem_id]`` may give ``plan`` (the plan played); a deterministic mode is written
    once, under its first seed (:func:`benchmarks.plans.seedstats.hierarchical_bootstrap` reads it as one arm).
    """
    from benchmarks.plans.table import task_of

    rows = []
    for mode, seeds in per_seed.items():
        for s in list(seeds)[:1] if mode in deterministic else list(seeds):
            extra = details.get(mode, {}).get(s, {})
            for p in problems:
                d = extra.get(p.id, {})
                base = {"seed": s, "problem_id": p.id, "task": task_of(p)}
                rows.append({"mode": mode, **base, "sample": 0, "plan": d.get("plan"), "correct": bool(seeds[s][p.id])})
                for k, c in enumerate(d.get("samples", ())):
                    rows.append({"mode": f"{mode}_samples", **base, "sample": k, "plan": [], "correct": bool(c)})
    return rows


def outcome_table(rows: Sequence[Mapping[str, Any]], baseline: str, rounds: int = 4000) -> str:
    """The study's table from its outcome rows: accuracy per mode with a 95 % seeds-then-problems bootstrap
    interval (:func:`benchmarks.plans.seedstats.bootstrap_accuracy`: the seeds of one problem are not independent
    evidence), then :mod:`benchmarks.plans.seedstats`' per-seed table and seed-level tests against ``baseline``.
    Deterministic in ``rows``."""
    from benchmarks.plans import seedstats

    table = seedstats.by_mode_seed(rows)
    lines = ["| mode | accuracy | 95% CI (bootstrap over seeds, then problems) | seeds × problems |", "|---|---|---|---|"]
    for mode, seeds in table.items():
        b = seedstats.bootstrap_accuracy(seeds, rounds=rounds)
        lines.append(f"| `{mode}` | {100 * b['accuracy']:.1f}% | {100 * b['ci95'][0]:.1f}–{100 * b['ci95'][1]:.1f}% | "
                     f"{b['seeds']} × {b['problems']} |")
    rep = seedstats.report(rows, baseline, rounds=rounds)
    return "\n".join(lines) + "\n\n" + seedstats.markdown(rep)


def seed_level(rows: Sequence[Mapping[str, Any]], a: str, b: str, rounds: int = 4000) -> dict[str, Any]:
    """Seed-level tests of mode ``a`` against ``b`` (:func:`benchmarks.plans.seedstats.report` on their rows)."""
    from benchmarks.plans import seedstats

    return seedstats.report([r for r in rows if r["mode"] in (a, b)], b, rounds=rounds)["tests"][f"{a}_vs_{b}"]


def self_consistency(st: Any, per_seed: dict, details: dict) -> dict[str, Any]:
    """Majority vote of k sampled no-planner answers per seed, k matching the planner modes' reasoner tokens.

    ``st`` is :mod:`studies.efficacy`'s study (its cached ``evaluated``, ``sampler``, ``ecfg``); fills
    ``per_seed["self_consistency"]`` and ``details["self_consistency"]``; returns k, the budget and the tokens.
    """
    import dataclasses
    import functools

    def mean_tokens(mode: str) -> float | None:
        toks = [d.get("tokens") for seed in details[mode].values() for d in seed.values()]
        return sum(toks) / len(toks) if toks and None not in toks else None

    planner_modes = ("best_fixed_exhaustive", "per_task", "bandit", "trained")
    per_mode = {m: mean_tokens(m) for m in planner_modes}
    known = [v for v in per_mode.values() if v is not None]
    budget = sum(known) / len(known) if known else None
    per_sample = mean_tokens("none")
    k = sc_samples(budget, per_sample, st.cfg.sc_k)
    for s in st.cfg.first_seeds(st.cfg.sc_seeds):
        ecfg = dataclasses.replace(st.ecfg[s], k=k, temperature=st.cfg.sc_temperature)
        key = f"self_consistency/k{k}/T{st.cfg.sc_temperature:g}/s{s}"  # sampled, also at k = 1
        per_seed["self_consistency"][s] = st.evaluated(key, "none", st.test,
                                                       functools.partial(st.sampler, ecfg, st.test), ecfg)
        details["self_consistency"][s] = st.details.get(key, {})
    used = [d["tokens"] for seed in details["self_consistency"].values() for d in seed.values()]
    return {"k": k, "temperature": st.cfg.sc_temperature, "token_budget_per_problem": budget,
            "planner_mode_tokens": per_mode, "tokens_per_sample_none": per_sample,
            "tokens_per_problem": sum(used) / len(used) if used and None not in used else None,
            "k_from": "--sc-k" if st.cfg.sc_k else "planner modes' mean reasoner tokens (read + written) per problem "
                      "/ greedy none's"}
