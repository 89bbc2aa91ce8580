"""An env validates planner actions against the strategy table it was built with (its ``Discrete`` space).

A strategy registered after an env was built is outside that env's planner space: the env refuses it,
naming the action, its space and the fix (build a new env); an env built afterwards accepts it.
"""

from __future__ import annotations

import numpy as np
import pytest

import rsim_env
from rsim_env import EnvGroup, Episode, EnvConfig, Problem, num_strategies
from rsim_env.strategies import Strategy, extra_strategy

PROB = Problem(id="t/1", question="What is 6 * 7?", answer="42", answer_type="number", source="test")


def analogy() -> Strategy:
    return Strategy(index=num_strategies(), name="analogy", prompt="Relate it to a problem you know.",
                    instruction="Relate this to a problem you already know.", lead="This is like",
                    example="This is like 6 * 5 = 30 with one more 6.", patterns=(r"\blike\b",))


@pytest.mark.parametrize("action", [9, np.int64(9), np.int32(9)], ids=["int", "int64", "int32"])
def test_a_strategy_registered_after_the_env_was_built_is_refused_by_that_env(action):
    old = rsim_env.env(problems=[PROB])
    old.reset(seed=0)
    assert old.action_space("planner").n == 9
    with extra_strategy(analogy()):  # removed again when the block ends: no global state leaks
        assert num_strategies() == 10
        with pytest.raises(ValueError, match=r"planner action 9 .*Discrete\(9\).*registered after this env was built"
                                             r".*build a new env") as err:
            old.step(action)
        assert old.unwrapped.episode.pending is None and old.agent_selection == "planner"  # nothing moved
        assert old.observe("planner")["action_mask"].shape == (9,)
        old.step(3)  # its own strategies still play
        old.step("Verify: 6 * 7 = 42.")
        new = rsim_env.env(problems=[PROB])
        new.reset(seed=0)
        assert new.action_space("planner").n == 10 and new.observe("planner")["action_mask"].shape == (10,)
        new.step(action)
        assert new.unwrapped.episode.pending == 9
        new.step("This is like 6 * 5 = 30 with one more 6.")
        assert new.unwrapped.episode.strategies == [9]
    assert num_strategies() == 9
    assert "registered after" in str(err.value)


def test_a_group_built_before_the_registration_refuses_it_too():
    group = EnvGroup([PROB], 2)
    group.reset(seed=0)
    with extra_strategy(analogy()):
        with pytest.raises(ValueError, match=r"invalid; expected an int in 0\.\.8"):
            group.step([9, 9])
        fresh = EnvGroup([PROB], 2)
        fresh.reset(seed=0)
        fresh.step([9, 9])
        assert fresh.observe()[0] == "reasoner"
    assert num_strategies() == 9


def test_an_env_built_with_a_row_that_was_removed_again_refuses_that_row():
    with extra_strategy(analogy()):
        e = rsim_env.env(problems=[PROB])
    e.reset(seed=0)
    with pytest.raises(ValueError, match="removed from the table after this env was built.*build a new env"):
        e.step(9)


def test_episode_validates_against_its_own_count():
    ep = Episode(PROB, EnvConfig())
    assert ep.num_strategies == 9 and ep.plan_mask().shape == (9,)
    with extra_strategy(analogy()):
        with pytest.raises(ValueError, match=r"Discrete\(9\)"):
            ep.plan(9)
        assert Episode(PROB, EnvConfig()).num_strategies == 10
    with pytest.raises(ValueError, match="num_strategies"):
        Episode(PROB, EnvConfig(), num_strategies=3)
