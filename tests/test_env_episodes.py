"""Full episodes played through the AEC API: rewards, termination, truncation, bad input."""

import numpy as np
import pytest

import rsim_env
from agents.scripted.policies import FixedPlanner, RandomPlanner, TemplateReasoner
from rsim_env import Problem

PROB = Problem(id="t/1", question="What is 6 * 7?", answer="42", answer_type="number", source="test")


def play(env, planner, reasoner, seed=None, options=None):
    """Play one episode with Policy objects; return the final info and per-agent returns."""
    env.reset(seed=seed, options=options)
    planner.reset(1)
    reasoner.reset(1)
    returns = {a: 0.0 for a in env.possible_agents}
    info = None
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        returns[agent] += rew
        if term or trunc:
            env.step(None)
            continue
        assert env.observation_space(agent).contains(obs), agent
        pol = planner if agent == "planner" else reasoner
        env.step(pol.act([0], [obs])[0])
    return info, returns


def test_terminate_in_round_one_correct_boxed():
    env = rsim_env.env()
    info, ret = play(env, FixedPlanner([8]), TemplateReasoner({PROB.question: "42"}), options={"problem": PROB})
    # planner: R_acc 1 + R_terminal 1 + R_penalty -(1/1) = 1 ; reasoner: 1 + 1 + follow 0 = 2
    # (R_follow skips the answer step: giving it is R_format's, see rsim_env.rewards.r_follow)
    assert ret == {"planner": 1.0, "reasoner": 2.0}
    assert info["components"] == {"acc": 1.0, "format": 1.0, "follow": 0.0, "terminal": 1.0, "penalty": -1.0}
    assert info["correct"] is True and info["extracted"] == "42" and info["num_rounds"] == 1
    assert info["terminated"] and not info["truncated"]


def test_three_rounds_wrong_answer_hand_computed():
    env = rsim_env.env()
    info, ret = play(env, FixedPlanner([1, 1, 8]), TemplateReasoner({PROB.question: "42"}, p_correct=0.0),
                     options={"problem": PROB})
    # acc 0; terminal +1; penalty -(2/3); format 1; follow 0/2: the templates show their strategy's keywords but
    # hold no number (announcements: vacuous), and the second repeats the first (rsim_env.novelty)
    assert ret["planner"] == pytest.approx(0 + 1 - 2 / 3)
    assert ret["reasoner"] == pytest.approx(0 + 1 + 0)
    assert info["vacuous"] == [True, True, False] and info["self_repeat"] == [False, True, False]
    assert info["strategies"] == [1, 1, 8] and info["correct"] is False


def test_truncation_at_max_steps():
    env = rsim_env.env(max_steps=3)
    info, ret = play(env, FixedPlanner([2, 2, 2, 2, 2]), TemplateReasoner(), options={"problem": PROB})
    assert info["truncated"] and not info["terminated"] and info["num_rounds"] == 3
    # no answer: acc 0, terminal -1, penalty -1; format 0, follow 0 (three content-free announcements)
    assert ret == {"planner": -2.0, "reasoner": 0.0}
    assert info["reason"] == "no_answer"


def test_no_planner_mode():
    env = rsim_env.env(planner=False)
    info, ret = play(env, RandomPlanner(), TemplateReasoner({PROB.question: "42"}), options={"problem": PROB})
    assert env.possible_agents == ["reasoner"]
    assert ret == {"reasoner": 2.0}  # acc + format; no plan components
    assert info["correct"]


@pytest.mark.parametrize("seed", range(300))
def test_many_random_episodes_invariants(seed):
    env = rsim_env.env(max_steps=5)
    rng = np.random.default_rng(seed)
    texts = ["", "ünïcödé ∑ 数学 🙂 \\boxed{", "a" * 5000, "step\n\nwith\tbreaks $x$ \\frac{1}{2}", "\\boxed{7}"]

    class Chaos(TemplateReasoner):
        def act(self, ids, observations):
            return [texts[rng.integers(len(texts))] for _ in observations]

    info, ret = play(env, RandomPlanner(seed=seed), Chaos(), seed=seed)
    comps = info["components"]
    assert 1 <= info["num_rounds"] <= 5
    assert info["terminated"] != info["truncated"]
    assert ret["planner"] == pytest.approx(comps["acc"] + comps["terminal"] + comps["penalty"])
    assert ret["reasoner"] == pytest.approx(comps["acc"] + comps["format"] + comps["follow"])
    assert all(len(s) <= 2000 for s in info["steps"])
    assert info["terminated"] == (info["strategies"][-1] == 8)


