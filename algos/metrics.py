"""What the training loop logs: TRL-style scalars, the strategy histogram, sample rollouts, the config.

:class:`TrainLog` owns everything that goes to TensorBoard (through ``accelerate``) and to
``samples.jsonl``; the trainer hands it each step's results and per-agent update metrics.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import gather_object

from rsim_env import record
from rsim_env.answers import reason_counts
from rsim_env.strategies import STRATEGIES

from .grpo import zero_std_groups
from .protocols import CountsGenerated
from .update_schedule import UpdateSchedule

__all__ = ["TrainLog", "flat_hparams", "step_flag_counts", "STEP_FLAGS", "plan_stats", "task_of"]

STEP_FLAGS = ("echo", "vacuous", "self_repeat")
"""Per-step flags of ``info`` counted in ``steps/<flag>`` (rsim_env.echo, rsim_env.novelty): steps that copy
injected text, that say nothing new, that repeat an earlier step -- none of them earns R_follow."""


def step_flag_counts(results: list[dict]) -> dict[str, float]:
    """``steps/total`` and ``steps/<flag>`` (count of flagged steps) over ``results``' episodes."""
    out = {"steps/total": float(sum(len(r["info"]["steps"]) for r in results))}
    for flag in STEP_FLAGS:
        out[f"steps/{flag}"] = float(sum(sum(map(bool, r["info"].get(flag, []))) for r in results))
    return out


class TrainLog:
    """Metrics of one run (main process writes; every process joins the reductions)."""

    def __init__(self, acc: Accelerator, out: Path, group_size: int, run_config: dict[str, Any],
                 sample_rollouts: int) -> None:
        self.acc, self.out, self.G, self.sample_rollouts = acc, out, group_size, sample_rollouts
        self.num_tokens = 0
        if acc.is_main_process:
            acc.init_trackers("tensorboard", config=flat_hparams(run_config))
            tb = acc.get_tracker("tensorboard", unwrap=True)
            tb.add_text("config", "```\n" + json.dumps(run_config, indent=1) + "\n```", 0)

    def _gather(self, values: list[float]) -> torch.Tensor:
        return self.acc.gather(torch.tensor(values, dtype=torch.float32, device=self.acc.device)).cpu()

    def _mean(self, values: list[float]) -> float:
        return self._gather(values).mean().item()

    def step_metrics(self, plan: UpdateSchedule, roles: list[str], results: list[dict], reasoner: Any,
                     reasoner_records: list, per_agent: dict[str, dict[str, float]]) -> dict[str, float]:
        """Scalars of one optimizer step (TRL names: ``reward``, ``reward_std``, ``frac_reward_zero_std``...)."""
        m: dict[str, float] = {"stage": float(plan.stage), "lambda": plan.lam}
        for role in roles:
            R = self._gather([r["rewards"][role] for r in results])
            m[f"{role}/reward"] = R.mean().item()
            m[f"{role}/reward_std"] = R.view(-1, self.G).std(1).mean().item()
            m[f"{role}/frac_reward_zero_std"] = zero_std_groups(R, self.G).float().mean().item()
        for comp in results[0]["info"]["components"]:
            m[f"rewards/{comp}/mean"] = self._mean([r["info"]["components"][comp] for r in results])
        m["accuracy"] = self._mean([float(r["info"]["correct"]) for r in results])
        m.update(self._answer_reasons(results))
        m["completions/mean_rounds"] = self._mean([r["info"]["num_rounds"] for r in results])
        m["completions/mean_chars"] = self._mean([r["info"]["chars"]["steps"] for r in results])
        counts = step_flag_counts(results)
        totals = self.acc.reduce(torch.tensor(list(counts.values()), dtype=torch.float32, device=self.acc.device), "sum")
        m.update(zip(counts, totals.cpu().tolist()))
        if isinstance(reasoner, CountsGenerated):
            lengths = self._gather([reasoner.num_generated(rec) for rec in reasoner_records])
            m["completions/mean_length"] = lengths.mean().item()
            self.num_tokens += int(lengths.sum().item())
            m["num_tokens"] = float(self.num_tokens)
        if "planner" in roles:
            m.update(self._strategy_shares(results))
            m.update(self._plan_stats(results))
        for role, am in per_agent.items():
            for k, v in am.items():
                m[f"{role}/{k}"] = self.acc.reduce(torch.tensor(v, device=self.acc.device), "mean").item()
        return m

    def _answer_reasons(self, results: list[dict]) -> dict[str, float]:
        """``answers/reason/<reason>``: episodes per checker outcome, its own failures included."""
        counts = reason_counts(r["info"] for r in results)
        totals = self.acc.reduce(torch.tensor(list(counts.values()), dtype=torch.float32, device=self.acc.device), "sum")
        return {f"answers/reason/{k}": v for k, v in zip(counts, totals.cpu().tolist())}

    def _strategy_shares(self, results: list[dict]) -> dict[str, float]:
        counts = np.zeros(len(STRATEGIES))
        for r in results:
            for s in r["info"]["strategies"]:
                counts[s] += 1
        counts = self.acc.reduce(torch.tensor(counts, device=self.acc.device), "sum").cpu().numpy()
        return {f"strategies/{s.name}": float(counts[s.index] / max(1, counts.sum())) for s in STRATEGIES}

    def _plan_stats(self, results: list[dict]) -> dict[str, float]:
        """``plans/*`` (:func:`plan_stats`) over this step's episodes of every process."""
        pairs = [(tuple(r["info"]["strategies"]), task_of(r["info"]["problem_id"])) for r in results]
        pairs = gather_object(pairs) if self.acc.num_processes > 1 else pairs
        return {f"plans/{k}": v for k, v in plan_stats([p for p, _ in pairs], [t for _, t in pairs]).items()}

    def write(self, step: int, metrics: dict[str, float], results: list[dict]) -> None:
        """Log ``metrics``, the strategy histogram and the first sample rollouts."""
        self.acc.log(metrics, step=step)
        strategies = [s for r in results for s in r["info"]["strategies"]]
        all_strategies = gather_object(strategies) if self.acc.num_processes > 1 else strategies
        if not self.acc.is_main_process:
            return
        tb = self.acc.get_tracker("tensorboard", unwrap=True)
        if all_strategies:
            tb.add_histogram("planner/strategy_hist", np.array(all_strategies), step,
                             bins=np.arange(len(STRATEGIES) + 1) - 0.5)
        with open(self.out / "samples.jsonl", "a") as f:
            for r in results[: self.sample_rollouts]:
                f.write(record.from_outcome(r, step=step).to_json() + "\n")


