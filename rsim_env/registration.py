"""Gymnasium ids registered by ``import rsim_env``.

``rsim/Planner-v0``: the planner's decision problem as a single-agent env, with the reasoner inside
(:class:`agents.planners.gym.PlannerEnv`; by default a scripted reasoner whose answer is right only after
its question's family plan, so the plan decides the outcome; ``reasoner=`` for any other).
The entry point is a string, so ``rsim_env`` imports nothing from ``agents`` until
``gymnasium.make`` is called.
"""

from __future__ import annotations

import gymnasium

PLANNER_ID = "rsim/Planner-v0"


def register_gymnasium() -> None:
    """Register rSIM's Gymnasium ids (idempotent)."""
    if PLANNER_ID not in gymnasium.registry:
        gymnasium.register(id=PLANNER_ID, entry_point="agents.planners.gym:PlannerEnv", disable_env_checker=False)
