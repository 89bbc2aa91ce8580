"""Which config changes a resumed run accepts (pure dict logic; the CLI path is in test_cli_errors)."""

import logging

import pytest

from algos.resume_check import ResumeError, check_config_change, check_not_complete, differences, kind

SAVED = {"learner": "stackelberg", "model": {"planner": "toy", "reasoner": "toy"},
         "env": {"max_steps": 4, "weights": {"acc": 1.0}}, "data": {"source": "tiny", "size": 32},
         "train": {"steps": 4, "seed": 0, "save_every": 2, "groups_per_step": 2,
                   "grpo": {"group_size": 4, "kl_coef": 0.0}, "reasoner_optim": {"lr": 0.01}},
         "resume": ""}


def _with(key, value):
    import copy

    d = copy.deepcopy(SAVED)
    *path, last = key.split(".")
    node = d
    for p in path:
        node = node[p]
    node[last] = value
    return d


@pytest.mark.parametrize("key,value", [("model.reasoner", "default"), ("learner", "grpo"), ("train.seed", 1),
                                       ("train.grpo.group_size", 8), ("env.max_steps", 6), ("data.source", "gsm8k"),
                                       ("env.weights.acc", 2.0), ("train.groups_per_step", 4)])
def test_fixed_settings_refused_with_each_difference_listed(key, value):
    with pytest.raises(ResumeError, match=rf"different {key} \({key}: .* -> {value!r}\)"):
        check_config_change(SAVED, _with(key, value), allow_change=True)


def test_every_difference_is_listed():
    new = _with("train.seed", 3)
    new["model"]["reasoner"] = "default"
    with pytest.raises(ResumeError) as e:
        check_config_change(SAVED, new, allow_change=True)
    assert "model.reasoner: 'toy' -> 'default'" in str(e.value) and "train.seed: 0 -> 3" in str(e.value)


def test_lr_needs_allow_config_change(caplog):
    new = _with("train.reasoner_optim.lr", 0.001)
    with pytest.raises(ResumeError, match="train.reasoner_optim.lr: 0.01 -> 0.001 differ .* --allow-config-change"):
        check_config_change(SAVED, new, allow_change=False)
    with caplog.at_level(logging.WARNING, logger="rsim.resume"):
        assert check_config_change(SAVED, new, allow_change=True) == {"train.reasoner_optim.lr": (0.01, 0.001)}
    assert "train.reasoner_optim.lr: 0.01 -> 0.001" in caplog.text


def test_benign_changes_allowed_and_logged(caplog):
    new = _with("train.steps", 8)
    new["train"]["save_every"] = 5
    new["resume"] = "runs/x"
    with caplog.at_level(logging.WARNING, logger="rsim.resume"):
        diffs = check_config_change(SAVED, new, allow_change=False)
    assert set(diffs) == {"train.steps", "train.save_every"}  # "resume" is run control, not compared
    assert "train.steps: 4 -> 8" in caplog.text


def test_unknown_keys_are_fixed_and_identical_configs_pass():
    assert kind("train.some_new_setting") == "fixed" and kind("train.planner_optim.warmup_steps") == "tunable"
    assert differences(SAVED, SAVED) == {} and check_config_change(SAVED, SAVED, allow_change=False) == {}


@pytest.mark.parametrize("steps,done", [(3, True), (4, True), (5, False)])
def test_already_complete(steps, done):
    msg = check_not_complete(4, steps, "runs/x/checkpoints/step_00000004")
    assert (msg is not None) == done
    if done:
        assert "already complete" in msg and "step 4" in msg and f"train.steps={steps}" in msg
