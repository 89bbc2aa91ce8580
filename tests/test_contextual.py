"""A planner that conditions on the problem: task families, plan diversity / MI, the entropy bonus."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from agents.scripted.policies import FixedPlanner
from agents.scripted.families import DEFAULT_FAMILIES, Family, FamilyReasoner, families, family_problems
from algos.grpo import GRPOConfig, grpo_loss
from algos.metrics import plan_stats, task_of
from algos.rollout import rollout
from rsim_env import EnvGroup
from rsim_env.render import PROTOCOLS
from rsim_env.strategies import TERMINATION, num_strategies


pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


# ------------------------------------------------------------------------------ plan diversity and MI

def test_plan_stats_constant_plan_has_no_entropy_and_no_information():
    s = plan_stats([(3, 8)] * 6, ["add", "mul"] * 3)
    assert s == {"distinct": 1.0, "entropy": 0.0, "mutual_info": 0.0, "mi_fraction": 0.0}


def test_plan_stats_plan_that_names_the_task_carries_all_of_its_entropy():
    s = plan_stats([(3, 8), (1, 5, 8)] * 4, ["add", "mul"] * 4)
    assert s["distinct"] == 2 and s["entropy"] == pytest.approx(1.0)
    assert s["mutual_info"] == pytest.approx(1.0) and s["mi_fraction"] == pytest.approx(1.0)


def test_plan_stats_diverse_but_independent_plans_carry_no_information():
    plans = [(3, 8), (1, 8), (3, 8), (1, 8)]
    s = plan_stats(plans, ["add", "add", "mul", "mul"])
    assert s["entropy"] == pytest.approx(1.0) and s["mutual_info"] == pytest.approx(0.0, abs=1e-12)


def test_plan_stats_partial_information_matches_the_formula():
    # add -> (3,8) always; mul -> (3,8) or (1,8) half each: I = H(plan) - H(plan | task) = H(3/4) - 1/2
    s = plan_stats([(3, 8), (3, 8), (3, 8), (1, 8)], ["add", "add", "mul", "mul"])
    h = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
    assert s["mutual_info"] == pytest.approx(h - 0.5)


def test_plan_stats_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match="one task per plan"):
        plan_stats([(8,)], [])


def test_task_of_reads_the_family_and_curriculum_task():
    assert task_of("add/0/3") == "add" and task_of("mul_2d1d/7/12") == "mul_2d1d" and task_of("x") == "x"


# ------------------------------------------------------------------------------ the scripted families

def _play(problems, plan, protocol="chat+lead"):
    reasoner = FamilyReasoner(problems, DEFAULT_FAMILIES)
    out = rollout(EnvGroup(problems, 1, max_steps=3, protocol=protocol), reasoner, FixedPlanner(plan[:-1]), seed=0)
    return [t["info"]["correct"] for t in out.trajectories]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=str)
def test_each_family_is_solved_only_under_its_own_plan(protocol):
    probs = family_problems(DEFAULT_FAMILIES, 8, seed=3)
    add = [p for p in probs if p.id.startswith("add/")]
    mul = [p for p in probs if p.id.startswith("mul/")]
    assert len(add) == len(mul) == 4 and all(task_of(p.id) in ("add", "mul") for p in probs)
    add_plan, mul_plan = (f.plan for f in DEFAULT_FAMILIES)
    assert all(_play(add, add_plan, protocol)) and not any(_play(add, mul_plan, protocol))
    assert all(_play(mul, mul_plan, protocol)) and not any(_play(mul, add_plan, protocol))
    assert not any(_play(mul, (1, TERMINATION), protocol))  # a prefix of the plan is not the plan


def test_family_reasoner_refuses_an_unknown_question():
    probs = family_problems(DEFAULT_FAMILIES, 2, seed=0)
    other = family_problems(DEFAULT_FAMILIES, 2, seed=1)
    with pytest.raises(ValueError, match="was not given"):
        rollout(EnvGroup(other, 1, max_steps=3), FamilyReasoner(probs), FixedPlanner([]), seed=0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(name="a/b", template="{a}{b}", op="+", plan=(8,)), "name"),
    (dict(name="a", template="{a}", op="+", plan=(8,)), "template"),
    (dict(name="a", template="{a}{b}", op="/", plan=(8,)), "op"),
    (dict(name="a", template="{a}{b}", op="+", plan=(3,)), "termination"),
    (dict(name="a", template="{a}{b}", op="+", plan=(8, 8)), "termination"),
], ids=["slash", "template", "op", "no-termination", "early-termination"])
def test_family_validates_its_fields(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Family(**kwargs)


def test_family_sets_by_name():
    assert families("default") == DEFAULT_FAMILIES and len(families("three")) == 3
    with pytest.raises(ValueError, match="two_step"):
        families("nope")


# ------------------------------------------------------------------------------ entropy: planner and loss

def _planner_records():
    from agents.hf.loading import tiny_model
    from agents.planners.llm import Planner, PlannerConfig

    backbone, tok = tiny_model("backbone", seed=1)
    planner = Planner(backbone, tok, PlannerConfig(seed=0, head_init_std=0.5))
    mask = np.ones(num_strategies(), np.int8)
    mask[[0, 4]] = 0
    planner.reset(2)
    obs = {"question": "Add 2 and 3.", "steps": (), "strategies": (), "round": 0, "action_mask": mask}
    planner.act([0, 1], [obs, obs])
    return planner, planner.records()


def test_planner_score_reports_the_entropy_of_the_masked_strategy_distribution():
    planner, records = _planner_records()
    scored = planner.score(records)
    ids = records[0].input_ids
    with torch.no_grad():
        logits = planner.strategy_logits([ids], [[len(ids) - 1]])[0, 0]
    legal = torch.tensor(records[0].action_masks[0]).bool()
    p = torch.softmax(logits[legal], -1)
    assert scored.entropy[0, 0].item() == pytest.approx(-(p * p.log()).sum().item(), abs=1e-5)
    (-scored.entropy.sum()).backward()  # masked actions (p = 0) must not give NaN gradients
    assert torch.isfinite(planner.head.weight.grad).all() and planner.head.weight.grad.abs().sum() > 0


def test_entropy_bonus_lowers_the_loss_by_coef_times_mean_entropy_and_raises_entropy():
    logits = torch.tensor([[2.0, 0.0, -1.0]], requires_grad=True)
    logp_all = torch.log_softmax(logits, -1)
    logp = logp_all[:, :1]
    entropy = -(logp_all.exp() * logp_all).sum(-1, keepdim=True)
    mask, adv = torch.ones(1, 1), torch.zeros(1)
    plain, _ = grpo_loss(logp, None, adv, mask, GRPOConfig(group_size=2), entropy=entropy)
    bonus, m = grpo_loss(logp, None, adv, mask, GRPOConfig(group_size=2, entropy_coef=0.1), entropy=entropy)
    assert bonus.item() == pytest.approx(plain.item() - 0.1 * entropy.item())
    assert m["entropy"] == pytest.approx(entropy.item())
    bonus.backward()
    step = logits - 0.1 * logits.grad  # one gradient step on the bonus alone (advantage 0)
    after = -(torch.softmax(step, -1) * torch.log_softmax(step, -1)).sum()
    assert after.item() > entropy.item()


def test_entropy_coef_must_be_non_negative():
    with pytest.raises(ValueError, match="entropy_coef"):
        GRPOConfig(entropy_coef=-0.1)