def flat_hparams(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested config dict as TensorBoard hparams (dotted keys; lists as JSON)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flat_hparams(v, key + "."))
        elif isinstance(v, (int, float, str, bool)):
            out[key] = v
        else:
            out[key] = json.dumps(v, default=str)
    return out


def task_of(problem_id: str) -> str:
    """The task (family) of a problem: its id up to the first ``/`` (curriculum ids are ``task/seed/i``)."""
    return str(problem_id).split("/", 1)[0]


def _entropy_bits(counts: Counter) -> float:
    n = sum(counts.values())
    return max(0.0, -sum(c / n * math.log2(c / n) for c in counts.values() if c)) if n else 0.0  # never -0.0


def plan_stats(plans: list[tuple[int, ...]], tasks: list[str]) -> dict[str, float]:
    """How diverse the plans are, and how much they say about the task (plug-in estimates, in bits).

    Args:
        plans: one plan (strategy sequence) per episode.
        tasks: the task of each episode's problem (:func:`task_of`).

    Returns:
        ``distinct`` (number of different plans), ``entropy`` H(plan), ``mutual_info`` I(plan; task)
        = H(plan) + H(task) - H(plan, task), and ``mi_fraction`` = I / H(task) (1: the plan determines
        the task, 0: plan and task independent; 0 when there is one task). A planner that emits one plan
        for every problem has entropy 0 and mutual_info 0. The plug-in MI is biased upward on few
        episodes (it is >= 0 and > 0 by chance): compare it with a fixed number of episodes.
    """
    if len(plans) != len(tasks):
        raise ValueError(f"plan_stats got {len(plans)} plans but {len(tasks)} tasks; pass one task per plan.")
    plans = [tuple(int(s) for s in p) for p in plans]
    h_plan, h_task = _entropy_bits(Counter(plans)), _entropy_bits(Counter(tasks))
    mi = max(0.0, h_plan + h_task - _entropy_bits(Counter(zip(plans, tasks))))
    return {"distinct": float(len(set(plans))), "entropy": h_plan, "mutual_info": mi,
            "mi_fraction": mi / h_task if h_task > 0 else 0.0}
