"""Every GRPO formula on hand-made tensors (algos/grpo.py)."""

import math

import pytest
import torch

from algos.grpo import (
    AGGREGATIONS, GRPOConfig, clip_metrics, clipped_surrogate, group_advantages, grpo_loss, k3_kl,
    per_term_advantages, zero_std_groups,
)


# ---------------------------------------------------------------- advantages

def test_group_advantages_matches_formula():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 3.0, 1.0, 2.0, 2.0])
    a = group_advantages(r, 4, eps=1e-4)
    for g in range(2):
        x = r[4 * g: 4 * g + 4]
        want = (x - x.mean()) / (x.std() + 1e-4)
        torch.testing.assert_close(a[4 * g: 4 * g + 4], want)


def test_group_advantages_mean_only():
    r = torch.tensor([1.0, 0.0, 0.0, 3.0])
    torch.testing.assert_close(group_advantages(r, 4, scale=False), r - 1.0)


@pytest.mark.parametrize("scale", [True, False], ids=["std", "mean-only"])
@pytest.mark.parametrize("value", [0.0, 1.0, 0.1, -2.7], ids=["zero", "one", "tenth", "neg"])
def test_equal_rewards_give_exact_zero_not_nan(scale, value):
    r = torch.full((6,), value)
    a = group_advantages(r, 3, scale=scale)
    assert torch.equal(a, torch.zeros(6))


def test_groups_are_independent():
    r = torch.tensor([5.0, 5.0, 0.0, 1.0])
    a = group_advantages(r, 2)
    assert a[:2].tolist() == [0.0, 0.0]
    assert a[2] < 0 < a[3]
    assert zero_std_groups(r, 2).tolist() == [True, False]


def test_advantages_sum_to_zero_per_group():
    r = torch.randn(12, generator=torch.Generator().manual_seed(0))
    a = group_advantages(r, 4).view(3, 4)
    torch.testing.assert_close(a.sum(1), torch.zeros(3), atol=1e-5, rtol=0)


@pytest.mark.parametrize("bad", [torch.zeros(5), torch.zeros(2, 2)], ids=["not-divisible", "2d"])
def test_advantages_reject_bad_shapes(bad):
    with pytest.raises(ValueError, match="group_size"):
        group_advantages(bad, 4)


def test_advantages_reject_nan():
    with pytest.raises(ValueError, match="NaN"):
        group_advantages(torch.tensor([0.0, float("nan")]), 2)


# ---------------------------------------------------------------- per-token terms

def test_k3_kl_values():
    new = torch.tensor([0.0, -1.0, -2.0])
    ref = torch.tensor([0.0, -2.0, -1.0])
    d = ref - new
    torch.testing.assert_close(k3_kl(new, ref), torch.exp(d) - d - 1)
    assert k3_kl(new, ref)[0] == 0
    assert (k3_kl(new, ref) >= 0).all()
    # k3 is an unbiased estimate of KL(new || ref): check by sampling from a categorical.
    p = torch.tensor([0.5, 0.3, 0.2]); q = torch.tensor([0.2, 0.3, 0.5])
    idx = torch.multinomial(p, 200_000, replacement=True, generator=torch.Generator().manual_seed(0))
    est = k3_kl(p.log()[idx], q.log()[idx]).mean()
    exact = (p * (p / q).log()).sum()
    assert abs(est - exact) < 0.01


@pytest.mark.parametrize(
    "ratio,adv,want",
    [
        (1.0, 1.0, -1.0),            # on-policy: -A
        (1.5, 1.0, -1.28),           # A > 0 clipped at 1 + eps_high
        (0.5, 1.0, -0.5),            # A > 0 below 1: unclipped (min picks r*A)
        (0.5, -1.0, 0.8),            # A < 0 clipped at 1 - eps_low
        (1.5, -1.0, 1.5),            # A < 0 above 1: unclipped (pessimistic)
        (1.1, 2.0, -2.2),            # inside the region
    ],
    ids=["onpolicy", "high-clip", "low-pos", "low-clip", "high-neg", "inside"],
)
def test_clipped_surrogate_table(ratio, adv, want):
    logp = torch.tensor([[math.log(ratio)]])
    out = clipped_surrogate(logp, torch.zeros(1, 1), torch.tensor([adv]), 0.2, 0.28)
    assert out.item() == pytest.approx(want, rel=1e-5)


