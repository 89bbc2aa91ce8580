"""Figures from evaluated episodes: accuracy with confidence intervals, pass@k, strategy analysis, token cost.

Pure Python (no torch): everything here takes *episode rows*, the plain dicts of
:class:`rsim_env.record.EpisodeRecord` (``to_dict()``) that :mod:`algos.evaluation` writes, one per
(problem, sample); it reads::

    problem_id, sample, correct (bool), components["format"] (0/1), rounds, terminated, truncated,
    strategies [strategy planned per round]  (empty without a planner)
    detected   [[strategies shown by step i], ...]   (the kind's echo-aware detection)
    tokens     {planner_read, planner_context, reasoner_read, reasoner_written} (values may be None)

Strategy counts follow the paper's keyword matching (``rsim_env.detect``). That detector counts a
step with no other keyword as *continuation* and a boxed answer as *termination*, so the
"number of distinct strategies" of an episode is at least 1 whenever it wrote any text; it is a
noisy proxy (the paper says so too).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Sequence

from rsim_env.strategies import STRATEGIES, num_strategies

__all__ = [
    "wilson", "pass_at_k", "distinct_detected", "mode_figures", "strategy_histograms",
    "accuracy_by_strategy_count", "token_cost", "TOKEN_KEYS",
]

TOKEN_KEYS = ("planner_read", "planner_context", "reasoner_read", "reasoner_written")
"""Per-episode token counts (see :func:`algos.evaluation.run.episode_tokens` for their definitions)."""


def wilson(successes: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% for the default ``z``).

    Better than the normal approximation at small ``n`` and near 0 or 1, where small models live.
    ``n == 0`` gives ``(0.0, 1.0)`` (no information).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"wilson() needs 0 <= successes <= n, got successes={successes}, n={n}.")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # clamp: rounding can put the bound a hair on the wrong side of p at p = 0 or 1
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}.")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod((n - c - i) / (n - i) for i in range(k))


def distinct_detected(row: dict[str, Any]) -> int:
    """Number of distinct strategies detected anywhere in an episode's text."""
    return len(set().union(*map(set, row["detected"]))) if row["detected"] else 0


