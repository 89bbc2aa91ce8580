"""The train stage: ``learner.seeds`` head-only planners trained with GRPO on the train tree, one run dir a seed.

Who updates, when, with what weight: the planner's head alone (a linear head on the frozen backbone's features,
standardised by the train contexts' features), every step, from ``groups_per_step`` train problems x G sampled
episodes against the frozen reasoner read back from the train tree (:class:`agents.replay.plan_tree.TreeReasoner`),
with ``rsim train``'s planner-only learner (:class:`algos.planner_only.PlannerOnly`) and trainer loop. The backbone
features of the train contexts are computed once, kept in the study's features folder (:mod:`algos.study.features`)
and installed in every seed's feature cache: training runs no backbone forward.

Each seed is a ``rsim train`` run dir (``heads/seed_<k>/``: TensorBoard logs, checkpoints with the resolved run
config, which ``rsim eval --planner`` reads). A finished seed is reused; an interrupted one resumes from its newest
checkpoint. The greedy planner's reward and accuracy on the train tree every ``learner.eval_every`` steps (the curve)
go into ``heads/train.json`` beside the runs.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import StudyConfig, run_overrides
from .paths import StudyPaths
from .types import Table

if TYPE_CHECKING:
    from agents.planners.llm import Planner
    from agents.replay.plan_tree import PlanTree
    from algos.config import RunConfig
    from algos.trainer import Trainer
    from rsim_env import Problem

    from .features import FeatureStore
    from .tables import Groups

__all__ = ["run_config", "train_seed", "train"]


def _log(msg: str) -> None:
    print(f"[rsim study] {msg}", file=sys.stderr, flush=True)


def run_config(cfg: StudyConfig, seed: int) -> RunConfig:
    """The ``rsim train`` run config of seed ``seed``: the study's game, the train tree as the reasoner, the learner
    settings (:class:`algos.study.config.LearnerSettings`), the seed's run dir as its output."""
    from algos.config import resolve

    learner, paths = cfg.learner, StudyPaths.of(cfg)
    return resolve("study", run_overrides(cfg, f"tree:{paths.tree('train')}", {
        "train.steps": learner.steps, "train.groups_per_step": learner.groups_per_step, "train.seed": seed,
        "train.output_dir": str(paths.head(seed)), "train.sample_rollouts": 0,
        "train.save_every": max(1, learner.steps // 4), "train.mixed_precision": "no",
        "train.planner_optim.lr": learner.lr, "train.grpo.group_size": learner.group_size,
        "train.grpo.entropy_coef": learner.entropy_coef,
        "train.grpo.per_term_advantages": learner.variant == "both", "planner.seed": seed}))


def _step_of(ckpt: Path) -> int:
    return int(json.loads((ckpt / "state.json").read_text()).get("step", 0))


def _greedy(planner: Planner, store: FeatureStore, tree: PlanTree, items: list[Problem], env: Groups,
            table: Table) -> dict[str, float]:
    """The greedy planner's mean reward and accuracy on the train table (its head on the stored features; ``env``:
    the :class:`algos.study.tables.Groups` its episodes are played in)."""
    from .heads import HeadPlanner, greedy_plans

    plans = greedy_plans(HeadPlanner(planner.head, planner.config.temperature, store), tree, items, env.env, env)
    cells = [table.outcomes[p][plans[p]] for p in table.ids()]
    return {"greedy_reward": sum(o.reward for o in cells) / len(cells),
            "greedy_accuracy": sum(o.correct for o in cells) / len(cells)}


def train_seed(cfg: StudyConfig, seed: int, base: Planner, shared: dict[str, Any]) -> dict[str, Any]:
    """Train (or reuse, or resume) seed ``seed``; ``base`` is the head-only planner whose backbone and feature cache
    every seed shares; ``shared`` holds the train tree, its problems, the feature store, the standardisation
    features and the train table."""
    import torch

    from agents.planners.llm import Planner
    from agents.replay.plan_tree import TreeReasoner
    from algos.planner_only import PlannerOnly
    from agents.runs import find_checkpoint
    from algos.trainer import Trainer, make_accelerator, to_dict

    out = StudyPaths.of(cfg).head(seed)
    done = find_checkpoint(out, "planner")
    if done is not None and _step_of(done) >= cfg.learner.steps:
        _log(f"seed {seed}: trained ({done}); reused")
        return {"seed": seed, "checkpoint": str(done), "reused": True}
    run = run_config(cfg, seed)
    torch.manual_seed(seed)  # the head's initial weights
    planner = Planner(base.backbone, base.tokenizer, dataclasses.replace(base.config, seed=seed))
    planner.feature_cache = base.feature_cache  # the frozen backbone's features: computed once, shared by every seed
    if cfg.learner.standardize:
        planner.standardize_features(shared["standardize"])
    acc = make_accelerator(run.train)
    trainer = Trainer(run.train, PlannerOnly(), {"planner": planner, "reasoner": TreeReasoner(shared["tree"])},
                      shared["items"], acc, run_config=to_dict(run), env=run.env)
    trainer.env_options["grader"] = shared["grader"]
    if done is not None:
        trainer.resume(done)
        _log(f"seed {seed}: resumed at step {trainer.step} ({done})")
    curve = _steps(cfg, seed, trainer, planner, shared, run.train.save_every)
    return {"seed": seed, "checkpoint": str(trainer.last_checkpoint), "reused": False, "curve": curve,
            "features_computed": planner.feature_stats["misses"]}


def _steps(cfg: StudyConfig, seed: int, trainer: Trainer, planner: Planner, shared: dict[str, Any],
           save_every: int) -> list[dict[str, Any]]:
    """Run ``trainer`` to ``cfg.learner.steps`` with a progress bar; the greedy planner is read on the train tree every
    ``eval_every`` steps; checkpoints every ``save_every``. Returns the curve (one row a step)."""
    from tqdm.auto import tqdm

    curve = []
    bar = tqdm(total=cfg.learner.steps, initial=trainer.step, desc=f"train seed {seed}", unit="step", dynamic_ncols=True)
    try:
        while trainer.step < cfg.learner.steps:
            m = trainer.train_step()
            bar.update(1)
            row = {"step": trainer.step, "batch_reward": m["planner/reward"], "accuracy": m["accuracy"],
                   "entropy": m.get("planner/entropy")}
            if trainer.step % cfg.learner.eval_every == 0 or trainer.step == cfg.learner.steps:
                row |= _greedy(planner, shared["store"], shared["tree"], shared["items"], shared["groups"],
                               shared["table"])
                bar.set_postfix(greedy_reward=f"{row['greedy_reward']:.3f}")
            curve.append(row)
            if trainer.step % save_every == 0 or trainer.step == cfg.learner.steps:
                trainer.save()
    finally:
        bar.close()
        trainer.acc.end_training()
    return curve


def train(cfg: StudyConfig) -> dict[str, Any]:
    """Train every seed of ``cfg.learner`` on the train tree (module docstring); returns each seed's run and curve
    and writes them to ``heads/train.json``."""
    from agents.registry import AgentContext, build_agent
    from agents.runs import find_checkpoint
    from rsim_env.grading import GradeCache

    from .features import feature_store, install, stacked, tree_contexts
    from .tables import Groups, game_env, split_table, tree_problems

    paths = StudyPaths.of(cfg)
    done = [find_checkpoint(paths.head(s), "planner") for s in range(cfg.learner.seeds)]
    if all(d is not None and _step_of(d) >= cfg.learner.steps for d in done):  # nothing to train: load nothing
        _log(f"every seed is trained ({paths.heads}); reused")
        return {"runs": [{"seed": s, "checkpoint": str(d), "reused": True} for s, d in enumerate(done)],
                "summary": str(paths.train_summary)}
    tree, items = tree_problems(cfg, "train")
    if game_env(tree).max_steps != cfg.rounds or game_env(tree).terminate_last_round != cfg.terminate_last_round:
        raise ValueError(f"the train tree {paths.tree('train')} holds another game than rounds={cfg.rounds}, "
                         f"terminate_last_round={cfg.terminate_last_round}; fill a tree of this game.")
    grader = GradeCache()
    train_table = split_table(cfg, "train", grader)
    items = [p for p in items if p.id in train_table.outcomes]
    store = feature_store(cfg, cfg.planner, tree, items)
    contexts = tree_contexts(tree, items)
    base = build_agent(cfg.planner, AgentContext(role="planner", config=run_config(cfg, 0).planner, seed=0,
                                                 max_rounds=cfg.rounds)).agent
    install(store, base, contexts)
    shared = {"tree": tree, "items": items, "store": store, "grader": grader, "table": train_table,
              "standardize": stacked(store, contexts), "groups": Groups(game_env(tree), grader)}
    runs = [train_seed(cfg, s, base, shared) for s in range(cfg.learner.seeds)]
    summary_path = paths.train_summary
    kept = json.loads(summary_path.read_text()) if summary_path.is_file() else {"runs": {}}
    for r in runs:
        if not r["reused"]:
            kept["runs"][str(r["seed"])] = r
    kept["learner"] = dataclasses.asdict(cfg.learner)
    kept["train_problems"] = len(items)
    summary_path.parent.mkdir(parents=True, exist_ok=True)
    summary_path.write_text(json.dumps(kept, indent=1) + "\n")
    _log(f"trained {sum(not r['reused'] for r in runs)} seed(s), reused {sum(r['reused'] for r in runs)} -> "
         f"{paths.heads}")
    return {"runs": runs, "summary": str(summary_path)}
