"""Fault injection on checkpoints: kill mid-save, crash debris, full disk, NaN state, corrupt files."""

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import algos.checkpoint as ckpt
import algos.checkpoint_checks as checks
from algos.checkpoint import (CheckpointError, CheckpointWriteError, InsufficientSpaceError, NonFiniteStateError,
                              latest, list_checkpoints, load_checkpoint, save_checkpoint)

ROOT = Path(__file__).resolve().parents[1]


def _make(width=3):
    torch.manual_seed(0)
    models = {"planner": torch.nn.Linear(width, 2), "reasoner": torch.nn.Linear(width, 1)}
    opts = {a: torch.optim.AdamW(m.parameters(), lr=1e-2) for a, m in models.items()}
    for a, m in models.items():  # one step so the optimizers hold state tensors
        m(torch.randn(4, width)).pow(2).mean().backward()
        opts[a].step()
    return models, opts


def _dead_pid():
    p = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(p.stdout)


def _debris(root, step, pid):
    d = root / f".tmp-step_{step:08d}-{pid}"
    d.mkdir(parents=True)
    (d / "model.planner.safetensors").write_bytes(b"\0" * 1000)
    return d


def _rsim_records(caplog):
    return [r for r in caplog.records if r.name == "rsim.checkpoint"]


# ------------------------------------------------------------------------------ crash debris

def test_debris_of_dead_process_removed_before_save_with_one_log_line(tmp_path, caplog):
    models, opts = _make()
    dead = [_debris(tmp_path, 2, _dead_pid()), _debris(tmp_path, 3, os.getpid())]  # own pid: earlier run
    live = _debris(tmp_path, 4, os.getppid())  # a live process may still be writing it
    with caplog.at_level(logging.WARNING, logger="rsim.checkpoint"):
        save_checkpoint(tmp_path, 5, models, opts, {}, {})
    assert not any(d.exists() for d in dead) and live.exists()
    recs = _rsim_records(caplog)
    assert len(recs) == 1 and "removed 2 unfinished save(s)" in recs[0].getMessage()
    assert all(d.name in recs[0].getMessage() for d in dead)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000005"]


