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

import contextlib
import copy
import dataclasses
import math
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

from agents.runs import check_base
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.problems import Problem

from . import checkpoint as ckpt
from .distributed import check_replicas_agree, make_accelerator, process_weight, sync_grads
from .grpo import AGGREGATIONS, group_advantages, grpo_loss, zero_std_groups
from .step_plan import StepPlan
from .metrics import TrainLog
from .policy import check_trainable
from .rollout import rollout as play
from .step_guard import StepGuard
from .train_config import MIXED_PRECISION, OptimConfig, TrainConfig

__all__ = ["MIXED_PRECISION", "OptimConfig", "TrainConfig", "Trainer", "make_accelerator", "to_dict"]

def to_dict(cfg: Any) -> Any:
    """A (nested) config dataclass as plain JSON-able data."""
    return asdict(cfg) if is_dataclass(cfg) else cfg


def truncated_is_weights(old: torch.Tensor, records: Sequence[Any], mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``min(exp(old - sampled), cap)`` per chosen position (1 elsewhere); ``sampled`` = the records' logprobs."""
    rows = [list(getattr(r, "logprobs", None) or []) for r in records]
    if any(len(x) == 0 for x in rows):
        raise ValueError("GRPOConfig.tis_cap > 0 needs the sampling log-probs in every record (records.logprobs); "
                         "this agent does not record them, so set train.grpo.tis_cap=0.")
    sampled = torch.zeros_like(old)
    for i, x in enumerate(rows):
        sampled[i, : len(x)] = torch.as_tensor(x[: old.shape[1]], dtype=old.dtype)
    w = torch.exp(old - sampled).clamp(max=cap)
    return torch.where(mask.bool(), w, torch.ones_like(w))


def _choices(record: Any) -> int:
    """Positions an agent chose in one record (what ``Scored.mask`` will count): decisions or generated tokens."""
    if hasattr(record, "actions"):
        return len(record.actions)
    if hasattr(record, "gen_mask"):
        return int(sum(record.gen_mask[1:]))  # position 0 has no prefix and is never scored
    raise ValueError(f"train.score_chunk > 0 needs records with 'actions' or 'gen_mask', got {type(record).__name__}; "
                     "set train.score_chunk=0.")


class Trainer:
    """Runs a learner (who updates, when, with what weight) over the shared GRPO loop.

    Args:
        cfg: loop settings.
        learner: an :class:`algos.learners.Learner` (``name``, ``env_planner``, ``trained``,
            ``plan(step)``, optionally ``advantages`` and ``loss``).
        agents: ``{"planner": ..., "reasoner": ...}`` (the planner is omitted when the learner runs
            without one); trained roles must implement :class:`agents.base.Trainable`.
        problems: training problems (any sequence of :class:`Problem`).
        accelerator: from :func:`make_accelerator` (build the agents on ``accelerator.device``).
        run_config: the resolved config of the whole run, logged and saved in every checkpoint.
        env: the environment's config (``planner`` is set from the learner).
    """

    def __init__(self, cfg: TrainConfig, learner: Any, agents: dict[str, Any], problems: Sequence[Problem],
                 accelerator: Accelerator, run_config: dict[str, Any] | None = None,
                 env: EnvConfig | None = None) -> None:
        self.cfg, self.learner, self.agents, self.acc = cfg, learner, agents, accelerator
        self.problems = list(problems)
        self.env_cfg = dataclasses.replace(env or EnvConfig(), planner=learner.env_planner)
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
                         "planner": dataclasses.replace(cfg.grpo, max_length=self.env_cfg.max_steps)}
        self.ref_agents = {}
        if cfg.grpo.kl_coef > 0:
            for r in learner.trained:
                if getattr(agents[r], "lora", None) is not None:
                    continue  # the reference is the shared base with the adapter off (agent.reference())
                self.ref_agents[r] = copy.deepcopy(agents[r])
                self.ref_agents[r].module.requires_grad_(False)
        self.run_config = run_config if run_config is not None else {
            "train": to_dict(cfg), "env": to_dict(self.env_cfg), "learner": learner.name}
        self.step = 0
        self.data_position = 0
        self.history: list[dict[str, float]] = []
        self.out = Path(cfg.output_dir)
        self.guard = StepGuard(cfg.max_bad_steps, accelerator)  # drops non-finite updates, stops a diverged run
        self.last_checkpoint: Path | None = None
        # distinct sampling streams per process, identical model init (agents were built before)
        torch.manual_seed(cfg.seed * 1000 + 17 + accelerator.process_index)
        np.random.seed(cfg.seed * 1000 + 17 + accelerator.process_index)
        if accelerator.is_main_process:
            ckpt.remove_debris(self.out / "checkpoints")  # temp dirs of a save killed in an earlier run
        self.log = TrainLog(accelerator, self.out, self.G, self.run_config, cfg.sample_rollouts)

    @property
    def num_tokens(self) -> int:
        """Reasoner tokens generated so far (all processes)."""
        return self.log.num_tokens

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
        group = EnvGroup(list(problems), self.G, config=self.env_cfg)
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

    def _advantages(self, R: torch.Tensor) -> torch.Tensor:
        g = self.cfg.grpo
        custom = getattr(self.learner, "advantages", None)
        return custom(R, self.G, g) if custom else group_advantages(R, self.G, scale=g.scale_rewards, eps=g.adv_eps)

    def update(self, role: str, plan: StepPlan, results: list[dict], records: list[Any]) -> dict[str, float]:
        """One optimizer step (``num_iterations`` passes) for ``role``; returns its metrics."""
        R = torch.tensor([res["rewards"][role] for res in results], dtype=torch.float32)
        g = self.cfg.grpo
        adv = self._advantages(R)
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
        before = [p.detach().clone() for p in params] if self.cfg.log_update_norm else None
        ref_logp = None
        if g.kl_coef > 0:
            with torch.no_grad(), self.acc.autocast(), self._reference(role) as ref:
                ref_logp = ref.score(recs).logp.float()
        loss_fn = getattr(self.learner, "loss", None) or grpo_loss
        chunks, shares, total = self._chunks(recs, g.loss_type)
        olds: list = [None] * len(chunks)
        advs: list = [None] * len(chunks)
        sums: dict[str, float] = {}
        tokens = 0.0
        scale = None if total is None else process_weight(self.acc, total, weight)
        dropped = 0
        for _ in range(g.num_iterations):
            opt.zero_grad(set_to_none=False)
            loss_sum, tokens = 0.0, 0.0
            for i, (idx, share) in enumerate(zip(chunks, shares)):
                c_recs, c_a = [recs[j] for j in idx], a[idx]
                c_ref = None if ref_logp is None else ref_logp[idx]
                with self.acc.autocast():
                    scored = agent.score(c_recs)
                logp = scored.logp.float()
                if c_ref is not None:
                    c_ref = c_ref[:, : logp.shape[1]]
                if olds[i] is None:  # first pass: on-policy log-probs, kept for later passes
                    olds[i], advs[i] = logp.detach(), c_a
                    if g.tis_cap > 0:  # rollouts came from a lower-precision sampling copy: reweight per token
                        advs[i] = c_a.reshape(-1, 1) * truncated_is_weights(olds[i], c_recs, scored.mask, g.tis_cap)
                loss, m = loss_fn(logp, olds[i], advs[i], scored.mask, self.loss_cfg[role], c_ref, scored.entropy)
                if scale is None:  # one chunk: the normaliser count comes from its mask
                    scale = process_weight(self.acc, AGGREGATIONS[g.loss_type].count(scored.mask, len(idx)), weight)
                (loss * share * scale).backward()  # chunk losses weighted to sum to the whole batch's loss
                loss_sum += loss.item() * share
                tokens += float(scored.mask.sum().item())
                for k, v in m.items():
                    sums[k] = sums.get(k, 0.0) + v * share / g.num_iterations
            sync_grads(self.acc, params)
            max_norm = self.optim_cfg[role].max_grad_norm
            gn = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else float("inf"))
            if self.guard.finite(role, loss_sum, gn):
                opt.step()
            else:  # NaN/inf would poison the weights and Adam's moments: drop this update
                opt.zero_grad(set_to_none=False)
                dropped += 1
            for k, v in dict(loss=loss_sum, grad_norm=gn.item()).items():
                sums[k] = sums.get(k, 0.0) + v / g.num_iterations
        sums.update(learning_rate=lr, lr_scale=plan.lr_scale[role], tokens=tokens * weight, skipped=0.0,
                    nonfinite_skipped=float(dropped))
        if before is not None:
            sums["update_norm"] = math.sqrt(sum(float((p.detach() - b).pow(2).sum()) for p, b in zip(params, before)))
        return sums

    def _chunks(self, recs: list[Any], loss_type: str) -> tuple[list[list[int]], list[float], float | None]:
        """Row chunks scored one forward/backward at a time (``score_chunk``), each chunk's share of the
        batch loss, and the batch's normaliser count (None for one chunk: read from its mask)."""
        n, size = len(recs), self.cfg.score_chunk or len(recs)
        chunks = [list(range(i, min(n, i + size))) for i in range(0, n, size)]
        if len(chunks) == 1:
            return chunks, [1.0], None
        count = AGGREGATIONS[loss_type].count  # reads only the number of rows or of chosen positions
        units = [count(torch.ones(1, sum(_choices(recs[j]) for j in idx)), len(idx)) for idx in chunks]
        total = sum(units)
        return chunks, [u / total if total else 0.0 for u in units], total

    def _reference(self, role: str) -> Any:
        """Context yielding the KL reference of ``role``: its frozen copy, or a LoRA agent in reference mode."""
        if role in self.ref_agents:
            return contextlib.nullcontext(self.ref_agents[role])
        return self.agents[role].reference()

    def base_identity(self) -> dict[str, Any]:
        """Spec + content hash of the frozen base under each trained LoRA agent (saved; checked on resume)."""
        return {r: self.agents[r].lora.base.identity() for r in self.learner.trained
                if getattr(self.agents[r], "lora", None) is not None}

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
        metrics = self.log.step_metrics(plan, self.roles, results, self.agents["reasoner"], records["reasoner"],
                                        per_agent)
        metrics.update(step_time=time.perf_counter() - t0, rollout_time=t_roll)
        self.data_position += self.cfg.groups_per_step
        self.step += 1
        if self.step % self.cfg.log_every == 0 or self.step == self.cfg.steps:
            self.log.write(self.step, metrics, results)
        self.history.append(metrics)
        self.guard.end_step(self.step, self.last_checkpoint)  # raises after max_bad_steps bad steps in a row
        return metrics

    def train(self) -> dict[str, Any]:
        """Run until ``cfg.steps``; checkpoint on schedule and at the end. Returns a summary."""
        from tqdm.auto import tqdm

        bar = tqdm(total=self.cfg.steps, initial=self.step, desc=self.learner.name,
                   disable=not (self.cfg.progress and self.acc.is_main_process))
        path = None
        try:
            while self.step < self.cfg.steps:
                m = self.train_step()
                bar.update(1)
                bar.set_postfix({k: f"{m[k]:.3f}" for k in ("planner/reward", "reasoner/reward", "accuracy") if k in m})
                if (self.cfg.save_every and self.step % self.cfg.save_every == 0) or self.step == self.cfg.steps:
                    path = self.save()
        finally:  # flush the logs even when the run stops on an error
            bar.close()
            self.acc.end_training()
        return {"steps": self.step, "checkpoint": str(path) if path else None, "output_dir": str(self.out),
                "history": self.history}

    # ------------------------------------------------------------------ checkpoints
    def save(self) -> Path | None:
        """Atomic checkpoint of everything needed to continue exactly (main process writes)."""
        check_replicas_agree(self.acc, [self.agents[r].module for r in self.learner.trained])
        # free disk space is checked once, inside ckpt.save_checkpoint, before anything is written
        rng = gather_object([ckpt.capture_rng()]) if self.acc.num_processes > 1 else [ckpt.capture_rng()]
        path = None
        if self.acc.is_main_process:
            state = {"data_position": self.data_position, "num_tokens": self.num_tokens,
                     "learner": self.learner.name, "num_processes": self.acc.num_processes,
                     "base": self.base_identity(), **self.guard.state()}
            path = ckpt.save_checkpoint(self.out / "checkpoints", self.step,
                                        {r: self.agents[r].module for r in self.learner.trained},
                                        self.optimizers, state, self.run_config, rng=rng,
                                        keep=self.cfg.keep_checkpoints)
        self.acc.wait_for_everyone()
        self.last_checkpoint = path or self.last_checkpoint
        return path

    def resume(self, path: str | Path) -> dict[str, Any]:
        """Load a checkpoint (dir, or a run dir = its newest) and continue from its step.

        A LoRA checkpoint holds only adapters (+ head); it is refused unless the base loaded now has
        the content hash it was trained on.
        """
        state = ckpt.load_checkpoint(path, {r: self.agents[r].module for r in self.learner.trained},
                                     self.optimizers, rank=self.acc.process_index,
                                     state_schema={"data_position": int, "num_tokens": int})
        for role, ident in self.base_identity().items():  # on the checkpoint actually loaded (after any fallback)
            check_base(state, role, ident["sha256"], str(state["path"]))
        if state.get("num_processes", 1) != self.acc.num_processes:
            raise ValueError(f"checkpoint was written by {state['num_processes']} processes, now {self.acc.num_processes}; "
                             "resume with the same --num_processes for an exact continuation.")
        self.step, self.data_position, self.log.num_tokens = state["step"], state["data_position"], state["num_tokens"]
        self.guard.load(state)
        self.last_checkpoint = Path(state["path"])
        self.acc.wait_for_everyone()  # every process has read the checkpoints before any is renamed
        if self.acc.is_main_process:
            ckpt.quarantine(state["skipped"])  # a newer corrupt one must not outlive (by pruning) the good ones
        return state
