"""GRPO math on plain tensors: advantages, clipped surrogate, k3 KL, loss aggregation, metrics.

Nothing here knows about models, tokens or environments; every function takes tensors and
returns tensors, so each formula is unit-tested on hand-made numbers (``tests/test_grpo.py``).

Shapes: ``B`` sequences (rollouts), ``T`` positions (tokens for the reasoner, decisions for the
planner). ``mask[b, t] = 1`` marks the positions the agent actually chose (generated tokens,
planner decisions); everything else (prompt, injected strategy text, padding) is 0 and never
receives gradient or counts in a normaliser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import torch

from rsim_env.validation import check_finite

Tensor = torch.Tensor


@dataclass(frozen=True)
class GRPOConfig:
    """Loss hyper-parameters for one agent (defaults follow DAPO-style GRPO)."""

    group_size: int = 4
    """G: rollouts per problem; advantages are normalised within each group of G."""
    scale_rewards: bool = True
    """Divide by the group std (GRPO); False keeps only the mean baseline (Dr. GRPO)."""
    adv_eps: float = 1e-4
    """eps in (R - mean) / (std + eps)."""
    clip_eps_low: float = 0.2
    """Lower clip: ratios below 1 - clip_eps_low stop contributing gradient for A < 0."""
    clip_eps_high: float = 0.28
    """Upper clip: ratios above 1 + clip_eps_high stop contributing gradient for A > 0 (DAPO clip-higher)."""
    kl_coef: float = 0.0
    """beta of the k3 KL penalty to a frozen reference; 0 disables it (and the reference model)."""
    loss_type: str = "dapo"
    """Aggregation: "grpo" (per-sequence mean), "dapo" (token mean over batch), "dr_grpo" (constant normaliser)."""
    max_length: int = 256
    """Constant normaliser (positions per sequence) for loss_type="dr_grpo"."""
    num_iterations: int = 1
    """Optimisation passes over one rollout batch (mu); > 1 reuses it with the old log-probs kept."""
    entropy_coef: float = 0.0
    """Entropy bonus: subtract ``entropy_coef * entropy`` per chosen position from the loss. The trainer
    applies it to the planner only (its strategy distribution; the reasoner's token entropy is logged, never
    rewarded). Keeps the planner from collapsing onto one plan before the problem-dependent accuracy signal
    arrives (docs/contextual.md); with it on, equal-reward groups are still scored, since the bonus has a
    gradient there. 0 = off (the entropy is then only logged)."""
    per_term_advantages: bool = False
    """Normalise each reward component within its group before summing (:func:`per_term_advantages`):
    ``A = sum_k w_k (r_k - mean_g r_k) / (std_g r_k + eps)`` over the components the env's rubric sums into
    the role's reward (``EnvConfig.rubric``: the paper's and ``env.components``, at their weights), so a
    term with a large spread (R_terminal: +-1) does not drown one with a small spread (R_acc). False (GRPO,
    the paper) normalises the summed reward. A learner's own ``advantages`` hook, when it has one, is used instead."""
    tis_cap: float = 0.0
    """Truncated importance sampling for rollouts sampled by a lower-precision copy (e.g.
    ``reasoner.sample_dtype=bfloat16``): each token's advantage is weighted by
    ``min(exp(logp_old - logp_sampled), tis_cap)``; 0 = off (TRL uses 2 for vLLM rollouts)."""

    def __post_init__(self) -> None:
        check_finite(self)
        def bad(field: str, fix: str) -> ValueError:
            return ValueError(f"GRPOConfig.{field}={getattr(self, field)!r} is invalid: {fix}.")

        if not isinstance(self.group_size, int) or self.group_size < 2:
            raise bad("group_size", "GRPO needs at least 2 rollouts per problem to form a baseline; use >= 2")
        if not self.adv_eps > 0:
            raise bad("adv_eps", "use a small positive number such as 1e-4")
        for f in ("clip_eps_low", "clip_eps_high"):
            if not 0 < getattr(self, f) < 1:
                raise bad(f, "use a value in (0, 1), e.g. 0.2")
        if not self.kl_coef >= 0:
            raise bad("kl_coef", "use 0 (off) or a positive beta such as 0.04")
        if self.loss_type not in AGGREGATIONS:
            raise bad("loss_type", f"choose one of {sorted(AGGREGATIONS)}")
        if not isinstance(self.max_length, int) or self.max_length < 1:
            raise bad("max_length", "use the completion token cap (a positive int)")
        if not isinstance(self.num_iterations, int) or self.num_iterations < 1:
            raise bad("num_iterations", "use 1 (on-policy) or more to reuse each rollout batch")
        if not (isinstance(self.entropy_coef, (int, float)) and self.entropy_coef >= 0):
            raise bad("entropy_coef", "use 0 (off) or a small positive bonus such as 0.01")
        if not isinstance(self.per_term_advantages, bool):
            raise bad("per_term_advantages", "use True or False")
        if not (isinstance(self.tis_cap, (int, float)) and (self.tis_cap == 0 or self.tis_cap >= 1)):
            raise bad("tis_cap", "use 0 (off) or a cap >= 1 such as 2")


