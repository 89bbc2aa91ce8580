"""The training loop shared by every learner, on ``accelerate`` (1 CPU, 1 GPU or many, same code).

One optimizer step::

    problems for this step  ->  rollout G copies each (EnvGroup, no grad)
    -> per-agent rewards -> group advantages (algos/grpo.py)
    -> for each agent the learner updates now (its StepPlan): recompute log-probs with current
       weights (agent.score), GRPO loss, backward, all-reduce grads, clip, step with lr * scale
    -> log (TensorBoard via accelerate, TRL-style names), sample rollouts to JSONL, checkpoint

Distribution: each GRPO group stays on one process (its G copies are rolled out and normalised
there), so ``groups_per_step`` must divide by the number of processes. Gradients are averaged
with one all-reduce per agent instead of wrapping models in DDP, because agents run their modules
through their own ``score`` method (DDP only syncs through its own ``forward``).

Groups whose rewards are all equal have zero advantage; unless a KL term needs them they are not
scored at all (a large saving early in training when most groups are all-wrong).
"""

from __future__ import annotations

import copy
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

from rsim_env.answers import reason_counts
from rsim_env.group import EnvGroup
from rsim_env.problems import Problem
from rsim_env.strategies import STRATEGIES

from . import checkpoint as ckpt
from .rollout import rollout as play
from .grpo import GRPOConfig, group_advantages, grpo_loss, zero_std_groups
from .policy import check_trainable
from .stackelberg import StepPlan

MIXED_PRECISION = ("auto", "no", "bf16", "fp16")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW settings for one agent."""

    lr: float = 1e-6
    """Base learning rate (the Stackelberg schedule multiplies it by lambda or 1 - lambda)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Clip the agent's gradient to this global norm (0 = no clipping)."""
    warmup_steps: int = 0
    """Linear warm-up of the learning rate over this many optimizer steps."""

    def __post_init__(self) -> None:
        if not (isinstance(self.lr, (int, float)) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"OptimConfig.lr={self.lr!r} is invalid: use a positive float such as 1e-6.")
        if not self.weight_decay >= 0:
            raise ValueError(f"OptimConfig.weight_decay={self.weight_decay!r} is invalid: use >= 0.")
        if not self.max_grad_norm >= 0:
            raise ValueError(f"OptimConfig.max_grad_norm={self.max_grad_norm!r} is invalid: use >= 0 (0 = off).")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"OptimConfig.warmup_steps={self.warmup_steps!r} is invalid: use an int >= 0.")


@dataclass(frozen=True)
class TrainConfig:
    """The training loop (learner-independent)."""

    steps: int = 10
    """Optimizer steps to run (a resumed run continues up to this total)."""
    groups_per_step: int = 2
    """Problems per optimizer step (each rolled out group_size times); must divide by #processes."""
    seed: int = 0
    """Seeds model init, sampling, data order and the environments."""
    env_max_steps: int = 6
    """Rounds per episode before truncation (planner mode)."""
    log_every: int = 1
    """Log metrics and sample rollouts every this many steps."""
    save_every: int = 10
    """Checkpoint every this many steps (0 = only at the end); a crash loses at most this many steps."""
    keep_checkpoints: int = 2
    """Newest checkpoints kept on disk."""
    output_dir: str = "runs/rsim"
    """TensorBoard logs, samples.jsonl and checkpoints/ go here."""
    mixed_precision: str = "auto"
    """"auto" = bf16 on a GPU that has it, else off; or "no" / "bf16" / "fp16"."""
    sample_rollouts: int = 2
    """Rollouts written to samples.jsonl per logging step (main process)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    skip_zero_std_groups: bool = True
    """Don't score groups whose rewards are all equal (zero advantage) unless the KL term needs them."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO loss settings (shared by both agents; group_size is G)."""
    planner_optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-5))
    """Planner optimizer."""
    reasoner_optim: OptimConfig = field(default_factory=OptimConfig)
    """Reasoner optimizer."""

    def __post_init__(self) -> None:
        for f in ("steps", "groups_per_step", "env_max_steps", "log_every"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"TrainConfig.{f}={v!r} is invalid: use an int >= 1.")
        for f in ("save_every", "keep_checkpoints", "sample_rollouts", "seed"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"TrainConfig.{f}={v!r} is invalid: use an int >= 0.")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"TrainConfig.mixed_precision={self.mixed_precision!r} is invalid: choose one of {MIXED_PRECISION}.")


