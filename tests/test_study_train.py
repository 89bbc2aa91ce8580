"""algos.study train stage on the scripted study (two task families, each solved only under its own plan; a tiny
random-init planner): every seed's head moves from its initial weights and its greedy plan reaches the per-task
policy on the train tree, the backbone features are computed once and kept, a finished seed is reused and an
interrupted one resumes from its checkpoint."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from tests.study_helpers import study

    from algos.study.train import train

    cfg = study(tmp_path_factory.mktemp("study_train"))
    return cfg, train(cfg)


@pytest.mark.training_outcome
def test_every_seed_learns_each_tasks_plan(trained):
    """Best fixed plan = 50 % on the train tree, per-task policy = 100 %: each seed ends above the best fixed plan by
    a margin that holds across seeds and kernels."""
    import torch
    from safetensors.torch import load_file

    from agents.planners.llm import Planner
    from algos.study.features import feature_planner

    cfg, result = trained
    assert [r["seed"] for r in result["runs"]] == [0, 1] and not any(r["reused"] for r in result["runs"])
    base = feature_planner("tiny")
    for r in result["runs"]:
        last = r["curve"][-1]
        assert last["step"] == cfg.learner.steps
        assert last["greedy_accuracy"] >= 0.75, r["curve"]
        assert r["features_computed"] == 0  # every context's feature came from the study's features folder
        torch.manual_seed(r["seed"])
        initial = Planner(base.backbone, base.tokenizer, replace(base.config, seed=r["seed"])).head.weight
        head = load_file(str(Path(r["checkpoint"]) / "model.planner.safetensors"))
        assert not torch.allclose(head["weight"], initial)


def test_each_seed_is_a_run_dir_with_logs_config_and_the_curve(trained):
    from algos.study.paths import StudyPaths

    cfg, result = trained
    for s in (0, 1):
        run = StudyPaths.of(cfg).head(s)
        ckpt = sorted((run / "checkpoints").glob("step_*"))[-1]
        config = json.loads((ckpt / "config.json").read_text())
        assert config["model"]["planner"] == "tiny" and config["planner"]["head_only"] is True
        assert config["env"]["max_steps"] == 2 and config["env"]["terminate_last_round"] is True
        assert config["train"]["seed"] == s and config["train"]["planner_optim"]["lr"] == cfg.learner.lr
        assert any(run.rglob("events.out.tfevents.*")), "TensorBoard logs"
    summary = json.loads(StudyPaths.of(cfg).train_summary.read_text())
    assert sorted(summary["runs"]) == ["0", "1"] and summary["train_problems"] == 12
    features = Path(cfg.out) / "features" / "tiny.safetensors"
    assert features.is_file()


def test_a_finished_seed_is_reused_and_an_unfinished_one_resumes(trained):
    from algos.study.paths import StudyPaths
    from algos.study.train import train

    cfg, _ = trained
    again = train(cfg)
    assert all(r["reused"] for r in again["runs"])
    longer = replace(cfg, learner=replace(cfg.learner, steps=cfg.learner.steps + 4, seeds=1))
    more = train(longer)["runs"][0]
    assert not more["reused"] and [row["step"] for row in more["curve"]] == list(range(31, 35))
    newest = sorted((StudyPaths.of(cfg).head(0) / "checkpoints").glob("step_*"))[-1]
    assert json.loads((newest / "state.json").read_text())["step"] == 34
