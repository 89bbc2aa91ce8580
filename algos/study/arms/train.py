"""The arms' train stage: every trained arm's seeds, each an ``rsim train`` run on the study's train split.

Who updates, when, with what weight (one run = ``arm.steps`` optimizer steps of ``arm.groups_per_step`` train
problems x ``arm.group_size`` episodes):

* ``grpo``: the reasoner alone, no planner in the game (:class:`algos.grpo_baseline.GRPOBaseline`), every step at
  ``arm.lr``;
* ``grpo_fixed``: the reasoner alone in the planner's game, the study's best fixed plan (chosen on train + val) in
  the planner's seat (:class:`algos.study.arms.learner.FixedPlanGRPO`), every step at ``arm.lr``;
* ``rsim``: planner (a fresh head on the study's planner backbone) and reasoner together, Stackelberg GRPO's
  two-stage schedule (:class:`algos.stackelberg.StackelbergGRPO`: lambda ``arm.lambda1`` then ``arm.lambda2``, the
  planner's rate ``arm.planner_lr`` x lambda, the reasoner's ``arm.lr`` x (1 - lambda));
* ``rsim_warm``: the same, the planner warm-started from the study's head of the same seed (the ``planner`` arm).

The reasoner learns a LoRA adapter (rank ``arm.lora_rank``, KL ``arm.kl``) on the route ``arm.route`` (torch
rollouts, or llama.cpp rollouts with truncated importance sampling). Seed k of every arm sees the same problems in
the same order (the trainer's order is a function of the seed and the problem list), which each run records step
by step with its episodes, reasoner tokens decoded and trained on, the planner's token share, its effective
learning rates and its wall / CPU seconds (``<run>/arm.json``): the equal-budget contract
(:func:`algos.study.arms.spec.check_equal_budget`) is checked on what the runs did, not on what they were told.
A finished run is reused; an interrupted one resumes from its newest checkpoint. A finished run's record keeps the
digest of its final weights, so its kept looks stay readable without its checkpoints; a finished run whose weights are
gone before all its looks were scored is trained again.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Protocol, Sequence

from ..config import StudyConfig
from ..paths import StudyPaths
from .spec import TRAINED, budget, check_arms, check_equal_budget, parse_arms, route_reasoner

__all__ = ["run_dir", "run_config", "train_problems", "best_fixed_plan", "train_run", "train", "summaries", "Scorer"]

LEARNER = {"grpo": "grpo", "grpo_fixed": "algos.study.arms.learner:grpo_fixed", "rsim": "stackelberg",
           "rsim_warm": "stackelberg"}
"""The ``rsim train`` learner of each trained arm."""


class Scorer(Protocol):
    """What the train stage asks of the scoring when each run is scored as it ends (:func:`train`)."""

    def problems(self) -> Sequence[Any]:
        """The held-out problems the runs are scored on."""

    def done(self, arm: str, seed: int) -> bool:
        """Whether every look of the run is kept (its weights are no longer needed)."""

    def __call__(self, arm: str, seed: int) -> None:
        """Score the finished run."""


def _log(msg: str) -> None:
    print(f"[rsim study arms] {msg}", file=sys.stderr, flush=True)


def run_dir(cfg: StudyConfig, arm: str, seed: int) -> Path:
    """Where arm ``arm``'s seed-``seed`` run is (an ``rsim train`` run dir)."""
    return Path(cfg.out) / "arms" / arm / f"seed_{seed}"


def train_problems(cfg: StudyConfig) -> list[Any]:
    """The study's train split (:func:`algos.study.splits.problems`): every trained arm trains on these only."""
    from ..splits import problems

    items = problems(cfg, "train")
    if not items:
        raise ValueError(f"the study's train split of {cfg.data!r} is empty; give more train_per_task.")
    return items


def best_fixed_plan(cfg: StudyConfig) -> tuple[int, ...]:
    """The best fixed plan chosen on the train + val trees (:func:`algos.study.modes.choose`): ``grpo_fixed``'s."""
    from ..modes import choose
    from ..tables import split_table

    return tuple(choose([split_table(cfg, "train"), split_table(cfg, "val")])["best_single"])