def test_clipped_positions_have_no_gradient():
    logp = torch.tensor([[math.log(1.5), math.log(1.1)]], requires_grad=True)
    clipped_surrogate(logp, torch.zeros(1, 2), torch.tensor([1.0]), 0.2, 0.2).sum().backward()
    assert logp.grad[0, 0] == 0 and logp.grad[0, 1] != 0


# ---------------------------------------------------------------- aggregation

LOSS = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 0.0, 0.0, 0.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "name,want",
    [("grpo", (2.0 + 4.0) / 2), ("dapo", 10.0 / 4), ("dr_grpo", 10.0 / (2 * 8))],
    ids=["grpo", "dapo", "dr_grpo"],
)
def test_aggregations(name, want):
    assert AGGREGATIONS[name](LOSS, MASK, 8).item() == pytest.approx(want)


@pytest.mark.parametrize("name", sorted(AGGREGATIONS))
def test_masked_positions_get_no_gradient(name):
    x = torch.ones(2, 4, requires_grad=True)
    AGGREGATIONS[name](x * LOSS, MASK, 8).backward()
    assert torch.equal(x.grad != 0, MASK.bool())


@pytest.mark.parametrize("name", sorted(AGGREGATIONS))
def test_empty_mask_is_zero_not_nan(name):
    assert AGGREGATIONS[name](LOSS, torch.zeros_like(MASK), 8).item() == 0.0


# ---------------------------------------------------------------- full loss + metrics

def test_grpo_loss_on_policy_gradient_is_policy_gradient():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, requires_grad=True)
    logp = torch.log_softmax(logits, -1)[:, 0].view(3, 1).repeat(1, 2)
    mask = torch.ones(3, 2)
    adv = torch.tensor([1.0, -0.5, 0.0])
    loss, m = grpo_loss(logp, None, adv, mask, GRPOConfig(loss_type="dapo"))
    # ratio == 1, so the loss is -mean(A) and grad is -mean(A * grad logp)
    assert loss.item() == pytest.approx(-adv.mean().item(), abs=1e-6)
    loss.backward()
    ref = logits.detach().clone().requires_grad_(True)
    (-(torch.log_softmax(ref, -1)[:, 0] * adv).sum() * 2 / 6).backward()
    torch.testing.assert_close(logits.grad, ref.grad)
    assert m["clip_ratio/region_mean"] == 0 and m["approx_kl"] == pytest.approx(0, abs=1e-7)


def test_grpo_loss_kl_term_and_metrics():
    logp = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    ref = torch.tensor([[-2.0, -1.0]])
    cfg = GRPOConfig(kl_coef=0.5, loss_type="dapo")
    loss, m = grpo_loss(logp, None, torch.tensor([0.0]), torch.ones(1, 2), cfg, ref_logp=ref, entropy=torch.ones(1, 2))
    kl = k3_kl(logp.detach(), ref).mean().item()
    assert loss.item() == pytest.approx(0.5 * kl)
    assert m["kl"] == pytest.approx(kl) and m["entropy"] == 1.0


def test_kl_needs_reference():
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(torch.zeros(1, 1), None, torch.zeros(1), torch.ones(1, 1), GRPOConfig(kl_coef=0.1))


def test_clip_metrics_low_high_region():
    cfg = GRPOConfig(clip_eps_low=0.2, clip_eps_high=0.2)
    logp = torch.log(torch.tensor([[0.5, 1.5, 1.5, 1.0]]))
    adv = torch.tensor([[-1.0, 1.0, -1.0, 1.0]])
    m = clip_metrics(logp, torch.zeros(1, 4), adv, torch.ones(1, 4), cfg)
    assert m == {"clip_ratio/low_mean": 0.25, "clip_ratio/high_mean": 0.25, "clip_ratio/region_mean": 0.5}


