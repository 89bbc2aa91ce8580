"""The adaptive study's Stackelberg arm: the tree-trained planner heads, warm-started, trained with the reasoner.

The planner-only arm (``rsim study --preset adaptive``: :mod:`algos.study.train`) trains a planner head against the
frozen greedy reasoner's plan tree. Here each seed's committed head is the warm start of a Stackelberg run (``rsim train``, learner
``stackelberg``): the head keeps learning while the reasoner learns a LoRA adapter (torch learns, llama.cpp
decodes), on the same training problems and in the same game (2 rounds, the last one terminates). A trained
reasoner has no tree, so the arm is scored live: ``rsim eval`` of the run (its head and its adapter, greedy) on
exactly the test tree's problems, and, as the control on the same route, the warm-start head with the base
reasoner, live (``control``). Beside them, read back from the test tree by the study's score stage
(:func:`algos.study.score.score`): the planner-only head of the same seed, the best fixed plan and the per-task plans
(chosen on training + validation).

Every comparison is paired on the same problems, per seed (exact sign test over seeds; 3 seeds can never reach
p < 0.05, so the seed count is the claim's unit, not its proof) and pooled (seeds-then-problems bootstrap of the
accuracy difference). Each piece resumes: a finished run (``summary.json`` at ``steps``) is reused, an
interrupted one continues from its last checkpoint, an interrupted evaluation from its journal. ::

    OMP_NUM_THREADS=2 python -m studies.tree_stackelberg --out docs/training_results/tree_stackelberg_40.json

Hours of CPU (3 seeds x 30 steps x ~35 s, then two 282-problem evaluations a seed); the per-problem outcomes and
every episode of the evaluations go beside the JSON (``<out>.episodes.jsonl.gz``), curves to ``<out>.png``.
"""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["Config", "compare", "main", "train_overrides"]

MODES = ("stackelberg", "control_live", "planner_only", "best_fixed_exhaustive", "per_task")
"""Modes of the result: the Stackelberg run (live), its warm start with the base reasoner (live), the same head
read back from the test tree, and the two plan baselines read back from it."""

TESTS = (("stackelberg", "best_fixed_exhaustive"), ("stackelberg", "planner_only"), ("stackelberg", "control_live"),
         ("stackelberg", "per_task"), ("control_live", "planner_only"))


@dataclass(frozen=True)
class Config:
    """Study settings."""

    study: str = "adaptive"
    """The planner-only study (an ``rsim study`` preset): its trees, split sizes, heads and the test tree's modes."""
    planners: str = "docs/training_results/planners/tree_adaptive_40_std"
    """Its committed heads (``<variant>_s<seed>``): the warm starts."""
    variant: str = "last_round"
    """Which of the planner-only study's variants to warm-start from."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Seeds (each warm-starts from the head of the same seed)."""
    steps: int = 30
    """Stackelberg optimizer steps per seed (half of them in the lambda schedule's first stage)."""
    planner_lr: float = 1e-3
    """The head's learning rate (the planner-only study's)."""
    reasoner: str = "llamacpp:default"
    """The reasoner the run trains (LoRA on the embedded model, decoded by llama.cpp) and the control plays."""
    runs_dir: str = "runs/tree_st"
    """Training runs (``stackelberg_s<seed>``) and evaluations (``eval_s<seed>``, ``control_s<seed>``)."""
    control: bool = True
    """Also play the warm-start head with the base reasoner live (the same route as the Stackelberg evaluation)."""
    batch: int = 16
    """Problems per batched evaluation rollout."""
    keep: str = ""
    """Copy each seed's trained planner head (kilobytes; not the 19 MB reasoner adapter) here ("" = keep none)."""
    rounds: int = 4000
    """Bootstrap replicates."""
    out: str = ""
    """Where to write the JSON ("" = print only)."""

    def __post_init__(self) -> None:
        if not self.seeds:
            raise ValueError("Config.seeds is empty; give at least one seed, e.g. --seeds 0 --seeds 1 --seeds 2.")
        if self.steps < 2:
            raise ValueError(f"Config.steps={self.steps!r}: give at least 2 steps (one a stage).")
        if not self.planner_lr > 0:
            raise ValueError(f"Config.planner_lr={self.planner_lr!r}: use a positive learning rate, e.g. 1e-3.")