def test_kill_during_save_then_resume_cleans_debris(tmp_path, caplog):
    """SIGKILL halfway through the step-4 save of a tiny run; resuming removes the debris at start-up."""
    script = f"""
import os, signal
import algos.checkpoint as c
real = c.save_model
def save_model(model, filename):
    real(model, filename)
    if "step_00000004" in filename:
        os.kill(os.getpid(), signal.SIGKILL)
c.save_model = save_model
from algos.cli import main
main(["train", "--preset", "tiny", "--steps", "4", "--out", {str(tmp_path)!r},
      "--set", "train.save_every=2", "--set", "train.progress=false"])
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert p.returncode == -9, p.stderr[-2000:]
    root = tmp_path / "checkpoints"
    debris = [d for d in root.iterdir() if d.name.startswith(".tmp-")]
    assert len(debris) == 1 and (debris[0] / "model.planner.safetensors").is_file()
    assert latest(root).name == "step_00000002"

    from algos.cli import main
    from algos.config import resolve

    cfg = resolve("tiny", {"train.output_dir": str(tmp_path), "train.progress": False, "train.steps": 4,
                           "train.save_every": 2, "resume": str(tmp_path)})
    with caplog.at_level(logging.WARNING, logger="rsim.checkpoint"):
        out = main(cfg)
    assert out["steps"] == 4 and len(out["history"]) == 2  # continued from step 2
    assert not any(d.name.startswith(".tmp-") for d in root.iterdir())
    assert sum("unfinished save" in r.getMessage() for r in _rsim_records(caplog)) == 1


# ------------------------------------------------------------------------------ disk space

def test_failing_write_leaves_no_debris_and_keeps_checkpoints(tmp_path, monkeypatch):
    models, opts = _make()
    save_checkpoint(tmp_path, 1, models, opts, {}, {})
    real = ckpt.save_file

    def full_disk(tensors, filename, *a, **k):
        if "rng" in str(filename):  # model and optimizer files are already written by now
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(tensors, filename, *a, **k)

    monkeypatch.setattr(ckpt, "save_file", full_disk)
    with pytest.raises(CheckpointWriteError, match="step 2 not written.*No space left.*existing checkpoints are intact"):
        save_checkpoint(tmp_path, 2, models, opts, {}, {})
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000001"]
    monkeypatch.setattr(ckpt, "save_file", real)  # space freed: the retry is not blocked by debris
    save_checkpoint(tmp_path, 2, models, opts, {}, {})
    assert latest(tmp_path).name == "step_00000002"


def test_free_space_checked_before_writing_using_last_checkpoint_size(tmp_path, monkeypatch):
    models, opts = _make()
    first = save_checkpoint(tmp_path, 1, models, opts, {}, {})
    (first / "padding.bin").write_bytes(b"\0" * 200_000)  # the last checkpoint is much larger than the estimate
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(checks.shutil, "disk_usage", lambda p: usage._replace(free=100_000))
    with pytest.raises(InsufficientSpaceError, match=r"needs about 0\.2 MB .* 0\.1 MB are free; nothing was written"):
        save_checkpoint(tmp_path, 2, models, opts, {}, {})
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000001"]
    monkeypatch.setattr(checks.shutil, "disk_usage", lambda p: usage._replace(free=10_000_000))
    save_checkpoint(tmp_path, 2, models, opts, {}, {})


# ------------------------------------------------------------------------------ non-finite state

@pytest.mark.parametrize("where", ["weights", "optimizer"])
def test_non_finite_state_is_never_saved_and_prunes_nothing(tmp_path, where):
    models, opts = _make()
    for s in (1, 2):
        save_checkpoint(tmp_path, s, models, opts, {}, {}, keep=2)
    with torch.no_grad():
        if where == "weights":
            models["reasoner"].weight[0, 0] = float("nan")
        else:
            opts["planner"].state[models["planner"].bias]["exp_avg"][0] = float("inf")
    name = "model.reasoner:weight" if where == "weights" else "optim.planner:state.1.exp_avg"
    with pytest.raises(NonFiniteStateError, match=f"step 3 not written: {name} holds NaN or inf"):
        save_checkpoint(tmp_path, 3, models, opts, {}, {}, keep=2)
    assert [p.name for p in tmp_path.iterdir()] == ["step_00000001", "step_00000002"]


# ------------------------------------------------------------------------------ durability

@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name fsynced fds")
def test_parent_dir_is_fsynced_after_the_rename(tmp_path, monkeypatch):
    models, opts = _make()
    events = []
    real_fsync, real_rename = os.fsync, os.rename
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 real_fsync(fd))[1])
    monkeypatch.setattr(os, "rename", lambda a, b: (events.append(("rename", str(b))), real_rename(a, b))[1])
    save_checkpoint(tmp_path, 1, models, opts, {}, {})
    i = events.index(("rename", str(tmp_path / "step_00000001")))
    assert ("fsync", str(tmp_path)) in events[i + 1:]


# ------------------------------------------------------------------------------ corrupt files

def _truncate(f):
    f.write_bytes(f.read_bytes()[:-40])


def _edit_json(name, fn):
    def corrupt(d):
        doc = json.loads((d / name).read_text())
        fn(doc)
        (d / name).write_text(json.dumps(doc))
    return corrupt


def _other_model(d):  # weights written for a different width
    models, opts = _make(width=5)
    shutil.copy(save_checkpoint(d.parent / "other", 1, models, opts, {}, {}) / "model.reasoner.safetensors",
                d / "model.reasoner.safetensors")


CORRUPTIONS = {
    "truncated-weights": (lambda d: _truncate(d / "model.planner.safetensors"), "model.planner.safetensors", "truncated"),
    "truncated-optimizer": (lambda d: _truncate(d / "optim.reasoner.safetensors"), "optim.reasoner.safetensors", "truncated"),
    "edited-state-json": (lambda d: (d / "state.json").write_text('{"step": 2,'), "state.json", "not valid JSON"),
    "state-step-wrong-type": (_edit_json("state.json", lambda s: s.update(step="two")), "state.json", "'step' should be int"),
    "config-not-object": (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json", "expected a JSON object"),
    "missing-rng": (lambda d: (d / "rng.0.safetensors").unlink(), "rng.0.safetensors", "missing"),
    "rng-wrong-types": (_edit_json("rng.0.json", lambda m: m.update(numpy=["MT19937", "x", 0, 0.0])), "rng.0.json", "wrong shape or types"),
    "optim-missing-tensor": (_edit_json("optim.planner.json", lambda o: o["state"]["0"].update(exp_avg={"tensor": "nope"})),
                             "optim.planner.safetensors", "'nope' named by optim.planner.json is missing"),
    "optim-wrong-groups": (_edit_json("optim.planner.json", lambda o: o["param_groups"].append({"params": [9]})),
                           "optim.planner.json", "param groups hold"),
    "weights-of-another-model": (_other_model, "model.reasoner.safetensors", "shape \\[1, 5\\] but the model's is \\[1, 3\\]"),
    "non-finite-weights": (None, "model.planner.safetensors", "holds NaN or inf"),
}


def _write_nan_weights(d):
    from safetensors.torch import load_file, save_file

    t = load_file(str(d / "model.planner.safetensors"))
    t["weight"][0, 0] = float("nan")
    save_file(t, str(d / "model.planner.safetensors"))


@pytest.mark.parametrize("case", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_corrupt_checkpoint_one_error_naming_the_file(tmp_path, case):
    corrupt, fname, what = CORRUPTIONS[case]
    models, opts = _make()
    d = save_checkpoint(tmp_path / "run", 2, models, opts, {}, {})
    (corrupt or _write_nan_weights)(d)
    with pytest.raises(CheckpointError, match=f"{d / fname}.*{what}".replace(".safetensors", r"\.safetensors")):
        load_checkpoint(d, *_make())


def test_run_dir_falls_back_to_previous_complete_checkpoint(tmp_path, caplog):
    models, opts = _make()
    save_checkpoint(tmp_path, 1, models, opts, {"data_position": 1}, {})
    good = {a: m.weight.detach().clone() for a, m in models.items()}
    with torch.no_grad():
        models["planner"].weight.add_(1.0)
    d = save_checkpoint(tmp_path, 2, models, opts, {"data_position": 2}, {})
    _truncate(d / "model.reasoner.safetensors")
    fresh, fresh_opts = _make(width=3)
    with caplog.at_level(logging.WARNING, logger="rsim.checkpoint"):
        state = load_checkpoint(tmp_path, fresh, fresh_opts)
    assert state["step"] == 1 and state["data_position"] == 1 and len(state["skipped"]) == 1
    assert all(torch.equal(fresh[a].weight, good[a]) for a in good)
    assert any("cannot resume from step_00000002" in r.getMessage() for r in _rsim_records(caplog))
    _truncate(tmp_path / "step_00000001" / "state.json")
    with pytest.raises(CheckpointError, match="none of the 2 checkpoints .* can be loaded"):
        load_checkpoint(tmp_path, *_make())


def test_trainer_start_up_removes_debris_before_any_step(tmp_path, caplog):
    from algos.cli import build_agents, build_learner, build_problems
    from algos.config import resolve
    from algos.trainer import Trainer, make_accelerator

    cfg = resolve("tiny", {"train.output_dir": str(tmp_path), "train.progress": False})
    d = _debris(tmp_path / "checkpoints", 2, _dead_pid())
    learner = build_learner(cfg)
    acc = make_accelerator(cfg.train)
    with caplog.at_level(logging.WARNING, logger="rsim.checkpoint"):
        Trainer(cfg.train, learner, build_agents(cfg, learner, acc.device), build_problems(cfg), acc)
    assert not d.exists() and len(_rsim_records(caplog)) == 1
