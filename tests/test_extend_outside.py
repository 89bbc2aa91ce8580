"""A reward component and a strategy added from outside the package, through the public API only.

Nothing under ``rsim_env/`` is edited: the component is a :class:`rsim_env.Component` object (defined
here, or in a module of the user's written to ``tmp_path`` and named ``module:name``), the strategy a
:class:`rsim_env.Strategy` row registered for a ``with`` block. Each is seen to take effect in a played
episode's components and rewards, or in what the scripted family agents accept.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from rsim_env import Component, EnvConfig, EnvGroup, Facts, Problem, Rubric, Strategy, num_strategies
from rsim_env.strategies import TERMINATION, extra_strategy

ROOT = Path(__file__).resolve().parent.parent
PROB = Problem("p", "What is 6 * 7?", "42", "number")


def play(config: EnvConfig, plan: list[int] | tuple[int, ...] = (3,)) -> dict:
    """One episode: the planner plays ``plan`` then terminates; the scripted reasoner is right."""
    group = EnvGroup([PROB], 1, config=config)
    agents = {"planner": FixedPlanner(list(plan)), "reasoner": TemplateReasoner({PROB.question: "42"})}
    group.reset(seed=0)
    for a in agents.values():
        a.reset(len(group))
    while not group.done:
        agent, ids, observations = group.observe()
        group.step(agents[agent].act(ids, observations))
    return group.results()[0]


def brevity(f: Facts) -> float:
    """1 for a final step of at most 40 characters, falling to 0 at 80."""
    return max(0.0, min(1.0, 2.0 - len(f.final_step) / 40))


def test_a_reward_component_passed_in_is_logged_and_weighted_into_its_agents_reward():
    base = play(EnvConfig(max_steps=6))
    logged = play(EnvConfig(max_steps=6, components=(Component("brevity", brevity, ("reasoner",), weight=0.0),)))
    paid = play(EnvConfig(max_steps=6, components=(Component("brevity", brevity, ("reasoner",), weight=0.5),)))
    value = paid["info"]["components"]["brevity"]
    assert value == logged["info"]["components"]["brevity"] > 0 and "brevity" not in base["info"]["components"]
    assert logged["rewards"] == base["rewards"]  # weight 0: a logged metric
    assert math.isclose(paid["rewards"]["reasoner"], base["rewards"]["reasoner"] + 0.5 * value)
    assert paid["rewards"]["planner"] == base["rewards"]["planner"]  # the planner's sum does not list it


def test_a_planner_component_reads_the_plans_and_is_zero_without_a_planner():
    short = Component("short_plan", lambda f: -float(len(f.planned)), ("planner",), needs_plans=True, weight=2.0)
    base, out = play(EnvConfig(max_steps=6), (3, 1)), play(EnvConfig(max_steps=6, components=(short,)), (3, 1))
    assert out["info"]["components"]["short_plan"] == -3.0
    assert out["rewards"]["planner"] == base["rewards"]["planner"] - 6.0
    assert out["rewards"]["reasoner"] == base["rewards"]["reasoner"]
    solo = EnvGroup([PROB], 1, config=EnvConfig(planner=False, components=(short,)))
    solo.reset(seed=0)
    reasoner = TemplateReasoner({PROB.question: "42"})
    reasoner.reset(1)
    while not solo.done:
        _, ids, observations = solo.observe()
        solo.step(reasoner.act(ids, observations))
    assert solo.results()[0]["info"]["components"]["short_plan"] == 0.0


def test_a_component_named_by_module_spec_loads_from_the_users_own_file(tmp_path):
    """Where objects cannot go (``--set env.components=...``, a saved config), a ``module:name`` spec does."""
    (tmp_path / "my_rewards.py").write_text(textwrap.dedent('''
        from rsim_env import Component

        boxed = Component("boxed_once", lambda f: float(f.final_step.count("\\\\boxed{") == 1), ("reasoner",), weight=1.0)
    '''))
    code = textwrap.dedent('''
        from rsim_env import EnvConfig
        from rsim_env.rewards import rubric
        cfg = EnvConfig(components=("my_rewards:boxed",))
        assert cfg.rubric.names[-1] == "boxed_once" and cfg.rubric.components[-1].weight == 1.0
        assert cfg.components == ("my_rewards:boxed",)  # the config keeps the spec: it saves as JSON
        for bad in ("my_rewards", "my_rewards:nothing", "no_such_module:x"):
            try:
                EnvConfig(components=(bad,))
            except ValueError as e:
                print("refused", bad)
    ''')
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [f"refused {b}" for b in ("my_rewards", "my_rewards:nothing", "no_such_module:x")]


@pytest.mark.parametrize("components,match", [
    ((Component("acc", brevity, ("reasoner",)),), "appear twice"),
    ((lambda f: 1.0,), "Component objects"),
], ids=["repeated-name", "not-a-component"])
def test_a_bad_component_is_refused_when_the_config_is_built(components, match):
    with pytest.raises((TypeError, ValueError), match=match):
        EnvConfig(components=components)


@pytest.mark.parametrize("kwargs,match", [
    ({"name": "two words"}, "identifier"), ({"agents": ("critic",)}, "subset"), ({"weight": float("nan")}, "finite"),
], ids=["name", "agents", "weight"])
def test_component_fields_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Component(**{"name": "x", "fn": brevity, "agents": ("reasoner",), **kwargs})


def test_a_component_that_crashes_raises_instead_of_scoring_zero():
    def broken(f: Facts) -> float:
        raise ZeroDivisionError("bug in my reward")

    with pytest.raises(ZeroDivisionError, match="bug in my reward"):
        play(EnvConfig(max_steps=6, components=(Component("broken", broken, ("reasoner",)),)))


def test_the_paper_rubric_is_made_of_the_same_component_objects():
    paper = EnvConfig().rubric
    assert isinstance(paper, Rubric) and paper.names == ("acc", "format", "follow", "terminal", "penalty")
    assert all(isinstance(c, Component) and c.weight == 1.0 for c in paper.components)
    assert [c.name for c in paper.terms("planner")] == ["acc", "terminal", "penalty"]


ANALOGY = Strategy(
    index=9, name="analogy", prompt="Compare the problem with a simpler one you know.",
    instruction="Think of a similar, simpler problem and say what it teaches here.",
    lead="This is like a simpler problem:", example="It resembles 6 * 5 = 30, plus one more 6 each time.",
    patterns=(r"\bresembles?\b", r"\bis like\b", r"\banalog"),
)


def test_a_strategy_registered_later_is_accepted_by_a_family_and_the_plan_tree():
    """A Family's plan and the plan tree read the strategy count when used, so a 10th row counts."""
    from agents.replay.plan_tree import game_plans
    from agents.scripted.families import Family, FamilyReasoner, family_problems

    with pytest.raises(ValueError, match="strategy indices 0..8"):
        Family("like", "Add {a} to {b}.", "+", (9, TERMINATION))
    with extra_strategy(ANALOGY):
        assert num_strategies() == 10
        fam = Family("like", "Add {a} to {b}.", "+", (9, TERMINATION))
        assert (9, TERMINATION) in game_plans(2)
        problems = family_problems([fam], 1, seed=0)
        group = EnvGroup(problems, 1, max_steps=4)
        agents = {"planner": FixedPlanner([9]), "reasoner": FamilyReasoner(problems, [fam])}
        group.reset(seed=0)
        for a in agents.values():
            a.reset(len(group))
        while not group.done:
            agent, ids, observations = group.observe()
            group.step(agents[agent].act(ids, observations))
        info = group.results()[0]["info"]
        assert info["strategies"] == [9, TERMINATION] and info["correct"] and 9 in info["detected"][0]


