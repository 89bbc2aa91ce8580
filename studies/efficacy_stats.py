"""Statistics and the resumable cache of :mod:`studies.efficacy` (problem-clustered tests; the seed-level
ones come from :mod:`benchmarks.plans.seedstats`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from benchmarks.plans.seedstats import mcnemar_exact  # the paired test is an instrument; the studies reuse it

# ------------------------------------------------------------------------------------- statistics


def mode_summary(outcomes: Sequence[bool]) -> dict[str, Any]:
    """Accuracy, its 95 % Wilson interval and ``n``."""
    from algos.analysis import wilson

    n = len(outcomes)
    right = sum(outcomes)
    lo, hi = wilson(right, n)
    return {"accuracy": right / n if n else 0.0, "ci_low": lo, "ci_high": hi, "n": n}


# ------------------------------------------------------------------------------------- running

def paired_permutation(a: Sequence[Sequence[bool]], b: Sequence[Sequence[bool]], rounds: int = 20000,
                       seed: int = 0) -> dict[str, Any]:
    """Two-sided paired sign-flip permutation test, clustered on problems.

    ``a[i]`` and ``b[i]`` hold the outcomes of problem ``i`` (one per seed; a deterministic mode
    repeats its single outcome). The statistic is the mean over problems of the per-problem
    difference of seed-averaged accuracy; under the null the sign of each problem's difference is
    exchangeable. Problems, not (seed, problem) pairs, are the unit: seeds of one problem are
    correlated, and counting them as independent pairs (pooled McNemar) overstates significance.
    """
    import random

    if len(a) != len(b) or not a:
        raise ValueError(f"paired_permutation needs the same non-zero number of problems, got {len(a)} and {len(b)}.")
    diffs = [sum(x) / len(x) - sum(y) / len(y) for x, y in zip(a, b)]
    observed = sum(diffs) / len(diffs)
    nonzero = [d for d in diffs if d != 0]
    if not nonzero:
        return {"difference": 0.0, "p_value": 1.0, "problems_differing": 0}
    rng = random.Random(seed)
    hits = 0
    for _ in range(rounds):
        t = sum(d if rng.random() < 0.5 else -d for d in nonzero) / len(diffs)
        hits += abs(t) >= abs(observed) - 1e-12
    return {"difference": observed, "p_value": (hits + 1) / (rounds + 1), "problems_differing": len(nonzero)}


DETERMINISTIC = ("none", "best_fixed", "best_fixed_exhaustive", "per_task")
"""Modes whose greedy outcome does not depend on the seed: evaluated once, reused for every seed."""


NOT_IN_KEY = ("out", "batch", "random_seeds", "sc_seeds", "baselines_from", "replay_store", "bootstrap_rounds", "table_from")
"""Config fields that do not change a study's runs and outcomes (a resume may change them)."""


class Cache:
    """Finished pieces of a study (training runs, outcomes) in one JSON file, so a crash or a stop loses
    at most the piece in flight: rerunning the same command picks up where it stopped."""

    def __init__(self, path: Path, cfg: Any) -> None:
        self.path = path
        key = {k: v for k, v in asdict(cfg).items() if k not in NOT_IN_KEY}
        if not key["train_set"]:  # studies without training overrides keep the key they had before the field
            del key["train_set"]
        if key.get("trained_learner") == "stackelberg" and key.get("grpo", True):  # likewise the learner fields
            key.pop("trained_learner", None)
            key.pop("grpo", None)
        key = json.loads(json.dumps(key))
        self.data: dict[str, Any] = {"config": key, "runs": {}, "outcomes": {}, "timing": {}, "details": {}}
        if path.is_file():
            old = json.loads(path.read_text())
            if old.get("config") != key:
                raise ValueError(f"{path} holds a study with different settings ({old.get('config')}); "
                                 f"use another --output-dir or delete it to start over.")
            self.data = old
            self.data.setdefault("details", {})  # caches from before the per-problem plans and tokens

    def adopt_baselines(self, other_dir: str) -> list[str]:
        """Copy the base-reasoner evaluations of the study in ``other_dir`` (see ``Config.baselines_from``);
        refuses when its evaluation settings differ. Returns the keys copied."""
        path = Path(other_dir) / "efficacy_cache.json"
        if not path.is_file():
            raise ValueError(f"--baselines-from {other_dir}: no efficacy_cache.json there; give a study's --output-dir.")
        other = json.loads(path.read_text())
        same = ("preset", "eval_limit", "validation_limit", "fixed", "plan_rounds", "sc_temperature")
        mine, theirs = self.data["config"], other.get("config", {})
        diff = [k for k in same if mine.get(k) != theirs.get(k)]
        if diff or mine["seeds"][:1] != theirs.get("seeds", [])[:1]:
            raise ValueError(f"--baselines-from {other_dir}: its evaluation settings differ ({diff or ['first seed']}); "
                             f"its base-reasoner evaluations are not these. Drop --baselines-from.")
        keys = [k for k in other["outcomes"] if k.split("/")[0] in ("validation", "none", "random", "self_consistency")
                or k.startswith("fixed:")]
        for k in keys:
            self.data["outcomes"].setdefault(k, other["outcomes"][k])
            for part in ("timing", "details"):
                if k in other.get(part, {}):
                    self.data[part].setdefault(k, other[part][k])
        for k, v in other.get("tables", {}).items():  # the validation plan table: base reasoner only
            self.data.setdefault("tables", {}).setdefault(k, v)
        self.save()
        return keys

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)


