"""A head trained on the frozen backbone's cached features (PlannerConfig.head_only): the same decisions and
log-probs as the planner it is built from, a forward only for contexts never seen, and run dirs that evaluate."""

from __future__ import annotations

import json

import pytest
import torch

from agents.planners.llm import Planner, PlannerConfig
from tests.test_planner import make_planner, play


pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


def _pair(**cfg) -> tuple[Planner, Planner]:
    full, head = make_planner(**cfg), make_planner(head_only=True, **cfg)
    head.head.load_state_dict(full.head.state_dict())
    return full, head


@pytest.mark.parametrize("use_cache", [True, False], ids=["kv", "reencode"])
def test_same_decisions_and_logprobs_as_the_full_planner(use_cache):
    full, head = _pair(use_cache=use_cache)
    a, b = play(full, 3), play(head, 3)
    assert [r.actions for r in a] == [r.actions for r in b] and [r.input_ids for r in a] == [r.input_ids for r in b]
    for ra, rb in zip(a, b):
        assert ra.logprobs == pytest.approx(rb.logprobs, abs=1e-5)
    la, _ = full.trajectory_logprobs(a)
    lb, _ = head.trajectory_logprobs(b)
    assert torch.allclose(la, lb, atol=1e-5)


def test_features_are_computed_once_and_bounded():
    _, head = _pair()
    recs = play(head, 3)
    computed = head.feature_stats["misses"]
    assert computed == sum(len(r.positions) for r in recs) and head.feature_stats["hits"] == 0
    head.trajectory_logprobs(recs)  # every context was seen while acting: no forward
    assert head.feature_stats["misses"] == computed and head.feature_stats["hits"] == computed
    small = make_planner(head_only=True, feature_cache=2)
    play(small, 3)
    assert len(small._features) == 2
    with pytest.raises(ValueError, match="feature_cache"):
        PlannerConfig(feature_cache=-1)


def test_only_the_head_trains_and_the_reference_is_the_initial_head():
    _, head = _pair()
    assert set(dict(head.module.named_parameters())) == {"weight", "bias"}
    assert not any(p.requires_grad for p in head.backbone.parameters())
    before = {k: v.clone() for k, v in head.backbone.state_dict().items()}
    recs = play(head, 2)
    opt = torch.optim.SGD(head.module.parameters(), lr=1.0)
    logp, valid = head.trajectory_logprobs(recs)
    (-(logp * valid).sum()).backward()
    opt.step()
    assert all(torch.equal(before[k], v) for k, v in head.backbone.state_dict().items())
    with head.reference():
        ref, _ = head.trajectory_logprobs(recs)
    assert torch.allclose(ref, logp.detach(), atol=1e-6)  # the reference kept the initial head
    now, _ = head.trajectory_logprobs(recs)
    assert not torch.allclose(now, logp.detach())
    with pytest.raises(ValueError, match="head_only"):
        head.attach_lora(object())


def test_planner_only_run_with_a_head_only_planner_evaluates(tmp_path):
    """rsim train (planner_only, head_only) writes the head; rsim eval of the run dir loads it on the frozen base."""
    from algos.cli import train
    from algos.config import resolve
    from algos.config import DataConfig, ModelConfig
    from algos.evaluation import EvalConfig, main as evaluate

    out = tmp_path / "run"
    res = train(resolve("tiny", {"learner": "planner_only", "model.planner": "tiny", "planner.head_only": "true",
                                 "train.output_dir": str(out), "train.steps": "2", "train.progress": "false"}))
    assert res["steps"] == 2
    saved = sorted(out.glob("checkpoints/step_*/config.json"))[-1]
    assert json.loads(saved.read_text())["planner"]["head_only"] is True
    r = evaluate(EvalConfig(model=ModelConfig(reasoner="toy", planner=str(out)), data=DataConfig(source="tiny", size=3),
                            modes=("trained",), progress=False, plots=False))
    assert r["modes"]["trained"]["problems"] == 3 and r["planner"]["learner"] == "planner_only"
    from safetensors.torch import load_file

    from algos.evaluation.run import load_planner

    planner = load_planner(str(out), EvalConfig(data=DataConfig(source="tiny", size=1))).agent
    weights = load_file(str(saved.parent / "model.planner.safetensors"))
    assert planner.config.head_only and set(weights) == {"weight", "bias"}
    assert torch.equal(planner.head.weight.detach(), weights["weight"])