def strategy_count_copies(*packages: str) -> list[str]:
    """Files under ``packages`` that name ``NUM_STRATEGIES`` (this checker's own file aside)."""
    return [str(p.relative_to(ROOT)) for pkg in packages for p in (ROOT / pkg).rglob("*.py")
            if p.name != Path(__file__).name and re.search(r"\bNUM_STRATEGIES\b", p.read_text(encoding="utf-8"))]


def test_no_copy_of_the_strategy_count_is_imported_anywhere():
    """The count is read with num_strategies() when needed; a module-level copy would miss registered rows (the
    studies are held to it in studies/tests/test_study_hygiene.py)."""
    assert strategy_count_copies("rsim_env", "agents", "algos", "benchmarks", "tests", "tools") == []


def test_a_hub_loader_a_code_loader_and_a_source_added_from_outside_are_data_specs(monkeypatch):
    """``LOADERS`` and ``SOURCES`` are read when a spec is resolved: an entry set from your code is a spec."""
    from rsim_env import load_problems
    from rsim_env.sources import data, loaders

    def squares(source=None, split="test", limit=None):
        return [Problem(f"sq/{i}", f"What is {i} squared?", str(i * i)) for i in range(limit or 3)]

    def doubler(source=None, split="test", limit=None):
        return [Problem("dbl/0", "Write `double(x)` returning 2 * x.", "def double(x):\n    return 2 * x\n",
                        kind="code", entry_point="double", tests="def check(candidate):\n    assert candidate(2) == 4\n")]

    def products(rest, a):
        return [Problem(f"products/{i}", f"What is {i} * 3?", str(3 * i)) for i in range(a.limit or 2)]

    monkeypatch.setitem(loaders.LOADERS, "squares", squares)
    monkeypatch.setitem(loaders.LOADERS, "doubler", doubler)
    monkeypatch.setitem(data.SOURCES, "products", products)
    assert [p.answer for p in load_problems("squares", limit=2)] == ["0", "1"]
    assert [p.kind for p in load_problems("doubler")] == ["code"]
    assert [p.question for p in load_problems("mix:products,squares", limit=2)]
    assert {"squares", "doubler", "products"} <= set(data.spec_help().split(" | "))