def train_overrides(cfg: Config, seed: int, train_source: str, train_limit: int) -> dict[str, Any]:
    """``rsim train --preset study`` overrides of one seed's run: the planner-only game and data, the warm start."""
    return {"learner": "stackelberg", "train.seed": seed,
            "model.planner": str(Path(cfg.planners) / f"{cfg.variant}_s{seed}"), "model.reasoner": cfg.reasoner,
            "planner.head_only": True, "model.planner_lora.enabled": False,
            "env.max_steps": 2, "env.terminate_last_round": True,
            "data.source": train_source, "data.size": train_limit,
            "train.planner_optim.lr": cfg.planner_lr, "train.grpo.entropy_coef": 0.0,
            "train.steps": cfg.steps, "schedule.stage1_steps": cfg.steps // 2,
            "train.output_dir": str(Path(cfg.runs_dir) / f"stackelberg_s{seed}"), "train.progress": False}


def _train(cfg: Config, seed: int, train_source: str, train_limit: int) -> dict[str, Any]:
    """Run (or resume, or reuse) one seed's Stackelberg training; its summary."""
    from algos.cli import train
    from algos.config import resolve

    over = train_overrides(cfg, seed, train_source, train_limit)
    run = Path(over["train.output_dir"])
    summary = run / "summary.json"
    if summary.is_file():
        done = json.loads(summary.read_text())
        if done.get("steps") == cfg.steps:
            return done
    if any((run / "checkpoints").glob("step_*")):
        over["resume"] = str(run)
    train(resolve("study", over))
    return json.loads(summary.read_text())


