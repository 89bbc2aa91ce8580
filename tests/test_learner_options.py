"""The planner's learner options (docs/training.md): the last-round rule and per-term advantages, in training."""

from __future__ import annotations

import pytest
import torch

from agents.scripted import FixedPlanner
from agents.scripted_families import DEFAULT_FAMILIES, FamilyReasoner, family_problems
from algos.rollout import rollout
from algos.update import reward_terms
from rsim_env import EnvGroup, RewardWeights

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


def _results(plan, weights=None):
    probs = family_problems(DEFAULT_FAMILIES, 4, seed=0)
    out = rollout(EnvGroup(probs, 1, max_steps=3, weights=weights or RewardWeights()), FamilyReasoner(probs),
                  FixedPlanner(plan), seed=0)
    return out.trajectories


def test_reward_terms_are_the_planners_components_and_sum_to_its_reward():
    w = RewardWeights(terminal=0.5, penalty=2.0)
    res = _results([3], w)  # add problems solved ([3, 8]), mul problems not
    R = torch.tensor([r["rewards"]["planner"] for r in res])
    terms, weights = reward_terms("planner", res, w, R)
    assert weights.tolist() == [1.0, 0.5, 2.0]  # acc, terminal, penalty (rsim_env.rewards.COMPONENTS order)
    assert terms[:, 0].tolist() == [1.0, 0.0, 1.0, 0.0] and terms[:, 1].tolist() == [1.0] * 4
    assert terms[:, 2].tolist() == [-0.5] * 4
    torch.testing.assert_close(terms @ weights, R.double())


def test_reward_terms_refuse_rewards_that_are_not_their_sum_and_missing_components():
    res = _results([3])
    R = torch.tensor([r["rewards"]["planner"] for r in res])
    with pytest.raises(ValueError, match="not the weighted sum.*per_term_advantages=false"):
        reward_terms("planner", res, RewardWeights(), R + 1)
    del res[0]["info"]["components"]["terminal"]
    with pytest.raises(ValueError, match="'terminal' is missing"):
        reward_terms("planner", res, RewardWeights())