def test_long_step_is_cut_and_flagged():
    env = rsim_env.env(max_step_chars=100)
    info, _ = play(env, FixedPlanner([8]), type("R", (TemplateReasoner,), {"act": lambda s, i, o: ["x" * 500]})(),
                   options={"problem": PROB})
    assert info["truncated_steps"] == [0] and len(info["steps"][0]) == 100


def test_same_seed_same_episode():
    a = play(rsim_env.env(), RandomPlanner(seed=1), TemplateReasoner(), seed=11)
    b = play(rsim_env.env(), RandomPlanner(seed=1), TemplateReasoner(), seed=11)
    assert a == b


def test_options_question_answer():
    env = rsim_env.env()
    env.reset(options={"question": "2+2?", "answer": "4"})
    assert env.observe("planner")["question"] == "2+2?"
    with pytest.raises(ValueError, match="no 'answer'"):
        env.reset(options={"question": "2+2?"})


BAD_PLANNER = [(9, ValueError, "out of range"), (-1, ValueError, "out of range"), (1.0, TypeError, "int"),
               ("3", TypeError, "int"), (None, TypeError, "int"), (True, TypeError, "int")]


@pytest.mark.parametrize("action,exc,msg", BAD_PLANNER, ids=["nine", "neg", "float", "str", "none", "bool"])
def test_bad_planner_action_leaves_episode_intact(action, exc, msg):
    env = rsim_env.env()
    env.reset(options={"problem": PROB})
    before = env.observe("planner")
    with pytest.raises(exc, match=msg) as err:
        env.step(action)
    assert "planner" in str(err.value)
    assert env.agent_selection == "planner"
    after = env.observe("planner")
    assert after["steps"] == before["steps"] and after["round"] == before["round"]
    env.step(np.int32(8))  # still playable
    env.step("\\boxed{42}")
    assert env.unwrapped.episode.outcome()["info"]["correct"]


@pytest.mark.parametrize("action", [42, b"bytes", None, ["list"]], ids=["int", "bytes", "none", "list"])
def test_bad_reasoner_action_leaves_episode_intact(action):
    env = rsim_env.env()
    env.reset(options={"problem": PROB})
    env.step(np.int64(8))
    with pytest.raises(TypeError, match="reasoner action must be the step text as str"):
        env.step(action)
    assert env.agent_selection == "reasoner" and env.observe("reasoner")["round"] == 0
    env.step("so \\boxed{42}")
    assert env.unwrapped.episode.done


def test_observation_fields():
    env = rsim_env.env()
    env.reset(options={"problem": PROB})
    p = env.observe("planner")
    assert set(p) == {"question", "steps", "strategies", "round", "prompt", "action_mask"}
    assert p["action_mask"].dtype == np.int8 and p["action_mask"].sum() == 9
    env.step(3)
    r = env.observe("reasoner")
    assert r["strategy"] == 3 and r["injected"] == "Let me check the last result:"  # the chat+lead protocol
    assert r["instruction"].startswith(PROB.question) and r["instruction"].endswith(
        "Check your last result: recompute it or substitute it back.")
    assert r["protocol"] == "chat+lead" and r["system"]
    assert "action_mask" not in r and PROB.question in r["prompt"]
    env.step("Let me check it: 6*7 = 42.")
    p = env.observe("planner")
    assert p["steps"] == ("Let me check it: 6*7 = 42.",) and p["strategies"] == (3,)
    assert "[validation]" in p["prompt"]


def test_inline_protocol_observation():
    env = rsim_env.env(protocol="inline")
    env.reset(options={"problem": PROB})
    env.step(3)
    r = env.observe("reasoner")
    assert r["injected"].startswith("Step 1 (validation") and r["instruction"] == PROB.question
    env.step("6*7 = 42.")
    env.step(6)
    r = env.observe("reasoner")
    assert r["injected"].startswith("Step 2 (continuation") and r["instruction"] == ""


