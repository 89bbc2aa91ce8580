"""The statistics of ``rsim study``'s report: paired per-problem differences, their interval, their p-value.

Pure numpy; every function is a deterministic function of its inputs and ``seed``. The unit of evidence is the
problem: an arm scored over several seeds enters as one value per problem (its mean over seeds), so that six seeds
on one test set count as one draw of problems, not six.

* :func:`paired` -- mean of per-problem differences, a percentile bootstrap 95 % interval over problems, and a
  two-sided sign-flip permutation p-value (the paired randomisation test);
* :func:`holm` -- Holm's (1979) step-down adjusted p-values of a family of hypotheses: sorted ascending, the ``j``-th
  smallest p (1-based) is multiplied by ``m - j + 1``, a running maximum keeps the adjusted values monotone, and each
  is capped at 1. The report applies it to the looks its test set's ledger holds (:mod:`algos.study.ledger`; a look
  without a p-value enters as p = 1, which is always a valid p-value and the most conservative one for the others)
  and, apart, to the report's own secondary comparisons;
* :func:`sign_test` -- exact two-sided sign test over paired per-seed accuracies (a statement about training noise);
* :func:`mean_ci` -- one arm's mean with the same bootstrap over problems.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

__all__ = ["paired", "mean_ci", "holm", "sign_test", "ROUNDS"]

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


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the order given (module docstring); a None stays None and is not
    counted in the family (pass 1.0 for a member whose p is unknown: it is counted, as the largest).

    ``holm([0.01, 0.04, 0.03, 0.005]) == [0.03, 0.06, 0.06, 0.02]``. Ties keep their given order (the adjusted
    values of tied p-values are equal either way).

    Raises:
        ValueError: a p-value outside [0, 1] or not finite.
    """
    known = [(i, float(p)) for i, p in enumerate(p_values) if p is not None]
    bad = [p for _, p in known if not (0.0 <= p <= 1.0)]
    if bad:
        raise ValueError(f"holm: p-values must lie in [0, 1]; got {bad[:3]}. Pass each test's p-value (or 1.0 for "
                         "one that is unknown).")
    m = len(known)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for j, (i, p) in enumerate(sorted(known, key=lambda ip: ip[1])):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out


def sign_test(a: Sequence[float], b: Sequence[float]) -> dict[str, Any]:
    """Exact two-sided sign test on paired per-seed values (ties dropped): ``above``, ``below``, ``tied``, ``p_value``."""
    if len(a) != len(b):
        raise ValueError(f"sign_test: {len(a)} and {len(b)} values; give one per seed for both arms.")
    above = sum(bool(x > y) for x, y in zip(a, b))
    below = sum(bool(x < y) for x, y in zip(a, b))
    n = above + below
    p = 1.0 if n == 0 else min(1.0, 2 * sum(math.comb(n, i) for i in range(min(above, below) + 1)) / 2 ** n)
    return {"above": above, "below": below, "tied": len(a) - n, "p_value": p}
