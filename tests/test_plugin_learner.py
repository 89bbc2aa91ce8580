"""``--learner package.module:factory``: a learner written outside the package trains without editing it
(docs/extending.md, "a learner from your own package")."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from accelerate.utils import set_seed

from algos import cli

LEARNER = '''
from dataclasses import dataclass

from algos.learners import SharedObjective, UpdateSchedule

CALLS = []


@dataclass(frozen=True)
class LeaveOneOut(SharedObjective):
    """Reasoner-only; each completion's baseline is the mean reward of the other G-1 of its group."""

    name: str = "leave_one_out"
    env_planner: bool = False
    trained: tuple = ("reasoner",)

    def plan(self, step):
        return UpdateSchedule(stage=0, lam=0.0, update={"reasoner": True}, lr_scale={"reasoner": 1.0})

    def advantages(self, rewards, group_size, cfg):
        CALLS.append(group_size)
        r = rewards.view(-1, group_size)
        return (r - (r.sum(1, keepdim=True) - r) / (group_size - 1)).view(-1)


def make(cfg):
    return LeaveOneOut()


class Incomplete:
    name, env_planner, trained = "incomplete", False, ("reasoner",)


def incomplete(cfg):
    return Incomplete()
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """``my_learners`` importable from ``tmp_path``, outside the package (and gone after the test)."""
    (tmp_path / "my_learners.py").write_text(textwrap.dedent(LEARNER))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_learners", raising=False)
    yield tmp_path
    sys.modules.pop("my_learners", None)


def _flat(module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in module.parameters()]).clone()


def test_a_learner_from_outside_the_package_trains(plugin):
    argv = ["train", "--preset", "tiny", "--learner", "my_learners:make", "--steps", "2", "--out", str(plugin / "run"),
            "--set", "train.progress=false"]
    _, cfg, _ = cli.parse(argv)
    set_seed(cfg.train.seed)
    agents = cli.build_agents(cfg, cli.build_learner(cfg), "cpu")
    assert set(agents) == {"reasoner"}, "env_planner=False: no planner is built"
    before = _flat(agents["reasoner"].module)
    out = cli.main(argv)
    assert out["steps"] == 2 and set(out["params"]) == {"reasoner"}
    assert not torch.equal(_flat(out["params"]["reasoner"]), before), "the reasoner's parameters did not change"
    assert sys.modules["my_learners"].CALLS == [cfg.train.grpo.group_size] * 2  # the learner's own hook ran
    saved = json.loads((Path(out["checkpoint"]) / "config.json").read_text())
    assert saved["learner"] == "my_learners:make"


@pytest.mark.parametrize("spec,error,match", [
    ("my_learners:incomplete", TypeError, r"lacks \['plan', 'advantages', 'loss'\].*SharedObjective"),
    ("my_learners:nowhere", ValueError, "cannot import 'nowhere'"),
    ("ppo", ValueError, "RunConfig.learner='ppo' is invalid.*package.module:factory"),
], ids=["incomplete", "missing", "unknown-name"])
def test_a_bad_learner_is_named_with_the_fix(plugin, spec, error, match):
    with pytest.raises(error, match=match):
        _, cfg, _ = cli.parse(["train", "--preset", "tiny", "--learner", spec])
        cli.build_learner(cfg)