def test_render_ansi_shows_episode():
    env = rsim_env.env(render_mode="ansi")
    play(env, FixedPlanner([1, 8]), TemplateReasoner({PROB.question: "42"}), options={"problem": PROB})
    text = env.render()
    assert "decomposition" in text and "correct" in text and PROB.question in text


def test_bad_constructor_args():
    with pytest.raises(ValueError, match="max_steps"):
        rsim_env.env(max_steps=0)
    with pytest.raises(ValueError, match="render_mode"):
        rsim_env.env(render_mode="rgb_array")
    with pytest.raises(ValueError, match="non-empty"):
        rsim_env.env(problems=[])


@pytest.mark.parametrize("options", [{"question": None, "answer": "4"}, {"question": b"2+2?", "answer": "4"},
                                     {"question": "2+2?", "answer": None}, {"question": "2+2?", "answer": 4}],
                         ids=["question-none", "question-bytes", "answer-none", "answer-int"])
def test_options_non_str_question_or_answer_refused(options):
    env = rsim_env.env()
    with pytest.raises(TypeError, match=r"options\['(question|answer)'\] must be str, got (NoneType|bytes|int)"):
        env.reset(options=options)


@pytest.mark.parametrize("first", [True, False], ids=["first-reset", "later-reset"])
def test_failed_reset_leaves_env_asking_for_reset(first):
    env = rsim_env.env()
    if not first:
        env.reset(options={"problem": PROB})
    with pytest.raises(TypeError):
        env.reset(options={"question": None, "answer": "4"})
    for call in (lambda: env.step(0), lambda: env.last(), lambda: env.observe("planner")):
        with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
            call()
    env.reset(options={"problem": PROB})  # a good reset recovers
    env.step(8)


# ------------------------------------------------------------------ EnvConfig.terminate_last_round (a learner option)

def test_last_round_mask_allows_only_termination_and_earlier_rounds_allow_all():
    env = rsim_env.env(max_steps=3, terminate_last_round=True)
    env.reset(options={"problem": PROB})
    masks = []
    for _ in range(3):
        masks.append(env.observe("planner")["action_mask"].tolist())
        env.step(2 if len(masks) < 3 else 8)
        env.step("Let me think carefully about 6 * 7.")
    assert masks[0] == masks[1] == [1] * 9 and masks[2] == [0] * 8 + [1]
    info = env.unwrapped.episode.outcome()["info"]
    assert info["terminated"] and not info["truncated"] and info["components"]["terminal"] == 1.0


def test_last_round_rule_refuses_another_plan_there_and_the_default_allows_it():
    for flag, refused in ((True, True), (False, False)):
        env = rsim_env.env(max_steps=2, terminate_last_round=flag)
        env.reset(options={"problem": PROB})
        env.step(2)
        env.step("Let me think carefully about 6 * 7.")
        assert env.observe("planner")["action_mask"].sum() == (1 if flag else 9)
        if refused:
            with pytest.raises(ValueError, match="terminate_last_round"):
                env.step(3)
            assert env.unwrapped.episode.pending is None  # nothing moved
        else:
            env.step(3)


def test_last_round_rule_with_one_round_allows_only_termination_at_once():
    env = rsim_env.env(max_steps=1, terminate_last_round=True)
    env.reset(options={"problem": PROB})
    assert env.observe("planner")["action_mask"].tolist() == [0] * 8 + [1]


def test_random_planner_always_terminates_under_the_last_round_rule():
    ends = []
    for seed in range(20):
        info, _ = play(rsim_env.env(max_steps=3, terminate_last_round=True), RandomPlanner(seed=seed),
                       TemplateReasoner({PROB.question: "42"}), options={"problem": PROB})
        ends.append((info["terminated"], info["truncated"], info["strategies"][-1]))
    assert all(e == (True, False, 8) for e in ends)
    # without the rule the same planners leave episodes unterminated (so the test above can fail)
    free = [play(rsim_env.env(max_steps=3), RandomPlanner(seed=s), TemplateReasoner(), options={"problem": PROB})[0]
            for s in range(20)]
    assert any(i["truncated"] for i in free)


def test_terminate_last_round_must_be_a_bool():
    with pytest.raises(TypeError, match="terminate_last_round"):
        rsim_env.EnvConfig(terminate_last_round=1)
