"""How often prefill-vs-decode numerics alone change a greedy step (a figure, not a test).

Replay's catch-up (:mod:`agents.replay.reasoner`) gives a fresh session the stored steps as a prompt continuation
(:meth:`agents.reasoner.Reasoner.prefill`) instead of decoding them again. The step decoded next is then
conditioned on exactly the stored tokens, but its KV cache was computed by one prefill, not token by token:
the same history in other floating-point rounding. This measures how often that alone changes the next greedy
step, and how it compares with the batch-shape noise that made re-decoded catch-up steps differ.

Every problem plays ``plan``'s first two rounds (round 0, then round 1 on top of it) four ways:

* ``batched``: all problems in one batch, both rounds decoded (a live session);
* ``alone``: each problem by itself (batch 1), both rounds decoded;
* ``prefill_alone``: each problem by itself, round 0 prefilled with ``alone``'s tokens, round 1 decoded;
* ``prefill_batched``: each problem by itself, round 0 prefilled with ``batched``'s tokens, round 1 decoded (what
  a replay catch-up now gives where the batched run stored round 0).

Reported, over the problems still playing at round 1 (token ids compared, not texts):

* ``prefill_vs_decode``: round 1 of ``prefill_alone`` differs from ``alone``'s: same history, same batch of 1,
  prefilled vs decoded KV -- the numerics alone;
* ``prefill_vs_batched_decode``: round 1 of ``prefill_batched`` differs from ``batched``'s (the same history):
  prefill alone vs decoding in a batch;
* ``batch_vs_alone_round0``: round 0 differs between ``batched`` and ``alone``: the noise a catch-up that decoded
  the stored rounds again met (re-decoded catch-up steps differing from the stored ones). ::

    OMP_NUM_THREADS=2 python -m benchmarks.runtime.replay_prefill --out docs/plan_table_results/replay_prefill.json
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["Config", "play_rounds", "main"]


@dataclass(frozen=True)
class Config:
    """Prefill-vs-decode measurement settings."""

    reasoner: str = "llamacpp:default"
    """Reasoner spec (agent registry), decoded greedily; it must prefill (every LLM reasoner does)."""
    source: str = "curriculum:heldout"
    """Problems (rsim_env.sources.data spec)."""
    problems: int = 30
    """How many problems."""
    data_seed: int = 1000
    """Seed of the problem sample."""
    plan: tuple[int, ...] = (3, 4, 8)
    """The planner's strategies; rounds 0 and 1 are played (``[3, 4, 8]``: the plan of the replay benchmark's runs)."""
    max_step_tokens: int = 48
    """Token cap per step."""
    protocol: str = "chat+lead"
    """Turn protocol."""
    out: str = ""
    """JSON path ("" = print only)."""

    def __post_init__(self) -> None:
        if self.problems < 1:
            raise ValueError(f"Config.problems={self.problems}: give at least 1 problem.")
        if len(self.plan) < 2:
            raise ValueError(f"Config.plan={self.plan}: give at least two strategies (rounds 0 and 1 are compared).")


def _reasoner(cfg: Config, problems: Sequence[Any]) -> Any:
    from agents.base import Prefilling
    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent

    rc = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, greedy=True, seed=0)
    agent = build_agent(cfg.reasoner, AgentContext("reasoner", config=rc, seed=0, problems=problems)).agent
    if not isinstance(agent, Prefilling):
        raise ValueError(f"Config.reasoner={cfg.reasoner!r} builds a {type(agent).__name__}, which cannot prefill; give "
                         "an LLM reasoner spec (llamacpp:default, default, a model dir), not replay: or a scripted one.")
    return agent


def play_rounds(reasoner: Any, problems: Sequence[Any], cfg: Config, rounds: int = 2
                ) -> list[list[tuple[dict[str, Any], tuple[int, ...]]]]:
    """Play ``rounds`` reasoner rounds of ``cfg.plan`` on ``problems`` in one batch; per problem, each round's
    ``(observation, step token ids)`` (fewer rounds for a copy whose episode ended sooner)."""
    from agents.scripted.policies import FixedPlanner
    from rsim_env.game import EnvConfig
    from rsim_env.group import EnvGroup

    group = EnvGroup(list(problems), 1, config=EnvConfig(max_steps=len(cfg.plan), protocol=cfg.protocol))
    planner = FixedPlanner(list(cfg.plan))
    group.reset(seed=0)
    planner.reset(len(group))
    reasoner.reset(len(group))
    out: list[list[tuple[dict[str, Any], tuple[int, ...]]]] = [[] for _ in range(len(group))]
    played = 0
    while not group.done and played < rounds:
        agent, ids, obs = group.observe()
        if agent == "planner":
            group.step(planner.act(ids, obs))
            continue
        group.step(reasoner.act(ids, obs))
        for c, o in zip(ids, obs):
            out[c].append((o, tuple(reasoner.step_ids(c))))
        played += 1
    return out


def _prefilled_round1(reasoner: Any, history: Sequence[tuple[dict[str, Any], tuple[int, ...]]]) -> tuple[int, ...]:
    """Round 1 decoded alone after prefilling round 0 with ``history[0]``'s tokens."""
    reasoner.reset(1)
    reasoner.prefill([0], [history[0][0]], [list(history[0][1])])
    reasoner.act([0], [history[1][0]])
    return tuple(reasoner.step_ids(0))


