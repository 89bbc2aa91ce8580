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

Greedy ``none`` and ``best_fixed`` do not depend on the seed: they run once and are reused for every seed.
Every mode gets accuracy with a 95 % Wilson interval over its (seed, problem) episodes, and ``tests``
compares modes on the same problems with a paired sign-flip permutation test clustered on problems
(``p_value``; seeds of one problem are averaged), plus the pooled exact McNemar test for reference.
Finished pieces are cached in ``<output_dir>/efficacy_cache.json``: rerun the same command to resume.
Every evaluation's episodes go to ``<output_dir>/episodes/`` -- read them before believing a number.
Learning curves (reward and accuracy per step, per seed and learner) go to ``curves.png``.

    python -m benchmarks.efficacy --out results/efficacy.json                     # hours on a CPU
    python -m benchmarks.efficacy --preset tiny --eval-limit 40 --out /tmp/e.json # seconds: toy agents

This is not a unit test; never run the full version in CI (``tests/test_efficacy.py`` runs the
toy scale).
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

SCALES = {
    "study": {"source": "curriculum:heldout", "validation": "curriculum:train"},
    "tiny": {"source": "tiny", "validation": "tiny"},
}
"""Per preset: the held-out evaluation source and the validation source (for choosing the fixed sequence)."""


