"""How far llama.cpp's log-probs are from torch's for a LoRA reasoner trained with engine rollouts.

A LoRA reasoner on the embedded model (``llamacpp:default`` with ``model.reasoner_lora.enabled``,
:func:`agents.llamacpp.reasoner.build_trainable`) takes ``steps`` real GRPO updates: each step the
adapter is written as a GGUF adapter and loaded into the engine (the sync), the engine rolls out
``problems`` x G copies (a fixed plan, sampled at ``temperature``), torch scores the engine's tokens
with the same adapter, and one AdamW step follows (:func:`algos.grpo.grpo_loss` with truncated
importance sampling, as :class:`algos.update.PolicyUpdate` weights it). The reward is
``benchmarks.runtime.train_step.dense_reward`` (digits in the step texts) so that every group has reward
variance and the adapter really moves.

Per step, over the generated tokens: ``mean_abs_dlogp`` (mean |torch log p - engine log p|, the same
tokens and weights), ``max_abs_dlogp``, and the TIS weight ``min(exp(torch - engine), tis_cap)``
(``algos.update.truncated_is_weights``): ``tis_clip_frac`` is the share of tokens whose weight was
cut to the cap, ``tis_low_frac`` the share whose weight is below ``1 / tis_cap`` (not clipped, just
down-weighted). Step 0's adapter is PEFT's zero init, so it measures the bare 4-bit base. ``reward``
is the step's mean dense reward and ``lora_b_norm`` the adapter's ``||B||`` after the step's update
(it starts at 0), to show the adapter moved.

    python -m studies.engine_lora --out results/engine_lora.json
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["Config", "main", "token_mismatch"]


@dataclass(frozen=True)
class Config:
    """What to train and measure."""

    steps: int = 4
    """Optimizer steps (each preceded by an adapter sync and a rollout on the engine)."""
    problems: int = 2
    """Problems per step (default data)."""
    group_size: int = 4
    """G copies per problem."""
    plan: str = "1,3,8"
    """Fixed planner strategies (comma-separated), one per round."""
    max_step_tokens: int = 32
    """Token cap per reasoner step."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts (and of the log-probs compared)."""
    rank: int = 16
    """LoRA rank (alpha = 2 * rank, all attention and MLP projections)."""
    lr: float = 5e-4
    """AdamW learning rate of the adapter."""
    tis_cap: float = 2.0
    """Truncated importance sampling cap (``train.grpo.tis_cap``)."""
    threads: int = 1
    """llama.cpp and torch threads."""
    seed: int = 0
    """Seed of sampling and the data."""
    out: str | None = None
    """Where to write the JSON result."""

    def __post_init__(self) -> None:
        for name in ("steps", "problems", "max_step_tokens", "rank", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"Config.{name}={getattr(self, name)} must be >= 1.")
        if self.group_size < 2:
            raise ValueError(f"Config.group_size={self.group_size}: GRPO needs G >= 2.")
        if not self.tis_cap >= 1:
            raise ValueError(f"Config.tis_cap={self.tis_cap}: use a cap >= 1 such as 2.")


def token_mismatch(torch_lp: Any, records: Any, mask: Any, cap: float) -> dict[str, float]:
    """Mismatch between torch's log-probs ``[B, T]`` and the records' (engine) log-probs on ``mask``."""
    import torch

    from algos.update import truncated_is_weights

    sampled = torch.zeros_like(torch_lp)
    for i, rec in enumerate(records):
        x = rec.logprobs[: torch_lp.shape[1]]
        sampled[i, : len(x)] = torch.as_tensor(x, dtype=torch_lp.dtype)
    on = mask.bool()
    delta = (torch_lp - sampled)[on]
    weights = truncated_is_weights(torch_lp, records, mask, cap)[on]
    return {"tokens": int(on.sum()), "mean_abs_dlogp": float(delta.abs().mean()), "max_abs_dlogp": float(delta.abs().max()),
            "tis_clip_frac": float((torch.exp(delta) > cap).float().mean()),
            "tis_low_frac": float((weights < 1.0 / cap).float().mean()), "mean_tis_weight": float(weights.mean())}


def _agent(cfg: Config) -> Any:
    from agents.hf.lora import LoraSpec
    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent

    rcfg = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, temperature=cfg.temperature, seed=cfg.seed)
    lora = LoraSpec(enabled=True, rank=cfg.rank, alpha=2.0 * cfg.rank)
    ctx = AgentContext("reasoner", config=rcfg, lora=lora, seed=cfg.seed)
    return build_agent(f"llamacpp:default#threads={cfg.threads}&n_ctx=1024", ctx).agent


