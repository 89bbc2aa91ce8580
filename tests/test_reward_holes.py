"""Reward holes closed: copying instructions, empty answers, unboxed no-planner answers.

Each test plays full episodes through the AEC API with scripted agents, so the rules are checked
where the rewards are computed (rsim_env.game), for every turn protocol.
"""

import pytest

import rsim_env
from agents.scripted.policies import FixedPlanner, TemplateReasoner
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


class StepsReasoner:
    """Writes given texts: ``steps`` by round (a list) or by planned strategy (a dict); the answer on termination,
    as ``N}.`` when the injected lead-in opened the box."""

    role = "reasoner"

    def __init__(self, steps, answer):
        self.steps, self.answer = steps, answer

    def reset(self, n):
        pass

    def records(self):
        return []

    def act(self, ids, obs):
        out = []
        for o in obs:
            s = int(o["strategy"])
            if s == 8:
                out.append(f"{self.answer}}}." if str(o["injected"]).endswith("{") else f"\\boxed{{{self.answer}}}.")
            else:
                out.append(self.steps[s if isinstance(self.steps, dict) else int(o["round"])])
        return out


# Steps that perform each strategy on PROB with something new (a number or an expression the context lacks).
CONTENT = {
    0: "Wait, is 7 * 6 the same? Yes, 7 * 6 = 42.",
    1: "Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.",
    2: "Considering it carefully: 30 + 12 = 42.",
    3: "Verify: 42 / 7 = 6.",
    4: "To recap, 6 * 7 = 42 so far.",
    5: "Focus on the key step first: 6 * 7 = 6 * 5 + 6 * 2.",
    6: "Then 6 * 7 = 42.",
    7: "Plan: add 30 and 12 to get 42, then verify.",
}


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
    perf_info, perf_ret = play(FixedPlanner(plan), StepsReasoner(CONTENT, "42"), protocol=proto)
    assert echo_info["components"]["follow"] == 0.0, echo_info["detected"]
    assert all(echo_info["echo"]), echo_info["steps"]
    assert echo_info["components"]["acc"] == echo_info["components"]["format"] == 0.0
    assert perf_info["components"]["follow"] == (1.0 if len(plan) > 1 else 0.0) and not any(perf_info["echo"])
    assert not any(perf_info["vacuous"]) and not any(perf_info["self_repeat"])
    assert echo_ret["reasoner"] < perf_ret["reasoner"]
    assert echo_ret["planner"] < perf_ret["planner"]


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_header_then_real_work_follows_only_through_the_work(proto):
    # The header echo is dropped; the generated work still shows validation ("Verify: 42 / 7 = 6.").
    def rewrite(t, o):
        return f"Step {o['round'] + 1} (validation: Check the last result.) {t}" if o["strategy"] == 3 else t

    info, _ = play(FixedPlanner([3, 8]), WrapReasoner(StepsReasoner(CONTENT, "42"), rewrite), protocol=proto)
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
    assert info["correct"] and info["components"]["format"] == 1.0
    assert info["components"]["follow"] == 0.0  # closing the box the lead-in opened follows nothing by itself


def test_bad_protocol_is_rejected():
    with pytest.raises(ValueError, match="chat\\+lead"):
        rsim_env.env(protocol="nope")


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_boxing_the_question_expression_earns_no_accuracy(proto):
    # A Stackelberg run on SmolLM2 learned to answer "37 * 22" with \boxed{37 * 22}: the symbolic value
    # equals the gold, so the checker paid for restating the question (the efficacy study, in git history).
    def restate(text, obs):
        return "6 * 7}" if render.protocol(proto).lead(0, 8).endswith("{") else "\\boxed{6 * 7}"  # a lead may open the box

    info, ret = play(FixedPlanner([8]), WrapReasoner(TemplateReasoner(), restate), protocol=proto)
    assert info["reason"] == "unevaluated" and info["components"]["acc"] == 0.0 and not info["correct"]
    solved, ret_solved = play(FixedPlanner([8]), TemplateReasoner({PROB.question: "42"}), protocol=proto)
    assert solved["correct"] and ret_solved["reasoner"] > ret["reasoner"] and ret_solved["planner"] > ret["planner"]


def test_restated_expression_in_no_planner_mode_and_trl_reward():
    from rsim_env.integrations.trl_rewards import make_accuracy_reward

    info, _ = play(FixedPlanner([8]), WrapReasoner(TemplateReasoner(), lambda t, o: "So \\boxed{6 * 7}."), planner=False)
    assert info["reason"] == "unevaluated" and info["components"]["acc"] == 0.0
    reward = make_accuracy_reward()
    assert reward(["\\boxed{6 * 7}", "\\boxed{42}", "6 * 7 = 42, \\boxed{6 * 7 = 42}"], answer=["42"] * 3) == [0.0, 1.0, 1.0]


# -- the episode audit's holes: lead-carried steps, announcements, self-repeats --------------------------------------------

# The study's two episodes: a wrong one-step guess, and an honest three-step attempt on plan 1,3,8 that ends
# wrong and whose validation step does the arithmetic but says no validation keyword (as the study's steps did).
GUESS = ("guess [8]", [8], StepsReasoner([], "40"))
HONEST = ("honest [1,3,8]", [1, 3, 8], StepsReasoner(["Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.",
                                                       "30 + 12 = 43."], "43"))


