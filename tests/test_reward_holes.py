"""Reward holes closed by issue 10: copying instructions, empty answers, unboxed no-planner answers.

Each test plays full episodes through the AEC API with scripted agents, so the rules are checked
where the rewards are computed (rsim_env.game), for every turn protocol.
"""

import pytest

import rsim_env
from agents.scripted import FixedPlanner, TemplateReasoner
from rsim_env import Problem, render
from rsim_env.answers import CheckConfig
from rsim_env.strategies import STRATEGIES

PROB = Problem(id="t/1", question="What is 6 * 7?", answer="42", answer_type="number", source="test")
PLANS = ([8], [1, 3, 8], [0, 2, 4, 8], [5, 6, 7, 8])


class EchoReasoner:
    """Copies what it was told: the instruction of the round, else the injected lead or header."""

    role = "reasoner"

    def __init__(self, style: str = "instruction") -> None:
        self.style = style

    def reset(self, num_copies: int) -> None:
        pass

    def records(self) -> list:
        return []

    def act(self, copy_ids, observations):
        out = []
        for o in observations:
            s = int(o["strategy"])
            if self.style == "header":  # what SmolLM2 wrote under the inline protocol
                out.append(f"Step {o['round'] + 1} ({STRATEGIES[s].name}: {STRATEGIES[s].prompt})")
            elif self.style == "instruction":
                out.append(render.INSTRUCTIONS[s])
            else:  # repeats the lead-in
                out.append(render.LEADS[s])
        return out


class WrapReasoner:
    """Wraps another reasoner and rewrites its steps with ``fn(step, obs)``."""

    role = "reasoner"

    def __init__(self, inner, fn):
        self.inner, self.fn = inner, fn

    def reset(self, n):
        self.inner.reset(n)

    def records(self):
        return []

    def act(self, ids, obs):
        return [self.fn(t, o) for t, o in zip(self.inner.act(ids, obs), obs)]


def play(plan_policy, reasoner, **env_kwargs):
    env = rsim_env.env(**env_kwargs)
    env.reset(options={"problem": PROB})
    plan_policy.reset(1)
    reasoner.reset(1)
    returns = {a: 0.0 for a in env.possible_agents}
    info = None
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        returns[agent] += rew
        if term or trunc:
            env.step(None)
            continue
        env.step((plan_policy if agent == "planner" else reasoner).act([0], [obs])[0])
    return info, returns


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
@pytest.mark.parametrize("style", ["header", "instruction", "lead"])
@pytest.mark.parametrize("plan", PLANS, ids=lambda p: ",".join(map(str, p)))
def test_echoing_reasoner_gets_no_follow_and_less_than_a_performer(proto, style, plan):
    echo_info, echo_ret = play(FixedPlanner(plan), EchoReasoner(style), protocol=proto)
    perf_info, perf_ret = play(FixedPlanner(plan), TemplateReasoner({PROB.question: "42"}), protocol=proto)
    assert echo_info["components"]["follow"] == 0.0, echo_info["detected"]
    assert all(echo_info["echo"]), echo_info["steps"]
    assert echo_info["components"]["acc"] == echo_info["components"]["format"] == 0.0
    assert perf_info["components"]["follow"] == 1.0 and not any(perf_info["echo"])
    assert echo_ret["reasoner"] < perf_ret["reasoner"]
    assert echo_ret["planner"] < perf_ret["planner"]


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_header_then_real_work_follows_only_through_the_work(proto):
    # The header echo is dropped; the generated work still shows validation ("recomputing").
    def rewrite(t, o):
        return f"Step {o['round'] + 1} (validation: Check the last result.) {t}" if o["strategy"] == 3 else t

    info, _ = play(FixedPlanner([3, 8]), WrapReasoner(TemplateReasoner({PROB.question: "42"}), rewrite), protocol=proto)
    assert 3 in info["detected"][0] and info["components"]["follow"] == 1.0


@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize("final", ["6 * 7 = 42. \\boxed{}", "6 * 7 = 42. \\boxed{ }", "\\boxed{"],
                         ids=["empty", "blank", "unclosed"])
def test_empty_or_unclosed_answer_scores_no_accuracy_and_no_format(final, fallback):
    reasoner = WrapReasoner(TemplateReasoner(), lambda t, o: final)
    info, _ = play(FixedPlanner([8]), reasoner, protocol="chat", check=CheckConfig(last_number_fallback=fallback))
    assert info["components"]["acc"] == 0.0 and info["components"]["format"] == 0.0
    assert info["correct"] is False


def test_no_planner_format_needs_a_boxed_answer_and_fallback_is_a_config_field():
    bare = WrapReasoner(TemplateReasoner(), lambda t, o: "6 * 7 = 42")
    boxed = WrapReasoner(TemplateReasoner(), lambda t, o: "6 * 7 = 42, so \\boxed{42}")
    info, ret = play(FixedPlanner([8]), bare, planner=False)
    assert info["components"] == {"acc": 0.0, "format": 0.0, "follow": 0.0, "terminal": 0.0, "penalty": 0.0}
    info, ret = play(FixedPlanner([8]), bare, planner=False, check=CheckConfig(last_number_fallback=True))
    assert info["components"]["acc"] == 1.0 and info["components"]["format"] == 0.0
    info, ret = play(FixedPlanner([8]), boxed, planner=False)
    assert info["components"]["acc"] == 1.0 and info["components"]["format"] == 1.0
    assert ret["reasoner"] == 2.0


def test_lead_protocol_answer_is_graded_with_its_lead():
    # Under lead protocols the injected lead opens \boxed{ and the generated "42}." closes it.
    info, ret = play(FixedPlanner([8]), TemplateReasoner({PROB.question: "42"}), protocol="lead")
    assert info["steps"] == ["42}."] and info["shown_steps"] == ["The final answer is \\boxed{42}."]
    assert info["correct"] and info["components"]["format"] == 1.0 and info["components"]["follow"] == 1.0


def test_bad_protocol_is_rejected():
    with pytest.raises(ValueError, match="chat\\+lead"):
        rsim_env.env(protocol="nope")


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_boxing_the_question_expression_earns_no_accuracy(proto):
    # A Stackelberg run on SmolLM2 learned to answer "37 * 22" with \boxed{37 * 22}: the symbolic value
    # equals the gold, so the checker paid for restating the question (docs/efficacy.md).
    def restate(text, obs):
        return "6 * 7}" if render.lead(proto, 0, 8).endswith("{") else "\\boxed{6 * 7}"  # a lead may open the box

    info, ret = play(FixedPlanner([8]), WrapReasoner(TemplateReasoner(), restate), protocol=proto)
    assert info["reason"] == "unevaluated" and info["components"]["acc"] == 0.0 and not info["correct"]
    solved, ret_solved = play(FixedPlanner([8]), TemplateReasoner({PROB.question: "42"}), protocol=proto)
    assert solved["correct"] and ret_solved["reasoner"] > ret["reasoner"] and ret_solved["planner"] > ret["planner"]


def test_restated_expression_in_no_planner_mode_and_trl_reward():
    from rsim_env.trl_rewards import make_accuracy_reward

    info, _ = play(FixedPlanner([8]), WrapReasoner(TemplateReasoner(), lambda t, o: "So \\boxed{6 * 7}."), planner=False)
    assert info["reason"] == "unevaluated" and info["components"]["acc"] == 0.0
    reward = make_accuracy_reward()
    assert reward(["\\boxed{6 * 7}", "\\boxed{42}", "6 * 7 = 42, \\boxed{6 * 7 = 42}"], answer=["42"] * 3) == [0.0, 1.0, 1.0]
