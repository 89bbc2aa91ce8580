"""Did training the reasoner change which plans work? Plan tables of one reasoner before and after training.

The paper's mechanism is a *pair*: the planner learns which strategies help, and the reasoner learns to carry
them out, so after joint (Stackelberg) training the plans that work may differ from those that worked for the
base reasoner. This compares plan tables (:mod:`benchmarks.plans.table`, one row per problem and plan) of the
same problems: the first file is the reference (the frozen reasoner), the others trained reasoners (one per
seed). Pure numpy over the tables' ``*.episodes.jsonl.gz`` files; no model.

Per plan ``p``: accuracy under the reference and under each trained reasoner; the change ``Δ_p`` (mean over
trained seeds − reference) with a 95 % bootstrap interval over problems. Whether *which* plans work changed:

* each table's best plan (ties to the shorter plan) and the rank correlation (Spearman) of its per-plan
  accuracies with the reference's;
* for every other plan ``p`` against the reference's best plan ``b``, paired over problems with bootstrap
  intervals at the Bonferroni level over the ``P − 1`` plans: the **interaction** ``Δ_p − Δ_b`` (did ``p`` gain
  more from training than ``b``?) and the **overtake** ``acc_trained(p) − acc_trained(b)`` (does ``p`` now beat
  ``b``?). The verdict is the overtake: a plan no better than ``b`` before training whose interval lies above 0
  after it means training changed which plans work. A positive interaction alone is not enough: a plan that
  was worse has more room to gain (at the ceiling every plan gains up to the best). ::

    python -m benchmarks.plans.shift --reference runs/tables/frozen.episodes.jsonl.gz \\
        --trained runs/tables/stackelberg_s0.episodes.jsonl.gz,... --out runs/tables/plan_shift.json
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .stats import best_plan

__all__ = ["Config", "load_table", "shift", "markdown", "main"]


def load_table(path: str | Path) -> tuple[list[str], list[tuple[int, ...]], np.ndarray]:
    """``(problem ids, plans, correct[problem, plan])`` from a plan table's episodes file.

    Raises ValueError for a file that is not a complete table (a problem missing a plan)."""
    rows = [json.loads(line) for line in gzip.open(path, "rt", encoding="utf-8") if line.strip()]
    if not rows:
        raise ValueError(f"{path}: no rows; pass the *.episodes.jsonl.gz that `python -m benchmarks.plans.table "
                         "--out X.json` writes beside X.json.")
    ids = list(dict.fromkeys(r["problem_id"] for r in rows))
    plans = sorted({tuple(r["plan"]) for r in rows}, key=lambda p: (len(p), p))
    pos, col = {p: i for i, p in enumerate(ids)}, {p: j for j, p in enumerate(plans)}
    C = np.zeros((len(ids), len(plans)), dtype=bool)
    seen = np.zeros_like(C)
    for r in rows:
        i, j = pos[r["problem_id"]], col[tuple(r["plan"])]
        C[i, j], seen[i, j] = bool(r["correct"]), True
    if not seen.all():
        i, j = map(int, np.argwhere(~seen)[0])
        raise ValueError(f"{path}: not a complete plan table ({int((~seen).sum())} cells missing, e.g. problem "
                         f"{ids[i]!r} under plan {list(plans[j])}); rerun benchmarks.plans.table for it.")
    return ids, plans, C


def _align(ref: tuple[list[str], list[tuple[int, ...]], np.ndarray], other: tuple[list[str], list, np.ndarray],
           name: str) -> np.ndarray:
    ids, plans, _ = ref
    o_ids, o_plans, C = other
    if set(o_ids) != set(ids) or set(o_plans) != set(plans):
        raise ValueError(f"{name}: its plan table covers other problems or plans than the reference "
                         f"({len(o_ids)} problems × {len(o_plans)} plans vs {len(ids)} × {len(plans)}); build both "
                         "with the same --source, --problems, --data-seed and --max-rounds.")
    pi, pj = {p: i for i, p in enumerate(o_ids)}, {p: j for j, p in enumerate(o_plans)}
    return C[np.ix_([pi[i] for i in ids], [pj[p] for p in plans])]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        for v in np.unique(x):  # average ranks for ties
            r[x == v] = r[x == v].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _interval(per_problem: np.ndarray, idx: np.ndarray, level: float) -> list[float]:
    means = per_problem[idx].mean(axis=1)
    lo = (1 - level) / 2
    return [float(np.quantile(means, lo)), float(np.quantile(means, 1 - lo))]


def shift(reference: tuple[list[str], list[tuple[int, ...]], np.ndarray],
          trained: Sequence[tuple[list[str], list[tuple[int, ...]], np.ndarray]],
          names: Sequence[str] = (), bootstrap: int = 10000, seed: int = 0, alpha: float = 0.05) -> dict[str, Any]:
    """The comparison (module docstring) of a reference table and one or more trained tables of its problems."""
    if not trained:
        raise ValueError("plan_shift needs at least one trained plan table besides the reference.")
    names = list(names) or [f"trained_{k}" for k in range(len(trained))]
    ids, plans, C0 = reference
    Ct = np.stack([_align(reference, t, n) for t, n in zip(trained, names)]).astype(float)  # seed × problem × plan
    C0 = C0.astype(float)
    n, P = C0.shape
    change = Ct.mean(0) - C0  # problem × plan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(bootstrap, n))
    b = best_plan(C0.mean(0))
    level = 1 - alpha / max(1, P - 1)
    acc_t = Ct.mean(1)  # seed × plan
    per_plan = []
    for j, p in enumerate(plans):
        row = {"plan": list(p), "reference": float(C0[:, j].mean()),
               "trained": [float(a) for a in acc_t[:, j]], "trained_mean": float(Ct[:, :, j].mean()),
               "change": float(change[:, j].mean()), "change_ci95": _interval(change[:, j], idx, 0.95)}
        if j != b:
            inter = change[:, j] - change[:, b]
            row["interaction"] = float(inter.mean())
            row["interaction_ci"] = _interval(inter, idx, level)
            over = Ct[:, :, j].mean(0) - Ct[:, :, b].mean(0)
            row["overtake"] = float(over.mean())
            row["overtake_ci"] = _interval(over, idx, level)
        per_plan.append(row)
    overtook = [r["plan"] for r in per_plan if r.get("overtake_ci", [0, 0])[0] > 0]
    pooled_best = best_plan(Ct.mean((0, 1)), prefer=b)
    return {
        "problems": n, "plans": [list(p) for p in plans], "names": names,
        "reference_best": list(plans[b]), "reference_best_accuracy": float(C0[:, b].mean()),
        "trained_best": [list(plans[best_plan(a, prefer=b)]) for a in acc_t],
        "trained_pooled_best": list(plans[pooled_best]),
        "spearman": [_spearman(C0.mean(0), a) for a in acc_t],
        "spearman_pooled": _spearman(C0.mean(0), Ct.mean((0, 1))),
        "accuracy_reference": float(C0.mean()), "accuracy_trained": [float(a.mean()) for a in acc_t],
        "interaction_level": level, "overtook_reference_best": overtook,
        "changed_which_plans_work": bool(overtook),
        "per_plan": per_plan,
    }


def _ci(row: dict[str, Any], key: str) -> str:
    if key not in row:
        return "(reference best)"
    lo, hi = row[key + "_ci"]
    return f"{100 * row[key]:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def markdown(res: dict[str, Any]) -> str:
    """The per-plan table and the verdict, for docs (generated, never typed)."""
    names = res["names"]
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    head = ("| plan | reference | " + " | ".join(names) + " | change (trained mean − reference) [95 % CI] | "
            f"interaction vs {res['reference_best']} | trained: plan − {res['reference_best']} "
            f"[{100 * res['interaction_level']:.2f} % CIs] |")
    lines = [head, "|" + "---|" * (len(names) + 5)]
    for r in res["per_plan"]:
        lo, hi = r["change_ci95"]
        lines.append(f"| `{r['plan']}` | {pct(r['reference'])} | " + " | ".join(pct(a) for a in r["trained"])
                     + f" | {100 * r['change']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | {_ci(r, 'interaction')} | "
                     f"{_ci(r, 'overtake')} |")
    lines.append(f"| all plans | {pct(res['accuracy_reference'])} | "
                 + " | ".join(pct(a) for a in res["accuracy_trained"]) + " | | | |")
    verdict = ("yes: " + ", ".join(f"`{p}`" for p in res["overtook_reference_best"])
               + f" now beat `{res['reference_best']}`" if res["changed_which_plans_work"]
               else f"no plan now beats `{res['reference_best']}` significantly")
    lines += ["", f"{res['problems']} problems. Best plan: reference `{res['reference_best']}`; trained "
              + ", ".join(f"`{p}`" for p in res["trained_best"]) + f" (pooled `{res['trained_pooled_best']}`). "
              "Spearman of per-plan accuracies with the reference: "
              + ", ".join("nan" if np.isnan(s) else f"{s:.2f}" for s in res["spearman"])
              + f". Did training change which plans work? {verdict}."]
    return "\n".join(lines) + "\n"


@dataclass
class Config:
    reference: str = ""
    """Episodes file of the reference plan table (the frozen reasoner)."""
    trained: str = ""
    """Comma-separated episodes files of trained reasoners' plan tables (same problems and plans)."""
    bootstrap: int = 10000
    """Bootstrap resamples over problems."""
    seed: int = 0
    """Seed of the bootstrap."""
    alpha: float = 0.05
    """Family-wise level of the interaction intervals (Bonferroni over the other plans)."""
    out: str = ""
    """Write JSON here ("" = print only); the markdown goes beside it as ``.md``."""


def main(cfg: Config) -> dict[str, Any]:
    if not cfg.reference or not cfg.trained:
        raise ValueError("--reference and --trained are required: plan tables' *.episodes.jsonl.gz files "
                         "(python -m benchmarks.plans.table --out X.json writes X.episodes.jsonl.gz).")
    paths = [p for p in cfg.trained.split(",") if p]
    res = shift(load_table(cfg.reference), [load_table(p) for p in paths],
                [Path(p).name.split(".")[0] for p in paths], cfg.bootstrap, cfg.seed, cfg.alpha)
    res["config"] = {"reference": cfg.reference, "trained": paths, "bootstrap": cfg.bootstrap, "seed": cfg.seed,
                     "alpha": cfg.alpha}
    md = markdown(res)
    print(md)
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(res, indent=1), encoding="utf-8")
        out.with_suffix(".md").write_text(md, encoding="utf-8")
    return res


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.plans.shift", __doc__)