def parse_fixed(text: str) -> tuple[int, ...]:
    """``--fixed 1,3,8`` -> ``(1, 3, 8)`` (:func:`algos.evaluation.parse_sequence`, imported when used)."""
    from algos.evaluation.config import parse_sequence

    return parse_sequence(text)


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
    fixed: tuple[tuple[int, ...], ...] = field(default=((8,), (6, 8), (1, 6, 8), (7, 6, 8), (1, 3, 8), (2, 0, 8), (2, 8)),
                                               metadata={"parse": parse_fixed, "append": True})
    """Candidate fixed sequences (--fixed 1,3,8, repeatable; given ones replace the default list)."""
    batch: int = 32
    """Problems per batched evaluation rollout."""
    random_seeds: int = 0
    """Evaluate the random planner with the first ``random_seeds`` seeds only (0 = every seed): each
    seed is another 400-problem evaluation of the same base reasoner, and the study's time is bounded."""
    output_dir: str = "runs/efficacy"
    """Where the training runs go (one subdirectory per learner and seed)."""
    out: str = ""
    """JSON result path; ``curves.png`` is written next to it ("" = print only)."""
    train_set: tuple[str, ...] = field(default=(), metadata={"parse": str, "append": True, "flag": "set"})
    """Extra training overrides (--set, repeatable), ``KEY=VALUE`` as in ``rsim train --set`` (e.g. ``reasoner.sample_dtype=bfloat16``):
    a variant of the study's training. Evaluation is unchanged (the preset's reasoner settings, fp32, greedy)."""
    baselines_from: str = ""
    """Another study's ``output_dir`` whose base-reasoner evaluations (validation, ``none``, fixed sequences,
    ``random``) to reuse when its evaluation settings match: they do not depend on training ("" = evaluate)."""

    def __post_init__(self) -> None:
        if self.preset not in SCALES:
            raise ValueError(f"Config.preset={self.preset!r}: choose one of {sorted(SCALES)}.")
        if not self.seeds:
            raise ValueError("Config.seeds is empty; give at least one seed, e.g. (0, 1, 2).")
        for name in ("eval_limit", "validation_limit", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")
        if isinstance(self.random_seeds, bool) or not isinstance(self.random_seeds, int) or self.random_seeds < 0:
            raise ValueError(f"Config.random_seeds={self.random_seeds!r}: use 0 (every seed) or a positive count.")
        if self.steps < 0:
            raise ValueError(f"Config.steps={self.steps!r}: use 0 (the preset's) or a positive count.")
        bad = [x for x in self.train_set if "=" not in x]
        if bad:
            raise ValueError(f"Config.train_set: {bad} are not KEY=VALUE (e.g. train.grpo.tis_cap=2).")

    def overrides(self) -> dict[str, str]:
        """``train_set`` as a dict for :func:`algos.config.resolve`."""
        return dict(x.split("=", 1) for x in self.train_set)


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


# ------------------------------------------------------------------------------------- running

DETERMINISTIC = ("none", "best_fixed")
"""Modes whose greedy outcome does not depend on the seed: evaluated once, reused for every seed."""


class Cache:
    """Finished pieces of a study (training runs, outcomes) in one JSON file, so a crash or a stop loses
    at most the piece in flight: rerunning the same command picks up where it stopped."""

    def __init__(self, path: Path, cfg: Config) -> None:
        self.path = path
        key = {k: v for k, v in asdict(cfg).items() if k not in ("out", "batch", "random_seeds", "baselines_from")}
        if not key["train_set"]:  # studies without training overrides keep the key they had before the field
            del key["train_set"]
        key = json.loads(json.dumps(key))
        self.data: dict[str, Any] = {"config": key, "runs": {}, "outcomes": {}, "timing": {}}
        if path.is_file():
            old = json.loads(path.read_text())
            if old.get("config") != key:
                raise ValueError(f"{path} holds a study with different settings ({old.get('config')}); "
                                 f"use another --output-dir or delete it to start over.")
            self.data = old

    def adopt_baselines(self, other_dir: str) -> list[str]:
        """Copy the base-reasoner evaluations of the study in ``other_dir`` (see ``Config.baselines_from``);
        refuses when its evaluation settings differ. Returns the keys copied."""
        path = Path(other_dir) / "efficacy_cache.json"
        if not path.is_file():
            raise ValueError(f"--baselines-from {other_dir}: no efficacy_cache.json there; give a study's --output-dir.")
        other = json.loads(path.read_text())
        same = ("preset", "eval_limit", "validation_limit", "fixed")
        mine, theirs = self.data["config"], other.get("config", {})
        diff = [k for k in same if mine.get(k) != theirs.get(k)]
        if diff or mine["seeds"][:1] != theirs.get("seeds", [])[:1]:
            raise ValueError(f"--baselines-from {other_dir}: its evaluation settings differ ({diff or ['first seed']}); "
                             f"its base-reasoner evaluations are not these. Drop --baselines-from.")
        keys = [k for k in other["outcomes"] if k.split("/")[0] in ("validation", "none", "random")
                or k.startswith("fixed:")]
        for k in keys:
            self.data["outcomes"].setdefault(k, other["outcomes"][k])
            if k in other.get("timing", {}):
                self.data["timing"].setdefault(k, other["timing"][k])
        self.save()
        return keys

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        tmp.replace(self.path)


def _train(cfg: Config, learner: str, seed: int) -> dict[str, Any]:
    from algos.cli import train
    from algos.config import resolve

    out = Path(cfg.output_dir) / f"{learner}_s{seed}"
    overrides = {**cfg.overrides(), "learner": learner, "train.seed": seed, "train.output_dir": str(out),
                 "train.progress": False}
    if cfg.steps:  # the lambda schedule keeps its shape: half the steps in stage 1
        overrides["train.steps"] = cfg.steps
        overrides["schedule.stage1_steps"] = max(1, cfg.steps // 2)
    t0 = time.perf_counter()
    res = train(resolve(cfg.preset, overrides))
    curve = [{k: float(v) for k, v in m.items() if isinstance(v, (int, float)) and math.isfinite(v)}
             for m in res["history"]]
    return {"run_dir": str(out), "seconds": time.perf_counter() - t0, "curve": curve}


def _outcomes(mode: str, problems: Sequence[Any], reasoner: Any, planner: Any, ecfg: Any,
              episodes: Path | None = None) -> dict[str, bool]:
    from algos.evaluation.run import evaluate_mode, make_planner

    rows, _ = evaluate_mode(mode, problems, reasoner, make_planner(mode, ecfg, planner), ecfg)
    if episodes is not None:
        episodes.parent.mkdir(parents=True, exist_ok=True)
        episodes.write_text("".join(json.dumps(r) + "\n" for r in rows))
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


def _log(msg: str) -> None:
    print(f"[efficacy {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def main(cfg: Config) -> dict[str, Any]:
    """Train, evaluate, test; print a table; write JSON (+ curves.png) when ``cfg.out``.

    Resumable: finished runs and evaluations are kept in ``<output_dir>/efficacy_cache.json``.
    """
    from algos.config import resolve
    from algos.evaluation.config import fixed_name
    from rsim_env.data import load_problems

    t0 = time.perf_counter()
    cache = Cache(Path(cfg.output_dir) / "efficacy_cache.json", cfg)
    if cfg.baselines_from:
        _log(f"reusing {len(cache.adopt_baselines(cfg.baselines_from))} base-reasoner evaluations from {cfg.baselines_from}")
    done, outs, timing = cache.data["runs"], cache.data["outcomes"], cache.data["timing"]
    run_cfg = resolve(cfg.preset)
    base = run_cfg.model.reasoner
    scale = SCALES[cfg.preset]
    test = load_problems(scale["source"], limit=cfg.eval_limit, seed=1000)
    val = load_problems(scale["validation"], limit=cfg.validation_limit, seed=2000)
    episodes_dir = Path(cfg.output_dir) / "episodes"
    for s in cfg.seeds:
        for learner in ("stackelberg", "grpo"):
            name = f"{learner}_s{s}"
            if name not in done:
                _log(f"training {name}")
                done[name] = _train(cfg, learner, s)
                cache.save()
                _log(f"trained {name} in {done[name]['seconds']:.0f} s")
    runs = {f"{learner}_s{s}": done[f"{learner}_s{s}"] for s in cfg.seeds for learner in ("stackelberg", "grpo")}

    def evaluated(key: str, mode: str, problems: Sequence[Any], agents: Any, ecfg: Any,
                  episodes: Path | None = None) -> dict[str, bool]:
        """Outcomes of ``mode`` (cached under ``key``); ``agents()`` builds (reasoner, planner) only when needed."""
        if key not in outs:
            _log(f"evaluating {key}")
            t = time.perf_counter()
            reasoner, planner = agents()
            outs[key] = _outcomes(mode, problems, reasoner, planner, ecfg, episodes)
            timing[key] = time.perf_counter() - t
            cache.save()
            _log(f"{key}: {sum(outs[key].values())}/{len(outs[key])} right in {timing[key]:.0f} s")
        return outs[key]

    lazy: dict[str, Any] = {}

    def base_agents(ecfg: Any, problems: Sequence[Any]) -> tuple[Any, None]:
        if "base" not in lazy:  # one base reasoner for every mode that uses it
            lazy["base"] = _agents(base, None, ecfg, problems)[0]
        return lazy["base"], None

    def episodes(key: str) -> Path:
        return episodes_dir / (key.replace("/", "_").replace(":", "-").replace(",", "-") + ".jsonl")

    # the best fixed sequence, chosen on validation problems with the base reasoner
    vcfg = _eval_config(cfg, run_cfg, cfg.seeds[0], scale["validation"], cfg.validation_limit)
    val_acc = {}
    for seq in cfg.fixed:
        name = fixed_name(seq)
        got = evaluated(f"validation/{name}", name, val, functools.partial(base_agents, vcfg, val), vcfg)
        val_acc[name] = sum(got.values()) / len(val)
    best = max(val_acc, key=val_acc.get)

    modes = ("none", "random", "best_fixed", "stackelberg", "grpo")
    per_seed: dict[str, dict[int, dict[str, bool]]] = {m: {} for m in modes}
    s0 = cfg.seeds[0]
    random_seeds = cfg.seeds[:cfg.random_seeds] if cfg.random_seeds else cfg.seeds
    for s in cfg.seeds:
        ecfg = _eval_config(cfg, run_cfg, s, scale["source"], cfg.eval_limit)
        base_here = functools.partial(base_agents, ecfg, test)
        per_seed["none"][s] = evaluated(f"none/s{s0}", "none", test, base_here, ecfg, episodes("none"))
        per_seed["best_fixed"][s] = evaluated(f"{best}/s{s0}", best, test, base_here, ecfg, episodes(best))
        if s in random_seeds:
            per_seed["random"][s] = evaluated(f"random/s{s}", "random", test, base_here, ecfg,
                                              episodes(f"random_s{s}"))
        run = runs[f"stackelberg_s{s}"]["run_dir"]
        trained = functools.partial(_agents, run if run_cfg.learner != "planner_only" else base, run, ecfg, test)
        per_seed["stackelberg"][s] = evaluated(f"stackelberg/s{s}", "trained", test, trained, ecfg,
                                               episodes(f"stackelberg_s{s}"))
        grpo = functools.partial(_agents, runs[f"grpo_s{s}"]["run_dir"], None, ecfg, test)
        per_seed["grpo"][s] = evaluated(f"grpo/s{s}", "none", test, grpo, ecfg, episodes(f"grpo_s{s}"))

    def by_problem(m: str) -> list[list[bool]]:
        seeds = cfg.seeds[:1] if m in DETERMINISTIC else list(per_seed[m])
        return [[per_seed[m][s][p.id] for s in seeds] for p in test]

    def pooled(m: str) -> list[bool]:  # (seed, problem) pairs; a mode run with fewer seeds repeats its first
        first = next(iter(per_seed[m].values()))
        return [per_seed[m].get(s, first)[p.id] for s in cfg.seeds for p in test]

    summary = {m: mode_summary([x for xs in by_problem(m) for x in xs])
               | {"per_seed": {str(s): mode_summary(list(per_seed[m][s].values())) for s in per_seed[m]},
                  "deterministic": m in DETERMINISTIC} for m in modes}
    summary["best_fixed"]["sequence"] = best
    comparisons = [("stackelberg", "random"), ("stackelberg", "none"), ("stackelberg", "best_fixed"),
                   ("stackelberg", "grpo"), ("grpo", "none"), ("random", "none"), ("best_fixed", "none")]
    tests = {}
    for a, b in comparisons:
        perm = paired_permutation(by_problem(a), by_problem(b))
        mc = mcnemar_exact(pooled(a), pooled(b))
        tests[f"{a}_vs_{b}"] = {"a": a, "b": b, "test": "paired_permutation_over_problems", "p_value": perm["p_value"],
                                "difference": perm["difference"], "problems_differing": perm["problems_differing"],
                                "only_a": mc["only_a"], "only_b": mc["only_b"], "mcnemar_pooled_p": mc["p_value"]}
    result = {"config": asdict(cfg), "preset": cfg.preset, "eval_source": scale["source"], "eval_problems": len(test),
              "validation_fixed_accuracy": val_acc, "modes": summary, "tests": tests,
              "runs": runs, "eval_seconds": timing, "wall_s": time.perf_counter() - t0,
              "total_compute_s": sum(r["seconds"] for r in runs.values()) + sum(timing.values())}
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
    lines += ["", "| comparison | accuracy difference | paired permutation p (problems) | only a right | only b right "
              "| pooled McNemar p |", "|---|---|---|---|---|---|"]
    for name, t in result["tests"].items():
        lines.append(f"| {name} | {100 * t['difference']:+.1f} pts | {t['p_value']:.3g} | {t['only_a']} | "
                     f"{t['only_b']} | {t['mcnemar_pooled_p']:.3g} |")
    return "\n".join(lines)


def plot_curves(runs: dict[str, Any], path: Path) -> Path:
    """Reward and accuracy per training step for every run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("planner/reward", "reasoner/reward", "accuracy")
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.5))
    for ax, key in zip(axes, keys):
        for i, (name, run) in enumerate(runs.items()):  # one colour per run in every panel (GRPO has no planner)
            ys = [m.get(key) for m in run["curve"]]
            if any(y is not None for y in ys):
                ax.plot(range(1, len(ys) + 1), [float("nan") if y is None else y for y in ys], label=name,
                        color=f"C{i}", linestyle="-" if name.startswith("stackelberg") else "--")
        ax.set_title(key)
        ax.set_xlabel("step")
    handles = {h.get_label(): h for ax in axes for h in ax.get_lines()}
    axes[-1].legend(list(handles.values()), list(handles), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.efficacy", __doc__)
