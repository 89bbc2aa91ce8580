"""Fault injection through `rsim train` with the tiny preset: resume checks, NaN steps, one-line CLI errors.

Everything runs in-process through the console boundary (``algos.cli.main`` with no argument, as the
``rsim`` script calls it), so each case costs a tiny-preset run of a second or two.
"""

import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import algos.cli as cli
import algos.trainer as trainer_mod
import algos.grpo as grpo_mod
from algos.checkpoint import list_checkpoints

ROOT = Path(__file__).resolve().parents[1]
QUIET = ["--set", "train.progress=false"]


def rsim(monkeypatch, capsys, *argv):
    """Run ``rsim *argv`` as the console script does; return (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["rsim", *argv])
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    try:
        cli.main()
        status = 0
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


def one_line_error(status, err):
    assert status == 1, err
    lines = [line for line in err.splitlines() if line.startswith("rsim: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture
def run2(tmp_path, monkeypatch, capsys):
    """A finished 2-step tiny run (checkpoint at step 2) in tmp_path/run."""
    out = tmp_path / "run"
    assert rsim(monkeypatch, capsys, "train", "--preset", "tiny", "--steps", "2", "--out", str(out), *QUIET)[0] == 0
    return out


def _weights(ck):
    from safetensors.torch import load_file

    return {r: load_file(str(ck / f"model.{r}.safetensors")) for r in ("planner", "reasoner")}


# ------------------------------------------------------------------------------ resume checks (items 2, 3)

@pytest.mark.parametrize("sets,listed", [
    (["train.grpo.group_size=8", "train.seed=1"], ["train.grpo.group_size: 4 -> 8", "train.seed: 0 -> 1"]),
    (["env.max_steps=6"], ["env.max_steps: 4 -> 6"]),
    (["env.weights.follow=0.5"], ["env.weights.follow: 1.0 -> 0.5"]),
    (["data.size=16"], ["data.size: 32 -> 16"]),
], ids=["group-size-and-seed", "env", "reward-weights", "data"])
def test_resume_with_changed_shape_or_meaning_is_refused(run2, monkeypatch, capsys, sets, listed):
    monkeypatch.setattr(cli, "build_agents", lambda *a: pytest.fail("models loaded before the config check"))
    argv = ["train", "--resume", str(run2), "--steps", "4", *QUIET]
    for s in sets:
        argv += ["--set", s]
    line = one_line_error(*rsim(monkeypatch, capsys, *argv)[::2])
    assert "cannot continue" in line and all(d in line for d in listed), line


def test_resume_with_another_learner_is_refused(run2, monkeypatch, capsys):
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--resume", str(run2), "--learner", "grpo",
                                "--steps", "4", *QUIET)[::2])
    assert "learner: 'stackelberg' -> 'grpo'" in line


def test_lr_change_needs_allow_config_change_and_is_logged(run2, monkeypatch, capsys, caplog):
    argv = ["train", "--resume", str(run2), "--steps", "3", "--set", "train.reasoner_optim.lr=0.001", *QUIET]
    line = one_line_error(*rsim(monkeypatch, capsys, *argv)[::2])
    assert "train.reasoner_optim.lr: 0.01 -> 0.001" in line and "--allow-config-change" in line
    with caplog.at_level(logging.WARNING, logger="rsim.resume"):
        status, _, err = rsim(monkeypatch, capsys, *argv, "--allow-config-change")
    assert status == 0, err
    assert "train.reasoner_optim.lr: 0.01 -> 0.001" in caplog.text
    ck = list_checkpoints(run2 / "checkpoints")[-1]
    assert ck.name == "step_00000003"
    assert json.loads((ck / "config.json").read_text())["train"]["reasoner_optim"]["lr"] == 0.001


def test_resume_without_the_preset_uses_the_saved_config(run2, monkeypatch, capsys):
    """No --preset, no --out: the saved tiny config is the base (not the SmolLM2 defaults / runs/rsim)."""
    status, _, err = rsim(monkeypatch, capsys, "train", "--resume", str(run2), "--steps", "3", *QUIET)
    assert status == 0, err
    ck = list_checkpoints(run2 / "checkpoints")[-1]
    assert ck.name == "step_00000003"
    saved = json.loads((ck / "config.json").read_text())
    assert saved["model"]["reasoner"] == "toy" and saved["train"]["output_dir"] == str(run2)


@pytest.mark.parametrize("steps", [1, 2])
def test_resume_at_or_below_the_checkpoint_step_says_complete(run2, monkeypatch, capsys, steps):
    before = _weights(list_checkpoints(run2 / "checkpoints")[-1])
    status, out, err = rsim(monkeypatch, capsys, "train", "--resume", str(run2), "--steps", str(steps), *QUIET)
    assert status == 0
    assert "already complete" in err and "at step 2" in err and f"train.steps={steps}" in err
    cks = list_checkpoints(run2 / "checkpoints")
    assert [c.name for c in cks] == ["step_00000002"]
    after = _weights(cks[-1])
    assert all(torch.equal(before[r][k], after[r][k]) for r in before for k in before[r])


def test_resume_of_a_complete_run_still_sweeps_crash_debris(run2, monkeypatch, capsys, caplog):
    """The already-complete exit came before the sweep, so a killed save's temp dir stayed."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    debris = run2 / "checkpoints" / f".tmp-step_00000003-{int(dead.stdout)}"
    debris.mkdir()
    (debris / "model.planner.safetensors").write_bytes(b"\0" * 1000)
    with caplog.at_level(logging.WARNING, logger="rsim.checkpoint"):
        status, _, err = rsim(monkeypatch, capsys, "train", "--resume", str(run2), "--steps", "2", *QUIET)
    assert status == 0 and "already complete" in err
    assert not debris.exists()
    assert any("removed 1 unfinished save" in r.getMessage() for r in caplog.records)
    assert [c.name for c in list_checkpoints(run2 / "checkpoints")] == ["step_00000002"]