def reward_table(proto):
    """Markdown rows ``| protocol | episode | acc | format | follow | terminal | penalty | reasoner | planner |``."""
    rows = []
    for name, plan, reasoner in (GUESS, HONEST):
        info, ret = play(FixedPlanner(plan), reasoner, protocol=proto)
        c = info["components"]
        rows.append(f"| {proto} | {name} | " + " | ".join(f"{c[k]:.2f}" for k in ("acc", "format", "follow", "terminal",
                                                                                 "penalty"))
                    + f" | {ret['reasoner']:.2f} | {ret['planner']:.2f} |")
    return rows


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_a_wrong_one_step_guess_earns_less_than_an_honest_attempt_for_both_agents(proto):
    guess, g_ret = play(FixedPlanner(GUESS[1]), GUESS[2], protocol=proto)
    honest, h_ret = play(FixedPlanner(HONEST[1]), HONEST[2], protocol=proto)
    assert not guess["correct"] and not honest["correct"] and guess["components"]["format"] == 1.0
    # the answer step's compliance is R_format's: it earns no follow by itself (under lead protocols the
    # injected "The final answer is \boxed{" makes closing the box all that following would take)
    assert guess["components"]["follow"] == 0.0
    assert honest["components"]["follow"] == 0.5  # decomposition performed, validation not; the answer step skipped
    assert g_ret["reasoner"] < h_ret["reasoner"] and g_ret["planner"] < h_ret["planner"]


def test_the_reward_table_in_the_docs_is_the_one_the_env_computes():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "rewards.md").read_text()
    for proto in sorted(render.PROTOCOLS):
        for row in reward_table(proto):
            assert row in doc, row


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
@pytest.mark.parametrize("step", ["Let me double-check whether that is correct.", "I will verify 6 * 7 carefully.",
                                  "Checking it: 6 and 7 are the numbers."], ids=["no_number", "question_expr", "question_numbers"])
def test_an_announcement_only_step_follows_nothing(proto, step):
    info, _ = play(FixedPlanner([3, 8]), StepsReasoner([step], "42"), protocol=proto)
    assert 3 in info["detected"][0] and not info["echo"][0]  # it does show the keyword, and copies nothing
    assert info["vacuous"] == [True, False] and info["self_repeat"] == [False, False]
    assert info["components"]["follow"] == 0.0 and info["correct"]


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_a_step_with_new_content_follows(proto):
    info, _ = play(FixedPlanner([3, 8]), StepsReasoner(["Verify: 42 / 7 = 6, so 6 * 7 = 42 holds."], "42"), protocol=proto)
    assert info["vacuous"] == [False, False] and info["components"]["follow"] == 1.0


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
def test_a_step_repeating_an_earlier_step_follows_nothing(proto):
    steps = ["Verify: 42 / 7 = 6, so 6 * 7 = 42 holds.", "Verify: 42 / 7 = 6, so 6 * 7 = 42 holds."]
    info, _ = play(FixedPlanner([3, 3, 8]), StepsReasoner(steps, "42"), protocol=proto)
    assert info["self_repeat"] == [False, True, False] and info["vacuous"] == [False, True, False]
    assert info["components"]["follow"] == 0.5
    # a rephrased repeat with nothing new is still one
    steps[1] = "So, verifying again: 42 / 7 = 6, so 6 * 7 = 42 holds."
    info, _ = play(FixedPlanner([3, 3, 8]), StepsReasoner(steps, "42"), protocol=proto)
    assert info["self_repeat"] == [False, True, False] and info["components"]["follow"] == 0.5


def test_step_flags_are_counted_in_the_training_metrics():
    from algos.metrics import step_flag_counts

    a, _ = play(FixedPlanner([3, 3, 8]), StepsReasoner(["Verify: 42 / 7 = 6.", "Verify: 42 / 7 = 6."], "42"))
    b, _ = play(FixedPlanner([1, 8]), EchoReasoner("instruction"))
    c, _ = play(FixedPlanner([3, 8]), StepsReasoner(["Let me double-check whether that is correct."], "42"))
    assert step_flag_counts([{"info": i} for i in (a, b, c)]) == {
        "steps/total": 7.0, "steps/echo": 2.0, "steps/vacuous": 4.0, "steps/self_repeat": 1.0}  # echoes hold nothing new


def test_the_viewer_recomputes_follow_by_the_env_rule(tmp_path):
    from algos.viewer.load import load_dir
    from rsim_env.record import EpisodeRecord

    steps = [render.INSTRUCTIONS[3], "Let me double-check whether that is correct.", "Verify: 42 / 7 = 6.", "\\boxed{42}"]
    row = EpisodeRecord("t/1", "math", PROB.question, "42", protocol="chat", strategies=(3, 3, 3, 8), injected=("",) * 4,
                        steps=tuple(steps), shown_steps=tuple(steps), correct=True, mode="fixed:3,3,3,8")  # no detected, no follow
    (tmp_path / "episodes.jsonl").write_text(row.to_json() + "\n")
    r = load_dir(tmp_path).groups[0].rollouts[0]
    assert r.detected_computed and 3 not in r.detected[0]  # the echoed instruction shows nothing
    assert r.components["follow"] == pytest.approx(1 / 3)  # the announcement is vacuous; the answer step skipped
    info, _ = play(FixedPlanner([3, 3, 3, 8]), StepsReasoner(steps, "42"), protocol="chat")
    assert info["components"]["follow"] == r.components["follow"]
