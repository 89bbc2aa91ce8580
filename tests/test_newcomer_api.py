"""What a newcomer building on the env meets first: ``rsim_env.env``'s real signature, and the default toy game
(the Gymnasium view's family problems) in the AEC API with a held-out split disjoint by question text."""

import inspect

import gymnasium
import pytest

import rsim_env
from agents.planners.gym import DEFAULT_PROBLEMS, PlannerEnv
from agents.scripted.families import (DEFAULT_FAMILIES, SPLITS, FamilyReasoner, family_game, family_problems,
                                      family_split)
from rsim_env.strategies import TERMINATION


def test_env_shows_raw_envs_parameters():
    env_params = inspect.signature(rsim_env.env).parameters
    raw_params = inspect.signature(rsim_env.raw_env).parameters
    assert list(env_params) == ["problems", "config", "render_mode", "grader", "overrides"]
    assert list(env_params) == list(raw_params)
    assert env_params["overrides"].kind is inspect.Parameter.VAR_KEYWORD
    assert "max_steps" in inspect.getdoc(rsim_env.env)


def test_env_passes_every_parameter_through():
    problems = family_problems(DEFAULT_FAMILIES, 2, seed=0)
    e = rsim_env.env(problems, rsim_env.EnvConfig(max_steps=5), "ansi", None, planner=False)
    assert e.unwrapped.problems == problems and e.unwrapped.cfg.max_steps == 5 and not e.unwrapped.cfg.planner
    assert e.unwrapped.render_mode == "ansi"
    with pytest.raises(TypeError, match="EnvConfig fields"):
        rsim_env.env(max_stpes=3)


def test_split_is_disjoint_by_text_and_the_training_half_is_the_gym_default():
    train, heldout = family_split()
    assert len(train) == DEFAULT_PROBLEMS and len(heldout) == 64
    texts = [p.question for p in heldout]
    assert len(set(texts)) == len(texts) and not set(texts) & {p.question for p in train}
    default = gymnasium.make("rsim/Planner-v0").unwrapped
    assert [p.question for p in default.aec.problems] == [p.question for p in train]
    assert {p.id.split("/")[0] for p in heldout} == {f.name for f in DEFAULT_FAMILIES}
    assert family_split() == (train, heldout)  # deterministic


def test_split_refuses_what_it_cannot_draw():
    with pytest.raises(ValueError, match="n_heldout >= 1"):
        family_split(n_heldout=0)
    with pytest.raises(ValueError, match="ask for fewer"):
        family_split(DEFAULT_FAMILIES[:1], n_train=1, n_heldout=9_700)


@pytest.mark.parametrize("split", SPLITS)
def test_family_game_plays_each_split_in_the_aec_api(split):
    env, reasoner = family_game(split, max_steps=4)
    assert isinstance(reasoner, FamilyReasoner)
    want = {p.question for p in family_split()[SPLITS.index(split)]}
    for seed in range(6):
        env.reset(seed=seed)
        reasoner.reset(1)
        question = env.observe("planner")["question"]
        assert question in want
        family = next(f for f in DEFAULT_FAMILIES if question.startswith(f.template.split(" ")[0]))
        plan = list(family.plan)
        for agent in env.agent_iter():
            obs, _, term, trunc, info = env.last()
            if term or trunc:
                env.step(None)
                continue
            env.step(plan.pop(0) if agent == "planner" else reasoner.act([0], [obs])[0])
        assert info["correct"] and info["components"]["terminal"] == 1.0


def test_family_game_names_the_splits():
    with pytest.raises(ValueError, match="heldout"):
        family_game("test")


def test_the_held_out_split_plays_in_the_gymnasium_view():
    heldout = family_split()[1]
    e = PlannerEnv(problems=heldout, max_steps=4)
    obs, _ = e.reset(seed=0)
    assert obs["question"] in {p.question for p in heldout}
    *_, info = e.step(TERMINATION)
    assert info["correct"] is False  # no family's plan was played
