"""Does the reasoner *perform* the injected strategies? Echo, follow and empty-answer rates per mode.

For each planner mode (``none``, ``fixed:k`` for every strategy k, a few fixed sequences,
``random``) and each decoding (greedy and sampled) the embedded reasoner plays the same problems,
and every step is classified:

* **echo** — the step mostly repeats injected text or a step header (:func:`rsim_env.echo.is_echo`);
* **follow** — the planned strategy is detected (:func:`rsim_env.detect`) in the step's
  *generated content* (echo clauses removed, :func:`rsim_env.echo.generated_content`); in mode
  ``none`` the single answer is scored against termination (it must state a final answer);
* ``follow_raw`` — the same with detection on the raw step (the reward before echo removal, which
  counted copied keywords);
* **empty answer** — an episode whose termination step was written but holds no non-empty final
  answer (``\\boxed{}`` or nothing; extraction without the last-number fallback).

Per mode it reports ``n``, ``accuracy``, ``echo_rate``, ``follow_rate``, ``follow_raw_rate``,
``empty_answer_rate``, ``boxed_rate``, ``terminated_rate``, mean step length (tokens and chars),
and the same figures per injected strategy; a few episodes are kept verbatim under ``examples``.

    flock /tmp/rsim-heavy.lock python -m studies.interaction --out results/interaction.json --limit 48
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rsim_env import echo
from rsim_env.answers import extract_answer
from rsim_env.strategies import STRATEGIES, TERMINATION, detect, num_strategies

DEFAULT_MODES = ("none", *(f"fixed:{k}" for k in range(num_strategies())), "fixed:1,3,8", "fixed:7,6,8",
                 "fixed:2,0,8", "fixed:4,5,3,8", "random")
"""Modes measured by default: no planner, every single strategy then termination, four sequences, random."""


def parse_modes(text: str) -> tuple[str, ...]:
    """``--modes`` in ``rsim eval``'s grammar (:func:`algos.evaluation.split_modes`): ``none,fixed:1,3,8,random``;
    the older ``none;fixed:1,3,8;random`` still parses."""
    from algos.evaluation.config import split_modes

    return split_modes(text.replace(";", ","))


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    reasoner: str = "default"
    """Reasoner spec (see ``rsim eval --reasoner``); ``template`` = scripted, model-free."""
    source: str = "curriculum:heldout"
    """Problems: a data spec (``rsim_env.sources.data``; generator seed 1000, as ``rsim eval``)."""
    limit: int = 48
    """Problems per mode."""
    modes: tuple[str, ...] = field(default=DEFAULT_MODES, metadata={"parse": parse_modes})
    """Planner modes as rsim eval spells them, e.g. none,fixed:3,fixed:1,3,8,random (";" also separates them)."""
    decodings: tuple[str, ...] = ("greedy", "sampled")
    """``greedy`` and/or ``sampled`` (at ``temperature`` / ``top_p``)."""
    temperature: float = 0.7
    """Sampling temperature of the ``sampled`` decoding."""
    top_p: float = 1.0
    """Nucleus mass of the ``sampled`` decoding."""
    max_steps: int = 4
    """Rounds before truncation."""
    max_step_tokens: int = 48
    """Reasoner token cap per step."""
    batch: int = 48
    """Problems per batched rollout."""
    seed: int = 0
    """Seed of the random planner and the sampling."""
    protocol: str = ""
    """Turn protocol (``rsim_env.render.PROTOCOLS``; "" = the environment's default)."""
    last_number_fallback: bool = False
    """Grade the last number when no explicit answer is stated (accuracy column)."""
    examples: int = 2
    """Episodes kept verbatim per mode and decoding."""
    out: str = ""
    """JSON output path ("" = print only)."""

    def __post_init__(self) -> None:
        for name in ("limit", "max_steps", "max_step_tokens", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")
        bad = [d for d in self.decodings if d not in ("greedy", "sampled")]
        if bad or not self.decodings:
            raise ValueError(f"Config.decodings={self.decodings!r}: use 'greedy' and/or 'sampled'.")


# ------------------------------------------------------------------------------------ figures

def step_facts(step: str, planned: int, shown: str | None = None) -> dict[str, Any]:
    """Echo and follow facts of one step written under strategy ``planned`` (``shown``: with its lead-in)."""
    return {"echo": echo.is_echo(step), "follow": planned in echo.detect_generated(step, shown),
            "follow_raw": planned in detect(step if shown is None else shown), "chars": len(step)}


def _final_text(row: dict[str, Any]) -> str:
    return row.get("final_text") or ((row.get("shown_steps") or row["steps"]) or [""])[-1]


def _plans(row: dict[str, Any]) -> list[int]:
    """Planned strategies: ``strategies`` of an episode record; ``injected`` of a row saved before the record."""
    return list(row["strategies"] if "version" in row else row["injected"])


def episode_facts(row: dict[str, Any]) -> dict[str, Any]:
    """Per-episode facts from an :mod:`algos.evaluation` row (an episode record; older saved rows too)."""
    plans = _plans(row) or [TERMINATION] * len(row["steps"])
    shown = row.get("shown_steps") or (row["steps"][:-1] + [_final_text(row)] if row["steps"] else [])
    steps = [step_facts(s, p, v) for s, p, v in zip(row["steps"], plans, shown)]
    final_plan_is_term = bool(plans) and plans[-1] == TERMINATION and len(steps) == len(plans)
    answer = extract_answer(_final_text(row), last_number_fallback=False) if final_plan_is_term else None
    return {"plans": plans, "steps": steps, "correct": bool(row["correct"]), "terminated": final_plan_is_term,
            "empty_answer": final_plan_is_term and not (answer or "").strip(),
            "boxed": "\\boxed{" in _final_text(row) and final_plan_is_term,
            "written": (row.get("tokens") or {}).get("reasoner_written")}


def _rate(xs: Sequence[bool]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def mode_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The benchmark's figures for the episodes of one mode (see module docstring)."""
    eps = [episode_facts(r) for r in rows]
    steps = [s for e in eps for s in e["steps"]]
    terminated = [e for e in eps if e["terminated"]]
    written = [e["written"] for e in eps if e["written"] is not None]
    n_steps = sum(len(e["steps"]) for e in eps)
    per: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for e in eps:
        for p, s in zip(e["plans"], e["steps"]):
            per[p].append(s)
    return {
        "n": len(eps), "steps": len(steps),
        "accuracy": _rate([e["correct"] for e in eps]),
        "echo_rate": _rate([s["echo"] for s in steps]) or 0.0,
        "follow_rate": _rate([s["follow"] for s in steps]) or 0.0,
        "follow_raw_rate": _rate([s["follow_raw"] for s in steps]) or 0.0,
        "empty_answer_rate": _rate([e["empty_answer"] for e in terminated]) or 0.0,
        "boxed_rate": _rate([e["boxed"] for e in terminated]) or 0.0,
        "terminated_rate": _rate([e["terminated"] for e in eps]),
        "mean_step_chars": sum(s["chars"] for s in steps) / len(steps) if steps else 0.0,
        "mean_step_tokens": sum(written) / n_steps if written and n_steps else None,
        "per_strategy": {STRATEGIES[p].name: {"steps": len(ss), "echo_rate": _rate([s["echo"] for s in ss]),
                                              "follow_rate": _rate([s["follow"] for s in ss]),
                                              "follow_raw_rate": _rate([s["follow_raw"] for s in ss]),
                                              "mean_step_chars": sum(s["chars"] for s in ss) / len(ss)}
                         for p, ss in sorted(per.items())},
    }


# ------------------------------------------------------------------------------------ running

def _problems(cfg: Config) -> list:
    from rsim_env.sources.data import load_problems

    return load_problems(cfg.source, limit=cfg.limit, seed=1000)


def _reasoner(cfg: Config, decoding: str, problems: Sequence[Any]) -> Any:
    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent

    rc = ReasonerConfig(max_step_tokens=cfg.max_step_tokens, max_answer_tokens=cfg.max_steps * cfg.max_step_tokens,
                        greedy=decoding == "greedy", temperature=cfg.temperature, top_p=cfg.top_p, seed=cfg.seed)
    return build_agent(cfg.reasoner, AgentContext("reasoner", config=rc, seed=cfg.seed, max_rounds=cfg.max_steps,
                                                  problems=problems)).agent


def _example(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("problem_id", "question", "answer", "extracted", "correct", "strategies", "injected", "steps", "shown_steps")
    return {k: row[k] for k in keys if k in row}


def _episode(row: dict[str, Any]) -> dict[str, Any]:
    """The episode record (:mod:`rsim_env.record`): everything :func:`mode_figures` needs, so figures can be
    recomputed from the JSON (``recompute``)."""
    return dict(row)


def recompute(result: dict[str, Any]) -> dict[str, Any]:
    """Figures of a saved result recomputed from its ``episodes`` with the current definitions."""
    grouped: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for e in result["episodes"]:
        grouped[e["decoding"]][e["mode"]].append(e)
    by = {d: {m: mode_figures(rows) for m, rows in modes.items()} for d, modes in grouped.items()}
    out = {**result, "by_decoding": by, "modes": by[result["modes_decoding"]]}
    out["table_md"] = table(out)
    return out


def main(cfg: Config) -> dict[str, Any]:
    """Run every mode x decoding; print a table; write JSON when ``cfg.out``; return the result."""
    from algos.evaluation import EvalConfig
    from algos.evaluation.run import evaluate_mode, make_planner

    problems = _problems(cfg)
    named = {"env.max_steps": cfg.max_steps, "env.protocol": cfg.protocol, "reasoner.max_step_tokens": cfg.max_step_tokens,
             "env.check.last_number_fallback": cfg.last_number_fallback, "data.size": cfg.limit}
    ecfg = EvalConfig(k=1, seed=cfg.seed, batch=cfg.batch, progress=False,
                      set=tuple((k, str(v)) for k, v in named.items() if v))
    result: dict[str, Any] = {"config": asdict(cfg), "problems": len(problems), "modes": {}, "by_decoding": {},
                              "examples": {}, "episodes": []}
    t0 = time.perf_counter()
    for decoding in cfg.decodings:
        reasoner = _reasoner(cfg, decoding, problems)
        result["by_decoding"][decoding] = {}
        for mode in cfg.modes:
            rows, _ = evaluate_mode(mode, problems, reasoner, make_planner(mode, ecfg, None), ecfg)
            figs = mode_figures(rows)
            result["by_decoding"][decoding][mode] = figs
            result["examples"][f"{decoding}/{mode}"] = [_example(r) for r in rows[: cfg.examples]]
            result["episodes"].extend({"decoding": decoding, "mode": mode, **_episode(r)} for r in rows)
            print(f"[{time.perf_counter() - t0:6.0f}s] {decoding:<7} {mode:<14} acc={figs['accuracy']:.2f} "
                  f"echo={figs['echo_rate']:.2f} follow={figs['follow_rate']:.2f} "
                  f"empty={figs['empty_answer_rate']:.2f}", file=sys.stderr, flush=True)
    first = cfg.decodings[0]
    result["modes"] = result["by_decoding"][first]
    result["modes_decoding"] = first
    result["wall_s"] = time.perf_counter() - t0
    result["table_md"] = table(result)
    print(result["table_md"])
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=2))
    return result


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def table(result: dict[str, Any]) -> str:
    """Markdown table: one row per decoding x mode."""
    lines = ["| decoding | mode | n | accuracy | echo | follow | follow (raw) | empty answer | boxed | "
             "mean step tokens |", "|" + "---|" * 10]
    for decoding, modes in result["by_decoding"].items():
        for mode, f in modes.items():
            tok = "—" if f["mean_step_tokens"] is None else f"{f['mean_step_tokens']:.1f}"
            lines.append(f"| {decoding} | {mode} | {f['n']} | {_fmt(f['accuracy'])} | {_fmt(f['echo_rate'])} | "
                         f"{_fmt(f['follow_rate'])} | {_fmt(f['follow_raw_rate'])} | {_fmt(f['empty_answer_rate'])} | "
                         f"{_fmt(f['boxed_rate'])} | {tok} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.interaction", __doc__)
