"""Checks that run before any model is loaded: output dir, resume point, model specs."""

import json

import pytest
import torch

from algos.checkpoint import CheckpointError, save_checkpoint
from agents.registry import check_spec
from algos.preflight import check_output_dir, read_resume_point


def _run(tmp_path, steps=(2, 4)):
    m = {"reasoner": torch.nn.Linear(2, 1)}
    o = {"reasoner": torch.optim.AdamW(m["reasoner"].parameters())}
    return [save_checkpoint(tmp_path / "run" / "checkpoints", s, m, o, {}, {"train": {"steps": s}}) for s in steps]


def test_output_dir_is_a_file(tmp_path):
    f = tmp_path / "out.txt"
    f.write_text("x")
    with pytest.raises(ValueError, match="is a file; pass a directory"):
        check_output_dir(f, None)
    with pytest.raises(ValueError, match="cannot be created: .* is a file"):
        check_output_dir(f / "sub", None)


def test_fresh_run_into_a_dir_holding_checkpoints_is_refused(tmp_path):
    cks = _run(tmp_path)
    with pytest.raises(ValueError, match=r"already holds the checkpoints of a run \(newest step_00000004\); continue it "
                                         r"with --resume"):
        check_output_dir(tmp_path / "run", None)
    assert check_output_dir(tmp_path / "run", cks[-1]) == tmp_path / "run"  # resuming that run: fine
    assert check_output_dir(tmp_path / "new" / "deeper", None) == tmp_path / "new" / "deeper"


def test_resume_point_read_from_json_only_with_fallback(tmp_path):
    cks = _run(tmp_path)
    assert read_resume_point(tmp_path / "run")[1:] == ({"train": {"steps": 4}}, 4)
    (cks[1] / "config.json").write_text("{")
    assert read_resume_point(tmp_path / "run")[0] == cks[0]
    with pytest.raises(CheckpointError, match="config.json: not valid JSON"):
        read_resume_point(cks[1])


@pytest.mark.parametrize("where,msg", [("missing", "does not exist"), ("file", "is a file"),
                                       ("empty", "no complete checkpoint")])
def test_resume_point_errors(tmp_path, where, msg):
    p = tmp_path / where
    if where == "file":
        p.write_text("x")
    elif where == "empty":
        p.mkdir()
    with pytest.raises(CheckpointError, match=msg):
        read_resume_point(p)


def test_state_step_of_wrong_type(tmp_path):
    (ck,) = _run(tmp_path, steps=(2,))
    (ck / "state.json").write_text(json.dumps({"step": "2"}))
    with pytest.raises(CheckpointError, match="'step' should be int, found str"):
        read_resume_point(ck)


@pytest.mark.parametrize("spec", ["./no-such-model", "/nonexistent/model", "~/no/such/model", "runs/no-such-run"],
                         ids=["relative", "absolute", "home", "org-is-a-local-dir"])
def test_missing_model_path(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(ValueError, match=rf"reasoner spec '{spec}': no such file or directory"):
        check_spec(spec, "reasoner")


@pytest.mark.parametrize("spec", ["default", "toy", "tiny", "template:0.5", "Qwen/Qwen2.5-0.5B-Instruct",
                                  "untrained:default", "pkg.mod:factory"])
def test_valid_specs_pass_without_loading(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    check_spec(spec, "reasoner")


def test_untrained_of_a_missing_path():
    with pytest.raises(ValueError, match="planner spec './gone': no such file"):
        check_spec("untrained:./gone", "planner")


def test_uncached_hub_id_while_offline(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError, match="not in the hub cache, and HF_HUB_OFFLINE is set"):
        check_spec("nobody-xyz/no-such-model-123", "planner")
