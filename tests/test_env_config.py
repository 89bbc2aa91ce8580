"""``raw_env`` / ``env`` take an ``EnvConfig`` (keyword fields still work on top of it)."""

import pytest

import rsim_env
from rsim_env import EnvConfig, EnvGroup, Problem, RewardWeights
from rsim_env.answers import CheckConfig

P = [Problem(id="p", question="What is 2 + 2?", answer="4")]


def test_config_and_keyword_overrides():
    cfg = EnvConfig(max_steps=3, weights=RewardWeights(follow=0.5), check=CheckConfig(timeout_s=1.5))
    e = rsim_env.raw_env(P, cfg)
    assert e.cfg == cfg
    e = rsim_env.env(P, config=cfg, max_steps=2, planner=False)
    assert e.unwrapped.cfg == EnvConfig(max_steps=2, planner=False, weights=RewardWeights(follow=0.5),
                                        check=CheckConfig(timeout_s=1.5))
    assert e.unwrapped.possible_agents == ["reasoner"]


def test_group_passes_the_config_to_every_copy():
    g = EnvGroup(P, 2, config=EnvConfig(max_steps=1))
    assert all(e.unwrapped.cfg.max_steps == 1 for e in g.envs)


def test_reasoner_observation_says_whether_a_planner_plays():
    for planner in (True, False):
        e = rsim_env.env(P, planner=planner)
        e.reset(seed=0)
        if planner:
            e.step(3)
        obs = e.observe("reasoner")
        assert obs["no_planner"] == int(not planner) and e.observation_space("reasoner").contains(obs)


@pytest.mark.parametrize("kwargs,err,match", [
    ({"max_stepz": 3}, TypeError, "unknown arguments"),
    ({"config": {"max_steps": 3}}, TypeError, "EnvConfig"),
    ({"max_steps": 0}, ValueError, "max_steps"),
], ids=["typo", "dict-config", "bad-value"])
def test_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        rsim_env.raw_env(P, **kwargs)
