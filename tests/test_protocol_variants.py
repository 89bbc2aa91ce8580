"""The strategy-as-behaviour options ``chat+lead:action`` and ``chat+lead:exemplar`` (rsim_env/protocols.py).

Both play whole episodes; the action leads are detected as their own strategies; the exemplar's worked
example is stable across processes, varies with the question and holds only numbers >= 100; termination
keeps the kind's texts; the default protocol is untouched.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from rsim_env import EnvConfig, EnvGroup, Problem, env, render
from rsim_env.protocols import (
    ACTION_TEXTS, DEFAULT_PROTOCOL, EXEMPLAR_PREFIX, EXEMPLARS, PROTOCOLS, Protocol, copied_numbers, exemplar,
    exemplar_numbers, strategy_texts)
from rsim_env.strategies import STRATEGIES, TERMINATION, Strategy, by_name, detect, extra_strategy

VARIANTS = ("chat+lead:action", "chat+lead:exemplar")
PROB = Problem("p", "What is 6 * 7?", "42", "number")
BUILTIN = [s for s in STRATEGIES if not s.terminates]
PLAN = [s.index for s in BUILTIN]  # every non-terminating strategy once, then termination


def play(protocol: str, plan: list[int]) -> dict:
    group = EnvGroup([PROB], 1, protocol=protocol, max_steps=len(plan) + 1)
    agents = {"planner": FixedPlanner(plan), "reasoner": TemplateReasoner({PROB.question: "42"})}
    group.reset(seed=0)
    for a in agents.values():
        a.reset(len(group))
    while not group.done:
        agent, ids, observations = group.observe()
        group.step(agents[agent].act(ids, observations))
    return group.results()[0]


@pytest.mark.parametrize("protocol", VARIANTS)
def test_a_variant_plays_a_full_episode_with_every_strategy(protocol):
    info = play(protocol, PLAN)["info"]
    assert info["strategies"] == PLAN + [TERMINATION] and info["correct"] and info["protocol"] == protocol
    p = PROTOCOLS[protocol]
    assert info["injected"] == [p.lead(i, s) for i, s in enumerate(info["strategies"])]
    if protocol == "chat+lead:action":
        assert info["injected"][:-1] == [ACTION_TEXTS[s.name][1] for s in BUILTIN]
    else:  # the exemplar variant injects the default leads
        assert info["injected"] == [PROTOCOLS["chat+lead"].lead(i, s) for i, s in enumerate(info["strategies"])]


@pytest.mark.parametrize("protocol", VARIANTS)
def test_a_variant_is_selectable_and_its_observations_fit_their_spaces(protocol):
    assert EnvConfig(protocol=protocol).protocol == protocol
    e = env(problems=[PROB], protocol=protocol, max_steps=len(PLAN) + 1)
    e.reset(seed=0)
    plan = iter(PLAN + [TERMINATION])
    while e.agents:
        agent = e.agent_selection
        obs = e.observe(agent)
        assert e.observation_space(agent).contains(obs), (agent, obs)
        if agent == "reasoner":
            assert obs["protocol"] == protocol
        if e.terminations[agent] or e.truncations[agent]:
            e.step(None)
        else:
            e.step(next(plan) if agent == "planner" else "Then we combine them: 6 * 7 = 42. \\boxed{42}")
    assert next(plan, None) is None  # every planned strategy was played


@pytest.mark.parametrize("name", list(ACTION_TEXTS))
def test_every_action_lead_is_detected_as_its_own_strategy(name):
    row = by_name(name)
    instruction, lead = ACTION_TEXTS[name]
    assert row.index in detect(lead), (name, lead, detect(lead))
    p = PROTOCOLS["chat+lead:action"]
    assert p.lead(3, row.index) == lead and p.instruction(PROB.question, 3, row.index) == instruction
    assert p.instruction(PROB.question, 0, row.index) == f"{PROB.question}\n\n{instruction}"


def test_every_builtin_strategy_has_action_texts_and_an_exemplar_pool():
    assert set(ACTION_TEXTS) == set(EXEMPLARS) == {s.name for s in BUILTIN}
    assert ACTION_TEXTS["continuation"] == strategy_texts(by_name("continuation").index)[1:]


@pytest.mark.parametrize("name", list(EXEMPLARS))
def test_every_exemplar_holds_only_numbers_of_at_least_100(name):
    pool = EXEMPLARS[name]
    assert len(pool) >= 8 and len(set(pool)) == len(pool)
    for example in pool:
        numbers = exemplar_numbers(example)
        assert numbers and all(float(n) >= 100 for n in numbers), example


@pytest.mark.parametrize("kind", ["math", "code"])
@pytest.mark.parametrize("protocol", VARIANTS)
def test_termination_keeps_the_kinds_texts(protocol, kind):
    base, p = PROTOCOLS["chat+lead"], PROTOCOLS[protocol]
    for r in (0, 3):
        assert p.instruction(PROB.question, r, TERMINATION, kind) == base.instruction(PROB.question, r, TERMINATION, kind)
        assert p.lead(r, TERMINATION, kind) == base.lead(r, TERMINATION, kind)
    assert p.texts(TERMINATION, kind) == strategy_texts(TERMINATION, kind)[1:]


QUESTIONS = [f"Tom has {n} apples and buys {n + 3} more. How many apples does he have?" for n in range(40)]
_PICKS = """
from rsim_env.protocols import PROTOCOLS
import json, sys
p = PROTOCOLS["chat+lead:exemplar"]
qs = [f"Tom has {n} apples and buys {n + 3} more. How many apples does he have?" for n in range(40)]
sys.stdout.write(json.dumps([p.instruction(q, r, s) for q in qs for r in (0, 2) for s in (0, 3)]))
"""


def test_the_exemplar_is_stable_across_processes_and_varies_with_the_question():
    p = PROTOCOLS["chat+lead:exemplar"]
    here = [p.instruction(q, r, s) for q in QUESTIONS for r in (0, 2) for s in (0, 3)]
    root = str(Path(__file__).resolve().parents[1])
    for seed in ("0", "12345"):  # a different str hash seed: hash() would move the pick, CRC-32 does not
        out = subprocess.run([sys.executable, "-c", _PICKS], capture_output=True, text=True, check=True, cwd=root,
                             env={"PYTHONPATH": root, "PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"})
        assert json.loads(out.stdout) == here
    validation = by_name("validation").index
    picks = {exemplar("validation", q, 2) for q in QUESTIONS}
    assert len(picks) >= 6  # 40 questions spread over the pool of 8
    assert len({p.instruction(q, 2, validation) for q in QUESTIONS}) == len(picks)
    assert all(x.startswith(EXEMPLAR_PREFIX) and x[len(EXEMPLAR_PREFIX):] in EXEMPLARS["validation"] for x in picks)


def test_the_exemplar_follows_the_default_instruction_in_its_user_turn():
    p, base = PROTOCOLS["chat+lead:exemplar"], PROTOCOLS["chat+lead"]
    validation = by_name("validation").index
    for r in (0, 1):
        text = p.instruction(PROB.question, r, validation)
        head = base.instruction(PROB.question, r, validation)
        assert text == f"{head}\n{exemplar('validation', PROB.question, r)}"
    assert p.lead(1, validation) == base.lead(1, validation)


def test_copied_numbers_finds_a_step_that_copies_the_example():
    example = exemplar("validation", PROB.question, 1)
    a = sorted(exemplar_numbers(example))[0]
    assert copied_numbers(f"So the result is {a}.", example, PROB.question) == {a}
    assert copied_numbers("6 * 7 = 42; check: 42 / 7 = 6.", example, PROB.question) == set()
    assert copied_numbers(f"{a} apples", example, f"There are {a} apples.") == set()  # the question's own number
    assert exemplar_numbers("1,234 and 3.50 and 7.") == {"1234", "3.5", "7"}
    assert exemplar_numbers("1,2,3 then 100.0, 475") == {"1", "2", "3", "100", "475"}


ANALOGY = Strategy(index=9, name="analogy", prompt="Compare with a simpler problem.",
                   instruction="Think of a similar, simpler problem.", lead="This is like a simpler problem:",
                   example="It resembles 6 * 5 = 30.", patterns=(r"\bresembles?\b", r"\bis like\b"))


def test_a_row_without_variant_texts_keeps_its_own():
    with extra_strategy(ANALOGY):
        action, ex = PROTOCOLS["chat+lead:action"], PROTOCOLS["chat+lead:exemplar"]
        assert action.texts(9) == (ANALOGY.instruction, ANALOGY.lead)
        assert ex.instruction(PROB.question, 1, 9) == ANALOGY.instruction and ex.lead(1, 9) == ANALOGY.lead


def test_the_default_protocol_is_unchanged():
    assert DEFAULT_PROTOCOL == "chat+lead" and EnvConfig().protocol == "chat+lead"
    base = PROTOCOLS["chat+lead"]
    assert type(base) is Protocol and base.separate_turns and base.leads
    for kind in ("math", "code"):
        for s in STRATEGIES:
            _, instruction, lead = strategy_texts(s.index, kind)
            assert base.texts(s.index, kind) == (instruction, lead)
            assert base.instruction(PROB.question, 2, s.index, kind) == instruction
    assert render.INSTRUCTIONS[3] == "Check your last result: recompute it or substitute it back."
    assert render.LEADS[3] == "Let me check the last result:"
    # the variants' texts are no echo/novelty references: the default protocol's scores do not move
    injected = render.injected_texts()
    assert not any(t in injected for name, pair in ACTION_TEXTS.items() if name != "continuation" for t in pair)
    assert not any(EXEMPLAR_PREFIX.strip() in t for t in injected)


def test_the_reasoner_prompt_bound_covers_the_variants():
    bound = render.max_reasoner_chars(200, 10, 300)
    longest = max(len(x) for p in PROTOCOLS.values() for x in p.instructions("math"))
    assert longest > max(len(x) for x in render.INSTRUCTIONS)  # the exemplar's instructions are the longest
    msgs = PROTOCOLS["chat+lead:exemplar"].chat("q" * 200, ["x" * 300] * 9, PLAN + [0], TERMINATION)
    assert len(render.chat_to_text(msgs)) <= bound