def test_resume_from_run_dir_falls_back_past_a_corrupt_checkpoint(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert rsim(monkeypatch, capsys, "train", "--preset", "tiny", "--steps", "4", "--out", str(out),
                "--set", "train.save_every=2", *QUIET)[0] == 0
    newest = list_checkpoints(out / "checkpoints")[-1]
    f = newest / "model.reasoner.safetensors"
    f.write_bytes(f.read_bytes()[:-64])  # truncated by a crash of the disk, not of our save
    status, _, err = rsim(monkeypatch, capsys, "train", "--resume", str(out), "--steps", "6", *QUIET)
    assert status == 0, err
    # resumed from step 2; the corrupt step 4 was moved aside, so pruning kept the good ones
    assert [c.name for c in list_checkpoints(out / "checkpoints")] == ["step_00000004", "step_00000006"]
    assert (out / "checkpoints" / "corrupt-step_00000004" / "model.reasoner.safetensors").is_file()


# ------------------------------------------------------------------------------ non-finite steps (item 4)

def test_nan_steps_are_skipped_then_the_run_stops_without_saving_nan(tmp_path, monkeypatch):
    from algos.config import resolve
    from algos.step_guard import TrainingDivergedError

    step_of = {"i": 0}
    real_train_step = trainer_mod.Trainer.train_step
    real_loss = grpo_mod.grpo_loss

    def train_step(self):
        step_of["i"] = self.step
        return real_train_step(self)

    def loss(logp, old, adv, mask, cfg, *a, **k):
        value, m = real_loss(logp, old, adv, mask, cfg, *a, **k)
        return (value * math.nan if step_of["i"] >= 2 else value), m

    monkeypatch.setattr(trainer_mod.Trainer, "train_step", train_step)
    monkeypatch.setattr(grpo_mod, "grpo_loss", loss)
    cfg = resolve("tiny", {"train.output_dir": str(tmp_path), "train.progress": False, "train.steps": 8,
                           "train.save_every": 1, "train.keep_checkpoints": 10, "train.max_bad_steps": 3,
                           "schedule.stage1_steps": 100})
    with pytest.raises(TrainingDivergedError, match=r"stopped at step 5: 3 consecutive steps had a non-finite loss.*"
                                                    r"last good checkpoint is .*step_00000004"):
        cli.main(cfg)
    cks = list_checkpoints(tmp_path / "checkpoints")
    assert [c.name for c in cks] == [f"step_0000000{i}" for i in (1, 2, 3, 4)]  # none after the stop
    w = [_weights(ck) for ck in cks]
    for weights in w:
        assert all(torch.isfinite(t).all() for tensors in weights.values() for t in tensors.values())
    same = [all(torch.equal(a[r][k], b[r][k]) for r in a for k in a[r]) for a, b in zip(w, w[1:])]
    assert same == [False, True, True]  # steps 3 and 4 updated nothing: their NaN updates were dropped


def test_a_single_nan_step_is_skipped_counted_and_training_goes_on(tmp_path, monkeypatch):
    from algos.config import resolve

    seen = {"n": 0}
    real_loss = grpo_mod.grpo_loss

    def loss(*a, **k):
        value, m = real_loss(*a, **k)
        seen["n"] += 1
        return (value * math.nan if seen["n"] == 1 else value), m

    monkeypatch.setattr(grpo_mod, "grpo_loss", loss)
    cfg = resolve("tiny", {"train.output_dir": str(tmp_path), "train.progress": False, "train.steps": 3})
    out = cli.main(cfg)
    assert out["steps"] == 3
    skipped = [m.get("planner/nonfinite_skipped", 0) + m.get("reasoner/nonfinite_skipped", 0) for m in out["history"]]
    assert skipped[0] == 1 and sum(skipped) == 1
    state = json.loads((Path(out["checkpoint"]) / "state.json").read_text())
    assert state["bad_steps_total"] == 1 and state["bad_steps_in_row"] == 0


# ------------------------------------------------------------------------------ one-line errors (items 7, 8)

def test_missing_model_path_is_one_line_before_any_load(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--set", "model.planner=./no-such-model",
                                "--set", "model.reasoner=./no-such-model", "--out", "out", *QUIET)[::2])
    assert "planner spec './no-such-model': no such file or directory" in line


