"""A planner that conditions on the problem: task families, plan diversity / MI, the entropy bonus."""

from __future__ import annotations

import json
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


# ------------------------------------------------------------------------------ the benchmark, end to end

def test_benchmark_reports_diversity_and_mutual_information(tmp_path):
    from studies.contextual_sanity import Config, main

    out = tmp_path / "r.json"
    r = main(Config(model="tiny", steps=2, eval_every=1, eval_problems=8, train_problems=8, groups_per_step=2,
                    group_size=2, output_dir=str(tmp_path / "run"), out=str(out)))
    assert set(r["families"]) == {"add", "mul"} and all(f["n"] == 4 for f in r["families"].values())
    assert set(r["heldout"]) == {"distinct", "entropy", "mutual_info", "mi_fraction"}
    row = r["curve"][-1]
    assert {"plans/distinct", "plans/entropy", "plans/mutual_info", "planner/entropy", "heldout_mutual_info"} <= set(row)
    assert r["wall_seconds"] > 0 and out.is_file()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for ev in (tmp_path / "run").rglob("events.out.tfevents*"):
        acc = EventAccumulator(str(ev))
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    assert {"plans/distinct", "plans/entropy", "plans/mutual_info", "planner/entropy", "heldout/mutual_info",
            "heldout/distinct", "heldout/accuracy_add", "heldout/accuracy_mul"} <= tags, sorted(tags)


def test_benchmark_config_rejects_bad_values():
    from studies.contextual_sanity import Config

    with pytest.raises(ValueError, match="eval_problems"):
        Config(eval_problems=1)
    with pytest.raises(ValueError, match="family set"):
        Config(families="nope")
    with pytest.raises(ValueError, match="head_only=True .* lora=False"):
        Config(head_only=True)  # a head-only planner has no adapter


# ------------------------------------------------------------------------------ the fix: the planner conditions

def _tiny_run(tmp_path, **kw):
    from studies.contextual_sanity import Config, main

    return main(Config(**{"model": "tiny", "output_dir": str(tmp_path), "eval_every": 20, **kw}))


# Where a training run ends moves with the seed and with the float kernels a CPU selects (vector width, threads):
# these tests assert what every run of the committed seed sweep met with a margin, on two seeds each
# (docs/contextual_results/seed_sweep.jsonl, written by studies/seed_sweep.py; CI reruns them under scalar kernels).
SEEDS = (0, 1)


def _seed_runs(tmp_path, **kw):
    return [_tiny_run(tmp_path / f"seed{seed}", seed=seed, **kw) for seed in SEEDS]


def _summary(runs):
    return [{n: (f["accuracy"], f["plan"]) for n, f in r["families"].items()} | {"mi": r["heldout"]["mutual_info"]}
            for r in runs]


@pytest.mark.training_outcome
def test_the_lm_planner_learns_the_right_plan_for_each_family(tmp_path):
    """The contextual sanity case: tiny random-init LM planner (LoRA + head), families solved only under
    [3, 8] / [1, 8]. Every run of the sweep reached >= 95 % greedy on the held-out problems of each family in
    80-100 of the 160 updates allowed, with the plan naming the family; asserted on two seeds with >= 90 %."""
    runs = _seed_runs(tmp_path, families="two_step", lr=3e-3, entropy_coef=0.1, steps=160, groups_per_step=4,
                      eval_problems=64)
    for r in runs:
        assert all(f["accuracy"] >= 0.9 for f in r["families"].values()), _summary(runs)
        assert r["families"]["add"]["plan"] == ["validation", "termination"]
        assert r["families"]["mul"]["plan"] == ["decomposition", "termination"]
        assert r["heldout"]["mutual_info"] >= 0.8


@pytest.mark.training_outcome
def test_at_a_large_logit_step_the_lm_planner_does_not_learn_both_plans(tmp_path):
    """lr 1e-2 on the tiny model moves the logits as far per step as the study's 1e-3 on SmolLM2 (lr * |h|_1):
    in 80 updates no run of the sweep solved both families (the worse family at 0.0 in every run, where lr 3e-3
    solves both). Where the plans end -- one plan for all, or two wrong ones -- differs by seed and CPU, so it
    is not asserted. Under torch's scalar kernels (``make test-float``) on one machine the second seed did solve
    both (1.0 / 1.0, mutual information 1.0) while the first stayed at one plan, so the claim holds as "not
    reliably", not "never": asserted is that at least one of the two runs leaves a family at <= 0.5."""
    runs = _seed_runs(tmp_path, families="two_step", lr=1e-2, entropy_coef=0.1, steps=80, eval_every=80,
                      groups_per_step=4, eval_problems=64)
    assert any(min(f["accuracy"] for f in r["families"].values()) <= 0.5 for r in runs), _summary(runs)


@pytest.mark.training_outcome
@pytest.mark.parametrize("entropy_coef", [0.2, 0.0], ids=["bonus", "no-bonus"])
def test_at_a_large_logit_step_the_three_decision_plan_is_never_found(tmp_path, entropy_coef):
    """Default families at lr 1e-2: mul needs [1, 5, 8], three exact decisions (1/729 under a uniform planner);
    in 60 updates no run of the sweep found it, with the entropy bonus or without (mul 0.0 in every run).
    Whether the plans carry the family there depends on the seed, with or without the bonus, so that is not
    asserted (docs/contextual.md). Margin: mul <= 0.25."""
    runs = _seed_runs(tmp_path, families="default", lr=1e-2, entropy_coef=entropy_coef, groups_per_step=4,
                      score_flat_groups=entropy_coef > 0, steps=60, eval_every=60, eval_problems=64)
    assert all(r["families"]["mul"]["accuracy"] <= 0.25 for r in runs), _summary(runs)


def test_the_committed_sweep_meets_every_margin_the_outcome_tests_assert():
    """The margins above are read off docs/contextual_results/seed_sweep.jsonl: every run there, on every seed and
    under each float configuration, meets the bound its test asserts (and the sweep covers two or more)."""
    from pathlib import Path

    rows = [json.loads(line) for line in (Path(__file__).parents[1] / "docs/contextual_results/seed_sweep.jsonl")
            .read_text().splitlines() if line.strip()]
    by = {name: [r for r in rows if r["config"] == name] for name in
          ("learn", "collapse", "bonus", "nobonus", "learning_sanity")}
    assert all(len(rs) >= 4 and len({r["capability"] for r in rs}) >= 2 for rs in by.values()), \
        {k: len(v) for k, v in by.items()}
    assert all(min(r["accuracy"].values()) >= 0.95 and r["mutual_info"] >= 0.9 for r in by["learn"])
    assert all(min(r["accuracy"].values()) <= 0.0 for r in by["collapse"])  # the test's bound: <= 0.5
    assert all(r["accuracy"]["mul"] <= 0.0 for r in by["bonus"] + by["nobonus"])  # the test's bound: <= 0.25
    for cap in {r["capability"] for r in by["learning_sanity"]}:  # the test's bound: 2 of its seeds 0-2
        runs = {r["seed"]: r["success_after"] for r in by["learning_sanity"] if r["capability"] == cap}
        assert all(runs[s] >= 1.0 for s in (0, 1, 2)) and sum(v >= 1.0 for v in runs.values()) >= len(runs) - 1
