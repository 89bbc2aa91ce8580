"""One optimizer step for one agent, the part of :class:`algos.trainer.Trainer` that does the math.

For the role a learner updates now: the learner's ``advantages`` of the group rewards, or (when it
returns None, as :class:`algos.learner_base.SharedObjective` does) GRPO's, per reward term of the env's
rubric with ``train.grpo.per_term_advantages``; zero-advantage groups left unscored; the KL reference's log-probs;
then ``num_iterations`` passes of: score the records in chunks (``score_chunk``), the learner's ``loss``
(:func:`algos.grpo.grpo_loss` for a SharedObjective), backward weighted across chunks and
processes, one all-reduce of the gradients, clipping, and a step unless the loss or gradient norm is
non-finite (:class:`algos.step_guard.StepGuard`).

:class:`PolicyUpdate` is what the trainer hands this step: the :class:`UpdateContext` protocol
names every trainer attribute it reads; the learner's side is :class:`algos.learners.Learner`.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import torch
from accelerate import Accelerator

from rsim_env.rewards import RewardWeights, Rubric, rubric

from .distributed import process_weight, sync_grads
from .learner_base import Learner
from .protocols import DecisionRecord, GeneratedRecord, SampledRecord
from .grpo import AGGREGATIONS, group_advantages, per_term_advantages, zero_std_groups
from .step_guard import StepGuard
from .update_schedule import UpdateSchedule
from .train_config import TrainConfig

__all__ = ["PolicyUpdate", "UpdateContext", "reward_terms", "truncated_is_weights"]


def reward_terms(role: str, results: Sequence[dict], terms_of: Rubric | RewardWeights,
                 rewards: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``[N, K]`` unweighted components of ``role``'s reward per result (``info["components"]``) and their ``[K]``
    weights, for :func:`algos.grpo.per_term_advantages`; ``rewards`` (``[N]``), if given, must be their weighted sum.

    ``terms_of`` is the env's rubric (``EnvConfig.rubric``: the components ``role``'s reward sums, whatever
    they are); a :class:`RewardWeights` stands for the paper's rubric at those weights.
    """
    rub = rubric(terms_of) if isinstance(terms_of, RewardWeights) else terms_of
    if not isinstance(rub, Rubric):
        raise TypeError(f"reward_terms takes the env's Rubric (EnvConfig.rubric), got {type(terms_of).__name__}.")
    comps = rub.terms(role)
    names = [c.name for c in comps]
    if not names:
        raise ValueError(f"train.grpo.per_term_advantages: the env's rubric gives the {role} no reward component "
                         f"(its components: {list(rub.names)}); set train.grpo.per_term_advantages=false.")
    try:
        terms = torch.tensor([[float(r["info"]["components"][n]) for n in names] for r in results], dtype=torch.float64)
    except KeyError as e:
        raise ValueError(f"train.grpo.per_term_advantages needs every {role} reward component {names} in "
                         f"info['components']; {e} is missing. Set train.grpo.per_term_advantages=false.") from None
    w = torch.tensor([float(c.weight) for c in comps], dtype=torch.float64)
    if rewards is not None and not torch.allclose(terms @ w, rewards.to(torch.float64), atol=1e-4):
        raise ValueError(f"train.grpo.per_term_advantages: the {role} rewards are not the weighted sum of their "
                         f"components {names} (a reward from elsewhere?); set train.grpo.per_term_advantages=false.")
    return terms, w


def truncated_is_weights(old: torch.Tensor, records: Sequence[Any], mask: torch.Tensor, cap: float) -> torch.Tensor:
    """``min(exp(old - sampled), cap)`` per chosen position (1 elsewhere); ``sampled`` = the records' logprobs."""
    rows = [list(r.logprobs or []) if isinstance(r, SampledRecord) else [] for r in records]
    if any(len(x) == 0 for x in rows):
        raise ValueError("GRPOConfig.tis_cap > 0 needs the sampling log-probs in every record (records.logprobs); "
                         "this agent does not record them, so set train.grpo.tis_cap=0.")
    sampled = torch.zeros_like(old)
    for i, x in enumerate(rows):
        sampled[i, : len(x)] = torch.as_tensor(x[: old.shape[1]], dtype=old.dtype)
    w = torch.exp(old - sampled).clamp(max=cap)
    return torch.where(mask.bool(), w, torch.ones_like(w))


def _choices(record: Any) -> int:
    """Positions an agent chose in one record (what ``Scored.mask`` will count): decisions or generated tokens."""
    if isinstance(record, DecisionRecord):
        return len(record.actions)
    if isinstance(record, GeneratedRecord):
        return int(sum(record.gen_mask[1:]))  # position 0 has no prefix and is never scored
    raise ValueError(f"train.score_chunk > 0 needs records with 'actions' or 'gen_mask', got {type(record).__name__}; "
                     "set train.score_chunk=0.")


