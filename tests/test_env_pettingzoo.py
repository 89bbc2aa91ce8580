"""PettingZoo's own test suites (necessary, not sufficient: each covers ~one short episode)."""

import pytest
from pettingzoo.test import api_test, parallel_api_test, render_test, seed_test
from pettingzoo.utils.conversions import turn_based_aec_to_parallel

import rsim_env
from tests.conftest import seeded


@pytest.mark.parametrize("kwargs", [{}, {"max_steps": 3}, {"planner": False}, {"max_steps": 2, "terminate_last_round": True}],
                         ids=["default", "short", "no_planner", "last_round_terminates"])
def test_api_test(kwargs):
    api_test(seeded(rsim_env.env(**kwargs)), num_cycles=1000)


def test_seed_test():
    seed_test(rsim_env.env)


def test_render_test(capsys):
    render_test(lambda render_mode=None: rsim_env.env(render_mode=render_mode))


def test_turn_based_parallel_api():
    parallel_api_test(seeded(turn_based_aec_to_parallel(rsim_env.env(max_steps=4))), num_cycles=1000)


def test_declared_not_parallelizable():
    assert rsim_env.raw_env.metadata["is_parallelizable"] is False
