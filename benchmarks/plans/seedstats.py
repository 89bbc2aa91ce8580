"""Seed-level statistics and per-problem outcome files: what a reader needs to recompute a study's tables.

A claim about a *training procedure* has the seed as its unit: three seeds that all beat a baseline
give a sign-test p of 1/4 at best (two-sided), however many problems each was scored on. This module
keeps both views side by side:

* :func:`mcnemar_exact` -- exact McNemar test on paired per-problem outcomes (two arms, the same problems);
* :func:`seed_sign_test` -- exact two-sided sign test over seeds (the per-seed accuracy of a trained arm
  against a baseline's on the same problems);
* :func:`hierarchical_bootstrap` -- resample seeds, then problems (the same problems for both arms), and
  read a 95 % interval and a two-sided p for the accuracy difference. It widens with the spread between
  seeds, which a problem-clustered test that averages seeds cannot see;
* :func:`bootstrap_accuracy` -- one arm's accuracy with the same seeds-then-problems resampling: the interval
  of a mode scored over several seeds, whose (seed, problem) episodes are not independent (a Wilson interval
  over all of them counts a problem played alike by five seeds as five observations);
* :func:`write_outcomes` / :func:`read_outcomes` -- one row per (mode, seed, problem, sample) in a
  gzip-compressed JSONL file, the file to commit beside a study's JSON;
* :func:`report` / ``main`` -- the per-seed and pooled table, regenerated from such a file, so the
  docs' tables come from committed data by a command, never by hand::

    python -m benchmarks.plans.seedstats --outcomes runs/study_outcomes.jsonl.gz --baseline best_fixed \
        --out runs/seed_table.md
"""

from __future__ import annotations

import gzip
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

OUTCOME_KEYS = ("mode", "seed", "problem_id", "correct")
"""Keys every outcome row must have (``task``, ``plan``, ``sample`` and anything else are optional)."""


def mcnemar_exact(a: Sequence[bool], b: Sequence[bool]) -> dict[str, Any]:
    """Two-sided exact McNemar test on paired outcomes (binomial test on the discordant pairs)."""
    if len(a) != len(b):
        raise ValueError(f"mcnemar_exact needs paired outcomes, got {len(a)} and {len(b)}.")
    only_a = sum(x and not y for x, y in zip(a, b))
    only_b = sum(y and not x for x, y in zip(a, b))
    n = only_a + only_b
    if n == 0:
        return {"only_a": 0, "only_b": 0, "p_value": 1.0}
    k = min(only_a, only_b)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return {"only_a": only_a, "only_b": only_b, "p_value": min(1.0, 2 * tail)}