# --------------------------------------------------------------------------------------------
# Advantages


def group_advantages(rewards: Tensor, group_size: int, scale: bool = True, eps: float = 1e-4) -> Tensor:
    """Group-normalised advantages ``A = (R - mean_g) / (std_g + eps)`` (or ``R - mean_g``).

    Args:
        rewards: ``[N]`` rewards, ordered so that copies ``g*G .. g*G+G-1`` share a problem.
        group_size: G.
        scale: divide by the (unbiased) group std; False = mean baseline only.
        eps: added to the std.

    Returns:
        ``[N]`` advantages. A group whose rewards are all equal gets exactly 0 (never NaN), so it
        contributes no policy gradient and can be skipped.
    """
    if rewards.dim() != 1 or rewards.numel() % group_size:
        raise ValueError(
            f"rewards must be 1-D with a length divisible by group_size={group_size}; got shape "
            f"{tuple(rewards.shape)}. Order rollouts as G consecutive copies per problem."
        )
    if not torch.isfinite(rewards).all():
        raise ValueError(f"rewards contain NaN/inf: {rewards.tolist()}; fix the reward function.")
    r = rewards.view(-1, group_size).to(torch.float64)
    centred = r - r.mean(dim=1, keepdim=True)
    flat = (r.amax(dim=1, keepdim=True) - r.amin(dim=1, keepdim=True)) == 0
    if scale:
        centred = centred / (r.std(dim=1, keepdim=True) + eps)
    centred = torch.where(flat, torch.zeros_like(centred), centred)
    return centred.view(-1).to(rewards.dtype if rewards.is_floating_point() else torch.float32)


def per_term_advantages(terms: Tensor, group_size: int, weights: Tensor | None = None, scale: bool = True,
                        eps: float = 1e-4) -> Tensor:
    """``A = sum_k w_k * group_advantages(terms[:, k])``: each reward term normalised within its group, then summed.

    GRPO normalises the *summed* reward, so a term whose spread within a group is large dominates the
    advantage of one whose spread is small; here every term that varies in a group contributes on the
    same scale (times its weight), and a term that is flat in a group contributes 0 there. With one
    term of weight 1 this is :func:`group_advantages` of that term.

    Args:
        terms: ``[N, K]`` unweighted reward components, rows ordered as for :func:`group_advantages`.
        group_size: G.
        weights: ``[K]`` weights (default all 1); a weight of 0 leaves the term out.
        scale: divide each term by its group std; False = mean baseline only.
        eps: added to each std.

    Returns:
        ``[N]`` advantages (exactly 0 in a group where every term is flat).
    """
    if terms.dim() != 2:
        raise ValueError(f"terms must be [N, K] (one column per reward component); got shape {tuple(terms.shape)}.")
    w = torch.ones(terms.shape[1], dtype=torch.float64) if weights is None else torch.as_tensor(weights, dtype=torch.float64)
    if w.shape != (terms.shape[1],):
        raise ValueError(f"weights must have one entry per column of terms ({terms.shape[1]}); got shape {tuple(w.shape)}.")
    cols = [group_advantages(terms[:, k].to(torch.float64), group_size, scale, eps) for k in range(terms.shape[1])]
    adv = torch.stack(cols, 1) @ w if cols else torch.zeros(terms.shape[0], dtype=torch.float64)
    return adv.to(terms.dtype if terms.is_floating_point() else torch.float32)


