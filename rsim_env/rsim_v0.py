"""The versioned environment module, in PettingZoo's own layout (like ``tictactoe_v3``)::

    from rsim_env import rsim_v0

    aec = rsim_v0.env(max_steps=6)           # AEC, with PettingZoo's standard wrappers
    raw = rsim_v0.raw_env(max_steps=6)       # AEC, unwrapped
    par = rsim_v0.parallel_env(max_steps=6)  # turn-based parallel view

The game alternates (planner, then reasoner), so the parallel view is *turn based*: every
``step`` advances exactly one turn. Every live agent gets an observation each step, and each
observation carries an explicit ``"turn"`` field: ``1`` for the agent whose move it is, ``0`` for
the one that waits (the planner's ``action_mask`` is also all zeros while it waits, as in
PettingZoo's own turn-based games). ``infos[agent]["active_agent"]`` names the acting agent too.
The ``actions`` dict needs only the acting agent's action; the waiting agent's entry is ignored::

    obs, infos = par.reset(seed=0)
    while par.agents:
        acting = next(a for a in par.agents if obs[a]["turn"] == 1)
        obs, rewards, terms, truncs, infos = par.step({acting: policy[acting](obs[acting])})

``max_cycles`` (PettingZoo's name) is accepted as an alias of ``max_steps``: one AEC *cycle* is one
round (a plan and a step). Why PettingZoo's ``max_cycles_test`` still does not apply is explained
in ``tests/test_rsim_v0.py``.
"""

from __future__ import annotations

from typing import Any

import gymnasium
from gymnasium import spaces
from pettingzoo import AECEnv, ParallelEnv
from pettingzoo.utils.conversions import turn_based_aec_to_parallel_wrapper

from .env import env as _wrapped_env
from .env import raw_env

__all__ = ["env", "raw_env", "parallel_env", "TurnParallelEnv"]


def _rounds(kwargs: dict[str, Any]) -> dict[str, Any]:
    if "max_cycles" in kwargs:
        cycles = kwargs.pop("max_cycles")
        if "max_steps" in kwargs and kwargs["max_steps"] != cycles:
            raise ValueError(f"max_cycles={cycles!r} and max_steps={kwargs['max_steps']!r} disagree; they are the "
                             "same limit (rounds), pass only one.")
        kwargs["max_steps"] = cycles
    return kwargs


def env(**kwargs: Any) -> AECEnv:
    """The AEC environment with PettingZoo's standard wrappers (args: :class:`raw_env`, or ``max_cycles``)."""
    return _wrapped_env(**_rounds(kwargs))


def parallel_env(**kwargs: Any) -> ParallelEnv:
    """The turn-based parallel view (args as :func:`env`); see the module docstring."""
    return TurnParallelEnv(env(**kwargs))


class TurnParallelEnv(turn_based_aec_to_parallel_wrapper):
    """PettingZoo's turn-based parallel conversion plus a ``"turn"`` field in every observation.

    Args:
        aec_env: An rSIM AEC environment (e.g. :func:`env`).
    """

    def __init__(self, aec_env: AECEnv) -> None:
        super().__init__(aec_env)
        self._obs_spaces = {
            a: spaces.Dict({**aec_env.observation_space(a).spaces, "turn": spaces.Discrete(2)})
            for a in aec_env.possible_agents
        }

    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._obs_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, infos = super().reset(seed=seed, options=options)
        for a in self.agents:
            infos[a] = {**infos[a], "active_agent": self.aec_env.agent_selection}
        return self._with_turn(obs), infos

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            return {}, {}, {}, {}, {}
        acting = self.aec_env.agent_selection
        if not isinstance(actions, dict) or acting not in actions:
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise ValueError(f"it is {acting!r}'s turn but actions has {got}; pass {{{acting!r}: action}} "
                             "(the agent whose observation has turn == 1).")
        obs, rewards, terms, truncs, infos = super().step(actions)
        return self._with_turn(obs), rewards, terms, truncs, infos

    def _with_turn(self, obs: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        acting = self.aec_env.agent_selection if self.aec_env.agents else None
        return {a: {**o, "turn": int(a == acting)} for a, o in obs.items()}