def _by_problem(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[r["problem_id"]].append(r)
    return out


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def mode_figures(rows: Sequence[dict[str, Any]], k: int) -> dict[str, Any]:
    """Accuracy (pass@1), its 95% Wilson CI, pass@k, and episode statistics of one mode.

    With ``k == 1`` (one greedy sample per problem) accuracy is the fraction of problems solved
    and the CI is Wilson over problems. With ``k > 1`` samples, accuracy is the unbiased pass@1
    (mean per-problem success rate) and its CI is Wilson over problems applied to that mean (an
    approximation: samples of one problem are correlated, so the problem is the unit).
    """
    if not rows:
        raise ValueError("mode_figures() got no episodes; evaluate at least one problem.")
    groups = _by_problem(rows)
    n = len(groups)
    per_problem = [(len(g), sum(bool(r["correct"]) for r in g)) for g in groups.values()]
    acc = sum(pass_at_k(m, c, 1) for m, c in per_problem) / n
    lo, hi = wilson(acc * n, n)
    out: dict[str, Any] = {
        "problems": n, "samples": len(rows), "accuracy": acc, "ci95": [lo, hi],
        "correct": sum(bool(r["correct"]) for r in rows),
        "format_rate": _mean([float(r["components"]["format"]) for r in rows]),
        "mean_rounds": _mean([float(r["rounds"]) for r in rows]),
        "terminated_rate": _mean([float(bool(r["terminated"])) for r in rows]),
        "truncated_rate": _mean([float(bool(r["truncated"])) for r in rows]),
        "mean_distinct_strategies": _mean([float(distinct_detected(r)) for r in rows]),
        "mean_injected": _mean([float(len(r["strategies"])) for r in rows]),
    }
    if k > 1:
        pk = sum(pass_at_k(m, c, min(k, m)) for m, c in per_problem) / n
        out[f"pass@{k}"] = pk
        out[f"pass@{k}_ci95"] = list(wilson(pk * n, n))
    return out


def strategy_histograms(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per strategy: how often it was injected, and detected (per step and per episode).

    Returns:
        ``names`` (strategy names in index order), ``injected`` (plans per strategy),
        ``detected_steps`` (steps showing it), ``detected_episodes`` (episodes showing it at least
        once) and ``distinct_count`` (histogram of distinct detected strategies per episode,
        ``{count: episodes}``).
    """
    injected = [0] * num_strategies()
    steps = [0] * num_strategies()
    episodes = [0] * num_strategies()
    distinct: dict[int, int] = defaultdict(int)
    for r in rows:
        for s in r["strategies"]:
            injected[int(s)] += 1
        seen: set[int] = set()
        for d in r["detected"]:
            for s in d:
                steps[int(s)] += 1
            seen |= set(d)
        for s in seen:
            episodes[int(s)] += 1
        distinct[len(seen)] += 1
    return {"names": [s.name for s in STRATEGIES], "injected": injected, "detected_steps": steps,
            "detected_episodes": episodes, "distinct_count": {str(c): distinct[c] for c in sorted(distinct)}}


def accuracy_by_strategy_count(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Accuracy as a function of the number of distinct detected strategies (paper, Fig. 1b/3).

    Returns:
        ``bins``: ``{count: {"episodes", "correct", "accuracy", "ci95"}}`` and ``pearson_r``,
        the correlation between count and correctness over episodes (``None`` when either is
        constant).
    """
    bins: dict[int, list[bool]] = defaultdict(list)
    xs, ys = [], []
    for r in rows:
        c = distinct_detected(r)
        bins[c].append(bool(r["correct"]))
        xs.append(float(c)); ys.append(float(bool(r["correct"])))
    table = {}
    for c in sorted(bins):
        m, s = len(bins[c]), sum(bins[c])
        table[str(c)] = {"episodes": m, "correct": s, "accuracy": s / m, "ci95": list(wilson(s, m))}
    return {"bins": table, "pearson_r": _pearson(xs, ys)}


def _pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / math.sqrt(sxx * syy)


def token_cost(rows: Sequence[dict[str, Any]], wall_s: float, baseline: dict[str, Any] | None = None) -> dict[str, Any]:
    """Mean tokens per problem-sample and wall time per problem (paper, Table 3).

    Args:
        rows: Episodes of one mode.
        wall_s: Wall time the whole mode took (all its batches).
        baseline: The no-planner mode's ``token_cost`` output, for ratios; ``None`` for none.

    Returns:
        ``{key}_mean`` for each of :data:`TOKEN_KEYS` (``None`` where an agent does not record
        tokens, e.g. scripted agents), ``total_mean`` (planner read + reasoner read + written),
        ``wall_s``, ``wall_s_per_problem`` and, with a baseline, ``total_vs_none`` (ratio).
    """
    out: dict[str, Any] = {}
    for key in TOKEN_KEYS:
        vals = [r["tokens"][key] for r in rows if r["tokens"].get(key) is not None]
        out[f"{key}_mean"] = _mean([float(v) for v in vals]) if len(vals) == len(rows) else None
    parts = [out["planner_read_mean"] or 0.0, out["reasoner_read_mean"], out["reasoner_written_mean"]]
    out["total_mean"] = None if any(p is None for p in parts) else sum(parts)
    problems = len(_by_problem(rows))
    out["wall_s"] = wall_s
    out["wall_s_per_problem"] = wall_s / problems if problems else None
    if baseline is not None:
        base = baseline.get("total_mean")
        out["total_vs_none"] = (out["total_mean"] / base) if (base and out["total_mean"] is not None) else None
        bw = baseline.get("wall_s_per_problem")
        out["wall_vs_none"] = (out["wall_s_per_problem"] / bw) if bw else None
    return out