def zero_std_groups(rewards: Tensor, group_size: int) -> Tensor:
    """``[N // G]`` bool: True for groups whose rewards are all equal (zero advantage)."""
    r = rewards.view(-1, group_size)
    return (r.amax(dim=1) - r.amin(dim=1)) == 0


# --------------------------------------------------------------------------------------------
# Per-token terms


def k3_kl(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """Schulman's k3 estimator of KL(new || ref): ``exp(ref - new) - (ref - new) - 1`` (>= 0)."""
    d = ref_logp - logp
    return torch.exp(d) - d - 1


def clipped_surrogate(logp: Tensor, old_logp: Tensor, advantages: Tensor, eps_low: float, eps_high: float) -> Tensor:
    """Per-position PPO/GRPO loss ``-min(r A, clip(r, 1-eps_low, 1+eps_high) A)``.

    ``advantages`` is ``[B]`` (one per sequence, broadcast over positions) or ``[B, T]``.
    """
    adv = advantages.unsqueeze(-1) if advantages.dim() == logp.dim() - 1 else advantages
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * adv
    return -torch.min(unclipped, clipped)


# --------------------------------------------------------------------------------------------
# Aggregation (one dict, validated once in GRPOConfig)


def _agg_grpo(loss: Tensor, mask: Tensor, max_length: int) -> Tensor:
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_seq.mean()


def _agg_dapo(loss: Tensor, mask: Tensor, max_length: int) -> Tensor:
    return (loss * mask).sum() / mask.sum().clamp(min=1)


def _agg_dr_grpo(loss: Tensor, mask: Tensor, max_length: int) -> Tensor:
    return (loss * mask).sum() / (loss.shape[0] * max_length)


def _count_tokens(mask: Tensor, rows: int) -> float:
    return float(mask.sum().item())


def _count_rows(mask: Tensor, rows: int) -> float:
    return float(rows)


class Aggregation(NamedTuple):
    """A loss aggregation and the unit it normalises by (for combining processes' losses)."""

    reduce: Callable[[Tensor, Tensor, int], Tensor]
    """``f(per_position_loss [B,T], mask [B,T], max_length) -> scalar``."""
    count: Callable[[Tensor, int], float]
    """``count(mask, rows)``: how many units this batch's normaliser counts (tokens or sequences)."""

    def __call__(self, loss: Tensor, mask: Tensor, max_length: int) -> Tensor:
        return self.reduce(loss, mask, max_length)


AGGREGATIONS: dict[str, Aggregation] = {
    "grpo": Aggregation(_agg_grpo, _count_rows),
    "dapo": Aggregation(_agg_dapo, _count_tokens),
    "dr_grpo": Aggregation(_agg_dr_grpo, _count_rows),
}
"""``loss_type -> Aggregation``; call it as ``f(per_position_loss [B,T], mask [B,T], max_length) -> scalar``."""


def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean of ``x`` over positions where ``mask`` is 1 (0 when the mask is empty)."""
    return (x * mask).sum() / mask.sum().clamp(min=1)


# --------------------------------------------------------------------------------------------
# The loss


def grpo_loss(
    logp: Tensor,
    old_logp: Tensor | None,
    advantages: Tensor,
    mask: Tensor,
    cfg: GRPOConfig,
    ref_logp: Tensor | None = None,
    entropy: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """GRPO objective for one agent's batch, plus TRL-style metrics.

    Args:
        logp: ``[B, T]`` log-probs of the chosen tokens/actions under the current weights (grad).
        old_logp: ``[B, T]`` log-probs under the weights that sampled the batch; ``None`` means
            on-policy (first pass): ``logp.detach()`` is used, so the ratio is 1 but the gradient
            is the policy gradient.
        advantages: ``[B]`` or ``[B, T]``.
        mask: ``[B, T]`` 1 for positions the agent chose.
        cfg: loss settings.
        ref_logp: ``[B, T]`` frozen-reference log-probs; required iff ``cfg.kl_coef > 0``.
        entropy: optional ``[B, T]`` per-position entropy: logged, and with ``cfg.entropy_coef > 0`` a bonus
            (it must then carry gradients; an agent that reports none gets no bonus).

    Returns:
        ``(loss, metrics)`` with metrics ``clip_ratio/low_mean``, ``clip_ratio/high_mean``,
        ``clip_ratio/region_mean``, ``approx_kl``, and ``kl`` / ``entropy`` when available.
    """
    if logp.shape != mask.shape:
        raise ValueError(f"logp {tuple(logp.shape)} and mask {tuple(mask.shape)} must have the same shape.")
    if cfg.kl_coef > 0 and ref_logp is None:
        raise ValueError("GRPOConfig.kl_coef > 0 needs ref_logp (frozen reference log-probs); pass it or set kl_coef=0.")
    mask = mask.to(logp.dtype)
    old = logp.detach() if old_logp is None else old_logp
    per_pos = clipped_surrogate(logp, old, advantages, cfg.clip_eps_low, cfg.clip_eps_high)
    kl = None
    if ref_logp is not None:
        kl = k3_kl(logp, ref_logp)
        if cfg.kl_coef > 0:
            per_pos = per_pos + cfg.kl_coef * kl
    if cfg.entropy_coef > 0 and entropy is not None:
        per_pos = per_pos - cfg.entropy_coef * entropy
    loss = AGGREGATIONS[cfg.loss_type](per_pos, mask, cfg.max_length)
    return loss, loss_metrics(logp, old, advantages, mask, cfg, kl, entropy)


@torch.no_grad()
def loss_metrics(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, cfg: GRPOConfig,
                 kl: Tensor | None, entropy: Tensor | None) -> dict[str, float]:
    """:func:`grpo_loss`'s metrics: the clip ratios, ``approx_kl``, and ``kl`` / ``entropy`` when given."""
    metrics = clip_metrics(logp.detach(), old_logp, advantages, mask, cfg)
    log_ratio = logp.detach() - old_logp
    metrics["approx_kl"] = masked_mean(torch.exp(log_ratio) - 1 - log_ratio, mask).item()
    if kl is not None:
        metrics["kl"] = masked_mean(kl.detach(), mask).item()
    if entropy is not None:
        metrics["entropy"] = masked_mean(entropy.detach(), mask).item()
    return metrics


def clip_metrics(logp: Tensor, old_logp: Tensor, advantages: Tensor, mask: Tensor, cfg: GRPOConfig) -> dict[str, float]:
    """Fraction of masked positions whose gradient the clip removed (TRL's ``clip_ratio/*``)."""
    adv = advantages.unsqueeze(-1) if advantages.dim() == logp.dim() - 1 else advantages
    ratio = torch.exp(logp - old_logp)
    low = ((ratio < 1 - cfg.clip_eps_low) & (adv < 0)).to(mask.dtype)
    high = ((ratio > 1 + cfg.clip_eps_high) & (adv > 0)).to(mask.dtype)
    return {
        "clip_ratio/low_mean": masked_mean(low, mask).item(),
        "clip_ratio/high_mean": masked_mean(high, mask).item(),
        "clip_ratio/region_mean": masked_mean(low + high, mask).item(),
    }
