"""A 10th strategy is one Strategy row; a new turn protocol is one Protocol object (no other file edited).

Every table that lists strategies is read from the rows: the planner's action space and mask, the
observation spaces, ``render.INSTRUCTIONS``/``LEADS``, ``EXAMPLES``, detection, echo references, the
scripted agents and the planners' heads.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from rsim_env import EnvGroup, Problem, echo, env, render, strategies
from rsim_env.strategies import EXAMPLES, STRATEGIES, TERMINATION, Strategy, detect, extra_strategy, num_strategies

ANALOGY = Strategy(
    index=9, name="analogy",
    prompt="Compare the problem with a simpler one you know.",
    instruction="Think of a similar, simpler problem and say what it teaches here.",
    lead="This is like a simpler problem:",
    example="It resembles 6 * 5 = 30, plus one more 6 each time.",
    patterns=(r"\bresembles?\b", r"\bis like\b", r"\banalog"),
)
PROB = Problem("p", "What is 6 * 7?", "42", "number")


def play(protocol: str, plan: list[int]) -> dict:
    """One episode with scripted agents: the planner plays ``plan`` then terminates."""
    group = EnvGroup([PROB], 1, protocol=protocol, max_steps=6)
    agents = {"planner": FixedPlanner(plan), "reasoner": TemplateReasoner({PROB.question: "42"})}
    group.reset(seed=0)
    for a in agents.values():
        a.reset(len(group))
    while not group.done:
        agent, ids, observations = group.observe()
        group.step(agents[agent].act(ids, observations))
    return group.results()[0]


@pytest.mark.parametrize("protocol", sorted(render.PROTOCOLS))
def test_a_tenth_strategy_is_one_row_and_plays_in_every_protocol(protocol):
    assert num_strategies() == 9
    with extra_strategy(ANALOGY):
        assert num_strategies() == len(STRATEGIES) == 10
        e = env(problems=[PROB], protocol=protocol)
        e.reset(seed=0)
        assert e.action_space("planner").n == 10 and e.observe("planner")["action_mask"].shape == (10,)
        e.step(9)
        turn = e.observe("reasoner")
        assert turn["strategy"] == 9
        # the strategy-as-behaviour variants have no texts for an extra row: it keeps its own
        text = ("(analogy: Compare the problem with a simpler one you know.)" if protocol == "inline"
                else ANALOGY.lead if render.PROTOCOLS[protocol].leads else ANALOGY.instruction)
        assert text in turn["prompt"]
        result = play(protocol, [9, 3])
        info = result["info"]
        assert info["strategies"] == [9, 3, TERMINATION] and info["correct"]
        # the analogy step adds content (5, 30) and follows; the scripted validation step adds none, so it is
        # vacuous and follows nothing (rsim_env.novelty); the answer step earns no follow of its own
        assert 9 in info["detected"][0] and info["vacuous"][:2] == [False, True]
        assert info["components"]["follow"] == 0.5
        assert info["injected"][0] == render.protocol(protocol).lead(0, 9)
        assert render.INSTRUCTIONS[9] == ANALOGY.instruction and render.LEADS[9] == ANALOGY.lead
        assert EXAMPLES["analogy"] == ANALOGY.example and detect(ANALOGY.example) >= {9}
        assert ANALOGY.lead in render.injected_texts() and echo.is_echo(ANALOGY.instruction)
    assert num_strategies() == 9 and "analogy" not in EXAMPLES  # the row is gone after the block
    e = env(problems=[PROB], protocol=protocol)
    e.reset(seed=0)
    with pytest.raises(ValueError, match="out of range"):
        e.step(9)
    with pytest.raises(ValueError, match="invalid strategies"):
        FixedPlanner([9])


def test_planner_heads_are_sized_by_the_table():
    torch = pytest.importorskip("torch")
    from agents.scripted.toy import ToyPlanner

    with extra_strategy(ANALOGY):
        planner = ToyPlanner(max_rounds=4)
        planner.reset(1)
        logits = planner.module(torch.zeros(1, 4 + 10 + 1))
        assert logits.shape == (1, 10)
    assert ToyPlanner(max_rounds=4).module[-1].out_features == 9


def test_rows_are_appended_and_validated():
    with pytest.raises(ValueError, match="index=9"):
        strategies.register(Strategy(**{**ANALOGY.__dict__, "index": 3}))
    with pytest.raises(ValueError, match="taken"):
        strategies.register(Strategy(**{**ANALOGY.__dict__, "name": "validation"}))
    with pytest.raises(ValueError, match="terminates=True"):
        strategies.register(Strategy(**{**ANALOGY.__dict__, "terminates": True}))
    with pytest.raises(ValueError, match="instruction"):
        Strategy(**{**ANALOGY.__dict__, "instruction": ""})
    with pytest.raises(ValueError, match="example"):
        Strategy(**{**ANALOGY.__dict__, "example": "a {brace} here"})
    assert num_strategies() == 9


@dataclass(frozen=True)
class NoteProtocol(render.Protocol):
    """A toy protocol: the strategy's instruction as a bracketed note inside the assistant message."""

    def lead(self, round_index, strategy, kind="math"):
        return f"[{render.strategy_texts(strategy, kind)[1]}] "

    def show(self, injected, step):  # the note is an instruction, not part of the answer
        return step

    def assistant_text(self, injected, step):
        return injected + (step or "")


