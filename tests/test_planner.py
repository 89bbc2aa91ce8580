"""Planner: strategy head, masks, one-pass trajectory scoring, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from agents.hf.loading import tiny_model
from agents.planners.llm import Planner, PlannerConfig
from rsim_env.render import planner_text
from rsim_env.strategies import TERMINATION, num_strategies


@pytest.fixture(autouse=True, scope="module")
def _planner_tests_single_thread():
    # Tiny models are dominated by thread hand-off overhead on a shared 2-core box.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make_planner(**cfg) -> Planner:
    backbone, tok = tiny_model("backbone", seed=1)
    return Planner(backbone, tok, PlannerConfig(seed=0, head_init_std=0.5, **cfg))


def obs(question, steps=(), plans=(), mask=None):
    return {"question": question, "steps": tuple(steps), "strategies": tuple(plans), "round": len(steps),
            "prompt": planner_text(question, steps, plans),
            "action_mask": np.ones(num_strategies(), np.int8) if mask is None else np.asarray(mask, np.int8)}


QUESTIONS = ["What is 2+3?", "A train leaves at 3pm going 60 km/h. When does it arrive 150 km away?"]
STEPS = ["First add the numbers.", "Wait, check: 2+3 = 5.", "So the answer is \\boxed{5}."]


def play(planner: Planner, rounds: int) -> list[dict]:
    """Drive two copies for `rounds` decisions with made-up steps (copy 1 stops one round early)."""
    planner.reset(2)
    plans: dict[int, list[int]] = {0: [], 1: []}
    for r in range(rounds):
        ids = [0, 1] if r < rounds - 1 else [0]
        actions = planner.act(ids, [obs(QUESTIONS[c], STEPS[:r], plans[c]) for c in ids])
        for c, a in zip(ids, actions):
            plans[c].append(a)
    return planner.records()


def test_head_shape_and_logprobs_are_a_distribution():
    planner = make_planner()
    assert planner.head.in_features == planner.backbone.config.hidden_size
    assert planner.head.out_features == num_strategies()
    ids = planner.encode("Question: x\nReasoning so far:\n")
    logits = planner.strategy_logits([ids], [[len(ids) - 1]])
    assert logits.shape == (1, 1, num_strategies())
    rec = play(planner, 2)[0]
    assert all(lp <= 0 for lp in rec.logprobs) and len(rec.logprobs) == 2


def test_recorded_logprobs_match_the_head_distribution():
    planner = make_planner()
    rec = play(planner, 1)[0]
    ids = rec.input_ids
    with torch.no_grad():
        logp = torch.log_softmax(planner.strategy_logits([ids], [[len(ids) - 1]])[0, 0], -1)
    assert rec.logprobs[0] == pytest.approx(logp[rec.actions[0]].item(), abs=1e-5)
    assert torch.exp(logp).sum().item() == pytest.approx(1.0, abs=1e-5)


def test_one_pass_scoring_equals_scoring_each_round_separately():
    planner = make_planner()
    records = play(planner, 3)
    logp, valid = planner.trajectory_logprobs(records)
    assert valid.tolist() == [[1, 1, 1], [1, 1, 0]]
    for r, rec in enumerate(records):
        for t, pos in enumerate(rec.positions):
            prefix = rec.input_ids[: pos + 1]  # the context the decision at round t saw
            with torch.no_grad():
                single = torch.log_softmax(planner.strategy_logits([prefix], [[pos]])[0, 0], -1)[rec.actions[t]]
            assert logp[r, t].item() == pytest.approx(single.item(), abs=1e-5)
            assert logp[r, t].item() == pytest.approx(rec.logprobs[t], abs=1e-5)


def test_contexts_are_token_prefixes_built_from_segments():
    planner = make_planner()
    records = play(planner, 3)
    rec = records[0]
    assert rec.positions == sorted(rec.positions) and rec.positions[-1] == len(rec.input_ids) - 1
    header = planner.encode(f"Question: {QUESTIONS[0]}\nReasoning so far:\n")
    assert rec.input_ids[: len(header)] == header and rec.positions[0] == len(header) - 1


def test_trajectory_logprobs_carry_gradients():
    planner = make_planner()
    records = play(planner, 2)
    logp, valid = planner.trajectory_logprobs(records)
    (-(logp * valid).sum()).backward()
    assert planner.head.weight.grad is not None and planner.head.weight.grad.abs().sum() > 0
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in planner.backbone.parameters())


def test_action_mask_is_respected_in_sampling_and_scoring():
    planner = make_planner()
    planner.reset(4)
    mask = np.zeros(num_strategies(), np.int8)
    mask[[2, TERMINATION]] = 1
    for _ in range(5):
        planner.reset(4)
        actions = planner.act(range(4), [obs(QUESTIONS[0], mask=mask)] * 4)
        assert set(actions) <= {2, TERMINATION}
    rec = planner.records()[0]
    assert rec.action_masks[0] == mask.tolist()
    logp, _ = planner.trajectory_logprobs(planner.records())
    assert logp[0, 0].item() == pytest.approx(rec.logprobs[0], abs=1e-5)
    assert rec.logprobs[0] > np.log(1 / num_strategies())  # mass renormalised over two actions


@pytest.mark.parametrize("bad_mask", [np.zeros(num_strategies(), np.int8), np.ones(3, np.int8)], ids=["empty", "shape"])
def test_bad_action_mask_raises(bad_mask):
    planner = make_planner()
    planner.reset(1)
    with pytest.raises(ValueError, match="action_mask"):
        planner.act([0], [obs(QUESTIONS[0], mask=bad_mask)])


def test_greedy_is_argmax():
    planner = make_planner(greedy=True)
    rec = play(planner, 1)[0]
    ids = rec.input_ids
    with torch.no_grad():
        expected = planner.strategy_logits([ids], [[len(ids) - 1]])[0, 0].argmax().item()
    assert rec.actions[0] == expected


def test_out_of_sync_observation_raises():
    planner = make_planner()
    planner.reset(1)
    with pytest.raises(ValueError, match="reset"):
        planner.act([0], [obs(QUESTIONS[0], STEPS[:2], [1, 2])])
    with pytest.raises(ValueError, match="range"):
        planner.act([5], [obs(QUESTIONS[0])])


def test_save_load_round_trip(tmp_path):
    planner = make_planner()
    records = play(planner, 3)
    planner.save_pretrained(tmp_path / "planner")
    planner.save_pretrained(tmp_path / "planner")  # overwriting an existing save works
    assert sorted(p.name for p in (tmp_path / "planner").iterdir()) == ["backbone", "head.safetensors", "planner.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["planner"]  # no temp dirs left
    loaded = Planner.from_pretrained(tmp_path / "planner")
    assert loaded.config == planner.config
    with torch.no_grad():
        a, _ = planner.trajectory_logprobs(records)
        b, _ = loaded.trajectory_logprobs(records)
    torch.testing.assert_close(a, b)


def test_load_rejects_a_non_planner_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="planner.json"):
        Planner.from_pretrained(tmp_path)


def test_cached_act_matches_reencoding_act():
    cached = play(make_planner(use_cache=True), 3)
    plain = play(make_planner(use_cache=False), 3)
    for a, b in zip(cached, plain):
        assert a.actions == b.actions and a.input_ids == b.input_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def test_shared_header_prefill_matches_separate_prefills():
    """Copies of one question share the header's prefill; decisions and log-probs are unchanged."""
    def run(share):
        planner = make_planner(share_prefill=share)
        planner.reset(4)
        plans: dict[int, list[int]] = {c: [] for c in range(4)}
        for r in range(3):
            acts = planner.act(list(range(4)), [obs(QUESTIONS[c // 2], STEPS[:r], plans[c]) for c in range(4)])
            for c, a in enumerate(acts):
                plans[c].append(a)
        return planner.records()

    for a, b in zip(run(True), run(False)):
        assert a.actions == b.actions and a.input_ids == b.input_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


def test_shared_header_scoring_equals_plain_scoring_values_and_gradients():
    """trajectory_logprobs with the question header encoded once per group: same values and gradients."""
    out = {}
    for share in (True, False):
        planner = make_planner(share_prefill=share)
        planner.reset(4)
        plans: dict[int, list[int]] = {c: [] for c in range(4)}
        for r in range(3):
            ids = [0, 1, 2, 3] if r < 2 else [0, 2]
            acts = planner.act(ids, [obs(QUESTIONS[c // 2], STEPS[:r], plans[c]) for c in ids])
            for c, a in zip(ids, acts):
                plans[c].append(a)
        planner.zero_grad()
        logp, valid = planner.trajectory_logprobs(planner.records())
        (logp * valid * torch.linspace(-1, 1, 4)[:, None]).sum().backward()
        out[share] = (logp.detach(), valid, [p.grad.clone() for p in planner.parameters()])
    assert torch.equal(out[True][1], out[False][1])
    assert torch.allclose(out[True][0], out[False][0], atol=1e-5)
    for a, b in zip(out[True][2], out[False][2]):
        assert torch.allclose(a, b, atol=1e-5)
