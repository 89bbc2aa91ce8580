"""``rsim train`` and ``rsim eval`` accept the same agent and data specs (through the CLI)."""

from __future__ import annotations

import pytest

from algos.cli import main as rsim

SMALL = ["--set", "train.groups_per_step=1", "--set", "train.grpo.group_size=2", "--set", "env.max_steps=2",
         "--set", "reasoner.max_step_tokens=4", "--set", "reasoner.max_answer_tokens=8", "--set", "train.progress=false"]


@pytest.mark.parametrize("planner,reasoner,data", [
    ("tiny", "tiny", "rg:basic_arithmetic"),  # the real LLM agent classes on tiny random models
    ("toy", "template:0.5", "tiny"),  # toy planner, scripted (frozen) reasoner
], ids=["tiny-llms", "toy-template"])
def test_same_specs_train_then_eval(tmp_path, planner, reasoner, data):
    learner = "stackelberg" if reasoner == "tiny" else "planner_only"
    run = tmp_path / "run"
    out = rsim(["train", "--learner", learner, "--planner", planner, "--reasoner", reasoner, "--data", data,
                "--steps", "1", "--out", str(run), *SMALL])
    assert out["steps"] == 1
    res = rsim(["eval", "--planner", str(run), "--reasoner", str(run) if reasoner == "tiny" else reasoner,
                "--data", data, "--limit", "2", "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=4", "--modes", "trained",
                "--no-progress"])
    assert res["planner"]["kind"] == "checkpoint" and res["planner"]["base"] == planner
    assert res["planner"]["plugin"] is False  # the reasoner it was trained with (same run, or same spec)
    assert res["modes"]["trained"]["samples"] == 2
    # and the same specs, untrained, straight into eval
    res = rsim(["eval", "--planner", f"untrained:{planner}", "--reasoner", reasoner, "--data", data, "--limit", "2",
                "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=4", "--modes", "trained", "--no-progress"])
    assert res["planner"]["kind"] == "untrained"


def test_train_accepts_every_eval_hub_set():
    for name in ("gsm8k", "math", "math500", "aime2024", "mmlu_pro", "theoremqa"):
        out = rsim(["train", "--data", name, "--print-config"])
        assert out["config"]["data"]["source"] == name


@pytest.mark.parametrize("argv", [["train", "--help"], ["eval", "--help"]], ids=["train", "eval"])
def test_help_lists_the_spec_forms(argv, capsys):
    with pytest.raises(SystemExit):
        rsim(argv)
    text = capsys.readouterr().out
    for form in ("template[:p]", "untrained:SPEC", "module:factory", "rg:TASK", "mmlu_pro", ".parquet"):
        assert form in text, (argv, form)


def test_env_settings_are_settable(tmp_path):
    out = rsim(["train", "--preset", "tiny", "--set", "env.weights.follow=0.25", "--set", "env.check.timeout_s=7",
                "--set", "env.max_steps=3", "--print-config"])
    env = out["config"]["env"]
    assert env["weights"]["follow"] == 0.25 and env["check"]["timeout_s"] == 7.0 and env["max_steps"] == 3


def test_reward_weights_reach_the_training_env(tmp_path):
    zero = ["--set", "env.weights.acc=0", "--set", "env.weights.format=0", "--set", "env.weights.follow=0"]
    out = rsim(["train", "--preset", "tiny", "--steps", "1", "--out", str(tmp_path), *zero])
    h = out["history"][0]
    assert h["reasoner/reward"] == 0.0 and h["rewards/follow/mean"] > 0  # components still logged, weighted out
