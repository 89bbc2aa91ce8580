"""The table in docs/supersuit.md, re-checked: which SuperSuit wrappers work on rSIM's spaces."""

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test, parallel_api_test

import rsim_env  # noqa: F401  (registers rsim/Planner-v0)
from agents.planners.gym import TextFeatures, hashed_bag_of_words
from rsim_env import rsim_v0
from tests.conftest import seeded

ss = pytest.importorskip("supersuit", reason="SuperSuit is optional (pip install supersuit --no-deps tinyscaler)")


def _features(obs, space=None, agent=None):
    return np.concatenate([hashed_bag_of_words(obs["prompt"], 16), [obs["round"]]]).astype(np.float32)


def _feature_space(space, agent=None):
    return spaces.Box(-100, 100, (17,), np.float32)


WORKS = {  # wrapper -> (kwargs, works on the parallel view too)
    "clip_reward_v0": ({}, True),
    "reward_lambda_v0": ({"change_reward_fn": lambda r: 2 * r}, True),
    "action_lambda_v1": ({"change_action_fn": lambda a, s: a, "change_space_fn": lambda s: s}, True),
    "observation_lambda_v0": ({"change_observation_fn": _features, "change_obs_space_fn": _feature_space}, True),
    "sticky_actions_v0": ({"repeat_action_probability": 0.25}, True),
    "frame_skip_v0": ({"num_frames": 2}, False),
}
FAILS = {  # wrapper -> kwargs (fails at construction or in the API test)
    "color_reduction_v0": {}, "dtype_v0": {"dtype": "float32"}, "flatten_v0": {}, "normalize_obs_v0": {},
    "reshape_v0": {"shape": (1,)}, "resize_v1": {"x_size": 2, "y_size": 2}, "frame_stack_v1": {"stack_size": 2},
    "frame_stack_v2": {"stack_size": 2}, "max_observation_v0": {"memory": 2}, "nan_noop_v0": {"no_op_action": 6},
    "nan_zeros_v0": {}, "nan_random_v0": {}, "delay_observations_v0": {"delay": 1}, "clip_actions_v0": {},
    "scale_actions_v0": {"scale": 2.0}, "pad_observations_v0": {}, "pad_action_space_v0": {},
    "agent_indicator_v0": {}, "observation_lambda_v0": {"change_observation_fn": _features},
}


def _check(e):
    (api_test if hasattr(e, "agent_iter") else parallel_api_test)(seeded(e), num_cycles=30)


@pytest.mark.parametrize("name", sorted(WORKS))
def test_documented_as_working(name):
    kwargs, parallel_too = WORKS[name]
    _check(getattr(ss, name)(rsim_v0.env(max_steps=3), **kwargs))
    if parallel_too:
        _check(getattr(ss, name)(rsim_v0.parallel_env(max_steps=3), **kwargs))


@pytest.mark.parametrize("name", sorted(FAILS))
def test_documented_as_not_working(name):
    with pytest.raises((AssertionError, AttributeError, TypeError, ValueError)):
        _check(getattr(ss, name)(rsim_v0.env(max_steps=3), **FAILS[name]))


def test_vector_wrappers_need_identical_agent_spaces():
    with pytest.raises(AssertionError, match="observation spaces not consistent"):
        ss.pettingzoo_env_to_vec_env_v1(rsim_v0.parallel_env(max_steps=3))


@pytest.mark.parametrize("name,kwargs", [("frame_stack_v1", {"stack_size": 2}), ("normalize_obs_v0", {}),
                                         ("dtype_v0", {"dtype": "float64"}), ("delay_observations_v0", {"delay": 1})],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_numeric_wrappers_work_on_the_featurised_planner_view(name, kwargs):
    e = getattr(ss, name)(TextFeatures(gymnasium.make("rsim/Planner-v0", max_steps=3)), **kwargs)
    obs, _ = e.reset(seed=0)
    e.action_space.seed(0)  # the same six actions every run
    for _ in range(6):
        assert e.observation_space.contains(obs)
        obs, _, term, trunc, _ = e.step(e.action_space.sample())
        if term or trunc:
            obs, _ = e.reset()
