"""Per-term advantages read the terms of the env's rubric (``train.grpo.per_term_advantages=true``).

A component of your own (``--set env.components=[...]``) is one more term of its agents' rewards, so the
per-term advantage normalises it like the paper's: a tiny run with one on trains.
"""

from __future__ import annotations

import textwrap

import pytest
import torch

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from algos import update as update_mod
from algos.config import resolve
from algos.update import reward_terms
from rsim_env import Component, EnvConfig, EnvGroup, Problem, RewardWeights
from algos.rollout import rollout

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py

PROBS = [Problem(id=f"t/{i}", question=f"What is {i} + 2?", answer=str(i + 2), answer_type="number", source="test")
         for i in range(4)]
LENGTH = Component("length", lambda f: len(f.final_step) / 100, ("reasoner",), weight=0.5)
FEW = Component("few_rounds", lambda f: -len(f.planned) / 4, ("planner",), needs_plans=True, weight=2.0)
LOGGED = Component("logged", lambda f: 7.0, ())


def _results(plan, cfg: EnvConfig):
    reasoner = TemplateReasoner({p.question: p.answer for p in PROBS[::2]})  # right on half the problems
    return rollout(EnvGroup(PROBS, 1, config=cfg), reasoner, FixedPlanner(plan), seed=0).trajectories


@pytest.mark.parametrize("role,names,weights", [
    ("reasoner", ["acc", "format", "follow", "length"], [1.0, 1.0, 1.0, 0.5]),
    ("planner", ["acc", "terminal", "penalty", "few_rounds"], [1.0, 1.0, 1.0, 2.0]),
], ids=["reasoner", "planner"])
def test_reward_terms_are_the_rubrics_terms_and_sum_to_the_reward(role, names, weights):
    cfg = EnvConfig(max_steps=3, components=(LENGTH, FEW, LOGGED))
    res = _results([3], cfg)
    R = torch.tensor([r["rewards"][role] for r in res])
    terms, w = reward_terms(role, res, cfg.rubric, R)
    assert w.tolist() == weights and terms.shape == (len(res), len(names))
    assert terms[:, 0].tolist() == [float(r["info"]["correct"]) for r in res] == [1.0, 0.0, 1.0, 0.0]
    assert terms[:, -1].tolist() == [r["info"]["components"][names[-1]] for r in res] and terms[:, -1].all()
    torch.testing.assert_close(terms @ w, R.double())
    with pytest.raises(ValueError, match="not the weighted sum"):  # the paper's terms alone do not add up to it
        reward_terms(role, res, RewardWeights(), R)


def test_reward_terms_follow_a_replaced_component():
    mine = Component("format", lambda f: 0.25, ("reasoner",), weight=4.0, replaces=True)
    cfg = EnvConfig(max_steps=3, components=(mine,))
    res = _results([3], cfg)
    R = torch.tensor([r["rewards"]["reasoner"] for r in res])
    terms, w = reward_terms("reasoner", res, cfg.rubric, R)
    assert w.tolist() == [1.0, 4.0, 1.0] and terms[:, 1].tolist() == [0.25] * 4


def test_reward_terms_refuse_a_role_with_no_terms():
    from rsim_env.rewards import Rubric

    with pytest.raises(ValueError, match="no reward component.*per_term_advantages=false"):
        reward_terms("planner", [], Rubric((LOGGED,)))


def _flat(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).clone()


def test_a_custom_component_with_per_term_advantages_trains(tmp_path, monkeypatch):
    """``--set env.components=[...]`` with ``train.grpo.per_term_advantages=true``: a tiny run takes its steps,
    each agent's per-term advantage has the custom term as a column, and both agents' parameters change."""
    from accelerate.utils import set_seed
    from algos.cli import build_agents, build_learner, main

    (tmp_path / "my_terms.py").write_text(textwrap.dedent('''
        from rsim_env import Component

        short = Component("short", lambda f: float(len(f.final_step) < 60), ("reasoner",), weight=0.5)
        few_rounds = Component("few_rounds", lambda f: -len(f.planned) / 4, ("planner",), needs_plans=True)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: dict[int, list[tuple[str, ...]]] = {}
    real = update_mod.per_term_advantages

    def spy(terms, group_size, weights=None, **kw):
        seen.setdefault(terms.shape[1], []).append(tuple(weights.tolist()))
        return real(terms, group_size, weights, **kw)

    monkeypatch.setattr(update_mod, "per_term_advantages", spy)
    cfg = resolve("tiny", {"train.output_dir": str(tmp_path / "run"), "train.progress": False, "train.steps": 2,
                           "train.grpo.per_term_advantages": True,
                           "env.components": '["my_terms:short", "my_terms:few_rounds"]'})
    assert cfg.train.grpo.per_term_advantages and cfg.env.components == ("my_terms:short", "my_terms:few_rounds")
    set_seed(cfg.train.seed)
    before = {r: _flat(a.module) for r, a in build_agents(cfg, build_learner(cfg), "cpu").items()}
    out = main(cfg)
    assert out["steps"] == 2 and len(out["history"]) == 2
    assert set(seen) == {4}, seen  # acc, format, follow, short / acc, terminal, penalty, few_rounds
    assert {(1.0, 1.0, 1.0, 0.5), (1.0, 1.0, 1.0, 1.0)} <= set(seen[4]), seen
    for role, module in out["params"].items():
        assert not torch.equal(_flat(module), before[role]), f"{role} parameters did not change"
    assert "rewards/short/mean" in out["history"][-1] and "rewards/few_rounds/mean" in out["history"][-1]