def _warm_head(cfg: StudyConfig, seed: int) -> Path:
    """The study's head that ``rsim_warm``'s seed ``seed`` starts from (seed k from head k, cycling)."""
    path = StudyPaths.of(cfg).head(seed % cfg.learner.seeds)
    from agents.runs import find_checkpoint

    if find_checkpoint(path) is None:
        raise ValueError(f"rsim_warm seed {seed}: no trained head at {path}; train the study's heads first (rsim study "
                         "--stage train) or point --heads-dir at them.")
    return path


def run_config(cfg: StudyConfig, arm: str, seed: int, route: str | None = None) -> Any:
    """The ``rsim train`` config (on the ``study`` preset) of ``arm``'s seed ``seed``: the study's game and step
    lengths, the arm settings (:class:`algos.study.arms.spec.ArmSettings`), the run dir."""
    from algos.config import resolve

    a = cfg.arm
    route = route or a.route
    planner = str(_warm_head(cfg, seed)) if arm == "rsim_warm" else cfg.planner
    return resolve("study", {
        "learner": LEARNER[arm], "model.planner": planner, "model.reasoner": route_reasoner(cfg.reasoner, route),
        "data.source": "adaptive:train" if cfg.data == "adaptive" else cfg.data, "data.size": 2,
        "env.max_steps": cfg.rounds, "env.terminate_last_round": cfg.terminate_last_round,
        "reasoner.max_step_tokens": cfg.max_step_tokens, "reasoner.max_answer_tokens": cfg.max_answer_tokens,
        "reasoner.temperature": a.temperature, "reasoner.greedy": False,
        "model.reasoner_lora.enabled": True, "model.reasoner_lora.rank": a.lora_rank,
        "model.reasoner_lora.alpha": float(2 * a.lora_rank), "model.planner_lora.enabled": False,
        "planner.head_only": True, "planner.seed": seed,
        "train.steps": a.steps, "train.groups_per_step": a.groups_per_step, "train.grpo.group_size": a.group_size,
        "train.seed": seed, "train.output_dir": str(run_dir(cfg, arm, seed)), "train.reasoner_optim.lr": a.lr,
        "train.planner_optim.lr": a.planner_lr, "train.grpo.kl_coef": a.kl, "train.grpo.entropy_coef": 0.0,
        "train.grpo.tis_cap": a.tis_cap if route == "llamacpp" else 0.0,
        "schedule.schedule": "two_stage", "schedule.stage1_steps": a.stage1_steps,
        "schedule.lambda_stage1": a.lambda1, "schedule.lambda_stage2": a.lambda2,
        "train.save_every": max(1, a.steps // 4), "train.progress": False, "train.mixed_precision": "no",
        "train.sample_rollouts": 2})  # two episodes a step in samples.jsonl: what the reasoner wrote, to read


def _trainer_class() -> Any:
    from algos.evaluation.run import episode_tokens
    from algos.trainer import Trainer

    class ArmTrainer(Trainer):
        """``rsim train``'s trainer that records what each rollout played: problem ids, episodes and tokens."""

        def rollout(self, problems: Sequence[Any], seed: int) -> tuple[list[dict], dict[str, list[dict]]]:
            results, records = super().rollout(problems, seed)
            planner, reasoner = self.agents.get("planner"), self.agents["reasoner"]
            tok = {"planner_read": 0.0, "reasoner_read": 0.0, "reasoner_written": 0.0}
            for i in range(len(results)):
                t = episode_tokens(planner, records["planner"][i] if "planner" in records else None, reasoner,
                                   records["reasoner"][i])
                for k in tok:
                    tok[k] += float(t.get(k) or 0.0)
            self.seen = {"problems": [p.id for p in problems], "episodes": len(results), **tok}
            return results, records

    return ArmTrainer


def _agents(run: Any, arm: str, plan: tuple[int, ...] | None, device: Any, problems: Sequence[Any]) -> dict[str, Any]:
    from agents.scripted.policies import FixedPlanner
    from algos.build import build_agents
    from algos.grpo_baseline import GRPOBaseline

    # every seed starts from the same base models, the ones the untrained arms are scored with (agent seed 0: a
    # random-init model's weights depend on it); the run's seed still orders its problems and seeds its sampling
    run = dataclasses.replace(run, train=dataclasses.replace(run.train, seed=0))
    if arm != "grpo_fixed":
        from algos.learners import build_learner

        return build_agents(run, build_learner(run), device, problems)
    agents = build_agents(run, GRPOBaseline(), device, problems)  # the reasoner alone ...
    agents["planner"] = FixedPlanner(plan or ())  # ... and the fixed plan in the planner's seat
    return agents


def _row(step: int, m: dict[str, float], seen: dict[str, Any], seconds: float) -> dict[str, Any]:
    return {"step": step, "problems": seen["problems"], "episodes": seen["episodes"],
            "reasoner_reward": m.get("reasoner/reward"), "planner_reward": m.get("planner/reward"),
            "accuracy": m.get("accuracy"), "groups_zero_std": m.get("reasoner/frac_reward_zero_std"),
            "reasoner_tokens_decoded": seen["reasoner_written"], "reasoner_tokens_read": seen["reasoner_read"],
            "planner_tokens_read": seen["planner_read"], "reasoner_tokens_trained": m.get("reasoner/tokens", 0.0),
            "reasoner_lr": m.get("reasoner/learning_rate"), "planner_lr": m.get("planner/learning_rate"),
            "reasoner_skipped": m.get("reasoner/skipped", 0.0), "planner_skipped": m.get("planner/skipped"),
            "planner_groups_zero_std": m.get("planner/frac_reward_zero_std"), "stage": m.get("stage"),
            "lambda": m.get("lambda"),
            "seconds": seconds}


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    dec = sum(r["reasoner_tokens_decoded"] for r in rows)
    read = sum(r["reasoner_tokens_read"] for r in rows)
    planner = sum(r["planner_tokens_read"] for r in rows)
    zero = [r["groups_zero_std"] for r in rows if r["groups_zero_std"] is not None]
    lrs = {k: sorted({r[k] for r in rows if r[k] is not None}) for k in ("reasoner_lr", "planner_lr")}
    return {"steps": len(rows), "episodes": sum(r["episodes"] for r in rows), "reasoner_tokens_decoded": dec,
            "reasoner_tokens_read": read, "reasoner_tokens_trained": sum(r["reasoner_tokens_trained"] or 0.0
                                                                           for r in rows),
            "planner_tokens_read": planner, "planner_token_share": planner / (planner + read + dec)
            if planner + read + dec else 0.0,
            "groups_with_signal": 1 - sum(zero) / len(zero) if zero else None,
            "steps_with_signal": sum(1 for r in rows if not r["reasoner_skipped"]) / len(rows) if rows else None,
            "planner_steps_updated": sum(1 for r in rows if r.get("planner_skipped") == 0.0),
            "effective_lr": lrs, "problems": [p for r in rows for p in r["problems"]]}


def train_run(cfg: StudyConfig, arm: str, seed: int, problems: Sequence[Any],
              plan: tuple[int, ...] | None = None, bar: Any = None, scorer: Scorer | None = None) -> dict[str, Any]:
    """Train (or reuse, or resume) ``arm``'s seed ``seed`` on ``problems``; its record (``<run>/arm.json``).
    ``bar``: a progress bar over every run's steps (one of its own when None). A finished run is reused while it has
    its weights, or, without them, while ``scorer`` has every look of it kept; else it is trained again."""
    from accelerate.utils import set_seed

    from agents.runs import find_checkpoint
    from algos.learners import build_learner
    from algos.trainer import make_accelerator, to_dict

    out = run_dir(cfg, arm, seed)
    record_path = out / "arm.json"
    kept = json.loads(record_path.read_text()) if record_path.is_file() else None
    _check_same_settings(cfg, kept, out)
    if kept and kept.get("complete") and kept["totals"]["steps"] >= cfg.arm.steps:
        from agents.runs import find_checkpoint

        if find_checkpoint(out) is not None or (kept.get("weights") and scorer is not None
                                                and scorer.done(arm, seed)):
            if bar is not None:
                bar.update(cfg.arm.steps)
            return kept | {"reused": True}
        # a finished record without weights (its checkpoints deleted, or the record copied without them) whose looks
        # are not all kept could never be scored: train it again, from step 0
        _log(f"{arm} seed {seed}: its record is finished but its weights are gone and its looks are not all scored; "
             "training it again from step 0")
        kept = None
    run = run_config(cfg, arm, seed)
    acc = make_accelerator(run.train)
    set_seed(seed)
    learner = build_learner(run)
    agents = _agents(run, arm, plan, acc.device, problems)
    config = to_dict(run) | ({"fixed_plan": list(plan)} if plan else {})
    trainer = _trainer_class()(run.train, learner, agents, problems, acc, run_config=config, env=run.env)
    rows: list[dict[str, Any]] = []
    wall = cpu = 0.0
    ckpt = find_checkpoint(out)
    if ckpt is not None:
        trainer.resume(ckpt)
        if kept:  # the steps up to the checkpoint, as recorded then
            rows = [r for r in kept["rows"] if r["step"] <= trainer.step]
            wall, cpu = kept["wall_s"], kept["cpu_s"]
        _log(f"{arm} seed {seed}: resumed at step {trainer.step} ({ckpt})")
    rows, wall, cpu = _steps(cfg, arm, seed, trainer, (rows, wall, cpu), record_path, plan, bar)
    return _record(cfg, arm, seed, rows, wall, cpu, record_path, plan, complete=True)


IGNORED = ("seeds", "batch")
"""Arm settings that do not change a run (how many runs there are, the scoring's decode batch)."""


def _check_same_settings(cfg: StudyConfig, kept: dict[str, Any] | None, out: Path) -> None:
    """A kept run (finished or not) trained under other arm settings is refused, not continued or reused."""
    if not kept:
        return
    now = dataclasses.asdict(cfg.arm)
    diff = sorted(k for k in now if k not in IGNORED and kept["settings"].get(k) != now[k])
    if diff:
        was = ", ".join(f"{k}={kept['settings'].get(k)!r}" for k in diff)
        raise ValueError(f"{out} was trained with other arm settings ({was}; now "
                         f"{', '.join(f'{k}={now[k]!r}' for k in diff)}): a run keeps its settings; delete the run dir "
                         "to retrain it, or use another --out.")


def _record(cfg: StudyConfig, arm: str, seed: int, rows: list[dict[str, Any]], wall: float, cpu: float, path: Path,
            plan: tuple[int, ...] | None, complete: bool) -> dict[str, Any]:
    from agents.runs import find_checkpoint

    from .weights import files_digest

    ck = find_checkpoint(path.parent) if complete else None
    rec = {"arm": arm, "seed": seed, "complete": complete, "settings": dataclasses.asdict(cfg.arm),
           "fixed_plan": list(plan) if plan else None, "rows": rows, "wall_s": wall, "cpu_s": cpu,
           "totals": _totals(rows), "run_dir": str(path.parent), "reused": False,
           # the final weights' digest: the run's looks stay readable once its checkpoints are gone
           "weights": files_digest(ck) if ck is not None else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rec) + "\n")
    tmp.replace(path)
    return rec


