"""Does training help? Trained planner vs no planner vs random vs best fixed sequence; Stackelberg vs GRPO.

For each seed, train two learners at equal compute (same preset, steps, groups and G):
``stackelberg`` (planner + reasoner) and ``grpo`` (reasoner alone, no planner). Then evaluate,
greedy (k = 1), on ``eval_limit`` held-out problems (disjoint from training by question text):

* ``none``            the base reasoner, no planner;
* ``random``          the base reasoner with a uniformly random planner (one per seed);
* ``best_fixed``      the base reasoner with the fixed sequence that scored best on a *validation*
                      set drawn from the training split (so the choice does not peek at the test set);
* ``stackelberg``     the trained planner driving the jointly trained reasoner (one per seed);
* ``grpo``            the GRPO-trained reasoner, no planner (one per seed).

Every mode gets accuracy with a 95 % Wilson interval over all its (seed, problem) episodes, and
``tests`` compares modes with McNemar's exact test on paired episodes (same problem, same seed).
Learning curves (reward and accuracy per step, per seed and learner) go to ``curves.png``.

    python -m benchmarks.efficacy --out results/efficacy.json                     # hours on a CPU
    python -m benchmarks.efficacy --preset tiny --eval-limit 40 --out /tmp/e.json # seconds: toy agents

This is not a unit test; never run the full version in CI (``tests/test_efficacy.py`` runs the
toy scale).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

SCALES = {
    "study": {"source": "curriculum:heldout", "validation": "curriculum:train"},
    "tiny": {"source": "tiny", "validation": "tiny"},
}
"""Per preset: the held-out evaluation source and the validation source (for choosing the fixed sequence)."""


@dataclass(frozen=True)
class Config:
    """Efficacy study settings."""

    preset: str = "study"
    """Training preset (``rsim train --preset``): ``study`` (embedded SmolLM2) or ``tiny`` (toy agents, seconds)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds (each trains both learners)."""
    steps: int = 0
    """Optimizer steps per run (0 = the preset's)."""
    eval_limit: int = 400
    """Held-out problems evaluated per mode and seed."""
    validation_limit: int = 64
    """Training-split problems used to pick the best fixed sequence."""
    fixed: tuple[tuple[int, ...], ...] = ((8,), (6, 8), (1, 6, 8), (7, 6, 8), (1, 3, 8), (2, 0, 8), (2, 8))
    """Candidate fixed sequences."""
    batch: int = 32
    """Problems per batched evaluation rollout."""
    output_dir: str = "runs/efficacy"
    """Where the training runs go (one subdirectory per learner and seed)."""
    out: str = ""
    """JSON result path; ``curves.png`` is written next to it ("" = print only)."""

    def __post_init__(self) -> None:
        if self.preset not in SCALES:
            raise ValueError(f"Config.preset={self.preset!r}: choose one of {sorted(SCALES)}.")
        if not self.seeds:
            raise ValueError("Config.seeds is empty; give at least one seed, e.g. (0, 1, 2).")
        for name in ("eval_limit", "validation_limit", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")
        if self.steps < 0:
            raise ValueError(f"Config.steps={self.steps!r}: use 0 (the preset's) or a positive count.")


# ------------------------------------------------------------------------------------- statistics

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


def mode_summary(outcomes: Sequence[bool]) -> dict[str, Any]:
    """Accuracy, its 95 % Wilson interval and ``n``."""
    from algos.analysis import wilson

    n = len(outcomes)
    right = sum(outcomes)
    lo, hi = wilson(right, n)
    return {"accuracy": right / n if n else 0.0, "ci_low": lo, "ci_high": hi, "n": n}


# ------------------------------------------------------------------------------------- running

def _train(cfg: Config, learner: str, seed: int) -> dict[str, Any]:
    from algos.cli import train
    from algos.config import resolve

    out = Path(cfg.output_dir) / f"{learner}_s{seed}"
    overrides = {"learner": learner, "train.seed": seed, "train.output_dir": str(out), "train.progress": False}
    if cfg.steps:
        overrides["train.steps"] = cfg.steps
    t0 = time.perf_counter()
    res = train(resolve(cfg.preset, overrides))
    curve = [{k: float(v) for k, v in m.items() if isinstance(v, (int, float)) and math.isfinite(v)}
             for m in res["history"]]
    return {"run_dir": str(out), "seconds": time.perf_counter() - t0, "curve": curve}


def _outcomes(mode: str, problems: Sequence[Any], reasoner: Any, planner: Any, ecfg: Any) -> dict[str, bool]:
    from algos.evaluation.run import evaluate_mode, make_planner

    rows, _ = evaluate_mode(mode, problems, reasoner, make_planner(mode, ecfg, planner), ecfg)
    return {r["problem_id"]: bool(r["correct"]) for r in rows}


def _eval_config(cfg: Config, run_cfg: Any, seed: int, source: str, limit: int) -> Any:
    from algos.evaluation import EvalConfig

    return EvalConfig(source=source, limit=limit, k=1, seed=seed, batch=cfg.batch, max_steps=run_cfg.env.max_steps,
                      max_step_tokens=run_cfg.reasoner.max_step_tokens,
                      max_answer_tokens=run_cfg.reasoner.max_answer_tokens, protocol=run_cfg.env.protocol,
                      progress=False)


def _agents(spec_r: str, spec_p: str | None, ecfg: Any, problems: Sequence[Any]) -> tuple[Any, Any]:
    from algos.evaluation.run import build_reasoner, load_planner

    reasoner = build_reasoner(spec_r, ecfg, problems).agent
    planner = load_planner(spec_p, ecfg).agent if spec_p else None
    return reasoner, planner


def main(cfg: Config) -> dict[str, Any]:
    """Train, evaluate, test; print a table; write JSON (+ curves.png) when ``cfg.out``."""
    from algos.config import resolve
    from algos.evaluation.config import fixed_name
    from rsim_env.data import load_problems

    t0 = time.perf_counter()
    run_cfg = resolve(cfg.preset)
    base = run_cfg.model.reasoner
    scale = SCALES[cfg.preset]
    test = load_problems(scale["source"], limit=cfg.eval_limit, seed=1000)
    val = load_problems(scale["validation"], limit=cfg.validation_limit, seed=2000)
    runs = {f"{learner}_s{s}": _train(cfg, learner, s) for s in cfg.seeds for learner in ("stackelberg", "grpo")}

    # the best fixed sequence, chosen on validation problems with the base reasoner
    vcfg = _eval_config(cfg, run_cfg, cfg.seeds[0], scale["validation"], cfg.validation_limit)
    reasoner, _ = _agents(base, None, vcfg, val)
    val_acc = {fixed_name(s): sum(_outcomes(fixed_name(s), val, reasoner, None, vcfg).values()) / len(val)
               for s in cfg.fixed}
    best = max(val_acc, key=val_acc.get)

    per_seed: dict[str, dict[int, dict[str, bool]]] = {m: {} for m in
                                                        ("none", "random", "best_fixed", "stackelberg", "grpo")}
    for s in cfg.seeds:
        ecfg = _eval_config(cfg, run_cfg, s, scale["source"], cfg.eval_limit)
        reasoner, _ = _agents(base, None, ecfg, test)
        per_seed["none"][s] = _outcomes("none", test, reasoner, None, ecfg)
        per_seed["random"][s] = _outcomes("random", test, reasoner, None, ecfg)
        per_seed["best_fixed"][s] = _outcomes(best, test, reasoner, None, ecfg)
        run = runs[f"stackelberg_s{s}"]["run_dir"]
        reasoner_sl, planner_sl = _agents(run if run_cfg.learner != "planner_only" else base, run, ecfg, test)
        per_seed["stackelberg"][s] = _outcomes("trained", test, reasoner_sl, planner_sl, ecfg)
        reasoner_g, _ = _agents(runs[f"grpo_s{s}"]["run_dir"], None, ecfg, test)
        per_seed["grpo"][s] = _outcomes("none", test, reasoner_g, None, ecfg)

    def paired(m: str) -> list[bool]:
        return [per_seed[m][s][p.id] for s in cfg.seeds for p in test]

    modes = {m: mode_summary(paired(m)) | {"per_seed": {str(s): mode_summary(list(per_seed[m][s].values()))
                                                       for s in cfg.seeds}} for m in per_seed}
    modes["best_fixed"]["sequence"] = best
    comparisons = [("stackelberg", "random"), ("stackelberg", "none"), ("stackelberg", "best_fixed"),
                   ("stackelberg", "grpo"), ("grpo", "none"), ("random", "none")]
    tests = {f"{a}_vs_{b}": {"a": a, "b": b, "test": "mcnemar_exact", **mcnemar_exact(paired(a), paired(b))}
             for a, b in comparisons}
    result = {"config": asdict(cfg), "preset": cfg.preset, "eval_source": scale["source"], "eval_problems": len(test),
              "validation_fixed_accuracy": val_acc, "modes": modes, "tests": tests,
              "runs": runs, "wall_s": time.perf_counter() - t0}
    result["table_md"] = table(result)
    print(result["table_md"])
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        result["curves_png"] = str(plot_curves(runs, out.with_name(out.stem + "_curves.png")))
        out.write_text(json.dumps(result, indent=2))
    return result


def table(result: dict[str, Any]) -> str:
    """Markdown: accuracy per mode, then the paired tests."""
    lines = ["| mode | accuracy | 95% CI | n |", "|---|---|---|---|"]
    for m, f in result["modes"].items():
        name = f"{m} ({f['sequence']})" if "sequence" in f else m
        lines.append(f"| {name} | {100 * f['accuracy']:.1f}% | {100 * f['ci_low']:.1f}–{100 * f['ci_high']:.1f}% | "
                     f"{f['n']} |")
    lines += ["", "| comparison | only a right | only b right | McNemar p |", "|---|---|---|---|"]
    for name, t in result["tests"].items():
        lines.append(f"| {name} | {t['only_a']} | {t['only_b']} | {t['p_value']:.3g} |")
    return "\n".join(lines)


def plot_curves(runs: dict[str, Any], path: Path) -> Path:
    """Reward and accuracy per training step for every run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("planner/reward", "reasoner/reward", "accuracy")
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.5))
    for ax, key in zip(axes, keys):
        for name, run in runs.items():
            ys = [m.get(key) for m in run["curve"]]
            if any(y is not None for y in ys):
                ax.plot(range(1, len(ys) + 1), [float("nan") if y is None else y for y in ys], label=name)
        ax.set_title(key)
        ax.set_xlabel("step")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse(argv: Sequence[str]) -> Config:
    d = Config()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default=d.preset, choices=sorted(SCALES))
    p.add_argument("--seeds", default=",".join(map(str, d.seeds)))
    p.add_argument("--steps", type=int, default=d.steps)
    p.add_argument("--eval-limit", type=int, default=d.eval_limit)
    p.add_argument("--validation-limit", type=int, default=d.validation_limit)
    p.add_argument("--batch", type=int, default=d.batch)
    p.add_argument("--output-dir", default=d.output_dir)
    p.add_argument("--out", default=d.out)
    a = p.parse_args(list(argv))
    try:
        return Config(preset=a.preset, seeds=tuple(int(s) for s in a.seeds.split(",") if s), steps=a.steps,
                      eval_limit=a.eval_limit, validation_limit=a.validation_limit, batch=a.batch,
                      output_dir=a.output_dir, out=a.out)
    except ValueError as e:
        p.error(str(e))
        raise


if __name__ == "__main__":
    main(parse(sys.argv[1:]))