def to_dict(cfg: Any) -> Any:
    """A (nested) config dataclass as plain JSON-able data."""
    return asdict(cfg) if is_dataclass(cfg) else cfg


def make_accelerator(cfg: TrainConfig) -> Accelerator:
    """Accelerator with TensorBoard logging under ``cfg.output_dir`` and bf16 only where supported."""
    mp = cfg.mixed_precision
    if mp == "auto":
        mp = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
    Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
    # `accelerate launch --cpu --num_processes N` starts ONE process unless an MPI hostfile is set;
    # `accelerate launch --multi_gpu --num_processes N` (torchrun) on a machine without GPUs needs
    # cpu=True here so the processes form a gloo group instead of N independent runs.
    cpu = "LOCAL_RANK" in os.environ and not torch.cuda.is_available()
    return Accelerator(mixed_precision=mp, log_with="tensorboard", project_dir=cfg.output_dir, cpu=cpu)


class Trainer:
    """Runs a learner (who updates, when, with what weight) over the shared GRPO loop.

    Args:
        cfg: loop settings.
        learner: has ``name``, ``env_planner`` (bool), ``trained`` (roles it optimises) and
            ``plan(step) -> StepPlan``.
        agents: ``{"planner": ..., "reasoner": ...}`` (the planner is omitted when the learner runs
            without one); trained roles must implement :class:`algos.policy.Trainable`.
        problems: training problems (any sequence of :class:`Problem`).
        accelerator: from :func:`make_accelerator` (build the agents on ``accelerator.device``).
        run_config: the resolved config of the whole run, logged and saved in every checkpoint.
    """

    def __init__(self, cfg: TrainConfig, learner: Any, agents: dict[str, Any], problems: Sequence[Problem],
                 accelerator: Accelerator, run_config: dict[str, Any] | None = None) -> None:
        self.cfg, self.learner, self.agents, self.acc = cfg, learner, agents, accelerator
        self.problems = list(problems)
        self.roles = ["planner", "reasoner"] if learner.env_planner else ["reasoner"]
        world = accelerator.num_processes
        if cfg.groups_per_step % world:
            raise ValueError(
                f"TrainConfig.groups_per_step={cfg.groups_per_step} does not divide by the {world} processes; "
                f"each GRPO group stays on one process, so use a multiple of {world}."
            )
        for r in self.roles:
            if r not in agents:
                raise ValueError(f"learner {learner.name!r} needs a {r} agent; agents given: {sorted(agents)}.")
        for r in learner.trained:
            check_trainable(agents[r], r)
        if not self.problems:
            raise ValueError("Trainer needs at least one training problem.")
        self.G = cfg.grpo.group_size
        self.optim_cfg = {"planner": cfg.planner_optim, "reasoner": cfg.reasoner_optim}
        self.optimizers = {
            r: torch.optim.AdamW([p for p in agents[r].module.parameters() if p.requires_grad],
                                 lr=self.optim_cfg[r].lr, weight_decay=self.optim_cfg[r].weight_decay)
            for r in learner.trained
        }
        # dr_grpo's constant normaliser: tokens per sequence for the reasoner, rounds for the planner
        self.loss_cfg = {"reasoner": cfg.grpo,
                         "planner": GRPOConfig(**dict(asdict(cfg.grpo), max_length=cfg.env_max_steps))}
        self.ref_agents = {}
        if cfg.grpo.kl_coef > 0:
            for r in learner.trained:
                self.ref_agents[r] = copy.deepcopy(agents[r])
                self.ref_agents[r].module.requires_grad_(False)
        self.run_config = run_config if run_config is not None else {"train": to_dict(cfg), "learner": learner.name}
        self.step = 0
        self.data_position = 0
        self.num_tokens = 0
        self.history: list[dict[str, float]] = []
        self.out = Path(cfg.output_dir)
        # distinct sampling streams per process, identical model init (agents were built before)
        torch.manual_seed(cfg.seed * 1000 + 17 + accelerator.process_index)
        np.random.seed(cfg.seed * 1000 + 17 + accelerator.process_index)
        if accelerator.is_main_process:
            accelerator.init_trackers("tensorboard", config=_flat_hparams(self.run_config))
            tb = accelerator.get_tracker("tensorboard", unwrap=True)
            tb.add_text("config", "```\n" + json.dumps(self.run_config, indent=1) + "\n```", 0)

    # ------------------------------------------------------------------ data and rollout
    def _problems_for_step(self) -> list[Problem]:
        per = self.cfg.groups_per_step // self.acc.num_processes
        start = self.data_position + self.acc.process_index * per
        return [self._problem_at(i) for i in range(start, start + per)]

    def _problem_at(self, i: int) -> Problem:
        epoch, j = divmod(i, len(self.problems))
        order = np.random.default_rng(self.cfg.seed + epoch).permutation(len(self.problems))
        return self.problems[int(order[j])]

    def rollout(self, problems: Sequence[Problem], seed: int) -> tuple[list[dict], dict[str, list[dict]]]:
        """Play every problem G times; return per-copy results and each agent's records."""
        group = EnvGroup(list(problems), self.G, max_steps=self.cfg.env_max_steps, planner=self.learner.env_planner)
        with torch.no_grad(), self.acc.autocast():
            out = play(group, self.agents["reasoner"], self.agents.get("planner"), seed=seed)
        results = [{k: t[k] for k in ("copy_id", "problem_index", "rewards", "info")} for t in out.trajectories]
        return results, {r: [t[r] for t in out.trajectories] for r in self.roles}

    # ------------------------------------------------------------------ one update
    def _set_lr(self, role: str, scale: float) -> float:
        oc = self.optim_cfg[role]
        warm = min(1.0, (self.step + 1) / oc.warmup_steps) if oc.warmup_steps else 1.0
        lr = oc.lr * warm * scale
        for g in self.optimizers[role].param_groups:
            g["lr"] = lr
        return lr

    def _sync_grads(self, params: list[torch.nn.Parameter]) -> None:
        if self.acc.num_processes == 1:
            return
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])
        torch.distributed.all_reduce(flat)
        flat /= self.acc.num_processes
        o = 0
        for p in params:
            p.grad = flat[o:o + p.numel()].view_as(p).clone()
            o += p.numel()

    def _process_weight(self, loss_type: str, mask: torch.Tensor, rows: int, weight: float) -> float:
        """Loss multiplier making the all-reduced *mean* gradient equal the loss over the global batch.

        Each process normalises by its own count (tokens for "dapo", sequences otherwise); with
        uneven counts (skipped groups, different lengths) a plain mean over processes would
        over-weight the smaller ones. Multiplying by ``local * world / global`` fixes that.
        """
        local = (float(mask.sum().item()) if loss_type == "dapo" else float(rows)) * weight
        if self.acc.num_processes == 1:
            return weight
        total = self.acc.reduce(torch.tensor(local, device=self.acc.device), "sum").item()
        return local * self.acc.num_processes / total if total > 0 else 0.0

    def update(self, role: str, plan: StepPlan, results: list[dict], records: list[dict]) -> dict[str, float]:
        """One optimizer step (``num_iterations`` passes) for ``role``; returns its metrics."""
        R = torch.tensor([res["rewards"][role] for res in results], dtype=torch.float32)
        g = self.cfg.grpo
        adv = group_advantages(R, self.G, scale=g.scale_rewards, eps=g.adv_eps)
        zero = zero_std_groups(R, self.G)
        score_all = g.kl_coef > 0 or not self.cfg.skip_zero_std_groups
        keep = [c for c in range(len(R)) if score_all or not zero[c // self.G]]
        active = int(self.acc.reduce(torch.tensor(len(keep), device=self.acc.device), "sum").item())
        if active == 0:  # every process has only zero-advantage groups: nothing to learn this step
            return {"skipped": 1.0}
        lr = self._set_lr(role, plan.lr_scale[role])
        sub, weight = (keep, 1.0) if keep else ([0], 0.0)  # a process with nothing still joins the all-reduce
        recs = [records[c] for c in sub]
        a = adv[sub].to(self.acc.device)
        agent, opt = self.agents[role], self.optimizers[role]
        params = [p for grp in opt.param_groups for p in grp["params"]]
        ref_logp = None
        if g.kl_coef > 0:
            with torch.no_grad(), self.acc.autocast():
                ref_logp = self.ref_agents[role].score(recs).logp.float()
        old, sums, scale = None, {}, None
        for _ in range(g.num_iterations):
            with self.acc.autocast():
                scored = agent.score(recs)
            logp = scored.logp.float()
            old = logp.detach() if old is None else old
            loss, m = grpo_loss(logp, old, a, scored.mask, self.loss_cfg[role], ref_logp, scored.entropy)
            if scale is None:
                scale = self._process_weight(g.loss_type, scored.mask, len(sub), weight)
            opt.zero_grad(set_to_none=False)
            (loss * scale).backward()
            self._sync_grads(params)
            max_norm = self.optim_cfg[role].max_grad_norm
            gn = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else float("inf"))
            opt.step()
            for k, v in dict(m, loss=loss.item(), grad_norm=gn.item()).items():
                sums[k] = sums.get(k, 0.0) + v / g.num_iterations
        sums.update(learning_rate=lr, tokens=float(scored.mask.sum().item()) * weight, skipped=0.0)
        return sums

    # ------------------------------------------------------------------ the loop
    def train_step(self) -> dict[str, float]:
        """Rollout + updates + logging for one optimizer step; returns the logged metrics."""
        t0 = time.perf_counter()
        plan = self.learner.plan(self.step)
        problems = self._problems_for_step()
        seed = self.cfg.seed * 1_000_003 + self.step * 10_007 + self.acc.process_index * 101
        results, records = self.rollout(problems, seed)
        t_roll = time.perf_counter() - t0
        per_agent = {}
        for role in self.learner.trained:
            if plan.update.get(role, False):
                per_agent[role] = self.update(role, plan, results, records[role])
        metrics = self._metrics(plan, results, records, per_agent)
        metrics.update(step_time=time.perf_counter() - t0, rollout_time=t_roll)
        self.data_position += self.cfg.groups_per_step
        self.step += 1
        if self.step % self.cfg.log_every == 0 or self.step == self.cfg.steps:
            self.acc.log(metrics, step=self.step)
            self._log_extras(results)
        self.history.append(metrics)
        return metrics

    def train(self) -> dict[str, Any]:
        """Run until ``cfg.steps``; checkpoint on schedule and at the end. Returns a summary."""
        from tqdm.auto import tqdm

        bar = tqdm(total=self.cfg.steps, initial=self.step, desc=self.learner.name,
                   disable=not (self.cfg.progress and self.acc.is_main_process))
        path = None
        while self.step < self.cfg.steps:
            m = self.train_step()
            bar.update(1)
            bar.set_postfix({k: f"{m[k]:.3f}" for k in ("planner/reward", "reasoner/reward", "accuracy") if k in m})
            if (self.cfg.save_every and self.step % self.cfg.save_every == 0) or self.step == self.cfg.steps:
                path = self.save()
        bar.close()
        self.acc.end_training()
        return {"steps": self.step, "checkpoint": str(path) if path else None, "output_dir": str(self.out),
                "history": self.history}

    # ------------------------------------------------------------------ metrics
    def _gather(self, values: list[float]) -> torch.Tensor:
        return self.acc.gather(torch.tensor(values, dtype=torch.float32, device=self.acc.device)).cpu()

    def _metrics(self, plan: StepPlan, results: list[dict], records: dict, per_agent: dict) -> dict[str, float]:
        m: dict[str, float] = {"stage": float(plan.stage), "lambda": plan.lam}
        for role in self.roles:
            R = self._gather([r["rewards"][role] for r in results])
            m[f"{role}/reward"] = R.mean().item()
            m[f"{role}/reward_std"] = R.view(-1, self.G).std(1).mean().item()
            m[f"{role}/frac_reward_zero_std"] = zero_std_groups(R, self.G).float().mean().item()
        for comp in results[0]["info"]["components"]:
            m[f"rewards/{comp}/mean"] = self._gather([r["info"]["components"][comp] for r in results]).mean().item()
        m["accuracy"] = self._gather([float(r["info"]["correct"]) for r in results]).mean().item()
        reasons = reason_counts(r["info"] for r in results)  # checker outcomes, its own failures included
        totals = self.acc.reduce(torch.tensor(list(reasons.values()), dtype=torch.float32, device=self.acc.device), "sum")
        m.update({f"answers/reason/{k}": v for k, v in zip(reasons, totals.cpu().tolist())})
        m["completions/mean_rounds"] = self._gather([r["info"]["num_rounds"] for r in results]).mean().item()
        m["completions/mean_chars"] = self._gather([r["info"]["chars"]["steps"] for r in results]).mean().item()
        counter = getattr(self.agents["reasoner"], "num_generated", None)
        if counter is not None:
            lengths = self._gather([counter(rec) for rec in records["reasoner"]])
            m["completions/mean_length"] = lengths.mean().item()
            self.num_tokens += int(lengths.sum().item())
            m["num_tokens"] = float(self.num_tokens)
        if self.learner.env_planner:
            counts = np.zeros(len(STRATEGIES))
            for r in results:
                for s in r["info"]["strategies"]:
                    counts[s] += 1
            counts = self.acc.reduce(torch.tensor(counts, device=self.acc.device), "sum").cpu().numpy()
            for s in STRATEGIES:
                m[f"strategies/{s.name}"] = float(counts[s.index] / max(1, counts.sum()))
        for role, am in per_agent.items():
            for k, v in am.items():
                m[f"{role}/{k}"] = self.acc.reduce(torch.tensor(v, device=self.acc.device), "mean").item()
        return m

    def _log_extras(self, results: list[dict]) -> None:
        strategies = [s for r in results for s in r["info"]["strategies"]]
        all_strategies = gather_object(strategies) if self.acc.num_processes > 1 else strategies
        if not self.acc.is_main_process:
            return
        tb = self.acc.get_tracker("tensorboard", unwrap=True)
        if all_strategies:
            tb.add_histogram("planner/strategy_hist", np.array(all_strategies), self.step, bins=np.arange(10) - 0.5)
        with open(self.out / "samples.jsonl", "a") as f:
            for r in results[: self.cfg.sample_rollouts]:
                info = r["info"]
                f.write(json.dumps({"step": self.step, "problem_id": info["problem_id"], "answer": info["answer"],
                                    "extracted": info["extracted"], "correct": info["correct"],
                                    "strategies": info["strategies"], "steps": info["steps"],
                                    "rewards": r["rewards"], "components": info["components"]}) + "\n")

    # ------------------------------------------------------------------ checkpoints
    def save(self) -> Path | None:
        """Atomic checkpoint of everything needed to continue exactly (main process writes)."""
        self._check_replicas_agree()
        rng = gather_object([ckpt.capture_rng()]) if self.acc.num_processes > 1 else [ckpt.capture_rng()]
        path = None
        if self.acc.is_main_process:
            state = {"data_position": self.data_position, "num_tokens": self.num_tokens,
                     "learner": self.learner.name, "num_processes": self.acc.num_processes}
            path = ckpt.save_checkpoint(self.out / "checkpoints", self.step,
                                        {r: self.agents[r].module for r in self.learner.trained},
                                        self.optimizers, state, self.run_config, rng=rng,
                                        keep=self.cfg.keep_checkpoints)
        self.acc.wait_for_everyone()
        return path

    def _check_replicas_agree(self) -> None:
        """Internal invariant: every process holds the same weights (gradients were all-reduced)."""
        if self.acc.num_processes == 1:
            return
        sums = torch.stack([sum(p.detach().double().sum() for p in self.agents[r].module.parameters())
                            for r in self.learner.trained]).to(self.acc.device)
        every = self.acc.gather(sums[None]).view(self.acc.num_processes, -1)
        if not torch.allclose(every, every[0:1].expand_as(every), rtol=1e-6, atol=1e-6):
            raise RuntimeError(f"replicas diverged (per-process parameter sums {every.tolist()}); this is a bug.")

    def resume(self, path: str | Path) -> dict[str, Any]:
        """Load a checkpoint (dir, or a run dir = its newest) and continue from its step."""
        state = ckpt.load_checkpoint(path, {r: self.agents[r].module for r in self.learner.trained},
                                     self.optimizers, rank=self.acc.process_index)
        if state.get("num_processes", 1) != self.acc.num_processes:
            raise ValueError(f"checkpoint was written by {state['num_processes']} processes, now {self.acc.num_processes}; "
                             "resume with the same --num_processes for an exact continuation.")
        self.step, self.data_position, self.num_tokens = state["step"], state["data_position"], state["num_tokens"]
        return state


def _flat_hparams(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat_hparams(v, key + "."))
        elif isinstance(v, (int, float, str, bool)):
            out[key] = v
        else:
            out[key] = json.dumps(v, default=str)
    return out