def _steps(cfg: StudyConfig, arm: str, seed: int, trainer: Any, done: tuple[list[dict[str, Any]], float, float],
           path: Path, plan: tuple[int, ...] | None, bar: Any) -> tuple[list[dict[str, Any]], float, float]:
    """Run ``trainer`` to ``arm.steps`` from ``done`` (the rows, wall and CPU seconds so far), recording each step and
    checkpointing on schedule."""
    from tqdm.auto import tqdm

    rows, wall, cpu = done
    steps = cfg.arm.steps
    own = bar is None
    bar = tqdm(total=steps, desc=f"{arm} seed {seed}", unit="step", dynamic_ncols=True) if own else bar
    bar.update(trainer.step)
    try:
        while trainer.step < steps:
            t0, c0 = time.perf_counter(), time.process_time()
            m = trainer.train_step()
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            wall, cpu = wall + dt, cpu + dc
            rows.append(_row(trainer.step, m, trainer.seen, dt))
            bar.update(1)
            bar.set_postfix(arm=arm, seed=seed, reward=f"{m.get('reasoner/reward', 0.0):.3f}")
            if trainer.step % trainer.cfg.save_every == 0 or trainer.step == steps:
                trainer.save()
                _record(cfg, arm, seed, rows, wall, cpu, path, plan, complete=False)
    finally:
        if own:
            bar.close()
        trainer.acc.end_training()
    return rows, wall, cpu