def test_bad_data_file_is_one_line_before_any_model(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"question": "1+1?", "answer": "2"}\n{"question": null, "answer": "1"}\n')
    monkeypatch.setattr(cli, "build_agents", lambda *a: pytest.fail("models loaded before the data was read"))
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--preset", "tiny", "--out", str(tmp_path / "o"),
                                "--data", str(bad), *QUIET)[::2])
    assert f"{bad}:2: 'question' must be a string, got null" in line


def test_out_pointing_at_a_file(tmp_path, monkeypatch, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--preset", "tiny", "--out", str(f), *QUIET)[::2])
    assert "is a file; pass a directory" in line


def test_fresh_run_into_an_existing_run_dir(run2, monkeypatch, capsys):
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--preset", "tiny", "--out", str(run2), *QUIET)[::2])
    assert "already holds the checkpoints of a run" in line and f"--resume {run2}" in line


@pytest.mark.parametrize("case", ["missing-dir", "empty-dir", "all-corrupt"])
def test_resume_errors_are_one_line(tmp_path, monkeypatch, capsys, case, run2):
    target = {"missing-dir": tmp_path / "nope", "empty-dir": tmp_path / "empty", "all-corrupt": run2}[case]
    if case == "empty-dir":
        target.mkdir()
    if case == "all-corrupt":
        for ck in list_checkpoints(run2 / "checkpoints"):
            f = ck / "optim.planner.safetensors"
            f.write_bytes(f.read_bytes()[:10])
    line = one_line_error(*rsim(monkeypatch, capsys, "train", "--resume", str(target), "--steps", "4", *QUIET)[::2])
    assert {"missing-dir": "does not exist", "empty-dir": "no complete checkpoint",
            "all-corrupt": "optim.planner.safetensors: unreadable safetensors"}[case] in line


def test_debug_shows_the_traceback(tmp_path, monkeypatch, capsys):
    f = tmp_path / "file.txt"
    f.write_text("x")
    monkeypatch.setattr(sys, "argv", ["rsim", "train", "--preset", "tiny", "--out", str(f), "--debug"])
    with pytest.raises(ValueError, match="is a file"):
        cli.main()


def test_console_script_exit_status_and_single_line(tmp_path):
    """The real entry point in a subprocess: stderr is one line, exit status 1."""
    p = subprocess.run([sys.executable, "-m", "algos.cli", "train", "--resume", str(tmp_path / "nope")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().count("\n") == 0 and p.stderr.startswith("rsim: error: resume:"), p.stderr


def test_eval_errors_are_one_line_too(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = one_line_error(*rsim(monkeypatch, capsys, "eval", "--reasoner", "./no-such-model", "--limit", "1",
                                "--modes", "none")[::2])
    assert "reasoner spec './no-such-model': no such file or directory" in line


@pytest.mark.parametrize("corrupt", ["weights", "config"])
def test_eval_of_a_corrupt_run_names_the_file(run2, monkeypatch, capsys, corrupt):
    ck = list_checkpoints(run2 / "checkpoints")[-1]
    f = ck / ("model.planner.safetensors" if corrupt == "weights" else "config.json")
    f.write_bytes(f.read_bytes()[:20])
    line = one_line_error(*rsim(monkeypatch, capsys, "eval", "--planner", str(run2), "--reasoner", "template",
                                "--data", "tiny", "--limit", "1", "--modes", "trained", "--no-plots")[::2])
    assert str(f) in line and "rsim: error:" in line


def test_nan_on_one_of_two_processes_skips_on_both(tmp_path):
    """Two gloo processes; only rank 1's loss turns NaN from step 2 on. Both replicas must drop the
    same updates (save() checks that their weights agree) and count them in state.json."""
    script = tmp_path / "nan_rank1.py"
    script.write_text(f"""
import math, os
import algos.grpo as t
real = t.grpo_loss
calls = {{"n": 0}}
def loss(*a, **k):
    value, m = real(*a, **k)
    calls["n"] += 1
    nan = os.environ.get("RANK") == "1" and calls["n"] > 2   # steps 2 and 3 (2 agents per step)
    return (value * math.nan if nan else value), m
t.grpo_loss = loss
from algos.cli import main
main(["train", "--preset", "tiny", "--steps", "3", "--out", {str(tmp_path / "run")!r},
      "--set", "train.save_every=1", "--set", "train.progress=false", "--set", "schedule.stage1_steps=100"])
""")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines",
           "1", "--mixed_precision", "no", "--dynamo_backend", "no", str(script)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    state = json.loads((tmp_path / "run" / "checkpoints" / "step_00000003" / "state.json").read_text())
    assert state["num_processes"] == 2 and state["bad_steps_total"] == 2 and state["bad_steps_in_row"] == 2
