"""``python -m agents.scripted.demo``: play a few scripted rSIM episodes on the embedded default data and show them.

Lives in ``agents`` (not ``rsim_env``) because it uses the scripted agents: the env never imports agents.
"""

from __future__ import annotations

import argparse
import sys

from rsim_env import env as make_env

from .policies import RandomPlanner, TemplateReasoner


def main(cfg: argparse.Namespace) -> dict:
    """Play ``cfg.episodes`` episodes (random planner, templated reasoner); return their outcomes."""
    e = make_env(render_mode="ansi", max_steps=cfg.max_steps)
    oracle = {p.question: p.answer for p in e.unwrapped.problems}
    planner, reasoner = RandomPlanner(seed=cfg.seed, p_terminate=0.3), TemplateReasoner(oracle, p_correct=0.5, seed=cfg.seed)
    outcomes = []
    for i in range(cfg.episodes):
        e.reset(seed=cfg.seed + i)
        planner.reset(1)
        reasoner.reset(1)
        for agent in e.agent_iter():
            obs, _, term, trunc, info = e.last()
            e.step(None if term or trunc else (planner if agent == "planner" else reasoner).act([0], [obs])[0])
        print(f"--- episode {i} ---\n{e.render()}\n    rewards: {info['components']}")
        outcomes.append(info)
    return {"episodes": outcomes}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--max-steps", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    main(p.parse_args(sys.argv[1:]))
