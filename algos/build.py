"""The agents a run trains: built from a run config's model specs for a learner, the same way for ``rsim train`` and
every study that trains through its trainer (``rsim study --arms``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from .config import RunConfig

__all__ = ["build_agents"]


def build_agents(cfg: RunConfig, learner: Any, device: Any, problems: Sequence[Any] = ()) -> dict[str, Any]:
    """Agents for ``learner`` on ``device`` from ``cfg.model`` specs (identical init on every process: seed first)."""
    from agents.registry import AgentContext, build_agent

    roles = ("planner", "reasoner") if learner.env_planner else ("reasoner",)
    shared: dict = {}  # LoRA agents on the same base spec share one frozen copy of it

    def lora(role: str) -> Any:  # an agent the learner never trains is its base model: an adapter would only
        spec = getattr(cfg.model, f"{role}_lora")  # change its weights' fingerprint (and miss the replay store)
        return spec if role in learner.trained else dataclasses.replace(spec, enabled=False)

    return {role: build_agent(getattr(cfg.model, role), AgentContext(
        role=role, config=getattr(cfg, role), dtype=cfg.model.dtype, device=device, seed=cfg.train.seed,
        max_rounds=cfg.env.max_steps, problems=problems, lora=lora(role),
        frozen="same" if role in learner.trained else cfg.model.frozen, shared=shared)).agent for role in roles}