def seed_sign_test(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Exact two-sided sign test on paired per-seed accuracies (ties dropped).

    With ``n`` untied seeds the smallest possible p is ``2 / 2**n``: 3 seeds can never reach 0.05.
    """
    if len(a) != len(b):
        raise ValueError(f"seed_sign_test needs one accuracy per seed for both arms, got {len(a)} and {len(b)}.")
    wins = sum(x > y for x, y in zip(a, b))
    losses = sum(x < y for x, y in zip(a, b))
    n = wins + losses
    if n == 0:
        return {"wins": 0, "losses": 0, "ties": len(a), "p_value": 1.0, "min_p": 1.0}
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return {"wins": wins, "losses": losses, "ties": len(a) - n, "p_value": min(1.0, 2 * tail),
            "min_p": min(1.0, 2 / 2 ** n)}


def _arms(a: Mapping[Any, Sequence[bool]], b: Mapping[Any, Sequence[bool]]) -> tuple[list, list, int]:
    sa, sb = sorted(a, key=str), sorted(b, key=str)
    if not sa or not sb:
        raise ValueError("hierarchical_bootstrap needs at least one seed per arm.")
    n = {len(a[s]) for s in sa} | {len(b[s]) for s in sb}
    if len(n) != 1 or 0 in n:
        raise ValueError(f"hierarchical_bootstrap needs every seed scored on the same non-empty problems, got lengths {sorted(n)}.")
    return sa, sb, n.pop()


def hierarchical_bootstrap(a: Mapping[Any, Sequence[bool]], b: Mapping[Any, Sequence[bool]],
                           rounds: int = 4000, seed: int = 0) -> dict[str, Any]:
    """Accuracy difference ``a - b`` with a seeds-then-problems bootstrap.

    Args:
        a, b: ``{seed: outcomes}``; every list holds the outcomes of the same problems, in the same order.
            A seed-independent arm (greedy ``none``, a fixed plan) is one entry. When both arms have the
            same seeds they are resampled together (a seed trains both learners), otherwise apart.
        rounds: Bootstrap replicates.
        seed: RNG seed (the result is a deterministic function of the inputs and this seed).

    Returns:
        ``difference`` (observed), ``ci95`` (percentile interval), ``p_value`` (two-sided: twice the share of
        replicates on the far side of 0, floored at ``1 / rounds``), ``seeds`` (count per arm), ``problems``.
    """
    sa, sb, n = _arms(a, b)
    paired = sa == sb
    mean = [[sum(a[s]) / n for s in sa], [sum(b[s]) / n for s in sb]]
    observed = sum(mean[0]) / len(sa) - sum(mean[1]) / len(sb)
    rng = random.Random(seed)
    reps = []
    for _ in range(rounds):
        pa = [rng.choice(sa) for _ in sa]
        pb = pa if paired else [rng.choice(sb) for _ in sb]
        idx = [rng.randrange(n) for _ in range(n)]
        ra = sum(a[s][i] for s in pa for i in idx) / (len(pa) * n)
        rb = sum(b[s][i] for s in pb for i in idx) / (len(pb) * n)
        reps.append(ra - rb)
    reps.sort()
    lo, hi = reps[int(0.025 * rounds)], reps[min(rounds - 1, int(0.975 * rounds))]
    far = sum(r <= 0 for r in reps) if observed > 0 else sum(r >= 0 for r in reps)
    p = 1.0 if observed == 0 else min(1.0, max(2 * far / rounds, 1 / rounds))
    return {"difference": observed, "ci95": [lo, hi], "p_value": p, "seeds": [len(sa), len(sb)], "problems": n,
            "resampled": "seeds together, then problems" if paired else "each arm's seeds, then problems"}


def bootstrap_accuracy(outcomes: Mapping[Any, Sequence[bool]], rounds: int = 4000, seed: int = 0) -> dict[str, Any]:
    """Accuracy of one arm with a 95 % seeds-then-problems bootstrap interval.

    Args:
        outcomes: ``{seed: outcomes}``, every list over the same problems in the same order; a seed-independent
            arm is one entry, and its interval is then a bootstrap over problems alone.
        rounds: Bootstrap replicates.
        seed: RNG seed (the result is a deterministic function of the inputs and this seed).

    Each replicate draws the seeds with replacement, then the problems with replacement (the same problems for
    every drawn seed), and takes the mean. Seeds that play alike add nothing to the interval's width, where a
    Wilson interval over ``seeds x problems`` pairs would treat them as independent evidence. With few seeds the
    percentile interval is, if anything, a little narrow (a bootstrap of ``m`` seeds sees ``(m-1)/m`` of their
    variance).

    Returns:
        ``accuracy``, ``ci95`` (percentile interval), ``seeds``, ``problems``, ``interval`` (what was resampled).
    """
    import numpy as np

    keys = sorted(outcomes, key=str)
    if not keys:
        raise ValueError("bootstrap_accuracy needs at least one seed of outcomes.")
    n = {len(outcomes[s]) for s in keys}
    if len(n) != 1 or 0 in n:
        raise ValueError(f"bootstrap_accuracy needs every seed scored on the same non-empty problems, got lengths {sorted(n)}.")
    m = np.array([[bool(x) for x in outcomes[s]] for s in keys], dtype=np.int32)  # (seeds, problems)
    rng = np.random.default_rng(seed)
    reps = np.empty(rounds)
    for r in range(rounds):  # one replicate at a time: memory stays at one (seeds, problems) array
        col = m[rng.integers(len(keys), size=len(keys))].sum(axis=0)
        reps[r] = col[rng.integers(m.shape[1], size=m.shape[1])].sum() / m.size
    reps.sort()
    lo, hi = float(reps[int(0.025 * rounds)]), float(reps[min(rounds - 1, int(0.975 * rounds))])
    return {"accuracy": float(m.mean()), "ci95": [lo, hi], "seeds": len(keys), "problems": int(m.shape[1]),
            "interval": "bootstrap: seeds, then problems" if len(keys) > 1 else "bootstrap: problems"}


# ------------------------------------------------------------------------------------- outcome files

def write_outcomes(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write outcome rows to ``path`` (``.jsonl.gz``), atomically; every row needs :data:`OUTCOME_KEYS`."""
    path = Path(path)
    if not path.name.endswith(".jsonl.gz"):
        raise ValueError(f"outcome file {path}: name it *.jsonl.gz (gzip-compressed JSON lines).")
    tmp = path.with_name(path.name + ".tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for i, r in enumerate(rows):
            missing = [k for k in OUTCOME_KEYS if k not in r]
            if missing:
                raise ValueError(f"outcome row {i} lacks {missing}; every row needs {list(OUTCOME_KEYS)}.")
            f.write(json.dumps(dict(r), sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def read_outcomes(path: str | Path) -> list[dict[str, Any]]:
    """The rows of an outcome file; names the line of a malformed one."""
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{i}: not JSON ({e.msg}); the file is damaged, regenerate it.") from e
            missing = [k for k in OUTCOME_KEYS if k not in r]
            if missing:
                raise ValueError(f"{path}:{i}: row lacks {missing}; every row needs {list(OUTCOME_KEYS)}.")
            rows.append(r)
    return rows


def by_mode_seed(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[Any, list[bool]]]:
    """``{mode: {seed: outcomes in problem_id order}}`` (sample 0 only: pass@1)."""
    acc: dict[str, dict[Any, dict[str, bool]]] = {}
    for r in rows:
        if r.get("sample", 0) != 0:
            continue
        acc.setdefault(r["mode"], {}).setdefault(r["seed"], {})[r["problem_id"]] = bool(r["correct"])
    out: dict[str, dict[Any, list[bool]]] = {}
    for mode, seeds in acc.items():
        ids = sorted(next(iter(seeds.values())))
        for s, got in seeds.items():
            if sorted(got) != ids:
                raise ValueError(f"mode {mode!r}: seed {s} was scored on other problems than seed "
                                 f"{next(iter(seeds))}; seed-level tests need the same problems.")
        out[mode] = {s: [got[i] for i in ids] for s, got in seeds.items()}
    return out


def report(rows: Sequence[Mapping[str, Any]], baseline: str, rounds: int = 4000) -> dict[str, Any]:
    """Per-seed accuracy of every mode and, for every other mode vs ``baseline``, both seed-level tests."""
    table = by_mode_seed(rows)
    if baseline not in table:
        raise ValueError(f"baseline mode {baseline!r} is not in the outcomes (modes: {sorted(table)}).")
    n = {len(next(iter(s.values()))) for s in table.values()}
    if len(n) != 1:
        raise ValueError(f"modes were scored on different numbers of problems ({sorted(n)}); compare like with like.")
    per_seed = {m: {str(s): sum(o) / len(o) for s, o in seeds.items()} for m, seeds in table.items()}
    base = table[baseline]
    tests = {}
    for m, seeds in table.items():
        if m == baseline:
            continue
        if len(base) > 1 and set(base) != set(seeds):
            raise ValueError(f"mode {m!r} and baseline {baseline!r} have different seeds; pair them or give a "
                             "seed-independent baseline.")
        only = next(iter(base.values()))
        ref = [sum(base[s]) / len(base[s]) if len(base) > 1 else sum(only) / len(only) for s in seeds]
        tests[f"{m}_vs_{baseline}"] = {
            "sign_test_seeds": seed_sign_test([sum(o) / len(o) for o in seeds.values()], ref),
            "bootstrap_seeds_problems": hierarchical_bootstrap(seeds, base, rounds=rounds)}
    return {"per_seed": per_seed, "tests": tests, "problems": n.pop(), "baseline": baseline}


def markdown(rep: Mapping[str, Any]) -> str:
    """The per-seed table and the tests, as markdown."""
    lines = [f"Per-seed accuracy on {rep['problems']} problems (pass@1), and each mode against `{rep['baseline']}` "
             "with the seed as the unit.", "", "| mode | seeds | per-seed accuracy % | mean % | Δ vs baseline (95 % CI, "
             "seeds+problems bootstrap) | bootstrap p | sign test over seeds (wins/losses, p) |", "|---|---|---|---|---|---|---|"]
    for m, seeds in rep["per_seed"].items():
        accs = list(seeds.values())
        t = rep["tests"].get(f"{m}_vs_{rep['baseline']}")
        cells = ["—", "—", "—"]
        if t:
            b, s = t["bootstrap_seeds_problems"], t["sign_test_seeds"]
            cells = [f"{100 * b['difference']:+.1f} [{100 * b['ci95'][0]:+.1f}, {100 * b['ci95'][1]:+.1f}]",
                     f"{b['p_value']:.3g}", f"{s['wins']}/{s['losses']}, p = {s['p_value']:.3g} (min {s['min_p']:.3g})"]
        lines.append(f"| `{m}` | {len(accs)} | {' / '.join(f'{100 * a:.1f}' for a in accs)} | "
                     f"{100 * sum(accs) / len(accs):.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Config:
    """Regenerate a seed-level table from a committed outcome file."""

    outcomes: str = ""
    """The ``*.jsonl.gz`` outcome file (rows with mode, seed, problem_id, correct)."""
    baseline: str = "none"
    """Mode every other mode is tested against."""
    rounds: int = 4000
    """Bootstrap replicates."""
    out: str = ""
    """Write the markdown table here ("" = print only); a ``.json`` beside it gets the figures."""


def main(cfg: Config) -> dict[str, Any]:
    if not cfg.outcomes:
        raise ValueError("--outcomes is required: the *.jsonl.gz file of per-problem outcomes.")
    rep = report(read_outcomes(cfg.outcomes), cfg.baseline, cfg.rounds)
    md = markdown(rep)
    print(md)
    if cfg.out:
        Path(cfg.out).write_text(md, encoding="utf-8")
        Path(cfg.out).with_suffix(".json").write_text(json.dumps(rep, indent=1), encoding="utf-8")
    return rep


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.seedstats", __doc__)