class UpdateContext(Protocol):
    """What :class:`PolicyUpdate` reads from the trainer it is mixed into (:class:`algos.trainer.Trainer`)."""

    cfg: TrainConfig
    learner: Learner
    agents: dict[str, Any]
    acc: Accelerator
    G: int
    optimizers: dict[str, torch.optim.Optimizer]
    optim_cfg: dict[str, Any]
    loss_cfg: dict[str, Any]
    ref_agents: dict[str, Any]
    guard: StepGuard
    step: int
    env_cfg: Any


@dataclass
class _Batch:
    """The rows of one update on this process: their records, advantages and KL reference log-probs."""

    records: list[Any]
    advantages: torch.Tensor
    weight: float
    """1, or 0 on a process whose rows all have zero advantage (it still joins the all-reduce)."""
    ref_logp: torch.Tensor | None = None


@dataclass
class _Pass:
    """State carried across the ``num_iterations`` passes: per-chunk old log-probs and advantages, the metrics."""

    chunks: list[list[int]]
    shares: list[float]
    scale: float | None
    olds: list[Any]
    advs: list[Any]
    sums: dict[str, float]


class PolicyUpdate(UpdateContext):
    """``update(role, plan, results, records)`` for :class:`algos.trainer.Trainer`, which sets every member of
    :class:`UpdateContext` (this class holds no state of its own)."""

    def _set_lr(self, role: str, scale: float) -> float:
        oc = self.optim_cfg[role]
        warm = min(1.0, (self.step + 1) / oc.warmup_steps) if oc.warmup_steps else 1.0
        lr = oc.lr * warm * scale
        for g in self.optimizers[role].param_groups:
            g["lr"] = lr
        return lr

    def _advantages(self, R: torch.Tensor, role: str, results: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        """Advantages of ``R`` and the ``[N // G]`` groups left unscored (zero advantage)."""
        g = self.cfg.grpo
        custom = self.learner.advantages(R, self.G, g)
        if custom is not None:
            return custom, zero_std_groups(R, self.G)
        if not g.per_term_advantages:
            return group_advantages(R, self.G, scale=g.scale_rewards, eps=g.adv_eps), zero_std_groups(R, self.G)
        terms, w = reward_terms(role, results, self.env_cfg.rubric, R)  # the env's terms, whatever they are
        adv = per_term_advantages(terms, self.G, w, scale=g.scale_rewards, eps=g.adv_eps)
        flat = torch.stack([zero_std_groups(terms[:, k], self.G) | (w[k] == 0) for k in range(len(w))]).all(0)
        return adv, flat

    def update(self, role: str, plan: UpdateSchedule, results: list[dict], records: list[Any]) -> dict[str, float]:
        """One optimizer step (``num_iterations`` passes) for ``role``; returns its metrics.

        The steps: pick the rows worth scoring (:meth:`_select`), set the learning rate, score the KL
        reference once (:meth:`_reference_logp`), then each pass scores, backpropagates and steps
        (:meth:`_backward_pass`, :meth:`_step`).
        """
        batch = self._select(role, results, records)
        if batch is None:  # every process has only zero-advantage groups: nothing to learn this step
            return {"skipped": 1.0}
        lr = self._set_lr(role, plan.lr_scale[role])
        params = [p for grp in self.optimizers[role].param_groups for p in grp["params"]]
        before = [p.detach().clone() for p in params] if self.cfg.log_update_norm else None
        batch.ref_logp = self._reference_logp(role, batch.records)
        state = self._start_passes(batch)
        dropped, tokens, n = 0, 0.0, self.cfg.grpo.num_iterations
        for _ in range(n):
            self.optimizers[role].zero_grad(set_to_none=False)
            loss_sum, tokens = self._backward_pass(role, batch, state)
            dropped += self._step(role, params, loss_sum, state.sums)
        state.sums.update(learning_rate=lr, lr_scale=plan.lr_scale[role], tokens=tokens * batch.weight, skipped=0.0,
                          nonfinite_skipped=float(dropped))
        if before is not None:
            state.sums["update_norm"] = math.sqrt(sum(float((p.detach() - b).pow(2).sum())
                                                      for p, b in zip(params, before)))
        return state.sums

    def _select(self, role: str, results: list[dict], records: list[Any]) -> _Batch | None:
        """The rows to score and their advantages; None when no process has any (the step is skipped)."""
        R = torch.tensor([res["rewards"][role] for res in results], dtype=torch.float32)
        g = self.cfg.grpo
        adv, zero = self._advantages(R, role, results)
        # a KL penalty or an entropy bonus has a gradient even where every reward of a group is equal
        score_all = g.kl_coef > 0 or self.loss_cfg[role].entropy_coef > 0 or not self.cfg.skip_zero_std_groups
        keep = [c for c in range(len(R)) if score_all or not zero[c // self.G]]
        active = int(self.acc.reduce(torch.tensor(len(keep), device=self.acc.device), "sum").item())
        if active == 0:
            return None
        sub, weight = (keep, 1.0) if keep else ([0], 0.0)  # a process with nothing still joins the all-reduce
        return _Batch([records[c] for c in sub], adv[sub].to(self.acc.device), weight)

    def _reference_logp(self, role: str, records: list[Any]) -> torch.Tensor | None:
        """The KL reference's log-probs of ``records`` (None without a KL term)."""
        if self.cfg.grpo.kl_coef <= 0:
            return None
        with torch.no_grad(), self.acc.autocast(), self._reference(role) as ref:
            return ref.score(records).logp.float()

    def _start_passes(self, batch: _Batch) -> _Pass:
        """The chunks of ``batch`` and the normaliser scale (None for one chunk: read from its mask)."""
        chunks, shares, total = self._chunks(batch.records, self.cfg.grpo.loss_type)
        scale = None if total is None else process_weight(self.acc, total, batch.weight)
        return _Pass(chunks, shares, scale, [None] * len(chunks), [None] * len(chunks), {})

    def _backward_pass(self, role: str, batch: _Batch, state: _Pass) -> tuple[float, float]:
        """Score every chunk with the current weights and backpropagate its weighted loss; the loss and tokens."""
        g = self.cfg.grpo
        loss_sum, tokens = 0.0, 0.0
        for i, (idx, share) in enumerate(zip(state.chunks, state.shares)):
            c_recs = [batch.records[j] for j in idx]
            with self.acc.autocast():
                scored = self.agents[role].score(c_recs)
            logp = scored.logp.float()
            c_ref = None if batch.ref_logp is None else batch.ref_logp[idx][:, : logp.shape[1]]
            if state.olds[i] is None:  # first pass: on-policy log-probs, kept for later passes
                state.olds[i], state.advs[i] = logp.detach(), batch.advantages[idx]
                if g.tis_cap > 0:  # rollouts came from a lower-precision sampling copy: reweight per token
                    state.advs[i] = batch.advantages[idx].reshape(-1, 1) * truncated_is_weights(
                        state.olds[i], c_recs, scored.mask, g.tis_cap)
            loss, m = self.learner.loss(logp, state.olds[i], state.advs[i], scored.mask, self.loss_cfg[role], c_ref,
                                        scored.entropy)
            if state.scale is None:  # one chunk: the normaliser count comes from its mask
                count = AGGREGATIONS[g.loss_type].count(scored.mask, len(idx))
                state.scale = process_weight(self.acc, count, batch.weight)
            (loss * share * state.scale).backward()  # chunk losses weighted to sum to the whole batch's loss
            loss_sum += loss.item() * share
            tokens += float(scored.mask.sum().item())
            for k, v in m.items():
                state.sums[k] = state.sums.get(k, 0.0) + v * share / g.num_iterations
        return loss_sum, tokens

    def _step(self, role: str, params: list[torch.Tensor], loss_sum: float, sums: dict[str, float]) -> int:
        """All-reduce, clip and step (or drop a non-finite update: 1 is returned); adds the pass's loss and norm."""
        sync_grads(self.acc, params)
        max_norm = self.optim_cfg[role].max_grad_norm
        gn = torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else float("inf"))
        dropped = 0
        if self.guard.finite(role, loss_sum, gn):
            self.optimizers[role].step()
        else:  # NaN/inf would poison the weights and Adam's moments: drop this update
            self.optimizers[role].zero_grad(set_to_none=False)
            dropped = 1
        n = self.cfg.grpo.num_iterations
        for k, v in dict(loss=loss_sum, grad_norm=gn.item()).items():
            sums[k] = sums.get(k, 0.0) + v / n
        return dropped

    def _chunks(self, recs: list[Any], loss_type: str) -> tuple[list[list[int]], list[float], float | None]:
        """Row chunks scored one forward/backward at a time (``score_chunk``), each chunk's share of the
        batch loss, and the batch's normaliser count (None for one chunk: read from its mask)."""
        n, size = len(recs), self.cfg.score_chunk or len(recs)
        chunks = [list(range(i, min(n, i + size))) for i in range(0, n, size)]
        if len(chunks) == 1:
            return chunks, [1.0], None
        count = AGGREGATIONS[loss_type].count  # reads only the number of rows or of chosen positions
        units = [count(torch.ones(1, sum(_choices(recs[j]) for j in idx)), len(idx)) for idx in chunks]
        total = sum(units)
        return chunks, [u / total if total else 0.0 for u in units], total

    def _reference(self, role: str) -> Any:
        """Context yielding the KL reference of ``role``: its frozen copy, or a LoRA agent in reference mode."""
        if role in self.ref_agents:
            return contextlib.nullcontext(self.ref_agents[role])
        return self.agents[role].reference()
