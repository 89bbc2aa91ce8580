"""Does planner-only GRPO reach what a real plan tree supports? The optimisation gap on the adaptive tree.

The data are the trees :mod:`studies.adaptive_tree` decoded (the embedded SmolLM2 on llama.cpp, greedy, two
rounds, the last of which may only terminate: 9 plans a problem). The planner is the embedded LM with a linear
head on its frozen features (``planner.head_only``: every context's feature is computed once and shared by the
seeds). :mod:`studies.learner_options` then trains it with each learner option over a few seeds and reports the
greedy planner's planner reward and accuracy against the best single plan and the per-task best plan of the
training tree (:func:`algos.optimisation_gap.optimisation_gap`: the optimisation gap) and of the held-out tree
(generalisation; the plans chosen on the training tree), with curves.

Only the options that keep the planner in the 9-plan game are playable on such a tree: ``last_round``
(``env.terminate_last_round``) and ``both`` (with ``train.grpo.per_term_advantages``). ::

    OMP_NUM_THREADS=2 python -m studies.tree_learner --out docs/training_results/tree_learner.json
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from studies.tree_game import adaptive_task, tree_problems
from studies.tree_game import game as _game

__all__ = ["Config", "tree_problems", "adaptive_task", "disagreements", "docs_table", "keep_planner", "main", "plot_curves"]

REFERENCE = (3, 8)
"""The plan the reading compares the trained planner with (the atlas's best single plan)."""


@dataclass(frozen=True)
class Config:
    """Study settings (the learner's, as :class:`studies.learner_options.Config`)."""

    tree_dir: str = "docs/efficacy_results/tree"
    """Where :mod:`studies.adaptive_tree` wrote ``adaptive_<split>.tree.json.gz``."""
    train_split: str = "train"
    """The training tree's split."""
    test_split: str = "val"
    """The held-out tree's split ("" = none: the optimisation gap alone)."""
    per_task: int = 40
    """At most this many problems a task from each tree (the complete ones: every plan decoded)."""
    tasks: int = 0
    """The first this many adaptive tasks (0 = all; as the fill's ``--tasks``)."""
    planner: str = "default"
    """The planner spec (trained head-only: a linear head on its frozen features)."""
    variants: str = "last_round"
    """Learner options (:data:`studies.learner_options.VARIANTS` that keep the 9-plan game)."""
    seeds: int = 6
    """Seeds per variant."""
    steps: int = 200
    """Optimizer steps per run."""
    groups_per_step: int = 32
    """Problems per step (most problems give one outcome under every plan, so their groups are flat: more problems
    a step is more signal a step; docs/training.md)."""
    group_size: int = 8
    """G."""
    lr: float = 1e-3
    """Planner (head) learning rate (at 1e-2 the head saturated within ~10 steps and every group went flat)."""
    entropy_coef: float = 0.0
    """Entropy bonus of the planner's GRPO loss (``train.grpo.entropy_coef``)."""
    standardize: bool = True
    """Standardise the head's input features by the training tree's contexts (per dimension: minus the mean, over
    the std; :meth:`agents.planners.llm.Planner.standardize_features`). False: the raw features, on which Adam's
    steps move every context's logits alike (docs/training.md)."""
    eval_every: int = 20
    """Steps between greedy evaluations on the training tree (the curve)."""
    out: str = ""
    """Where to write the JSON ("" = nowhere)."""
    output_dir: str = "runs/tree_learner"
    """TensorBoard logs (one subdir per run)."""
    planners_dir: str = ""
    """Where each run's trained planner goes as a run dir ``<variant>_s<seed>`` (its head: kilobytes) that
    ``rsim eval --planner DIR`` evaluates on any problems ("" = not kept)."""
    select_split: str = ""
    """Another split whose tree joins the training tree in choosing the baselines' fixed and per-task plans (e.g.
    ``val`` when ``--test-split test``; "" = the training tree alone: the information the planner had)."""

    def __post_init__(self) -> None:
        bad = [v for v in self.variants.split(",") if v not in ("last_round", "both")]
        if bad:
            raise ValueError(f"Config.variants has {bad}: on a 9-plan tree only last_round and both are playable "
                             "(the others play plans the env truncates, which the tree does not hold).")


def disagreements(data: dict[str, Any], run: dict[str, Any], split: str, limit: int = 40) -> list[dict[str, Any]]:
    """Up to ``limit`` problems of ``split`` where ``run``'s greedy planner plays another plan than
    :data:`REFERENCE`: both episodes read from the tree (question, gold, each plan's steps and outcome)."""
    from agents.replay.plan_tree import PlanPlayer
    from algos.rollout import rollout
    from rsim_env import EnvGroup

    by_id = {p.id: p for p in data[split]}
    diff = [(pid, tuple(plan)) for pid, plan in run["plans"][split].items() if tuple(plan) != REFERENCE][:limit]
    if not diff:
        return []
    problems = [by_id[pid] for pid, _ in diff for _ in (0, 1)]
    plans = [p for _, plan in diff for p in (plan, REFERENCE)]
    env = _game()
    out = rollout(EnvGroup(problems, 1, config=env, **data["env_options"]), data[f"{split}_reasoner"], PlanPlayer(plans),
                  seed=0)
    t = out.trajectories

    def side(x: dict[str, Any]) -> dict[str, Any]:
        return {"plan": list(x["info"]["strategies"]), "steps": list(x["info"]["steps"]),
                "correct": bool(x["info"]["correct"]), "reward": float(x["rewards"]["planner"])}

    return [{"problem_id": pid, "task": adaptive_task(pid), "question": by_id[pid].question[:400],
             "gold": by_id[pid].answer, "trained": side(t[2 * i]), "reference": side(t[2 * i + 1])}
            for i, (pid, _) in enumerate(diff)]


_WARM: dict[tuple[Any, ...], dict[str, Any]] = {}
"""The trees, problems, base planner and its warmed features by the settings that decide them: a second
:func:`main` in one process (another learning rate, standardisation on or off) reuses them."""


def _warm(cfg: Config) -> dict[str, Any]:
    from agents.replay.plan_tree import PlanTree, warm_planner
    from benchmarks.plans.tree import _build
    from studies.adaptive_tree import Config as FillConfig
    from studies.adaptive_tree import argv

    key = (cfg.tree_dir, cfg.train_split, cfg.test_split, cfg.per_task, cfg.tasks, cfg.planner, cfg.output_dir)
    if key in _WARM:
        return _WARM[key]
    splits = {"train": cfg.train_split, **({"test": cfg.test_split} if cfg.test_split else {})}
    trees = {s: PlanTree.load(Path(cfg.tree_dir) / f"adaptive_{sp}.tree.json.gz") for s, sp in splits.items()}
    problems = {s: tree_problems(trees[s], sp, cfg.per_task, cfg.tasks) for s, sp in splits.items()}
    for s, ps in problems.items():
        if not ps:
            raise ValueError(f"the {s} tree in {cfg.tree_dir} holds no complete problem: fill it "
                             "(python -m studies.adaptive_tree --split ...).")
    fill = FillConfig(split=cfg.train_split, planner=cfg.planner, tasks=cfg.tasks)
    built = _build(argv(fill, f"tree:{Path(cfg.tree_dir) / f'adaptive_{cfg.train_split}.tree.json.gz'}",
                        {"train.output_dir": str(Path(cfg.output_dir) / "_base")}))
    base = built.agents["planner"]
    w = time.perf_counter()
    contexts = warm_planner(base, trees["train"], problems["train"])
    train_features = torch.stack(list(base._features.values()))  # the training tree's contexts only
    contexts += sum(warm_planner(base, trees[s], problems[s]) for s in splits if s != "train")
    _WARM[key] = {"splits": splits, "trees": trees, "problems": problems, "built": built, "base": base,
                  "train_features": train_features,
                  "features": {"contexts": contexts, "wall_s": round(time.perf_counter() - w, 1)}}
    return _WARM[key]


def _data(cfg: Config, lcfg: Any) -> dict[str, Any]:
    from agents.replay.plan_tree import TreeReasoner
    from rsim_env.grading import GradeCache
    from studies.learner_options import plan_rows

    warm = _warm(cfg)
    splits, trees, problems, base = warm["splits"], warm["trees"], warm["problems"], warm["base"]
    train_features = warm["train_features"]

    def planner(seed: int) -> Any:
        from agents.planners.llm import Planner

        torch.manual_seed(seed)
        p = Planner(base.backbone, base.tokenizer, dataclasses.replace(base.config, seed=seed))
        p._features = base._features  # the frozen backbone's features: computed once, shared by every seed
        if cfg.standardize:
            p.standardize_features(train_features)
        return p

    grader = GradeCache()
    env = _game()
    reasoners = {s: TreeReasoner(trees[s]) for s in splits}
    return {**problems, "planner": planner, **{f"{s}_reasoner": reasoners[s] for s in splits},
            "env_options": {"grader": grader}, "task_of": adaptive_task,
            **{f"{s}_table": plan_rows(problems[s], reasoners[s], env, task_of=adaptive_task, grader=grader)
               for s in splits},
            "features": warm["features"], "run_config": warm["built"].run_config, "save": bool(cfg.planners_dir)}


def keep_planner(run: dict[str, Any], planners_dir: str | Path) -> dict[str, Any]:
    """Copy ``run``'s final checkpoint into ``planners_dir/<variant>_s<seed>/checkpoints/`` (a run dir ``rsim eval``
    reads: config + head, without the optimizer state); returns where it went and the command that evaluates it."""
    import shutil

    src = Path(run["checkpoint"])
    dst = Path(planners_dir) / f"{run['variant']}_s{run['seed']}"
    ckpt = dst / "checkpoints" / src.name
    shutil.rmtree(dst, ignore_errors=True)
    ckpt.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file() and (f.name in ("config.json", "state.json") or f.name.startswith("model.")):
            shutil.copy2(f, ckpt / f.name)
    # rsim eval takes the game (env.max_steps, terminate_last_round) and the reasoner's step lengths from the run.
    # The reasoner is replayed: live llama.cpp greedy steps depend on the batch a problem shares (3 of 24 episodes
    # with the same plan decoded differently under `trained` and `fixed:3,8` on 60 test problems; replayed, 0), so
    # only a replayed reasoner pairs the modes exactly -- and reads back what the trees decoded.
    return {"dir": str(dst), "files": sorted(f.name for f in ckpt.iterdir()),
            "eval": f"rsim eval --planner {dst} --reasoner replay:llamacpp:default --data adaptive:test "
                    f"--modes trained,fixed:{','.join(map(str, REFERENCE))} --out runs/eval_{dst.name}"}


def docs_table(results: Sequence[dict[str, Any]]) -> str:
    """The markdown table docs/training.md copies: per result file and variant, the greedy planner's reward and
    accuracy on the training tree against the best single and per-task best plan, and on the held-out tree (where
    the run had one: plans chosen on the training tree) the best single plan's, the per-task best's and the trained
    planner's mean reward with the seeds strictly above the best single plan (tests check the copy)."""
    out = ["| run | problems | best single (R / acc) | per-task best (R / acc) | trained R by seed | trained R / acc (mean) "
           "| ratio to per-task best | held-out: best single / per-task / trained R, seeds above |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        t, c = r["tables"]["train"], r["config"]
        for v, x in r["summary"].items():
            name = (f"{v}, lr {c['lr']:g}, entropy {c.get('entropy_coef', 0.0):g}, {c['steps']} steps x "
                    f"{c['groups_per_step']} problems, {'standardised' if c.get('standardize') else 'raw'} features")
            held = "--"
            if "test" in r["tables"]:
                h = r["tables"]["test"]
                rs = [y["gap"]["test"]["trained"]["reward"] for y in r["runs"] if y["variant"] == v]
                above = sum(y > h["best_single"]["reward"] + 1e-9 for y in rs)
                held = (f"{h['problems']} problems: `{h['best_single']['plan']}` {h['best_single']['reward']:.3f} / "
                        f"{h['per_task_best']['reward']:.3f} / {x['test_reward']:.3f}, {above} of {len(rs)}")
            out.append(f"| {name} | {t['problems']} | `{t['best_single']['plan']}` {t['best_single']['reward']:.3f} / "
                       f"{100 * t['best_single']['accuracy']:.1f} % | {t['per_task_best']['reward']:.3f} / "
                       f"{100 * t['per_task_best']['accuracy']:.1f} % | "
                       f"{', '.join(f'{y:.3f}' for y in x['train_rewards_by_seed'])} | {x['train_reward']:.3f} / "
                       f"{100 * x['train_accuracy']:.1f} % | {x['train_ratio']:.3f} | {held} |")
    return "\n".join(out)


def plot_curves(result: dict[str, Any], path: str | Path) -> Path:
    """Per seed, the greedy planner's reward on the training tree over the steps (left) and the sampled policy's
    entropy (right), with the best single and per-task best plans' rewards as lines; one figure per result."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = result["tables"]["train"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for i, r in enumerate(result["runs"]):
        pts = [(x["step"], x["greedy_reward"]) for x in r["curve"] if x.get("greedy_reward") is not None]
        ent = [(x["step"], x["entropy"]) for x in r["curve"] if x.get("entropy") is not None]
        name = f"{r['variant']} s{r['seed']}"
        left.plot(*zip(*pts), color=f"C{i % 10}", label=name, marker=".")
        if ent:
            right.plot(*zip(*ent), color=f"C{i % 10}", label=name, linewidth=0.8)
    for y, label, style in ((t["best_single"]["reward"], f"best single {t['best_single']['plan']}", ":"),
                            (t["per_task_best"]["reward"], "per-task best", "--"),
                            (0.95 * t["per_task_best"]["reward"], "0.95 x per-task best", "-.")):
        left.axhline(y, color="k", linestyle=style, linewidth=1, label=label)
    lo = min([t["best_single"]["reward"]] + [y for line in left.get_lines() for y in line.get_ydata()])
    left.set_ylim(lo - 0.01, t["per_task_best"]["reward"] + 0.01)
    c = result["config"]
    left.set_title(f"greedy reward on the training tree ({t['problems']} problems)")
    right.set_title("sampled entropy (nats a decision; steps with a signal)")
    for ax in (left, right):
        ax.set_xlabel("step")
    left.legend(fontsize=7, ncol=2)
    fig.suptitle(f"lr {c['lr']:g}, {c['groups_per_step']} problems x G {c['group_size']} a step, "
                 f"{'standardised' if c.get('standardize') else 'raw'} features", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


def _baselines(cfg: Config, data: dict[str, Any], runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per variant, :func:`studies.tree_baselines.compare` on the held-out tree ({} without one)."""
    from studies.tree_baselines import for_study

    if "test_table" not in data:
        return {}
    return for_study(asdict(cfg), runs, data["train_table"], data["test_table"], cfg.test_split, cfg.select_split)


def main(cfg: Config) -> dict[str, Any]:
    """Load the trees, warm the planner's features, train every variant on every seed, summarise and write."""
    import json

    from studies import learner_options as lo
    from studies import tree_baselines

    t0 = time.perf_counter()
    lcfg = lo.Config(variants=cfg.variants, seeds=cfg.seeds, planner="tiny", max_steps=2, steps=cfg.steps,
                     groups_per_step=cfg.groups_per_step, group_size=cfg.group_size, lr=cfg.lr,
                     entropy_coef=cfg.entropy_coef,
                     eval_every=cfg.eval_every, output_dir=cfg.output_dir)
    data = _data(cfg, lcfg)
    runs = [lo.train_run(lcfg, v, s, data) for v in cfg.variants.split(",") for s in range(cfg.seeds)]
    if cfg.planners_dir:
        for r in runs:
            r["planner"] = keep_planner(r, cfg.planners_dir)
    first = runs[0]["gap"]
    result = {"config": asdict(cfg), "features": data["features"],
              "tables": {s: {k: first[s][k] for k in ("problems", "best_single", "per_task_best")}
                         for s in first},
              "summary": lo.summary(runs), "runs": runs,
              "baselines": _baselines(cfg, data, runs),
              "reading": {f"{r['variant']}_s{r['seed']}/{s}": disagreements(data, r, s)
                          for r in runs if r["seed"] == 0 for s in r["plans"]},
              "wall_seconds": time.perf_counter() - t0,
              "torch_threads": torch.get_num_threads()}
    lo.print_result(result)
    for v, b in result["baselines"].items():
        print(f"\n## {v}: held-out {cfg.test_split} ({b['problems']} problems)\n\n{tree_baselines.markdown(b)}")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        result["curves_png"] = str(plot_curves(result, Path(cfg.out).with_suffix(".png")))
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.tree_learner", __doc__)
