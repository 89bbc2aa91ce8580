"""Continual training of the planner: ``rsim train --init-planner RUN_DIR`` starts from exactly the
planner an earlier run saved (backbone + head) and trains it further on new data (math -> code)."""

import pytest
import torch
from safetensors.torch import load_file

from agents.runs import latest, weights_file
from algos.cli import build_agents, main, parse
from algos.learners import build_learner
from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")

FIRST = ["train", "--learner", "planner_only", "--planner", "tiny", "--reasoner", "template:0.5", "--data", "tiny",
         "--steps", "2", "--set", "train.groups_per_step=1", "--set", "train.grpo.group_size=2", "--set", "env.max_steps=2",
         "--set", "data.size=8", "--set", "reasoner.max_step_tokens=4", "--set", "train.save_every=1",
         "--set", "train.skip_zero_std_groups=false", "--set", "train.progress=false"]


@pytest.fixture(scope="module")
def math_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("math_run")
    main(FIRST + ["--out", str(out)])
    return out


def _second(math_run, out, *extra):
    return ["train", "--learner", "planner_only", "--init-planner", str(math_run), "--reasoner", "template:0.5",
            "--data", "code_tasks", "--out", str(out), "--steps", "1", "--set", "train.groups_per_step=1",
            "--set", "train.grpo.group_size=2", "--set", "env.max_steps=2", "--set", "data.size=8",
            "--set", "reasoner.max_step_tokens=4", "--set", "train.skip_zero_std_groups=false",
            "--set", "train.progress=false", *extra]


def test_init_planner_loads_the_saved_planner_exactly(math_run, tmp_path):
    _, cfg, _ = parse(_second(math_run, tmp_path))
    assert cfg.model.planner == str(math_run) and cfg.data.source == "code_tasks"
    planner = build_agents(cfg, build_learner(cfg), torch.device("cpu"))["planner"]
    saved = load_file(str(weights_file(latest(math_run / "checkpoints"), "planner")))
    state = planner.module.state_dict()
    assert set(saved) == set(state) and any("head" in k for k in saved)
    assert all(torch.equal(state[k], saved[k]) for k in saved)


def test_continued_planner_trains_further_on_code(math_run, tmp_path):
    saved = load_file(str(weights_file(latest(math_run / "checkpoints"), "planner")))
    out = main(_second(math_run, tmp_path))
    after = out["params"]["planner"].state_dict()
    assert out["steps"] == 1
    assert any(not torch.equal(after[k], saved[k]) for k in saved)  # it was trained, from the saved start


@pytest.mark.parametrize("make,match", [
    (lambda tmp, run: str(tmp / "nope"), "no such directory"),
    (lambda tmp, run: str(tmp), "no complete checkpoint"),
], ids=["missing", "not-a-run"])
def test_init_planner_errors(math_run, tmp_path, make, match):
    with pytest.raises(ValueError, match=match):
        parse(_second(make(tmp_path, math_run), tmp_path / "o"))


def test_init_planner_conflicts_with_planner(math_run, tmp_path):
    with pytest.raises(ValueError, match="pass one of them"):
        parse(_second(math_run, tmp_path) + ["--planner", "tiny"])
