"""The reward is exactly the rubric's weighted sum: every format rule lives in the ``format`` component.

A kind's own format rule and the echo rule are read from :class:`rsim_env.rewards.Facts` by the paper's
``format`` row (:func:`rsim_env.rewards.format_rule`); nothing overwrites a value after the rubric ran, so
a ``format`` component of your own (``replaces=True``) or a reweighted one is obeyed.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

import rsim_env
from rsim_env import EnvConfig, Problem, kinds, scoring
from rsim_env.kinds.base import Grade
from rsim_env.kinds.math import MathKind
from rsim_env.rewards import COMPONENTS, Component, Facts, RewardWeights, format_rule, r_format, rubric

PROB = Problem(id="t/1", question="What is 6 * 7?", answer="42", answer_type="number", source="test")
STEPS = {1: "Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.", 3: "Verify: 42 / 7 = 6."}
ECHOED_ANSWER = "Therefore, the final answer is \\boxed{answer}."  # copies the system prompt's placeholder


class OwnFormatKind(MathKind):
    """Math graded as math, with a format rule of its own (as code's "a program that parses")."""

    name = "own_format"

    def grade(self, problem, steps, check=None) -> Grade:
        g = super().grade(problem, steps, check)
        return dataclasses.replace(g, format=0.25)


class Script:
    """Writes ``STEPS[strategy]``, and ``final`` on termination (``N}.`` when the lead-in opened the box)."""

    def __init__(self, final: str = "42") -> None:
        self.final = final

    def __call__(self, obs: dict) -> str:
        s = int(obs["strategy"])
        if s != 8:
            return STEPS[s]
        if self.final.startswith("\\") or " " in self.final:
            return self.final
        return f"{self.final}}}." if str(obs["injected"]).endswith("{") else f"\\boxed{{{self.final}}}."


def play(plan, write, problem=PROB, **env_kwargs):
    """One episode through the AEC API: ``plan`` for the planner, ``write(obs)`` for the reasoner."""
    e = rsim_env.env(problems=[problem], **env_kwargs)
    e.reset(options={"problem": problem})
    plans, returns, info = iter(plan), {a: 0.0 for a in e.possible_agents}, None
    for agent in e.agent_iter():
        obs, rew, term, trunc, info = e.last()
        returns[agent] += rew
        if term or trunc:
            e.step(None)
            continue
        e.step(next(plans) if agent == "planner" else write(obs))
    return info, returns


def weighted_sum(cfg: EnvConfig, values: dict, agent: str) -> float:
    return sum(c.weight * values[c.name] for c in cfg.rubric.terms(agent))


def boxed_anyway(f: Facts) -> float:
    """A format rule of one's own: the boxed rule alone, no echo rule, no kind rule."""
    return r_format(f.final_step)


MY_FORMAT = Component("format", boxed_anyway, ("reasoner",), weight=2.0, replaces=True)


# ------------------------------------------------------------------ the paper's format row holds every rule

@pytest.mark.parametrize("facts,want", [
    (Facts(True, "\\boxed{42}"), 1.0),
    (Facts(True, "42"), 0.0),
    (Facts(True, "\\boxed{42}", final_echo=True), 0.0),
    (Facts(True, "42", kind_format=0.25), 0.25),
    (Facts(True, "\\boxed{42}", kind_format=0.0, final_echo=False), 0.0),
    (Facts(True, "x", kind_format=1.0, final_echo=True), 1.0),
], ids=["boxed", "bare", "echo", "kind-rule", "kind-rule-beats-box", "kind-rule-beats-echo"])
def test_format_rule_applies_kind_rule_then_echo_rule_then_box(facts, want):
    assert format_rule(facts) == want
    assert [c.fn for c in COMPONENTS if c.name == "format"] == [format_rule]


@pytest.mark.parametrize("proto", ["chat", "chat+lead", "inline", "lead"])
def test_default_rubric_applies_the_echo_and_kind_rules_and_sums_exactly(proto):
    echoed, _ = play([8], lambda o: ECHOED_ANSWER, protocol=proto)
    assert echoed["echo"][-1] and echoed["components"]["format"] == 0.0
    with kinds.registered(OwnFormatKind()):
        p = dataclasses.replace(PROB, kind="own_format")
        info, ret = play([1, 3, 8], Script(), problem=p, protocol=proto)
    assert info["correct"] and info["components"]["format"] == 0.25
    cfg = EnvConfig(protocol=proto)
    for agent in ("planner", "reasoner"):
        assert ret[agent] == pytest.approx(weighted_sum(cfg, info["components"], agent))


# ------------------------------------------------------------------ a format component of your own replaces it

@pytest.mark.parametrize("proto", ["chat", "chat+lead", "inline"])
def test_a_custom_format_component_replaces_the_builtin_and_the_reward_is_the_rubric_sum(proto):
    cfg = EnvConfig(protocol=proto, components=(MY_FORMAT,))
    assert cfg.rubric.names == tuple(c.name for c in COMPONENTS)  # in the paper's row's place, nothing added
    assert [c for c in cfg.rubric.components if c.name == "format"] == [MY_FORMAT]
    cases = [([8], lambda o: ECHOED_ANSWER, PROB, 1.0),   # the echo rule would say 0; this rule says 1
             ([1, 3, 8], Script(), PROB, 1.0),
             ([1, 8], Script("no box here"), PROB, 0.0)]
    with kinds.registered(OwnFormatKind()):  # the kind's rule (0.25) would say 0.25; this rule says 1
        cases.append(([1, 3, 8], Script(), dataclasses.replace(PROB, kind="own_format"), 1.0))
        for plan, write, problem, want in cases:
            info, ret = play(plan, write, problem=problem, config=cfg)
            c = info["components"]
            assert c["format"] == want == boxed_anyway(Facts(info["correct"], info["shown_steps"][-1]))
            assert ret["reasoner"] == pytest.approx(c["acc"] + 2.0 * c["format"] + c["follow"])
            for agent in ("planner", "reasoner"):
                assert ret[agent] == pytest.approx(weighted_sum(cfg, c, agent))
            default, dret = play(plan, write, problem=problem, protocol=proto)
            assert dret["planner"] == ret["planner"]  # the planner's sum does not list format


@pytest.mark.parametrize("w", [0.0, 0.5, 3.0])
def test_reweighting_format_changes_the_reasoner_reward_by_exactly_that_weight(w):
    base, bret = play([1, 3, 8], Script())
    info, ret = play([1, 3, 8], Script(), weights=RewardWeights(format=w))
    assert info["components"] == base["components"] and base["components"]["format"] == 1.0
    assert ret["reasoner"] == pytest.approx(bret["reasoner"] - 1.0 + w)
    assert ret["planner"] == bret["planner"]


def test_a_rubric_without_format_gets_no_format_value_from_the_kind():
    """Nothing is written into the values after the rubric ran: a rubric that has no ``format`` logs none."""
    no_format = rsim_env.Rubric(tuple(c for c in COMPONENTS if c.name != "format"))
    with kinds.registered(OwnFormatKind()):
        p = dataclasses.replace(PROB, kind="own_format")
        e = rsim_env.env(problems=[p], max_steps=2)
        e.reset(options={"problem": p})
        e.step(8)
        e.step("\\boxed{42}.")
        scored = scoring.score(e.unwrapped.episode.record(), p, rubric=no_format)
    assert "format" not in scored.values and scored.grade.format == 0.25
    assert scored.rewards(no_format)["reasoner"] == scored.values["acc"] + scored.values["follow"]


# ------------------------------------------------------------------ mistakes are refused, naming the fix

@pytest.mark.parametrize("extra,weights,match", [
    ((Component("format", boxed_anyway, ("reasoner",)),), RewardWeights(), "replaces=True"),
    ((dataclasses.replace(MY_FORMAT, name="formatting"),), RewardWeights(), "no component of that name"),
    ((MY_FORMAT, dataclasses.replace(MY_FORMAT, weight=1.0)), RewardWeights(), "two components replace"),
    ((MY_FORMAT,), RewardWeights(format=0.5), "set the weight on the component"),
], ids=["same-name-without-replaces", "replaces-nothing", "replaced-twice", "two-weights"])
def test_replacing_mistakes_are_refused(extra, weights, match):
    with pytest.raises(ValueError, match=match):
        EnvConfig(weights=weights, components=extra)


def test_replaces_must_be_a_bool():
    with pytest.raises(TypeError, match="replaces"):
        Component("format", boxed_anyway, ("reasoner",), replaces=1)


def test_replacing_keeps_order_agents_and_the_other_weights():
    w = RewardWeights(acc=2.0, follow=0.5)
    planner_format = Component("format", boxed_anyway, ("reasoner", "planner"), weight=0.0, replaces=True)
    r = rubric(w, (planner_format,))
    assert r.names == ("acc", "format", "follow", "terminal", "penalty")
    assert [c.weight for c in r.components] == [2.0, 0.0, 0.5, 1.0, 1.0]
    values = {"acc": 1.0, "format": 1.0, "follow": 1.0, "terminal": 1.0, "penalty": -0.5}
    assert math.isclose(r.reward("planner", values), 2.0 + 0.0 + 1.0 - 0.5)
