"""Stackelberg schedule and the measurable effect of lambda on update sizes."""

import pytest
import torch

from algos.stackelberg import StackelbergConfig, plan


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


def _update_norm_ratio(lam_scales, steps=5):
    """Two identical linear 'agents' with separate Adams, same gradients; ratio of their update norms."""
    torch.manual_seed(0)
    nets = {a: torch.nn.Linear(4, 3) for a in ("planner", "reasoner")}
    nets["reasoner"].load_state_dict(nets["planner"].state_dict())
    start = {a: torch.cat([p.detach().flatten().clone() for p in n.parameters()]) for a, n in nets.items()}
    opts = {a: torch.optim.Adam(n.parameters(), lr=1e-2) for a, n in nets.items()}
    x = torch.randn(8, 4)
    for _ in range(steps):
        for a, net in nets.items():
            for g in opts[a].param_groups:
                g["lr"] = 1e-2 * lam_scales[a]
            # a constant loss weight on top must not matter (Adam is scale invariant): show it
            weight = 1000.0 if a == "reasoner" else 1.0
            opts[a].zero_grad(); (weight * net(x).pow(2).mean()).backward(); opts[a].step()
    delta = {a: (torch.cat([p.detach().flatten() for p in n.parameters()]) - start[a]).norm() for a, n in nets.items()}
    return (delta["planner"] / delta["reasoner"]).item()


def test_lambda_moves_ratio_of_update_norms():
    cfg = StackelbergConfig(stage1_steps=1)
    r1 = _update_norm_ratio(plan(cfg, 0).lr_scale)
    r2 = _update_norm_ratio(plan(cfg, 1).lr_scale)
    assert r1 == pytest.approx(0.7 / 0.3, rel=0.05)
    assert r2 == pytest.approx(0.3 / 0.7, rel=0.05)
    # without lr scaling the loss weight of 1000 would be invisible under Adam
    assert _update_norm_ratio({"planner": 1.0, "reasoner": 1.0}) == pytest.approx(1.0, rel=0.05)


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
