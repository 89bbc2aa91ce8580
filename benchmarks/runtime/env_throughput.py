"""AEC steps per second with scripted agents: one env vs. ``EnvGroup`` batches.

Measures what the environment itself costs (observation building, rendering, rewards, answer
checking at episode end) so it can be compared with generation time. Both settings run in the
same process, one after the other, on the same problems and agents.

    python -m benchmarks.runtime.env_throughput --out results/env_throughput.json
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from agents.scripted.policies import RandomPlanner, TemplateReasoner
from rsim_env import EnvGroup, default_source, env


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    episodes: int = 400
    """Episodes per setting."""
    group_size: int = 8
    """Copies per EnvGroup (G)."""
    max_steps: int = 6
    """Rounds before truncation."""
    seed: int = 0
    """Seed for problems and the random planner."""
    out: str | None = None
    """Where to write the JSON result (None: don't write)."""


def _single(cfg: Config, problems, oracle) -> dict:
    e = env(problems=problems, max_steps=cfg.max_steps)
    planner, reasoner = RandomPlanner(seed=cfg.seed, p_terminate=0.25), TemplateReasoner(oracle, p_correct=0.5, seed=0)
    steps = 0
    t0 = time.perf_counter()
    for i in range(cfg.episodes):
        e.reset(seed=cfg.seed + i)
        planner.reset(1)
        reasoner.reset(1)
        for agent in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            if term or trunc:
                e.step(None)
                continue
            e.step((planner if agent == "planner" else reasoner).act([0], [obs])[0])
            steps += 1
    dt = time.perf_counter() - t0
    return {"setting": "single env", "episodes": cfg.episodes, "agent_steps": steps, "seconds": dt,
            "steps_per_s": steps / dt, "episodes_per_s": cfg.episodes / dt}


def _grouped(cfg: Config, problems, oracle) -> dict:
    planner, reasoner = RandomPlanner(seed=cfg.seed, p_terminate=0.25), TemplateReasoner(oracle, p_correct=0.5, seed=0)
    n_groups = max(1, cfg.episodes // cfg.group_size)
    steps = 0
    t0 = time.perf_counter()
    g = EnvGroup(problems[0], cfg.group_size, max_steps=cfg.max_steps)
    for i in range(n_groups):
        g.reset(seed=cfg.seed + i, problems=[problems[i % len(problems)]])
        planner.reset(len(g))
        reasoner.reset(len(g))
        while not g.done:
            agent, ids, obs = g.observe()
            g.step((planner if agent == "planner" else reasoner).act(ids, obs))
            steps += len(ids)
    dt = time.perf_counter() - t0
    eps = n_groups * cfg.group_size
    return {"setting": f"EnvGroup G={cfg.group_size}", "episodes": eps, "agent_steps": steps, "seconds": dt,
            "steps_per_s": steps / dt, "episodes_per_s": eps / dt}


def main(cfg: Config) -> dict:
    """Run both settings, print a table, write JSON if ``cfg.out``; return the result dict."""
    problems = default_source(size=200, seed=cfg.seed)
    oracle = {p.question: p.answer for p in problems}
    rows = [_single(cfg, problems, oracle), _grouped(cfg, problems, oracle)]
    result = {"config": asdict(cfg), "rows": rows,
              "group_vs_single_steps_per_s": rows[1]["steps_per_s"] / rows[0]["steps_per_s"]}
    print(f"{'setting':<16} {'episodes':>8} {'agent steps':>11} {'seconds':>8} {'steps/s':>9} {'episodes/s':>10}")
    for r in rows:
        print(f"{r['setting']:<16} {r['episodes']:>8} {r['agent_steps']:>11} {r['seconds']:>8.2f} "
              f"{r['steps_per_s']:>9.0f} {r['episodes_per_s']:>10.0f}")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.env_throughput", __doc__)