def _episodes(out_dir: Path) -> list[dict[str, Any]]:
    with open(out_dir / "episodes.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _evaluate(out_dir: Path, planner: str, reasoner: str, split: str, limit: int, batch: int,
              ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Greedy ``trained`` episodes of (planner, reasoner) on ``adaptive:<split>`` (resumable ``rsim eval``). A
    finished evaluation in ``out_dir`` (``results.json``) whose episodes hold every problem of ``ids`` is reused,
    whatever ``--limit`` it ran with (a larger one loads more problems of the same split)."""
    from algos.evaluation import main as evaluate

    if (out_dir / "results.json").is_file() and ids:
        rows = _episodes(out_dir)
        if set(ids) <= {str(r["problem_id"]) for r in rows}:
            return rows
    evaluate(["--planner", planner, "--reasoner", reasoner, "--data", f"adaptive:{split}", "--limit", str(limit),
              "--modes", "trained", "--batch", str(batch), "--out", str(out_dir), "--no-plots", "--no-progress"])
    return _episodes(out_dir)


def _cells(rows: Sequence[Mapping[str, Any]], ids: Sequence[str], what: str) -> dict[str, Any]:
    """One live mode's per-problem (plan, correct, planner reward) on ``ids``, in that order."""
    by = {str(r["problem_id"]): r for r in rows}
    missing = [p for p in ids if p not in by]
    if missing:
        raise ValueError(f"{what}: no episode for {len(missing)} of the test tree's problems (e.g. {missing[0]!r}); "
                         "the evaluation loaded other problems than the tree holds.")
    got = [by[p] for p in ids]
    return {"plan": [list(r["strategies"]) for r in got], "correct": [bool(r["correct"]) for r in got],
            "reward": [float(r["rewards"]["planner"]) for r in got]}


def _read(table: Any, ids: Sequence[str], plan_of: Mapping[str, Sequence[int]]) -> dict[str, Any]:
    """A plan policy read back from the test tree's :class:`algos.study.types.Table`: per-problem (plan, correct,
    reward) on ``ids``."""
    plans = {p: tuple(int(x) for x in plan_of[p]) for p in ids}
    cells = [table.outcomes[p][plans[p]] for p in ids]
    return {"plan": [list(plans[p]) for p in ids], "correct": [bool(o.correct) for o in cells],
            "reward": [float(o.reward) for o in cells]}


def compare(per_seed: Mapping[str, Mapping[int, Mapping[str, Any]]], rounds: int = 4000) -> dict[str, Any]:
    """Means, per-seed values and the paired tests of :data:`TESTS` for ``{mode: {seed: {correct, reward, plan}}}``
    (every list over the same problems, in the same order; modes absent from ``per_seed`` are skipped)."""
    from benchmarks.plans.seedstats import hierarchical_bootstrap, seed_sign_test

    def mean(xs: Sequence[float]) -> float:
        return sum(xs) / len(xs)

    modes = {}
    for m, by in per_seed.items():
        seeds = sorted(by)
        acc = [mean([float(c) for c in by[s]["correct"]]) for s in seeds]
        rew = [mean(by[s]["reward"]) for s in seeds]
        modes[m] = {"accuracy": mean(acc), "reward": mean(rew), "accuracy_by_seed": acc, "reward_by_seed": rew}
    if "best_fixed_exhaustive" in modes and "per_task" in modes:
        room = modes["per_task"]["accuracy"] - modes["best_fixed_exhaustive"]["accuracy"]
        for m in modes:
            modes[m]["headroom_captured_accuracy"] = (
                (modes[m]["accuracy"] - modes["best_fixed_exhaustive"]["accuracy"]) / room if room > 0 else None)
    tests = {}
    for a, b in TESTS:
        if a in per_seed and b in per_seed:
            tests[f"{a}_vs_{b}"] = {
                "seed_sign_accuracy": seed_sign_test(modes[a]["accuracy_by_seed"], modes[b]["accuracy_by_seed"]),
                "seed_sign_reward": seed_sign_test(modes[a]["reward_by_seed"], modes[b]["reward_by_seed"]),
                "bootstrap_accuracy": hierarchical_bootstrap({s: v["correct"] for s, v in per_seed[a].items()},
                                                             {s: v["correct"] for s, v in per_seed[b].items()}, rounds)}
    return {"modes": modes, "tests": tests}


def _agreement(a: Mapping[int, Mapping[str, Any]], b: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """Per seed: problems where the two modes play the same plan, and where their outcomes differ."""
    out = {}
    for s in sorted(a):
        same = sum(x == y for x, y in zip(a[s]["plan"], b[s]["plan"]))
        differ = sum(x != y for x, y in zip(a[s]["correct"], b[s]["correct"]))
        out[str(s)] = {"same_plan": same, "outcome_differs": differ, "problems": len(a[s]["plan"])}
    return out


def _reading(ids: Sequence[str], st_rows: Sequence[Mapping[str, Any]], ctrl_rows: Sequence[Mapping[str, Any]],
             limit: int = 40) -> list[dict[str, Any]]:
    """Up to ``limit`` problems whose outcome differs between the Stackelberg run and its live control: question,
    gold, each side's plan, steps and extracted answer (for the note's quotes)."""
    st = {str(r["problem_id"]): r for r in st_rows}
    ct = {str(r["problem_id"]): r for r in ctrl_rows}
    out = []
    for p in ids:
        a, b = st[p], ct[p]
        if bool(a["correct"]) == bool(b["correct"]):
            continue
        out.append({"problem_id": p, "question": str(a["question"])[:300], "answer": a.get("answer"),
                    **{f"{k}_{f}": (r.get(f) if f != "steps" else [str(x)[:240] for x in r.get("steps") or []])
                       for k, r in (("stackelberg", a), ("control", b))
                       for f in ("strategies", "steps", "extracted", "correct")}})
        if len(out) >= limit:
            break
    return out


def _curves(cfg: Config) -> dict[str, dict[str, list[list[float]]]]:
    """Each seed's training curves (planner / reasoner reward, batch accuracy) from its TensorBoard events."""
    from algos.viewer.load import read_curves

    keep = ("planner/reward", "reasoner/reward", "accuracy", "rewards/acc/mean")
    out = {}
    for s in cfg.seeds:
        curves, _ = read_curves(Path(cfg.runs_dir) / f"stackelberg_s{s}" / "tensorboard")
        out[str(s)] = {t: [[x, y] for x, y in v] for t, v in curves.items() if any(t.endswith(k) for k in keep)}
    return out


def _plot(curves: Mapping[str, Mapping[str, Sequence[Sequence[float]]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tags = sorted({t for by in curves.values() for t in by})
    if not tags:
        return
    fig, axes = plt.subplots(1, len(tags), figsize=(4 * len(tags), 3.2), squeeze=False)
    for ax, tag in zip(axes[0], tags):
        for s, by in curves.items():
            if tag in by:
                ax.plot([x for x, _ in by[tag]], [y for _, y in by[tag]], label=f"seed {s}")
        ax.set_title(tag, fontsize=9)
        ax.set_xlabel("step")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(cfg: Config) -> dict[str, Any]:
    """Train (or reuse) each seed, evaluate it and its control live, read the rest from the test tree, compare."""
    from algos.study.config import PRESETS, resolve
    from algos.study.score import score
    from rsim_env.sources.adaptive import TASKS

    if cfg.study not in PRESETS:
        raise ValueError(f"--study {cfg.study!r}: give the planner-only study's rsim study preset ({sorted(PRESETS)}).")
    study = resolve(cfg.study)
    table, modes = score(study)  # the test tree's read-backs (an identical scoring is read back, not redone)
    tasks, ids = table.tasks, table.ids()
    heads = modes["trained"].plans
    lost = [s for s in cfg.seeds if s not in heads]
    if lost:
        raise ValueError(f"study {cfg.study!r}: no trained head for seeds {lost}; warm starts need the same seeds.")
    train_limit = study.train_per_task * len(TASKS)
    limit = study.test_per_task * len(TASKS)  # loads exactly the test tree's problems
    fixed_plan, task_plans = modes["best_fixed"].info["plan"], modes["per_task"].info["plans"]

    per_seed: dict[str, dict[int, dict[str, Any]]] = {m: {} for m in MODES}
    summaries: dict[str, Any] = {}
    live: dict[tuple[str, int], list[dict[str, Any]]] = {}  # (arm, seed) -> its episodes on the tree's problems
    for s in cfg.seeds:
        summaries[str(s)] = _train(cfg, s, "adaptive:train", train_limit)
        run = str(Path(cfg.runs_dir) / f"stackelberg_s{s}")
        st = _evaluate(Path(cfg.runs_dir) / f"eval_s{s}", run, run, "test", limit, cfg.batch, ids)
        per_seed["stackelberg"][s] = _cells(st, ids, f"seed {s} stackelberg")
        live["stackelberg", s] = [r for r in st if r["problem_id"] in table]
        if cfg.control:
            head = str(Path(cfg.planners) / f"{cfg.variant}_s{s}")
            ct = _evaluate(Path(cfg.runs_dir) / f"control_s{s}", head, cfg.reasoner, "test", limit, cfg.batch, ids)
            per_seed["control_live"][s] = _cells(ct, ids, f"seed {s} control")
            live["control_live", s] = [r for r in ct if r["problem_id"] in table]
        per_seed["planner_only"][s] = _read(table, ids, heads[s])
        per_seed["best_fixed_exhaustive"][s] = _read(table, ids, {p: fixed_plan for p in ids})
        per_seed["per_task"][s] = _read(table, ids, {p: task_plans[tasks[p]] for p in ids})
        if cfg.keep:
            ckpt = Path(summaries[str(s)]["checkpoint"])
            dest = Path(cfg.keep) / f"stackelberg_s{s}" / "checkpoints" / ckpt.name
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("config.json", "state.json", "model.planner.safetensors"):
                shutil.copy2(ckpt / name, dest / name)
    per_seed = {m: by for m, by in per_seed.items() if by}
    got = compare(per_seed, cfg.rounds)
    out: dict[str, Any] = {
        "config": asdict(cfg), "problems": len(ids), "tasks": len(set(tasks.values())),
        "train_source": "adaptive:train", "train_limit": train_limit, "eval_limit": limit,
        "plans": {"best_fixed_exhaustive": fixed_plan, "per_task": task_plans},
        "runs": {s: {k: v.get(k) for k in ("steps", "seconds", "seconds_per_step", "replay", "threads", "last")}
                 for s, v in summaries.items()},
        **got,
        "agreement_with_planner_only": _agreement(per_seed["stackelberg"], per_seed["planner_only"]),
        "per_problem": {"problem_ids": ids,
                        **{m: {str(s): v for s, v in by.items()} for m, by in per_seed.items()}},
    }
    if cfg.control:
        out["agreement_with_control"] = _agreement(per_seed["stackelberg"], per_seed["control_live"])
        out["reading"] = _reading(ids, live["stackelberg", cfg.seeds[0]], live["control_live", cfg.seeds[0]])
    out["curves"] = _curves(cfg)
    print(markdown(out))
    if cfg.out:
        path = Path(cfg.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1) + "\n")
        with gzip.open(path.with_suffix(".episodes.jsonl.gz"), "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r | {"arm": arm, "seed": s}) + "\n" for (arm, s), rows in live.items() for r in rows)
        _plot(out["curves"], path.with_suffix(".png"))
    return out


def markdown(out: Mapping[str, Any]) -> str:
    """The result's two tables (modes, then paired tests), from its JSON."""
    lines = [f"| mode (test tree, {out['problems']} problems) | accuracy | planner reward | accuracy by seed | "
             "headroom captured |", "| --- | --- | --- | --- | --- |"]
    for m, v in out["modes"].items():
        room = v.get("headroom_captured_accuracy")
        lines.append(f"| `{m}` | {100 * v['accuracy']:.1f} % | {v['reward']:.3f} | "
                     + ", ".join(f"{100 * a:.1f}" for a in v["accuracy_by_seed"])
                     + f" | {'--' if room is None else f'{100 * room:.0f} %'} |")
    lines += ["", "| test | seeds above / below / tied (accuracy) | sign p | difference, 95 % CI (seeds, then problems) |",
              "| --- | --- | --- | --- |"]
    for name, t in out["tests"].items():
        sg, bs = t["seed_sign_accuracy"], t["bootstrap_accuracy"]
        lo, hi = bs["ci95"]
        lines.append(f"| {name.replace('_vs_', ' vs ')} | {sg['wins']} / {sg['losses']} / {sg['ties']} | "
                     f"{sg['p_value']:.3f} | {100 * bs['difference']:+.1f} ({100 * lo:+.1f}, {100 * hi:+.1f}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.tree_stackelberg", __doc__)
