"""Is a curriculum task in the learnable band for a reasoner? Base accuracy and group variance per task.

GRPO learns only from groups whose rewards differ: a task the reasoner always or never solves
gives zero advantage everywhere. For every curriculum task (:data:`rsim_env.sources.curriculum.TASKS`),
every sampling setting (temperature, top-p) and every planner mode, this plays ``problems``
held-out problems ``G`` times each and reports

* ``pass1`` — mean correctness over all samples (sampled pass@1), with a 95 % Wilson interval;
* ``frac_groups_with_variance`` — share of the G-groups whose correctness is not constant (the
  groups that carry a GRPO signal); ``frac_all_right`` / ``frac_all_wrong`` for the rest;
* ``empty_answer_rate`` and ``echo_rate`` (as in :mod:`studies.interaction`).

A task is *in band* when ``0.2 <= pass1 <= 0.6`` and at least half of its groups have variance.

    flock /tmp/rsim-heavy.lock python -m studies.calibrate --reasoner default --out results/calibrate.json
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from studies.interaction import parse_modes
from rsim_env.sources.curriculum import TASKS, curriculum_problems

BAND = (0.2, 0.6)
"""Sampled pass@1 range counted as learnable."""


def parse_settings(text: str) -> tuple[tuple[float, float], ...]:
    """``"0.7,1.0 1.0,0.9"`` -> ``((0.7, 1.0), (1.0, 0.9))`` (temperature,top_p pairs separated by spaces)."""
    try:
        pairs = [tuple(float(x) for x in item.split(",")) for item in text.split()]
    except ValueError as e:
        raise ValueError(f"--settings {text!r}: expected temperature,top_p pairs separated by spaces, "
                         "e.g. \"0.7,1.0 1.0,0.9\".") from e
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ValueError(f"--settings {text!r}: expected temperature,top_p pairs separated by spaces, "
                         "e.g. \"0.7,1.0 1.0,0.9\".")
    return tuple((t, q) for t, q in pairs)


@dataclass(frozen=True)
class Config:
    """Calibration settings."""

    reasoner: str = "default"
    """Reasoner spec (``default``, hub id, path, ``tiny``, ``template:p``)."""
    tasks: tuple[str, ...] = tuple(TASKS)
    """Curriculum task names."""
    problems: int = 12
    """Held-out problems per task."""
    group_size: int = 8
    """Samples per problem (G)."""
    settings: tuple[tuple[float, float], ...] = field(default=((0.7, 1.0), (1.0, 1.0), (1.0, 0.9)),
                                                      metadata={"parse": parse_settings})
    """(temperature, top_p) pairs to measure; on the command line "0.7,1.0 1.0,0.9" (space-separated pairs)."""
    modes: tuple[str, ...] = field(default=("none", "fixed:2,8"), metadata={"parse": parse_modes})
    """Planner modes as rsim eval spells them, e.g. none,fixed:2,8 (";" also separates them)."""
    max_steps: int = 3
    """Rounds before truncation (planner modes)."""
    max_step_tokens: int = 48
    """Reasoner token cap per step; the no-planner answer gets ``max_steps`` times this."""
    seed: int = 0
    """Sampling seed."""
    protocol: str = ""
    """Turn protocol of planner modes (``rsim_env.render.PROTOCOLS``; "" = the environment's default)."""
    out: str = ""
    """JSON output path ("" = print only)."""

    def __post_init__(self) -> None:
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown or not self.tasks:
            raise ValueError(f"Config.tasks has unknown tasks {unknown}; choose from {sorted(TASKS)}.")
        for name in ("problems", "group_size", "max_steps", "max_step_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")
        for t, p in self.settings:
            if not t > 0 or not 0 < p <= 1:
                raise ValueError(f"Config.settings has ({t}, {p}): temperature must be > 0 and top_p in (0, 1].")


def group_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Band figures from evaluation rows (``problem_id``, ``correct``, ``steps``, ``injected``, ...)."""
    from algos.analysis import wilson

    from .interaction import episode_facts

    groups: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        groups[r["problem_id"]].append(bool(r["correct"]))
    right = sum(sum(g) for g in groups.values())
    n = sum(len(g) for g in groups.values())
    facts = [episode_facts(r) for r in rows]
    steps = [s for f in facts for s in f["steps"]]
    term = [f for f in facts if f["terminated"]]
    pass1 = right / n if n else 0.0
    var = sum(0 < sum(g) < len(g) for g in groups.values()) / len(groups) if groups else 0.0
    lo, hi = wilson(right, n)
    return {"samples": n, "groups": len(groups), "pass1": pass1, "pass1_ci": [lo, hi],
            "frac_groups_with_variance": var,
            "frac_all_right": sum(all(g) for g in groups.values()) / max(1, len(groups)),
            "frac_all_wrong": sum(not any(g) for g in groups.values()) / max(1, len(groups)),
            "empty_answer_rate": sum(f["empty_answer"] for f in term) / len(term) if term else None,
            "echo_rate": sum(s["echo"] for s in steps) / len(steps) if steps else None,
            "in_band": BAND[0] <= pass1 <= BAND[1] and var >= 0.5}


def _reasoner(cfg: Config, temperature: float, top_p: float, problems: Sequence[Any]) -> Any:
    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent

    rc = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, max_answer_tokens=cfg.max_steps * cfg.max_step_tokens,
                        temperature=temperature, top_p=top_p, seed=cfg.seed)
    return build_agent(cfg.reasoner, AgentContext("reasoner", config=rc, seed=cfg.seed, max_rounds=cfg.max_steps,
                                                  problems=problems)).agent


def main(cfg: Config) -> dict[str, Any]:
    """Measure every task x setting x mode; print a table; write JSON when ``cfg.out``."""
    from algos.evaluation import EvalConfig
    from algos.evaluation.run import evaluate_mode, make_planner

    t0 = time.perf_counter()
    problems = {t: curriculum_problems(cfg.problems, "heldout", tasks=(t,), seed=1000) for t in cfg.tasks}
    everything = [p for ps in problems.values() for p in ps]
    named = {"env.max_steps": cfg.max_steps, "env.protocol": cfg.protocol, "reasoner.max_step_tokens": cfg.max_step_tokens}
    ecfg = EvalConfig(k=cfg.group_size, seed=cfg.seed, batch=max(1, 48 // cfg.group_size), progress=False,
                      set=tuple((k, str(v)) for k, v in named.items() if v) + (("data.size", str(len(everything))),))
    rows_out = []
    for temperature, top_p in cfg.settings:
        reasoner = _reasoner(cfg, temperature, top_p, everything)
        for mode in cfg.modes:
            rows, _ = evaluate_mode(mode, everything, reasoner, make_planner(mode, ecfg, None), ecfg)
            by_task: dict[str, list] = defaultdict(list)
            source = {p.id: p.source.split(":", 1)[-1] for p in everything}
            for r in rows:
                by_task[source[r["problem_id"]]].append(r)
            for task in cfg.tasks:
                fig = {"task": task, "temperature": temperature, "top_p": top_p, "mode": mode,
                       **group_figures(by_task[task])}
                rows_out.append(fig)
                print(f"[{time.perf_counter() - t0:5.0f}s] T={temperature} p={top_p} {mode:<10} {task:<10} "
                      f"pass1={fig['pass1']:.2f} var={fig['frac_groups_with_variance']:.2f}", file=sys.stderr,
                      flush=True)
    result = {"config": asdict(cfg), "band": list(BAND), "rows": rows_out, "wall_s": time.perf_counter() - t0}
    result["table_md"] = table(rows_out)
    print(result["table_md"])
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


def table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown table, one row per task x setting x mode."""
    pct = lambda x: "—" if x is None else f"{100 * x:.0f}%"  # noqa: E731
    lines = ["| task | T | top-p | mode | pass@1 (95% CI) | groups with variance | all right | all wrong | "
             "empty answer | in band |", "|" + "---|" * 10]
    for r in rows:
        lo, hi = r["pass1_ci"]
        lines.append(f"| {r['task']} | {r['temperature']} | {r['top_p']} | {r['mode']} | {pct(r['pass1'])} "
                     f"({pct(lo)}–{pct(hi)}) | {pct(r['frac_groups_with_variance'])} | {pct(r['frac_all_right'])} | "
                     f"{pct(r['frac_all_wrong'])} | {pct(r['empty_answer_rate'])} | {'yes' if r['in_band'] else 'no'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.calibrate", __doc__)
