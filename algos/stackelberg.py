"""Stackelberg schedule: who updates at each step, and with what weight.

The paper's objective is ``lambda * J_planner + (1 - lambda) * J_reasoner`` with lambda = 0.7 in
stage 1 (leader emphasis) and 0.3 in stage 2 (follower emphasis).

Why lambda scales learning rates, not losses: the two agents have separate parameters, and Adam
normalises each parameter's step by its own gradient scale, so multiplying one agent's loss by a
constant changes (almost) nothing. Scaling each agent's learning rate by its weight is what SGD
would do with the weighted objective, and it keeps that meaning under Adam: the step sizes of the
two agents move with lambda (``tests/test_stackelberg.py`` measures it).

Schedules:

* ``two_stage``: both agents update every step, weights from the current stage.
* ``alternating``: a cycle of ``1 + follower_updates`` steps; the leader updates on the first,
  the follower on the rest (k follower updates per leader update), weights from the stage.
* ``joint``: both agents every step with fixed weight ``lambda_stage1`` (no stage switch).
"""

from __future__ import annotations

from dataclasses import dataclass

from rsim_env.validation import check_finite

from .learner_base import SharedObjective
from .update_schedule import UpdateSchedule

__all__ = ["SCHEDULES", "StackelbergConfig", "UpdateSchedule", "plan", "StackelbergGRPO"]

SCHEDULES = ("two_stage", "alternating", "joint")


@dataclass(frozen=True)
class StackelbergConfig:
    """Leader-follower schedule (defaults: the paper)."""

    schedule: str = "two_stage"
    """One of "two_stage", "alternating", "joint"."""
    lambda_stage1: float = 0.7
    """Planner weight lambda in stage 1 (reasoner gets 1 - lambda)."""
    lambda_stage2: float = 0.3
    """Planner weight lambda in stage 2."""
    stage1_steps: int = 100
    """Optimizer steps spent in stage 1 before switching to stage 2."""
    follower_updates: int = 1
    """alternating only: reasoner updates per planner update (k)."""

    def __post_init__(self) -> None:
        check_finite(self)
        if self.schedule not in SCHEDULES:
            raise ValueError(f"StackelbergConfig.schedule={self.schedule!r} is invalid: choose one of {SCHEDULES}.")
        for f in ("lambda_stage1", "lambda_stage2"):
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"StackelbergConfig.{f}={v!r} is invalid: lambda is a weight in [0, 1] (paper: 0.7 / 0.3).")
        if not isinstance(self.stage1_steps, int) or self.stage1_steps < 0:
            raise ValueError(f"StackelbergConfig.stage1_steps={self.stage1_steps!r} is invalid: use an int >= 0.")
        if not isinstance(self.follower_updates, int) or self.follower_updates < 1:
            raise ValueError(
                f"StackelbergConfig.follower_updates={self.follower_updates!r} is invalid: use an int >= 1 "
                "(reasoner updates per planner update)."
            )


def plan(cfg: StackelbergConfig, step: int) -> UpdateSchedule:
    """The :class:`UpdateSchedule` for 0-based optimizer ``step`` (a pure function of the step)."""
    stage = 1 if cfg.schedule == "joint" or step < cfg.stage1_steps else 2
    lam = float(cfg.lambda_stage1 if stage == 1 else cfg.lambda_stage2)
    if cfg.schedule == "alternating":
        leader_turn = step % (1 + cfg.follower_updates) == 0
        update = {"planner": leader_turn, "reasoner": not leader_turn}
    else:
        update = {"planner": True, "reasoner": True}
    return UpdateSchedule(stage=stage, lam=lam, update=update, lr_scale={"planner": lam, "reasoner": 1.0 - lam})


@dataclass(frozen=True)
class StackelbergGRPO(SharedObjective):
    """Stackelberg GRPO: the planner leads, the reasoner follows; both update with lambda-scaled lrs."""

    schedule: StackelbergConfig = StackelbergConfig()
    """When each agent updates and with what weight."""
    name: str = "stackelberg"
    env_planner: bool = True
    trained: tuple[str, ...] = ("planner", "reasoner")

    def plan(self, step: int) -> UpdateSchedule:
        return plan(self.schedule, step)