def summaries(cfg: StudyConfig, arms: Sequence[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The finished runs' records (``arm.json``) of every trained arm asked, by arm (seeds in order)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for arm in arms if arms is not None else parse_arms(cfg.arms):
        if arm not in TRAINED:
            continue
        recs = []
        for s in range(cfg.arm.seeds):
            p = run_dir(cfg, arm, s) / "arm.json"
            if p.is_file():
                rec = json.loads(p.read_text())
                if rec.get("complete"):
                    recs.append(rec)
        out[arm] = recs
    return out


def contract(records: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each finished run's budget as it trained (problems in the order seen, episodes, ...), for
    :func:`algos.study.arms.spec.check_equal_budget`."""
    from .spec import ArmSettings

    rows = []
    for arm, recs in records.items():
        for r in recs:
            settings = ArmSettings(**r["settings"])
            b = budget(arm, settings, r["totals"]["problems"], r["seed"])
            rows.append(b | {"episodes": r["totals"]["episodes"], "steps": r["totals"]["steps"]})
    return rows


def train(cfg: StudyConfig, scorer: Scorer | None = None) -> dict[str, Any]:
    """Train every seed of every trained arm of ``cfg.arms`` (module docstring); the equal budget is checked on the
    runs' records at the end. With a ``scorer`` (the study's train stage: :class:`algos.study.arms.stages.
    ScoreAsTrained`) each run is scored as soon as it is finished (or reused)."""
    arms = [a for a in parse_arms(cfg.arms) if a in TRAINED]
    check_arms(arms, cfg.reasoner)
    if not arms:
        return {"runs": []}
    problems = train_problems(cfg)
    from algos.preflight import check_sandbox

    # code problems run model-written programs: a sandbox that cannot start is refused now, not hours into a run (the
    # held-out problems too when each run is scored as it ends)
    check_sandbox(list(problems) + (list(scorer.problems()) if scorer is not None else []))
    plan = best_fixed_plan(cfg) if "grpo_fixed" in arms else None
    a = cfg.arm
    _log(f"{len(arms)} arm(s) x {a.seeds} seed(s) x {a.steps} steps x {a.groups_per_step} problems x G {a.group_size}"
         f" = {a.episodes} episodes a run, {len(arms) * a.seeds * a.episodes} in all, on {len(problems)} train "
         f"problems (route {a.route}); the bar's ETA is measured from the steps run so far")
    from tqdm.auto import tqdm

    with tqdm(total=len(arms) * a.seeds * a.steps, desc="arms", unit="step", dynamic_ncols=True) as bar:
        runs = []
        for arm in arms:
            for s in range(a.seeds):
                runs.append(train_run(cfg, arm, s, problems, plan if arm == "grpo_fixed" else None, bar, scorer))
                if scorer is not None:
                    scorer(arm, s)
    check_equal_budget(contract(summaries(cfg, arms)))
    return {"runs": [{k: r[k] for k in ("arm", "seed", "reused", "wall_s", "cpu_s", "run_dir")} for r in runs],
            "fixed_plan": list(plan) if plan else None}
