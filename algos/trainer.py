"""The training loop shared by every learner, on ``accelerate`` (1 CPU, 1 GPU or many, same code).

One optimizer step::

    problems for this step  ->  rollout G copies each (EnvGroup, no grad)
    -> per-agent rewards -> group advantages (algos/grpo.py)
    -> for each agent the learner updates now (its UpdateSchedule): recompute log-probs with current
       weights (agent.score), GRPO loss, backward, all-reduce grads, clip, step with lr * scale
       (that update is :mod:`algos.update`; its UpdateContext protocol names what it reads of :class:`Trainer`)
    -> log (TensorBoard via accelerate, TRL-style names), sample rollouts to JSONL, checkpoint
       (:mod:`algos.metrics`, :mod:`algos.checkpoint`)

Distribution: each GRPO group stays on one process (its G copies are rolled out and normalised
there), so ``groups_per_step`` must divide by the number of processes. Gradients are averaged
with one all-reduce per agent instead of wrapping models in DDP, because agents run their modules
through their own ``score`` method (DDP only syncs through its own ``forward``).

Groups whose rewards are all equal have zero advantage; unless a KL term needs them they are not
scored at all (a large saving early in training when most groups are all-wrong).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

from agents.base import check_trainable
from agents.runs import check_base
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.problem import Problem

from . import checkpoint as ckpt
from . import threads
from .distributed import check_replicas_agree, make_accelerator
from .learner_base import check_learner
from .metrics import TrainLog
from .rollout import rollout as play
from .step_guard import StepGuard
from .train_config import MIXED_PRECISION, OptimConfig, TrainConfig
from .update import PolicyUpdate, truncated_is_weights

__all__ = ["MIXED_PRECISION", "OptimConfig", "TrainConfig", "Trainer", "make_accelerator", "to_dict",
           "truncated_is_weights"]


def to_dict(cfg: Any) -> Any:
    """A (nested) config dataclass as plain JSON-able data."""
    return asdict(cfg) if is_dataclass(cfg) else cfg


class Trainer(PolicyUpdate):
    """Runs a learner (who updates, when, with what weight) over the shared GRPO loop.

    Args:
        cfg: loop settings.
        learner: an :class:`algos.learners.Learner` (``name``, ``env_planner``, ``trained``,
            ``plan(step)``, ``advantages`` and ``loss``; :class:`algos.learners.SharedObjective` gives the last two).
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
        self.env_options: dict[str, Any] = {}
        """Extra arguments of every rollout's env (e.g. ``grader=GradeCache()`` on a plan tree, agents.replay.plan_tree);
        set them before the first step (the envs are built once and reused)."""
        self._groups: dict[int, EnvGroup] = {}
        self.roles = ["planner", "reasoner"] if learner.env_planner else ["reasoner"]
        self._check(agents)
        self.G = cfg.grpo.group_size
        self.optim_cfg = {"planner": cfg.planner_optim, "reasoner": cfg.reasoner_optim}
        self.optimizers = {
            r: torch.optim.AdamW([p for p in agents[r].module.parameters() if p.requires_grad],
                                 lr=self.optim_cfg[r].lr, weight_decay=self.optim_cfg[r].weight_decay)
            for r in learner.trained
        }
        # dr_grpo's constant normaliser: tokens per sequence for the reasoner, rounds for the planner
        # the entropy bonus is the planner's (docs/contextual.md): a token-entropy bonus is not what it is for
        self.loss_cfg = {"reasoner": dataclasses.replace(cfg.grpo, entropy_coef=0.0),
                         "planner": dataclasses.replace(cfg.grpo, max_length=self.env_cfg.max_steps)}
        self.ref_agents = self._frozen_references() if cfg.grpo.kl_coef > 0 else {}
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

    def _frozen_references(self) -> dict[str, Any]:
        """A frozen copy of each trained agent for the KL term, unless the agent gives its reference itself
        (``shares_reference``: the shared base with the adapter off, or the initial head; ``agent.reference()``)."""
        refs = {}
        for r in self.learner.trained:
            if not self.agents[r].shares_reference:  # agents.base.Trainable, checked in __init__
                refs[r] = copy.deepcopy(self.agents[r])
                refs[r].module.requires_grad_(False)
        return refs

    def _check(self, agents: dict[str, Any]) -> None:
        """The learner is a Learner; each process keeps whole GRPO groups; the learner's roles have agents, its
        trained ones are Trainable (each check raises naming what is missing)."""
        check_learner(self.learner, type(self.learner).__name__)
        world = self.acc.num_processes
        if self.cfg.groups_per_step % world:
            raise ValueError(
                f"TrainConfig.groups_per_step={self.cfg.groups_per_step} does not divide by the {world} processes; "
                f"each GRPO group stays on one process, so use a multiple of {world}."
            )
        for r in self.roles:
            if r not in agents:
                raise ValueError(f"learner {self.learner.name!r} needs a {r} agent; agents given: {sorted(agents)}.")
        for r in self.learner.trained:
            check_trainable(agents[r], r)
        if not self.problems:
            raise ValueError("Trainer needs at least one training problem.")

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
        group = self._groups.get(len(problems))
        if group is None:  # built once per batch size: building G * groups envs (their spaces) costs ms each
            group = self._groups[len(problems)] = EnvGroup(list(problems), self.G, config=self.env_cfg,
                                                           **self.env_options)
        else:
            group.reset(problems=list(problems))  # every copy starts a new episode; rollout() reseeds them
        with torch.no_grad(), self.acc.autocast():
            out = play(group, self.agents["reasoner"], self.agents.get("planner"), seed=seed)
        results = [{k: t[k] for k in ("copy_id", "problem_index", "rewards", "info")} for t in out.trajectories]
        return results, {r: [t[r] for t in out.trajectories] for r in self.roles}

    def base_identity(self) -> dict[str, Any]:
        """Spec + content hash of the frozen base under each trained LoRA agent (saved; checked on resume)."""
        return {r: self.agents[r].lora.base.identity() for r in self.learner.trained
                if self.agents[r].lora is not None}

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
                threads.announce()  # once the first step has run: a run that fails at once still fails in one line
                bar.update(1)
                bar.set_postfix({k: f"{m[k]:.3f}" for k in ("planner/reward", "reasoner/reward", "accuracy") if k in m})
                if (self.cfg.save_every and self.step % self.cfg.save_every == 0) or self.step == self.cfg.steps:
                    path = self.save()
            replay = self.replay_stats()  # a collective: before end_training drops the process group
        finally:  # flush the logs even when the run stops on an error
            bar.close()
            self.acc.end_training()
        return {"steps": self.step, "checkpoint": str(path) if path else None, "output_dir": str(self.out),
                "replay": replay, "history": self.history}

    def replay_stats(self) -> dict[str, int] | None:
        """The replayed reasoner's counts this run (:mod:`agents.replay.reasoner`: ``hits``, ``misses``, ``catchup_steps``,
        ``catchup_mismatch``, ``sessions``) summed over processes; None when the reasoner is not replayed."""
        from agents.replay.reasoner import ReplayReasoner

        reasoner = self.agents["reasoner"]
        if not isinstance(reasoner, ReplayReasoner):
            return None
        per = gather_object([dict(reasoner.stats)]) if self.acc.num_processes > 1 else [dict(reasoner.stats)]
        return {k: int(sum(s[k] for s in per)) for k in per[0]}

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
