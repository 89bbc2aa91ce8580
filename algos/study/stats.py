"""The statistics of ``rsim study``'s report: paired per-problem differences, their interval, their p-value.

Pure numpy; every function is a deterministic function of its inputs and ``seed``. The unit of evidence is the
problem: an arm scored over several seeds enters as one value per problem (its mean over seeds), so that six seeds
on one test set count as one draw of problems, not six.

* :func:`paired` -- mean of per-problem differences, a percentile bootstrap 95 % interval over problems, and a
  two-sided sign-flip permutation p-value (the paired randomisation test);
* :func:`holm_bound` -- a p-value corrected by Holm for the ``m`` configurations scored on the same test tree. The
  report knows its own p and the count ``m`` (the ledger), not the other scorings' p-values: ``min(1, m p)`` is
  Holm's adjusted p when this p is the smallest of the ``m`` and an upper bound on it otherwise;
* :func:`sign_test` -- exact two-sided sign test over paired per-seed accuracies (a statement about training noise);
* :func:`mean_ci` -- one arm's mean with the same bootstrap over problems.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["paired", "mean_ci", "holm_bound", "sign_test", "ROUNDS"]

ROUNDS = 10_000
"""Bootstrap and permutation replicates unless told otherwise."""


def _values(x: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    v = np.asarray(x, dtype=float)
    if v.ndim != 1:
        raise ValueError(f"{name}: expected one value per problem (a 1-d sequence), got shape {v.shape}.")
    if not np.isfinite(v).all():
        raise ValueError(f"{name}: {int((~np.isfinite(v)).sum())} values are not finite; score every problem.")
    return v


def mean_ci(x: Sequence[float] | np.ndarray, rounds: int = ROUNDS, seed: int = 0) -> dict[str, Any]:
    """``mean`` and ``ci95`` (percentile bootstrap over the values) of one arm's per-problem values."""
    v = _values(x, "mean_ci")
    if v.size == 0:
        return {"mean": None, "ci95": [None, None], "n": 0}
    means = v[np.random.default_rng(seed).integers(0, v.size, size=(rounds, v.size))].mean(axis=1)
    return {"mean": float(v.mean()), "ci95": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))],
            "n": int(v.size)}


def paired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, rounds: int = ROUNDS,
           seed: int = 0) -> dict[str, Any]:
    """The per-problem paired difference ``a - b``.

    Args:
        a, b: One value per problem (the same problems in the same order), e.g. each arm's correctness averaged
            over its seeds.
        rounds: Bootstrap and permutation replicates.
        seed: RNG seed.

    Returns:
        ``difference`` (mean of ``a - b``), ``sum`` (the difference in problems), ``ci95`` (percentile bootstrap over
        problems), ``p_value`` (two-sided sign-flip permutation test: the share of random sign flips of the
        per-problem differences whose mean is at least as far from 0, with the observed one counted), ``n``.
    """
    va, vb = _values(a, "paired: a"), _values(b, "paired: b")
    if va.shape != vb.shape:
        raise ValueError(f"paired: the arms hold {va.size} and {vb.size} values; give both on the same problems.")
    d = va - vb
    if d.size == 0:
        return {"difference": None, "sum": 0.0, "ci95": [None, None], "p_value": None, "n": 0}
    ci = mean_ci(d, rounds, seed)["ci95"]
    obs = abs(float(d.mean()))
    if not np.any(d):
        p = 1.0
    else:
        signs = np.random.default_rng(seed + 1).integers(0, 2, size=(rounds, d.size), dtype=np.int8) * 2 - 1
        far = int((np.abs((signs * d).mean(axis=1)) >= obs - 1e-12).sum())
        p = (far + 1) / (rounds + 1)
    return {"difference": float(d.mean()), "sum": float(d.sum()), "ci95": ci, "p_value": float(p), "n": int(d.size)}


def holm_bound(p: float | None, m: int) -> float | None:
    """``p`` corrected by Holm for ``m`` hypotheses when only this one's p is known: ``min(1, m p)`` (module doc)."""
    if m < 1:
        raise ValueError(f"holm_bound: m={m}; the number of configurations scored on the test tree is at least 1 "
                         "(this one).")
    return None if p is None else min(1.0, m * p)


def sign_test(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Exact two-sided sign test on paired per-seed values (ties dropped): ``above``, ``below``, ``tied``, ``p_value``."""
    if len(a) != len(b):
        raise ValueError(f"sign_test: {len(a)} and {len(b)} values; give one per seed for both arms.")
    above = sum(bool(x > y) for x, y in zip(a, b))
    below = sum(bool(x < y) for x, y in zip(a, b))
    n = above + below
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(above, below) + 1)) / 2 ** n)
    return {"above": above, "below": below, "tied": len(a) - n, "p_value": p}
