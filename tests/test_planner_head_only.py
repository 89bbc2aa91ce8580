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
    assert len(small.feature_cache) == 2
    with pytest.raises(ValueError, match="feature_cache"):
        PlannerConfig(feature_cache=-1)


def test_a_feature_put_in_the_cache_is_read_and_a_shared_cache_is_shared():
    """The public feature cache (what algos.study installs features from disk through): a feature given for a
    context's token ids is the one the head reads, with no forward; a second planner given the first's cache reads
    the features the first computed."""
    _, head = _pair()
    ids = head.encode("What is 2 + 3?")
    feature = torch.full((head.head.in_features,), 0.5)
    head.cache_feature(ids, feature)
    got = head.context_features([ids], [[len(ids) - 1]])
    assert torch.equal(got[0], feature) and head.feature_stats == {"hits": 1, "misses": 0}
    other = make_planner(head_only=True)
    other.feature_cache = head.feature_cache
    assert other.feature_cache is head.feature_cache
    assert torch.equal(other.context_features([ids], [[len(ids) - 1]])[0], feature)
    assert other.feature_stats["misses"] == 0
    with pytest.raises(TypeError, match="OrderedDict"):
        other.feature_cache = {}


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
    assert planner.config.head_only and set(weights) == {"weight", "bias", "feature_mean", "feature_scale"}
    assert torch.equal(planner.head.weight.detach(), weights["weight"])


@pytest.mark.parametrize("head_only", [True, False], ids=["head_only", "full"])
def test_a_forced_decision_is_never_encoded_and_scores_zero(head_only):
    """A decision with one allowed action (env.terminate_last_round's last round) takes that action with log-prob 0,
    and neither acting nor scoring encodes its context: the scores of the other decisions are the ones the full
    forward gives, and a batch whose every decision is forced still backpropagates (zero gradient)."""
    import numpy as np

    from rsim_env.strategies import TERMINATION
    from tests.test_planner import QUESTIONS, STEPS, obs

    planner = make_planner(head_only=head_only, use_cache=False)
    only_stop = np.eye(planner.head.out_features, dtype=np.int8)[TERMINATION]
    planner.reset(2)
    first = planner.act([0, 1], [obs(q) for q in QUESTIONS])
    seen = dict(planner.feature_stats) if head_only else None
    last = planner.act([0, 1], [obs(q, STEPS[:1], [a], mask=only_stop) for q, a in zip(QUESTIONS, first)])
    assert last == [TERMINATION, TERMINATION]
    if head_only:
        assert planner.feature_stats == seen  # no feature looked up, none computed
    recs = planner.records()
    assert all(r.logprobs[1] == 0.0 and len(r.positions) == 2 for r in recs)
    logp, valid = planner.trajectory_logprobs(recs)
    assert torch.equal(logp[:, 1], torch.zeros(2)) and valid.tolist() == [[1, 1], [1, 1]]
    every = planner.strategy_logits([r.input_ids for r in recs], [r.positions for r in recs])
    want = torch.log_softmax(every[:, 0] / planner.config.temperature, -1).gather(
        -1, torch.tensor([[a] for a in first])).squeeze(-1)
    assert torch.allclose(logp[:, 0], want, atol=1e-5)
    assert [r.logprobs[0] for r in recs] == pytest.approx(want.tolist(), abs=1e-5)
    # only forced decisions: the loss is 0 and its backward reaches the parameters with zero gradient
    planner.reset(1)
    planner.act([0], [obs(QUESTIONS[0], mask=only_stop)])
    logp, valid = planner.trajectory_logprobs(planner.records())
    (-(logp * valid).sum()).backward()
    assert float(logp.sum()) == 0.0
    grads = [p.grad for p in planner.module.parameters() if p.requires_grad]
    assert grads and all(g is None or float(g.abs().sum()) == 0.0 for g in grads)


def test_the_head_standardises_its_features_and_the_default_changes_nothing():
    """StrategyHead: at its default buffers (mean 0, scale 1) the logits are a plain Linear's bit for bit; fitted, the
    head reads (x - mean) / std of the fitting features, the KL reference head too, and both travel in a save."""
    full, head = _pair()
    x = torch.randn(5, head.head.in_features) * 3 + 7
    plain = torch.nn.functional.linear(x, head.head.weight, head.head.bias)
    assert torch.equal(head.head(x), plain)
    head.standardize_features(x)
    z = (x - x.mean(0)) / x.std(0)
    assert torch.allclose(head.head(x), torch.nn.functional.linear(z, head.head.weight, head.head.bias), atol=1e-5)
    with head.reference():
        assert torch.equal(head._ref_head.feature_mean, x.mean(0))
    assert {"feature_mean", "feature_scale"} <= set(head.head.state_dict())
    with pytest.raises(ValueError, match="frozen features"):
        full.standardize_features(x)
    with pytest.raises(ValueError, match=r"\[contexts >= 2"):
        head.standardize_features(x[:1])


def test_a_saved_planner_keeps_its_standardisation(tmp_path):
    _, head = _pair()
    head.standardize_features(torch.randn(4, head.head.in_features) + 2)
    back = Planner.from_pretrained(head.save_pretrained(tmp_path / "p"))
    for k, v in head.head.state_dict().items():
        assert torch.equal(back.head.state_dict()[k], v), k
