"""Rollouts: play batches of environment groups with any planner / reasoner policies.

One batched ``act`` call per agent per round covers every live copy of every group: groups are
stepped in lockstep and their copies get global ids (``offset of the group + copy id``), which is
what the policies are reset with. Works with any :class:`agents.base.Policy` — LLM agents
(:class:`agents.planners.llm.Planner`, :class:`agents.reasoner.Reasoner`) or scripted ones — and with
the no-planner mode (``planner=None`` and groups built with ``planner=False``).

Each trajectory (one per copy) is a dict::

    copy_id         global copy id (index into the policies' records)
    group, copy     which EnvGroup of the batch, and the copy id inside it
    problem_index   problem of that group the copy played
    rewards         {"planner": float, "reasoner": float}
    info            the env's final info (reward components, correct, strategies, detected, ...)
    planner         planner.records()[copy_id]   (e.g. agents.planners.llm.PlannerRecord; None without a planner)
    reasoner        reasoner.records()[copy_id]  (e.g. agents.reasoner.ReasonerRecord)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from agents.base import Policy
from rsim_env.group import EnvGroup

__all__ = ["Rollout", "rollout"]


@dataclass
class Rollout:
    """Result of :func:`rollout`."""

    trajectories: list[dict[str, Any]]
    """One per copy, in global copy-id order (see module docstring)."""
    stats: dict[str, Any] = field(default_factory=dict)
    """``calls`` and ``seconds`` per agent, ``rounds``, ``copies``, ``wall_s``."""


def rollout(
    groups: EnvGroup | Sequence[EnvGroup],
    reasoner: Policy,
    planner: Policy | None = None,
    seed: int | None = None,
) -> Rollout:
    """Reset ``groups`` and play them to the end.

    Args:
        groups: One :class:`EnvGroup` or several (e.g. G copies each of several problems).
        reasoner: Policy for ``"reasoner"``.
        planner: Policy for ``"planner"``; ``None`` only for groups built with ``planner=False``.
        seed: Group ``i`` is reset with ``seed + offset_i`` so every copy gets a distinct seed.

    Returns:
        :class:`Rollout` with one trajectory per copy.
    """
    groups = [groups] if isinstance(groups, EnvGroup) else list(groups)
    if not groups or not all(isinstance(g, EnvGroup) for g in groups):
        raise TypeError("rollout() needs an EnvGroup or a non-empty sequence of EnvGroup")
    policies = {"reasoner": reasoner, "planner": planner}
    for role, policy in policies.items():
        if policy is not None and not isinstance(policy, Policy):
            raise TypeError(f"the {role} agent {type(policy).__name__} is not an agents.base.Policy: give it role = "
                            f"{role!r}, reset(n), act(copy_ids, observations) and records().")
        if policy is not None and policy.role != role:
            raise ValueError(f"the {role} argument has role {policy.role!r}; pass a {role} policy")
    offsets = [sum(len(g) for g in groups[:i]) for i in range(len(groups))]
    total = sum(len(g) for g in groups)
    for g, off in zip(groups, offsets):
        g.reset(seed=None if seed is None else seed + off)
    for policy in policies.values():
        if policy is not None:
            policy.reset(total)

    stats = {"calls": {"planner": 0, "reasoner": 0}, "seconds": {"planner": 0.0, "reasoner": 0.0}}
    start, rounds = time.perf_counter(), 0
    while not all(g.done for g in groups):
        due: dict[str, list[tuple[EnvGroup, int, list[int], list[dict]]]] = {}
        for g, off in zip(groups, offsets):
            if not g.done:
                agent, ids, obs = g.observe()
                due.setdefault(agent, []).append((g, off, ids, obs))
        for agent in ("planner", "reasoner"):  # the planner moves first in every round
            if agent not in due:
                continue
            _act(agent, policies[agent], due[agent], stats)
        rounds += "reasoner" in due
    stats.update(rounds=rounds, copies=total, wall_s=time.perf_counter() - start)
    return Rollout(_collect(groups, offsets, policies), stats)


def _act(agent: str, policy: Policy | None, items: list[tuple[EnvGroup, int, list[int], list[dict]]],
         stats: dict[str, Any]) -> None:
    """One batched ``act`` of ``policy`` over every group waiting for ``agent``; step the groups."""
    if policy is None:
        raise ValueError("an environment asked for the planner but rollout() got planner=None; pass a "
                         "planner or build the groups with planner=False")
    copy_ids = [off + c for _, off, ids, _ in items for c in ids]
    observations = [o for *_, obs in items for o in obs]
    t0 = time.perf_counter()
    actions = list(policy.act(copy_ids, observations))
    stats["seconds"][agent] += time.perf_counter() - t0
    stats["calls"][agent] += 1
    if len(actions) != len(copy_ids):
        raise ValueError(f"{agent}.act returned {len(actions)} actions for {len(copy_ids)} observations")
    i = 0
    for g, _, ids, _ in items:
        g.step(actions[i : i + len(ids)])
        i += len(ids)


def _collect(groups: list[EnvGroup], offsets: list[int], policies: dict[str, Policy | None]) -> list[dict[str, Any]]:
    records = {role: (p.records() if p is not None else []) for role, p in policies.items()}
    out = []
    for gi, (g, off) in enumerate(zip(groups, offsets)):
        for res in g.results():
            cid = off + res["copy_id"]
            out.append({
                "copy_id": cid, "group": gi, "copy": res["copy_id"], "problem_index": res["problem_index"],
                "rewards": res["rewards"], "info": res["info"],
                **{role: (recs[cid] if cid < len(recs) else None) for role, recs in records.items()},
            })
    return out
