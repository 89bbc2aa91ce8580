"""``agents.registry.build_agent``: every spec form, for both roles, and its errors."""

from __future__ import annotations

import pytest

from agents.registry import PREFIXES, AgentContext, Built, build_agent, lazy
from rsim_env.problem import Problem

PROBLEMS = [Problem(id="p", question="What is 1 + 1?", answer="2")]


def make_reasoner(ctx):
    """A plug-in factory (spec ``tests.test_registry:make_reasoner``)."""
    from agents.scripted.policies import TemplateReasoner

    return TemplateReasoner(oracle={"q": "1"}, seed=ctx.seed)


def not_an_agent(ctx):
    return object()


@pytest.mark.parametrize("spec,role,cls,kind", [
    ("tiny", "reasoner", "Reasoner", "tiny"), ("tiny", "planner", "Planner", "tiny"),
    ("toy", "reasoner", "ToyReasoner", "toy"), ("toy", "planner", "ToyPlanner", "toy"),
    ("template", "reasoner", "TemplateReasoner", "template"), ("template:0.25", "reasoner", "TemplateReasoner", "template"),
    ("untrained:tiny", "planner", "Planner", "untrained"),
    ("tests.test_registry:make_reasoner", "reasoner", "TemplateReasoner", "plugin"),
], ids=lambda x: str(x))
def test_spec_forms(spec, role, cls, kind):
    agent, info = build_agent(spec, AgentContext(role, problems=PROBLEMS))
    assert type(agent).__name__ == cls and info["kind"] == kind
    assert agent.role == role


def test_template_probability_and_oracle():
    agent, info = build_agent("template:0.25", AgentContext("reasoner", problems=PROBLEMS))
    assert info["p_correct"] == 0.25 and agent.oracle == {"What is 1 + 1?": "2"}


def test_saved_planner_and_untrained_control(tmp_path):
    from agents.hf.loading import tiny_model
    from agents.planners.llm import Planner

    saved = Planner(*tiny_model("backbone", seed=3))
    saved.save_pretrained(tmp_path / "p")
    loaded, info = build_agent(str(tmp_path / "p"), AgentContext("planner"))
    assert info["kind"] == "save_pretrained"
    assert all((a == b).all() for a, b in zip(saved.head.parameters(), loaded.head.parameters()))
    fresh, info = build_agent(f"untrained:{tmp_path / 'p'}", AgentContext("planner"))
    assert info["kind"] == "untrained" and not (fresh.head.weight == saved.head.weight).all()


def test_both_agents_out_of_a_run_dir(tmp_path):
    """A run of `rsim train --preset tiny` (toy agents) gives back both trained agents."""
    from agents.runs import find_checkpoint
    from algos.cli import main as rsim

    out = rsim(["train", "--preset", "tiny", "--steps", "1", "--out", str(tmp_path)])
    for role in ("planner", "reasoner"):
        agent, info = build_agent(str(tmp_path), AgentContext(role))
        assert info["kind"] == "checkpoint" and info["step"] == 1 and info["base"] == "toy"
        trained = out["params"][role]
        assert all((a == b).all() for a, b in zip(trained.parameters(), agent.module.parameters()))
    assert find_checkpoint(tmp_path) == find_checkpoint(tmp_path / "checkpoints")


@pytest.mark.parametrize("spec,role,err,match", [
    ("", "reasoner", ValueError, "non-empty"),
    ("template", "planner", ValueError, "scripted reasoner"),
    ("template:x", "reasoner", ValueError, "probability"),
    ("untrained:", "planner", ValueError, "needs a model spec"),
    ("tests.test_registry:nope", "reasoner", ValueError, "cannot import"),
    ("tests.test_registry:not_an_agent", "reasoner", TypeError, "not a reasoner agent"),
], ids=["empty", "template-planner", "template-p", "untrained-empty", "plugin-missing", "plugin-not-agent"])
def test_spec_errors(spec, role, err, match):
    with pytest.raises(err, match=match):
        build_agent(spec, AgentContext(role))


def test_empty_dir_is_no_agent(tmp_path):
    with pytest.raises(ValueError, match="neither a saved planner"):
        build_agent(str(tmp_path), AgentContext("planner"))


def test_a_new_kind_is_one_prefix_entry(monkeypatch):
    """The documented extension point: one builder module + one PREFIXES line."""
    monkeypatch.setitem(PREFIXES, "echo", lazy("tests.test_registry", "build_echo"))
    agent, info = build_agent("echo:hello", AgentContext("reasoner"))
    assert info == {"kind": "echo", "text": "hello"} and agent.act([0], [{}]) == ["hello"]


class _Echo:
    role = "reasoner"

    def __init__(self, text):
        self.text = text

    def reset(self, n):
        pass

    def act(self, ids, obs):
        return [self.text for _ in ids]

    def records(self):
        return []


def build_echo(rest, ctx):
    return Built(_Echo(rest), {"kind": "echo", "text": rest})


def test_run_dir_on_another_base(tmp_path):
    """``RUN_DIR#base=SPEC`` reads the run's trained weights onto SPEC (e.g. an engine-trained run evaluated on
    torch); a base they do not fit, an unknown option and a dir that is no run are refused by name."""
    from agents.registry import check_spec
    from algos.cli import main as rsim

    out = rsim(["train", "--preset", "tiny", "--steps", "1", "--out", str(tmp_path / "run")])
    run = tmp_path / "run"
    agent, info = build_agent(f"{run}#base=toy", AgentContext("reasoner"))
    assert info["kind"] == "checkpoint" and info["step"] == 1
    assert all((a == b).all() for a, b in zip(out["params"]["reasoner"].parameters(), agent.module.parameters()))
    check_spec(f"{run}#base=toy", "reasoner")
    with pytest.raises(ValueError, match="does not load"):
        build_agent(f"{run}#base=tiny", AgentContext("reasoner"))
    with pytest.raises(ValueError, match="only base=SPEC"):
        build_agent(f"{run}#threads=2", AgentContext("reasoner"))
    with pytest.raises(ValueError, match="not a run or checkpoint dir"):
        check_spec(f"{tmp_path}#base=toy", "reasoner")
