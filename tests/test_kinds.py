"""A new problem kind is one module: a toy ``word`` kind, defined here, registered and played.

Its texts ask for ``ANSWER: <word>``; it grades the last such word, detects termination by it and stops
agents once it is written. Nothing outside this file is edited: the env, the protocols, the scripted
agents and the LLM reasoner's stop rule all ask the kind.
"""

from __future__ import annotations

import re

import pytest

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from rsim_env import EnvConfig, EnvGroup, Episode, Problem, kinds, load_problems, render
from rsim_env.strategies import TERMINATION

_ANSWER = re.compile(r"ANSWER:\s*([A-Za-z]+)")


class WordKind(kinds.Kind):
    """Riddles answered by one word."""

    name = "word"
    texts = kinds.KindTexts(
        inline_system="You solve riddles one step at a time, following the instruction in parentheses. "
                      "When told to conclude, write ANSWER: and one word.",
        stepwise_system="You solve riddles one short step at a time. When asked for the answer, write ANSWER: "
                        "and one word.",
        no_planner_system="You solve riddles. Think briefly, then write ANSWER: and one word.",
        termination_instruction="Give the answer: write ANSWER: and one word.",
        termination_lead="ANSWER:",
        termination_prompt="Conclude with ANSWER: and one word.",
    )

    def grade(self, problem, steps, check=None):
        words = _ANSWER.findall(steps[-1] if steps else "")
        word = words[-1] if words else None
        return kinds.Grade(word is not None and word.lower() == problem.answer.lower(), 1.0 if word else 0.0,
                           word, "ok" if word else "no_answer")

    def detect(self, step, shown, injected):
        found = super().detect(step, shown, injected)
        if _ANSWER.search(shown) and step.strip():
            found.add(TERMINATION)
        return found

    def stops(self, injected, text):
        return re.search(r"ANSWER:\s*[A-Za-z]+\W", injected + text) is not None

    def final_step(self, injected, answer):
        return f" {answer}." if injected.endswith("ANSWER:") else f"ANSWER: {answer}."

    def wrong_answer(self, gold):
        return "grey"


RIDDLE = "What colour is a clear sky at noon?"


@pytest.fixture
def word():
    with kinds.registered(WordKind()) as kind:
        yield kind
    assert "word" not in kinds.KINDS


def play(problem: Problem, protocol: str, p_correct: float = 1.0, **env_kwargs) -> dict:
    group = EnvGroup([problem], 1, protocol=protocol, **env_kwargs)
    agents = {"planner": FixedPlanner([3]), "reasoner": TemplateReasoner({RIDDLE: "blue"}, p_correct=p_correct)}
    group.reset(seed=0)
    for a in agents.values():
        a.reset(len(group))
    while not group.done:
        agent, ids, observations = group.observe()
        if agent == "reasoner":
            assert all(o["kind"] == "word" and o["system"] in {WordKind.texts.inline_system,
                       WordKind.texts.stepwise_system, WordKind.texts.no_planner_system} for o in observations)
        group.step(agents[agent].act(ids, observations))
    return group.results()[0]


@pytest.mark.parametrize("protocol", sorted(render.PROTOCOLS))
def test_a_toy_kind_registered_in_one_module_plays_in_every_protocol(word, protocol):
    problem = Problem("sky", RIDDLE, "blue", kind="word")
    info = play(problem, protocol)["info"]
    assert info["correct"] and info["extracted"] == "blue" and info["kind"] == "word"
    assert info["components"]["format"] == 1.0 and info["components"]["follow"] == 1.0
    if render.PROTOCOLS[protocol].leads:  # its termination lead-in was injected and is part of the answer
        assert info["injected"][-1] == "ANSWER:" and info["shown_steps"][-1] == "ANSWER: blue."
    wrong = play(problem, protocol, p_correct=0.0)["info"]
    assert not wrong["correct"] and wrong["extracted"] == "grey"
    chat = render.reasoner_chat(RIDDLE, ["a"], [3], TERMINATION, protocol, kind="word")
    assert "ANSWER:" in render.chat_to_text(chat) and "boxed" not in render.chat_to_text(chat)


def test_no_planner_mode_uses_the_kind_texts(word):
    info = play(Problem("sky", RIDDLE, "blue", kind="word"), "chat", planner=False)["info"]
    assert info["correct"] and info["protocol"] == "none"


def test_an_unregistered_kind_is_refused_with_the_valid_ones():
    problem = Problem("sky", RIDDLE, "blue", kind="word")  # plain data: the kind check is kinds.validate
    for refuse in (kinds.validate, lambda p: Episode(p, EnvConfig()), lambda p: load_problems([p])):
        with pytest.raises(ValueError, match=r"Problem.kind='word' is not one of \('math', 'code', 'rg'\)"):
            refuse(problem)
    with pytest.raises(ValueError, match="registered already"):
        kinds.register(kinds.get("math"))


def test_the_llm_reasoner_stops_by_the_kind_rule(word, scripted_lm):
    from agents.reasoner import Reasoner, ReasonerConfig
    from algos.rollout import rollout

    model = scripted_lm(["The sky scatters blue light, so ANSWER: blue. Then more rambling about clouds"])
    reasoner = Reasoner(model, model.tok, ReasonerConfig(max_answer_tokens=90, greedy=True, share_prefill=False,
                                                         cache="dynamic"))
    out = rollout(EnvGroup([Problem("sky", RIDDLE, "blue", kind="word")], 1, planner=False), reasoner, None, seed=0)
    info = out.trajectories[0]["info"]
    assert info["steps"] == ["The sky scatters blue light, so ANSWER: blue."] and info["correct"]


def test_no_code_outside_the_kinds_and_protocols_tests_a_kind_or_protocol_name():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    name_check = re.compile(r'(?:==|!=)\s*"(?:math|code|inline|chat|lead|chat\+lead)"|'
                            r'"(?:math|code|inline)"\s*(?:==|!=)|kind\s*(?:==|!=)')  # the kind-dispatch grep, and more
    found = [f"{path.relative_to(root)}:{i}: {line.strip()}"
             for folder in ("rsim_env", "agents", "algos")
             for path in sorted((root / folder).rglob("*.py")) if "kinds" not in path.relative_to(root).parts
             for i, line in enumerate(path.read_text().splitlines(), 1)
             # no exceptions (the viewer's run/eval source is Loaded.origin) but the served reasoner's HTTP endpoint,
             # whose values "chat"/"completions" name API routes, not turn protocols
             if name_check.search(line) and "endpoint" not in line]
    assert found == []
