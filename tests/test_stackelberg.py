"""Stackelberg schedule and the measurable effect of lambda on update sizes."""

from dataclasses import dataclass

import pytest
import torch

from algos.grpo import grpo_loss
from algos.stackelberg import StackelbergConfig, StackelbergGRPO, plan


def test_two_stage_switches_lambda():
    cfg = StackelbergConfig(stage1_steps=3)
    assert [plan(cfg, s).stage for s in range(5)] == [1, 1, 1, 2, 2]
    assert plan(cfg, 0).lam == 0.7 and plan(cfg, 3).lam == 0.3
    assert plan(cfg, 0).lr_scale == {"planner": 0.7, "reasoner": pytest.approx(0.3)}
    assert plan(cfg, 4).update == {"planner": True, "reasoner": True}


def test_alternating_k_follower_updates_per_leader_update():
    cfg = StackelbergConfig(schedule="alternating", follower_updates=2, stage1_steps=100)
    who = [("P" if plan(cfg, s).update["planner"] else "") + ("R" if plan(cfg, s).update["reasoner"] else "")
           for s in range(6)]
    assert who == ["P", "R", "R", "P", "R", "R"]


def test_joint_never_switches():
    cfg = StackelbergConfig(schedule="joint", stage1_steps=1)
    assert {plan(cfg, s).lam for s in range(10)} == {0.7}


@dataclass(frozen=True)
class LossTimes1000(StackelbergGRPO):
    """A learner supplying its own loss (the Trainer must call it): GRPO's, times 1000."""

    def loss(self, *args):
        loss, metrics = grpo_loss(*args)
        return 1000.0 * loss, metrics


@dataclass(frozen=True)
class ZeroAdvantage(StackelbergGRPO):
    """A learner supplying its own advantage estimator: all zero, so nothing may move."""

    def advantages(self, rewards, group_size, cfg):
        return torch.zeros_like(rewards)


def _first_step(tmp_path, lam, learner_cls=StackelbergGRPO):
    """Metrics of the trainer's first optimizer step on the toy agents (same seed -> same rollout and gradients)."""
    from accelerate.utils import set_seed

    from algos.cli import build_agents, build_problems
    from algos.config import resolve
    from algos.trainer import Trainer, make_accelerator

    cfg = resolve("tiny", {"train.output_dir": str(tmp_path), "train.progress": False, "train.log_update_norm": True,
                           "train.skip_zero_std_groups": False, "schedule.lambda_stage1": lam})
    acc = make_accelerator(cfg.train)
    set_seed(cfg.train.seed)
    learner = learner_cls(cfg.schedule)
    problems = build_problems(cfg)
    trainer = Trainer(cfg.train, learner, build_agents(cfg, learner, acc.device, problems), problems, acc, env=cfg.env)
    return trainer.train_step()


def test_trainer_scales_learning_rates_and_update_sizes_by_lambda(tmp_path):
    m7, m5 = _first_step(tmp_path / "a", 0.7), _first_step(tmp_path / "b", 0.5)
    assert m7["planner/learning_rate"] / m7["reasoner/learning_rate"] == pytest.approx(0.7 / 0.3)
    assert m5["planner/learning_rate"] / m5["reasoner/learning_rate"] == pytest.approx(1.0)
    # identical rollouts and gradients; Adam's step is proportional to the learning rate the trainer set
    assert m7["planner/update_norm"] > 0 and m7["reasoner/update_norm"] > 0
    assert m7["planner/update_norm"] / m5["planner/update_norm"] == pytest.approx(0.7 / 0.5, rel=1e-3)
    assert m7["reasoner/update_norm"] / m5["reasoner/update_norm"] == pytest.approx(0.3 / 0.5, rel=1e-3)


def test_a_loss_weight_would_not_do_it_under_adam(tmp_path):
    """Why lambda scales learning rates: a learner's loss x1000 leaves Adam's update (nearly) unchanged."""
    plain, heavy = _first_step(tmp_path / "a", 0.7), _first_step(tmp_path / "b", 0.7, LossTimes1000)
    assert heavy["planner/loss"] == pytest.approx(1000 * plain["planner/loss"], rel=1e-4)  # the hook was used
    for role in ("planner", "reasoner"):
        assert heavy[f"{role}/update_norm"] == pytest.approx(plain[f"{role}/update_norm"], rel=1e-2)


def test_learner_advantage_estimator_is_used(tmp_path):
    m = _first_step(tmp_path, 0.7, ZeroAdvantage)
    assert m["planner/update_norm"] == 0.0 and m["reasoner/update_norm"] == 0.0


@pytest.mark.parametrize(
    "kwargs,field",
    [({"schedule": "nash"}, "schedule"), ({"lambda_stage1": 1.5}, "lambda_stage1"),
     ({"lambda_stage2": -0.1}, "lambda_stage2"), ({"stage1_steps": -1}, "stage1_steps"),
     ({"follower_updates": 0}, "follower_updates")],
    ids=lambda v: str(v),
)
def test_config_errors(kwargs, field):
    with pytest.raises(ValueError, match=f"StackelbergConfig.{field}="):
        StackelbergConfig(**kwargs)