def test_num_iterations_reuses_batch_with_old_logp():
    """Second pass over one batch: old log-probs fixed from pass 1, ratio moves, clipping kicks in."""
    torch.manual_seed(0)
    logits = torch.zeros(4, 3, requires_grad=True)
    actions = torch.tensor([0, 1, 2, 0])
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0])
    cfg = GRPOConfig(num_iterations=3, clip_eps_low=0.1, clip_eps_high=0.1)
    opt = torch.optim.SGD([logits], lr=5.0)
    old = None
    ratios = []
    for _ in range(cfg.num_iterations):
        logp = torch.log_softmax(logits, -1).gather(1, actions[:, None])
        if old is None:
            old = logp.detach()
        loss, m = grpo_loss(logp, old, adv, torch.ones(4, 1), cfg)
        ratios.append(torch.exp(logp.detach() - old))
        opt.zero_grad(); loss.backward(); opt.step()
    assert torch.equal(ratios[0], torch.ones(4, 1))
    assert not torch.allclose(ratios[1], torch.ones(4, 1))
    assert m["clip_ratio/region_mean"] > 0 and m["approx_kl"] > 0


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"group_size": 1}, "group_size"),
        ({"clip_eps_low": 0.0}, "clip_eps_low"),
        ({"clip_eps_high": 1.5}, "clip_eps_high"),
        ({"kl_coef": -1.0}, "kl_coef"),
        ({"loss_type": "ppo"}, "loss_type"),
        ({"max_length": 0}, "max_length"),
        ({"num_iterations": 0}, "num_iterations"),
        ({"adv_eps": 0.0}, "adv_eps"),
        ({"per_term_advantages": 1}, "per_term_advantages"),
    ],
    ids=lambda v: str(v),
)
def test_config_errors_name_field(kwargs, field):
    with pytest.raises(ValueError, match=f"GRPOConfig.{field}="):
        GRPOConfig(**kwargs)


# ---------------------------------------------------------------- per-term advantages (GRPOConfig.per_term_advantages)

def test_per_term_advantages_hand_computed():
    # one group of 3: acc [1, 0, 0], terminal [1, 1, -1]. Each term: mean 1/3, unbiased std sqrt(1/3) (acc) and
    # sqrt(4/3) (terminal), so acc -> [2, -1, -1] / sqrt(3) and terminal -> [1, 1, -2] / sqrt(3); summed:
    # [sqrt 3, 0, -sqrt 3]. GRPO on the sum [2, 1, -1] gives the middle copy (terminated, wrong) +0.22 instead.
    terms = torch.tensor([[1.0, 1.0], [0.0, 1.0], [0.0, -1.0]])
    a = per_term_advantages(terms, 3, eps=1e-12)
    torch.testing.assert_close(a, torch.tensor([math.sqrt(3), 0.0, -math.sqrt(3)]), atol=1e-6, rtol=0)
    summed = group_advantages(terms.sum(1), 3, eps=1e-12)
    assert summed[1].item() == pytest.approx(1 / 3 / math.sqrt(7 / 3), abs=1e-6)


def test_per_term_advantages_weights_scale_and_drop_terms():
    terms = torch.tensor([[1.0, 1.0], [0.0, 1.0], [0.0, -1.0], [1.0, -1.0]])
    acc = group_advantages(terms[:, 0], 2, eps=1e-4)
    term = group_advantages(terms[:, 1], 2, eps=1e-4)
    torch.testing.assert_close(per_term_advantages(terms, 2, torch.tensor([2.0, 0.5])), 2 * acc + 0.5 * term)
    torch.testing.assert_close(per_term_advantages(terms, 2, torch.tensor([1.0, 0.0])), acc)


def test_per_term_advantages_of_one_term_equal_grpo_and_flat_terms_add_nothing():
    r = torch.randn(12, generator=torch.Generator().manual_seed(0))
    for scale in (True, False):
        torch.testing.assert_close(per_term_advantages(r[:, None], 4, scale=scale), group_advantages(r, 4, scale=scale))
    with_flat = torch.stack([r, torch.full_like(r, 0.5)], 1)  # a term equal for every copy has no advantage
    torch.testing.assert_close(per_term_advantages(with_flat, 4), group_advantages(r, 4))
    assert (per_term_advantages(torch.ones(4, 3), 2) == 0).all()


@pytest.mark.parametrize("terms, weights, match", [
    (torch.ones(4), None, r"\[N, K\]"),
    (torch.ones(4, 2), torch.ones(3), "one entry per column"),
    (torch.ones(3, 2), None, "divisible by group_size"),
], ids=["1-D", "weights", "group"])
def test_per_term_advantages_reject_bad_input(terms, weights, match):
    with pytest.raises(ValueError, match=match):
        per_term_advantages(terms, 2, weights)
