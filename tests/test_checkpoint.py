"""Atomic, pickle-free checkpoints; resuming reproduces an uninterrupted run bit for bit."""

import json
import random

import numpy as np
import pytest
import torch

from algos.checkpoint import capture_rng, latest, list_checkpoints, load_checkpoint, restore_rng, save_checkpoint


def _make():
    torch.manual_seed(0)
    models = {"planner": torch.nn.Linear(3, 2), "reasoner": torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Linear(3, 1))}
    opts = {a: torch.optim.AdamW(m.parameters(), lr=1e-2) for a, m in models.items()}
    return models, opts


def _step(models, opts):
    # uses every RNG a trainer touches: torch sampling, numpy shuffling, python random
    x = torch.randn(4, 3) * (1 + np.random.rand()) + random.random()
    for a, m in models.items():
        opts[a].zero_grad()
        m(x).pow(2).mean().backward()
        opts[a].step()


def _flat(models):
    return torch.cat([p.detach().flatten() for m in models.values() for p in m.parameters()])


def test_resume_is_exact(tmp_path):
    torch.manual_seed(1); np.random.seed(1); random.seed(1)
    models, opts = _make()
    torch.manual_seed(1); np.random.seed(1); random.seed(1)
    for _ in range(4):
        _step(models, opts)
    straight = _flat(models)

    models, opts = _make()
    torch.manual_seed(1); np.random.seed(1); random.seed(1)
    for _ in range(2):
        _step(models, opts)
    save_checkpoint(tmp_path, 2, models, opts, {"data_position": 7}, {"lr": 1e-2})
    # scramble everything, then resume into fresh objects
    torch.manual_seed(99); np.random.seed(99); random.seed(99)
    models, opts = _make()
    state = load_checkpoint(tmp_path, models, opts)
    assert state["step"] == 2 and state["data_position"] == 7 and state["config"] == {"lr": 1e-2}
    for _ in range(2):
        _step(models, opts)
    assert torch.equal(_flat(models), straight)


def test_rng_roundtrip():
    t, m = capture_rng()
    json.dumps(m)
    a = (torch.rand(3), np.random.rand(), random.random())
    restore_rng(t, m)
    b = (torch.rand(3), np.random.rand(), random.random())
    assert torch.equal(a[0], b[0]) and a[1:] == b[1:]


def test_no_pickle_and_pruning(tmp_path):
    models, opts = _make()
    _step(models, opts)
    for s in (1, 2, 3):
        save_checkpoint(tmp_path, s, models, opts, {}, {}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_00000002", "step_00000003"]
    files = {f.suffix for f in latest(tmp_path).iterdir()}
    assert files == {".safetensors", ".json"}


def test_half_written_checkpoint_is_ignored(tmp_path):
    models, opts = _make()
    save_checkpoint(tmp_path, 1, models, opts, {}, {})
    (tmp_path / ".tmp-step_00000002-1").mkdir()         # a crash mid-save leaves only a temp dir
    (tmp_path / "step_00000003").mkdir()                 # or a dir without state.json
    assert latest(tmp_path).name == "step_00000001"


def test_missing_checkpoint_error(tmp_path):
    models, opts = _make()
    with pytest.raises(ValueError, match="no complete checkpoint"):
        load_checkpoint(tmp_path, models, opts)


def test_find_checkpoint_with_a_role_skips_checkpoints_without_its_weights(tmp_path):
    from agents.runs import find_checkpoint, weights_file

    models, opts = _make()
    first = save_checkpoint(tmp_path / "checkpoints", 1, models, opts, {}, {})
    second = save_checkpoint(tmp_path / "checkpoints", 2, {"reasoner": models["reasoner"]}, {"reasoner": opts["reasoner"]},
                             {}, {})
    assert weights_file(first, "planner").is_file() and not weights_file(second, "planner").is_file()
    assert find_checkpoint(tmp_path) == second and find_checkpoint(tmp_path, "reasoner") == second
    assert find_checkpoint(tmp_path, "planner") == first
    assert find_checkpoint(second, "planner") is None and find_checkpoint(first, "planner") == first
