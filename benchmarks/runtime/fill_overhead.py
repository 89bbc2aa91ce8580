"""What the plan-tree fill costs on top of the backend's own batched decoding, in one run.

``rsim study``'s fill (:mod:`algos.study.fill`) is the whole cost of a study, so its machinery -- the replay keys and
store, the waves, the tree rewritten after every rollout -- should cost little beside the decoding itself. This
benchmark decodes the same game on the same problems twice with one loaded reasoner:

* ``fill``: :func:`algos.study.fill.fill_split` into a fresh tree through a fresh replay store (every step decoded);
* ``raw``: the reasoner itself (no replay, no tree) playing every plan of the game on the same problems in the same
  batches (``max_copies`` episodes a rollout): the backend's batched decode of the same steps; run before and after
  the fill and averaged (the machine's load drifts).

Both write the same steps (one per plan prefix: 17 a problem for two rounds), so the figure is tokens written per
second; ``overhead`` = raw tokens/s over fill tokens/s - 1 (the target is <= 0.10), and ``overhead_cpu`` the same by
this process's CPU seconds -- the steadier figure on a shared machine for an in-process backend (llama.cpp, torch),
meaningless for a served one (the server decodes). A raw warm-up rollout on one problem runs first, untimed. ::

    OMP_NUM_THREADS=1 python -m benchmarks.runtime.fill_overhead --reasoner llamacpp:default#threads=1 \\
        --per-task 2 --out runs/fill_overhead.json
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["Config", "raw_decode", "main"]


@dataclass(frozen=True)
class Config:
    """Fill overhead benchmark settings."""

    reasoner: str = "llamacpp:default#threads=1"
    """The reasoner spec (greedy; as ``rsim study --reasoner``)."""
    data: str = "rg:chain_sum+products"
    """Problems (a data spec whose problems carry a task, as ``rsim study --data``)."""
    per_task: int = 2
    """Problems a task decoded (17 steps each for two rounds)."""
    rounds: int = 2
    """Rounds of the game (the last may only terminate)."""
    max_step_tokens: int = 48
    """Longest reasoner step (the adaptive study's)."""
    max_answer_tokens: int = 144
    """Longest final answer (the adaptive study's)."""
    max_copies: int = 48
    """Episodes a rollout, in both routes."""
    out: str = ""
    """JSON path ("" = print only)."""

    def __post_init__(self) -> None:
        for name in ("per_task", "rounds", "max_step_tokens", "max_answer_tokens", "max_copies"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")


def raw_decode(reasoner: Any, env: Any, problems: Sequence[Any], plans: Sequence[Sequence[int]],
               max_copies: int) -> dict[str, Any]:
    """Play every plan on every problem with ``reasoner`` (no replay, no tree), ``max_copies`` episodes a rollout;
    returns the steps and tokens written and the wall / CPU seconds."""
    from agents.replay.plan_tree import PlanPlayer
    from rsim_env.group import EnvGroup

    pairs = [(p, tuple(plan)) for p in problems for plan in plans]
    steps = tokens = 0
    w, c = time.perf_counter(), time.process_time()
    for i in range(0, len(pairs), max_copies):
        chunk = pairs[i:i + max_copies]
        group = EnvGroup([p for p, _ in chunk], group_size=1, config=env)
        group.reset(seed=0)
        player = PlanPlayer([plan for _, plan in chunk])
        reasoner.reset(len(chunk))
        player.reset(len(chunk))
        while not group.done:
            agent, ids, obs = group.observe()
            steps += len(ids) if agent == "reasoner" else 0
            group.step((player if agent == "planner" else reasoner).act(ids, obs))
        tokens += sum(int(reasoner.num_generated(record)) for record in reasoner.records())
    return {"steps": steps, "tokens": tokens, "wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}


def _row(name: str, r: dict[str, Any]) -> dict[str, Any]:
    return {"route": name, **r, "steps_per_s": r["steps"] / r["wall_s"], "tokens_per_s": r["tokens"] / r["wall_s"],
            "tokens_per_cpu_s": r["tokens"] / max(1e-9, r["cpu_s"])}


def main(cfg: Config) -> dict[str, Any]:
    """Decode the game by both routes (module docstring); print the table; write the JSON."""
    from algos.study import fill
    from algos.study.config import StudyConfig, game
    from algos.study.paths import StudyPaths
    from algos.study.splits import problems
    from algos.study.tables import plans_of

    with tempfile.TemporaryDirectory(prefix="fill_overhead_") as tmp:
        old = os.environ.get("RSIM_REPLAY_DIR")
        os.environ["RSIM_REPLAY_DIR"] = str(Path(tmp) / "replay")  # a fresh store: the fill decodes every step
        try:
            study = StudyConfig(out=tmp, reasoner=cfg.reasoner, data=cfg.data, test_per_task=cfg.per_task,
                                rounds=cfg.rounds, max_step_tokens=cfg.max_step_tokens,
                                max_answer_tokens=cfg.max_answer_tokens, max_copies=cfg.max_copies,
                                increment=cfg.per_task)
            items, plans = problems(study, "test"), plans_of(game(study))
            w = time.perf_counter()
            replay, env = fill.build_reasoner(study)
            load_s = time.perf_counter() - w
            inner = replay.inner
            raw_decode(inner, env, items[:1], plans[:2], cfg.max_copies)  # warm-up, untimed
            before = raw_decode(inner, env, items, plans, cfg.max_copies)
            w, c = time.perf_counter(), time.process_time()
            fill.fill_split(study, "test", replay, env)
            tree = fill.load_tree(StudyPaths.of(study).tree("test"))
            filled = {"steps": len(tree.steps), "tokens": sum(s.tokens for s in tree.steps.values()),
                      "wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c,
                      "replay": dict(replay.stats)}
            after = raw_decode(inner, env, items, plans, cfg.max_copies)
        finally:
            if old is None:
                os.environ.pop("RSIM_REPLAY_DIR", None)
            else:
                os.environ["RSIM_REPLAY_DIR"] = old
    raw = {k: (before[k] + after[k]) / 2 for k in ("steps", "tokens", "wall_s", "cpu_s")}
    rows = [_row("raw", raw), _row("fill", filled)]
    overhead = rows[0]["tokens_per_s"] / rows[1]["tokens_per_s"] - 1
    overhead_cpu = rows[0]["tokens_per_cpu_s"] / rows[1]["tokens_per_cpu_s"] - 1
    result = {"config": asdict(cfg), "problems": len(items), "plans": len(plans), "load_s": load_s, "rows": rows,
              "raw_runs": [_row("raw_before", before), _row("raw_after", after)],
              "overhead": overhead, "overhead_cpu": overhead_cpu, "target": 0.10, "within_target": overhead <= 0.10,
              "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "")}
    print("| route | steps | tokens | wall s | CPU s | steps/s | tokens/s | tokens / CPU s |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['route']} | {r['steps']:.0f} | {r['tokens']:.0f} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
              f"{r['steps_per_s']:.2f} | {r['tokens_per_s']:.1f} | {r['tokens_per_cpu_s']:.1f} |")
    print(f"\nfill overhead on {len(items)} problems x {len(plans)} plans: {100 * overhead:+.1f} % by wall time, "
          f"{100 * overhead_cpu:+.1f} % by CPU time (target <= 10 %)")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.fill_overhead", __doc__)