COMPARISONS = (("trained", "best_fixed_exhaustive"), ("trained", "self_consistency"), ("trained", "per_task"),
               ("trained", "bandit"), ("trained", "best_fixed"), ("trained", "grpo"), ("trained", "none"),
               ("trained", "random"), ("bandit", "best_fixed_exhaustive"), ("per_task", "best_fixed_exhaustive"),
               ("self_consistency", "none"), ("grpo", "none"), ("random", "none"), ("best_fixed", "none"))
"""Pairs (a, b) tested, each both clustered on problems and with the seed as the unit."""


def summaries(per_seed: dict, problems: Sequence[Any], modes: Sequence[str], rounds: int = 4000) -> dict[str, Any]:
    """Every mode's accuracy over its (seed, problem) episodes with a seeds-then-problems bootstrap interval
    (:func:`benchmarks.plans.seedstats.bootstrap_accuracy`; ``n`` counts the episodes, ``seeds`` and ``problems`` the
    units resampled), and :func:`mode_summary` (Wilson over problems) per seed."""
    from benchmarks.plans.seedstats import bootstrap_accuracy

    out = {}
    for m in modes:
        seeds = list(per_seed[m])[:1] if m in DETERMINISTIC else list(per_seed[m])
        b = bootstrap_accuracy({s: [per_seed[m][s][p.id] for p in problems] for s in seeds}, rounds=rounds)
        out[m] = {"accuracy": b["accuracy"], "ci_low": b["ci95"][0], "ci_high": b["ci95"][1],
                  "n": len(seeds) * len(problems), "seeds": b["seeds"], "problems": b["problems"],
                  "interval": b["interval"],
                  "per_seed": {str(s): mode_summary(list(per_seed[m][s].values())) for s in per_seed[m]},
                  "deterministic": m in DETERMINISTIC}
    return out


def tests(seeds: Sequence[int], per_seed: dict, problems: Sequence[Any], rows: Sequence[dict[str, Any]],
          rounds: int) -> dict[str, Any]:
    """Every pair of :data:`COMPARISONS`: permutation over problems, pooled McNemar and, unless both modes
    are deterministic, the seed-level tests of :mod:`benchmarks.plans.seedstats` on the outcome ``rows``."""
    def by_problem(m: str) -> list[list[bool]]:
        seeds = list(per_seed[m])[:1] if m in DETERMINISTIC else list(per_seed[m])
        return [[per_seed[m][s][p.id] for s in seeds] for p in problems]

    def pooled(m: str) -> list[bool]:  # (seed, problem) pairs; a mode run with fewer seeds repeats its first
        first = next(iter(per_seed[m].values()))
        return [per_seed[m].get(s, first)[p.id] for s in seeds for p in problems]

    tests = {}
    for a, b in COMPARISONS:
        if a not in per_seed or b not in per_seed:  # a mode the study left out (e.g. grpo of a planner-only study)
            continue
        perm = paired_permutation(by_problem(a), by_problem(b))
        mc = mcnemar_exact(pooled(a), pooled(b))
        tests[f"{a}_vs_{b}"] = {"a": a, "b": b, "test": "paired_permutation_over_problems", "p_value": perm["p_value"],
                                "difference": perm["difference"], "problems_differing": perm["problems_differing"],
                                "only_a": mc["only_a"], "only_b": mc["only_b"], "mcnemar_pooled_p": mc["p_value"]}
        if not (a in DETERMINISTIC and b in DETERMINISTIC) and not (
                set(per_seed[a]) != set(per_seed[b]) and a not in DETERMINISTIC and b not in DETERMINISTIC):
            tests[f"{a}_vs_{b}"] |= seed_level(rows, a, b, rounds)
    return tests


def seed_level(rows: Sequence[Mapping[str, Any]], a: str, b: str, rounds: int = 4000) -> dict[str, Any]:
    """Seed-level tests of mode ``a`` against ``b`` (:func:`benchmarks.plans.seedstats.report` on their rows)."""
    from benchmarks.plans import seedstats

    return seedstats.report([r for r in rows if r["mode"] in (a, b)], b, rounds=rounds)["tests"][f"{a}_vs_{b}"]