def _step(cfg: Config, agent: Any, optimizer: Any, problems: list, step: int) -> dict[str, Any]:
    import torch

    from agents.scripted.policies import FixedPlanner
    from algos.grpo import GRPOConfig, grpo_loss, group_advantages
    from algos.rollout import rollout
    from algos.update import truncated_is_weights
    from benchmarks.runtime.train_step import dense_reward
    from rsim_env.game import EnvConfig
    from rsim_env.group import EnvGroup

    plan = [int(s) for s in cfg.plan.split(",")]
    t0 = time.perf_counter()
    synced = agent.decoder.sync(agent.scorer)
    t1 = time.perf_counter()
    groups = [EnvGroup([p], cfg.group_size, config=EnvConfig(max_steps=len(plan) + 1)) for p in problems]
    out = rollout(groups, agent, FixedPlanner(plan), seed=cfg.seed * 1000 + step)
    t2 = time.perf_counter()
    records = [t["reasoner"] for t in out.trajectories]
    rewards = torch.tensor([dense_reward(" ".join(t["info"]["steps"])) for t in out.trajectories])
    scored = agent.score(records)
    old = scored.logp.detach()
    row = {"step": step, "synced": synced, **token_mismatch(old, records, scored.mask, cfg.tis_cap)}
    adv = group_advantages(rewards, cfg.group_size).reshape(-1, 1) * truncated_is_weights(old, records, scored.mask, cfg.tis_cap)
    loss, _ = grpo_loss(scored.logp, None, adv, scored.mask, GRPOConfig(group_size=cfg.group_size, tis_cap=cfg.tis_cap))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    b = [p for n, p in agent.lora.parameters().items() if "lora_B" in n]
    return row | {"reward": float(rewards.mean()), "reward_std": float(rewards.std()),
                  "lora_b_norm": float(torch.sqrt(sum((p.detach() ** 2).sum() for p in b))),
                  "sync_s": t1 - t0, "rollout_s": t2 - t1, "update_s": time.perf_counter() - t2}


def main(cfg: Config) -> dict:
    """Run ``cfg.steps`` engine-rollout updates; return (and write) the per-step mismatch table."""
    import torch

    from rsim_env.sources.data import load_problems

    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    agent = _agent(cfg)
    optimizer = torch.optim.AdamW([p for p in agent.module.parameters() if p.requires_grad], lr=cfg.lr)
    problems = load_problems("default", limit=max(2, cfg.problems), seed=cfg.seed)[: cfg.problems]
    rows = [_step(cfg, agent, optimizer, problems, step) for step in range(cfg.steps)]
    trained = rows[1:] or rows
    tokens = sum(r["tokens"] for r in trained)

    def weighted(key: str) -> float:
        return sum(r[key] * r["tokens"] for r in trained) / tokens

    result = {"config": asdict(cfg), "adapter": "trained (real GRPO steps, dense digit reward)", "rows": rows,
              "base_mean_abs_dlogp": rows[0]["mean_abs_dlogp"], "mean_abs_dlogp": weighted("mean_abs_dlogp"),
              "tis_clip_frac": weighted("tis_clip_frac"), "tis_low_frac": weighted("tis_low_frac"),
              "adapter_syncs": agent.decoder.adapter_syncs}
    _print(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


def _print(result: dict) -> None:
    keys = ("step", "tokens", "mean_abs_dlogp", "max_abs_dlogp", "tis_clip_frac", "tis_low_frac", "mean_tis_weight",
            "reward", "lora_b_norm", "sync_s", "rollout_s", "update_s")
    print(" | ".join(keys))
    for r in result["rows"]:
        print(" | ".join(f"{r[k]:.4g}" if isinstance(r[k], float) else str(r[k]) for k in keys))
    print(f"after updates (steps >= 1): mean |dlogp| {result['mean_abs_dlogp']:.4f} per token (bare base, step 0: "
          f"{result['base_mean_abs_dlogp']:.4f}); TIS clips {100 * result['tis_clip_frac']:.2f} % of tokens at cap "
          f"{result['config']['tis_cap']}, down-weights {100 * result['tis_low_frac']:.2f} % below 1/cap")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.engine_lora", __doc__)