def _rate(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    differ = sum(a != b for a, b in pairs)
    return {"differ": differ, "of": len(pairs), "share": round(differ / len(pairs), 4) if pairs else None}


def main(cfg: Config) -> dict[str, Any]:
    """Play the four arms; print a table; write JSON when ``cfg.out``."""
    from rsim_env.sources.data import load_problems

    t0 = time.perf_counter()
    problems = load_problems(cfg.source, limit=cfg.problems, seed=cfg.data_seed)
    reasoner = _reasoner(cfg, problems)
    batched = play_rounds(reasoner, problems, cfg)
    alone = [play_rounds(reasoner, [p], cfg)[0] for p in problems]
    both = [i for i in range(len(problems)) if len(batched[i]) == 2 and len(alone[i]) == 2]
    pre_alone = {i: _prefilled_round1(reasoner, alone[i]) for i in both}
    pre_batched = {i: _prefilled_round1(reasoner, batched[i]) for i in both}
    same_round0 = [i for i in both if batched[i][0][1] == alone[i][0][1]]
    rows = {
        "prefill_vs_decode": _rate([(pre_alone[i], alone[i][1][1]) for i in both]),
        "prefill_vs_batched_decode": _rate([(pre_batched[i], batched[i][1][1]) for i in both]),
        "batch_vs_alone_round0": _rate([(batched[i][0][1], alone[i][0][1]) for i in range(len(problems))
                                        if batched[i] and alone[i]]),
        "batch_vs_alone_round1_same_round0": _rate([(batched[i][1][1], alone[i][1][1]) for i in same_round0]),
    }
    result = {"config": asdict(cfg), "problems": len(problems), "compared": len(both), "rows": rows,
              "prefill_vs_decode_problems": [problems[i].id for i in both if pre_alone[i] != alone[i][1][1]],
              "wall_s": round(time.perf_counter() - t0, 1)}
    print(table(result))
    if cfg.out:
        path = Path(cfg.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"[replay_prefill] wrote {path}", file=sys.stderr)
    return result


def table(result: dict[str, Any]) -> str:
    """The measurement as a markdown table."""
    what = {"prefill_vs_decode": "round 1 after prefilled vs decoded round 0 (alone, same tokens)",
            "prefill_vs_batched_decode": "round 1 prefilled alone vs decoded in the batch (same round 0)",
            "batch_vs_alone_round0": "round 0 decoded in the batch vs alone",
            "batch_vs_alone_round1_same_round0": "round 1 decoded in the batch vs alone (same round 0)"}
    lines = [f"{result['config']['reasoner']} on {result['problems']} problems of {result['config']['source']}, plan "
             f"{list(result['config']['plan'])}, greedy, {result['config']['max_step_tokens']}-token steps",
             "", "| comparison | differing steps | of | share |", "| --- | --- | --- | --- |"]
    for k, r in result["rows"].items():
        share = "" if r["share"] is None else f"{100 * r['share']:.1f} %"
        lines.append(f"| {what[k]} | {r['differ']} | {r['of']} | {share} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.replay_prefill", __doc__)