def test_a_new_protocol_is_one_object(monkeypatch):
    monkeypatch.setitem(render.PROTOCOLS, "note", NoteProtocol("note", separate_turns=False, leads=True))
    info = play("note", [3])["info"]
    assert info["protocol"] == "note" and info["correct"]
    assert info["injected"][0] == "[Check your last result: recompute it or substitute it back.] "
    assert info["shown_steps"] == info["steps"]  # its show(): the note is not part of the step
    chat = render.reasoner_chat(PROB.question, ["a"], [3], TERMINATION, "note")
    assert chat[-1]["content"].startswith("[Check your last result")


_CALLS = {"lead": 0, "show": 0}


@dataclass(frozen=True)
class CountingProtocol(render.Protocol):
    """``chat+lead`` that counts how often the episode asks it for the injected and shown text."""

    def lead(self, round_index, strategy, kind="math"):
        _CALLS["lead"] += 1
        return super().lead(round_index, strategy, kind)

    def show(self, injected, step):
        _CALLS["show"] += 1
        return super().show(injected, step)


def test_the_episode_renders_each_step_once_and_grades_the_stored_step(monkeypatch):
    from rsim_env.game import EnvConfig, Episode

    monkeypatch.setitem(render.PROTOCOLS, "counted", CountingProtocol("counted", separate_turns=True, leads=True))
    monkeypatch.setitem(_CALLS, "lead", 0)
    monkeypatch.setitem(_CALLS, "show", 0)
    ep = Episode(PROB, EnvConfig(protocol="counted"))
    for strategy, text in ((3, "6 * 7 = 42, verified."), (TERMINATION, "42}.")):
        ep.plan(strategy)
        ep.write(text)
    assert _CALLS == {"lead": 2, "show": 2}  # one lead at plan(), one show at write(), per step
    assert ep.injected == ["Let me check the last result:", "The final answer is \\boxed{"]
    assert ep.shown[-1] == "The final answer is \\boxed{42}."
    ep.shown[-1] = "The final answer is \\boxed{41}."  # grading reads the stored step, not a re-render
    info = ep.outcome()["info"]
    assert _CALLS == {"lead": 2, "show": 2} and info["extracted"] == "41" and not info["correct"]


def test_the_env_reads_the_stored_injected_text_for_every_observation(monkeypatch):
    monkeypatch.setitem(render.PROTOCOLS, "counted", CountingProtocol("counted", separate_turns=True, leads=True))
    monkeypatch.setitem(_CALLS, "lead", 0)
    e = env(problems=[PROB], protocol="counted")
    e.reset(seed=0)
    for action in (3, "6 * 7 = 42, verified.", 1, "Part 1 is 6 * 7.", TERMINATION, "42}."):
        e.observe("planner"), e.observe("reasoner")
        e.step(action)
    assert _CALLS["lead"] == 3  # one per plan, however often the prompt is observed
    assert e.infos["reasoner"]["shown_steps"][-1] == "The final answer is \\boxed{42}."
    assert e.infos["reasoner"]["correct"]
