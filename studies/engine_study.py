"""Does training with engine rollouts learn as well as training with torch rollouts? Seed by seed.

What llama.cpp rollouts must show before they may be on by default for training: a study run (``--preset study``)
with engine rollouts, its wall time against torch rollouts, and the accuracy of the trained models over
several seeds -- not worse. This script trains, for each seed, the same preset twice (one run per *arm*,
an arm being the ``model.reasoner`` spec that writes the rollouts), interleaving the arms so a busy machine
slows both alike, then evaluates every trained model the *same* way: the trained planner (greedy) driving
the trained reasoner decoded by one evaluation base (``eval_base``, default torch fp32 greedy: the trained
LoRA adapter of an engine run is read onto the torch base with ``RUN_DIR#base=default``), on ``eval_limit``
held-out problems. So the arms differ only in how their rollouts were decoded.

Reported: per arm and seed, wall time, mean rollout and step time, and held-out accuracy; per seed, the
exact McNemar test of the two arms on the same problems; over seeds, the sign test and the seeds-then-problems
bootstrap of :mod:`benchmarks.plans.seedstats` (the seed is the unit of a claim about a training procedure).
Every (arm, seed, problem) outcome goes to ``F_outcomes.jsonl.gz`` beside ``--out F.json``, the table is
regenerated from it (``--table-from``), and every evaluated episode to ``<output_dir>/episodes/``.
Finished runs and evaluations are cached in ``<output_dir>/engine_study_cache.json``: rerun to resume.

    python -m studies.engine_study --out docs/lean_results/engine_study.json     # ~1 h on 2 CPU cores
    python -m studies.engine_study --preset tiny --arms a=toy,b=toy --eval-base toy --eval-limit 16 --out /tmp/e.json

Not a unit test; ``studies/tests/test_engine_study.py`` runs the toy scale.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from benchmarks.plans import seedstats
from benchmarks.plans.seedstats import mcnemar_exact

__all__ = ["Config", "main", "parse_arms"]

SCALES = {"study": {"source": "curriculum:heldout"}, "tiny": {"source": "tiny"}}
"""Per preset: the held-out source every trained model is evaluated on."""


def parse_arms(text: str) -> tuple[tuple[str, str], ...]:
    """``torch=default,engine=llamacpp:default`` -> ``(("torch", "default"), ("engine", "llamacpp:default"))``."""
    arms = tuple(tuple(p.strip() for p in a.split("=", 1)) for a in text.split(",") if a.strip())
    if len(arms) != 2 or any(len(a) != 2 or not all(a) for a in arms) or arms[0][0] == arms[1][0]:
        raise ValueError(f"--arms {text!r}: give two NAME=REASONER_SPEC pairs with different names, e.g. "
                         "torch=default,engine=llamacpp:default (the first is the baseline).")
    return arms  # type: ignore[return-value]


@dataclass(frozen=True)
class Config:
    """Engine-vs-torch training study settings."""

    preset: str = "study"
    """Training preset (``rsim train --preset``): ``study`` (embedded SmolLM2) or ``tiny`` (toy agents, seconds)."""
    arms: str = "torch=default,engine=llamacpp:default"
    """Two ``NAME=REASONER_SPEC`` pairs: the ``model.reasoner`` that writes each arm's rollouts (first = baseline)."""
    seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds; each trains both arms."""
    steps: int = 12
    """Optimizer steps per run (0 = the preset's; the earlier studies ran the study preset for 12)."""
    learner: str = "stackelberg"
    """``stackelberg`` (planner + reasoner) or ``grpo`` (the reasoner alone)."""
    eval_limit: int = 200
    """Held-out problems each trained model is evaluated on."""
    eval_base: str = "default"
    """The reasoner base every trained reasoner is evaluated on (``RUN_DIR#base=...``): one evaluator for both arms."""
    batch: int = 50
    """Problems per batched evaluation rollout."""
    output_dir: str = "runs/engine_study"
    """Where the training runs go (one subdirectory per arm and seed)."""
    out: str = ""
    """JSON result path ("" = print only); the outcome file goes beside it."""
    table_from: str = ""
    """Only print the table regenerated from this ``*_outcomes.jsonl.gz`` (no runs)."""

    def __post_init__(self) -> None:
        if self.preset not in SCALES:
            raise ValueError(f"Config.preset={self.preset!r}: choose one of {sorted(SCALES)}.")
        parse_arms(self.arms)
        if not self.seeds:
            raise ValueError("Config.seeds is empty; give at least one seed, e.g. 0,1,2.")
        from algos.config import learners_training

        reasoner_learners = learners_training("reasoner")  # the arms differ in how the reasoner's rollouts are decoded
        if self.learner not in reasoner_learners:
            raise ValueError(f"Config.learner={self.learner!r}: use {' or '.join(map(repr, reasoner_learners))}.")
        if self.steps < 0 or self.eval_limit < 1 or self.batch < 1:
            raise ValueError("Config: steps >= 0, eval_limit >= 1 and batch >= 1, please.")


def _eval_config(cfg: Config, run_cfg: Any, seed: int, source: str, limit: int) -> Any:
    """Greedy, one sample a problem, with the training run's rounds, protocol and step length."""
    from algos.config import DataConfig
    from algos.evaluation import EvalConfig

    named = {"env.max_steps": run_cfg.env.max_steps, "env.protocol": run_cfg.env.protocol,
             "reasoner.max_step_tokens": run_cfg.reasoner.max_step_tokens}
    return EvalConfig(data=DataConfig(source=source, size=limit, seed=1000), k=1, seed=seed, batch=cfg.batch,
                      max_answer_tokens=run_cfg.reasoner.max_answer_tokens, progress=False,
                      set=tuple((k, str(v)) for k, v in named.items() if v))


def _agents(spec_r: str, spec_p: str | None, ecfg: Any, problems: Sequence[Any]) -> tuple[Any, Any]:
    from algos.evaluation.run import build_reasoner, load_planner

    reasoner = build_reasoner(spec_r, ecfg, problems).agent
    planner = load_planner(spec_p, ecfg).agent if spec_p else None
    return reasoner, planner


def _tokens(row: dict[str, Any]) -> float | None:
    """Tokens the reasoner read and wrote in one episode (``None`` if it does not count what it wrote)."""
    tok = row.get("tokens") or {}
    written = tok.get("reasoner_written")
    return None if written is None else float(written + (tok.get("reasoner_read") or 0))


def _outcomes(mode: str, problems: Sequence[Any], reasoner: Any, planner: Any, ecfg: Any,
              episodes: Path) -> tuple[dict[str, bool], dict[str, Any]]:
    """``({problem_id: correct}, {problem_id: {plan, tokens}})`` of one greedy evaluation; its episodes go to
    ``episodes``."""
    from algos.evaluation.run import evaluate_mode, make_planner

    rows, _ = evaluate_mode(mode, problems, reasoner, make_planner(mode, ecfg, planner), ecfg)
    episodes.parent.mkdir(parents=True, exist_ok=True)
    episodes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out, det = {}, {}
    for r in rows:
        plan = list(r["strategies"]) if r.get("planner", True) else []  # an EpisodeRecord row
        det[r["problem_id"]] = {"plan": plan, "tokens": _tokens(r)}
        out[r["problem_id"]] = bool(r["correct"])
    return out, det


def _log(msg: str) -> None:
    print(f"[engine_study {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _train(cfg: Config, spec: str, run_dir: Path, seed: int) -> dict[str, Any]:
    from algos.cli import train
    from algos.config import resolve

    overrides: dict[str, Any] = {"model.reasoner": spec, "learner": cfg.learner, "train.seed": seed,
                                 "train.output_dir": str(run_dir), "train.progress": False}
    if cfg.steps:  # the lambda schedule keeps its shape: half the steps in stage 1
        overrides |= {"train.steps": cfg.steps, "schedule.stage1_steps": max(1, cfg.steps // 2)}
    t0 = time.perf_counter()
    res = train(resolve(cfg.preset, overrides))
    hist = res["history"]
    mean = lambda k: sum(float(m.get(k, 0.0)) for m in hist) / max(1, len(hist))  # noqa: E731
    return {"run_dir": str(run_dir), "seconds": time.perf_counter() - t0, "steps": len(hist),
            "mean_step_s": mean("step_time"), "mean_rollout_s": mean("rollout_time"), "curve": curves(hist)}


CURVES = ("planner/reward", "reasoner/reward", "accuracy")
"""Training metrics kept per step. The trainer logs each agent's reward under its own name (there is no plain
``reward`` key: reading one gave a NaN curve), and a GRPO run has no planner."""


def curves(history: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    """Per metric of :data:`CURVES` that the run logged, its value per step (``None`` where a step lacks it or it
    is not finite: JSON has no NaN)."""
    def value(m: dict[str, Any], k: str) -> float | None:
        v = m.get(k)
        return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None

    return {k: [value(m, k) for m in history] for k in CURVES if any(k in m for m in history)}


class _Cache:
    def __init__(self, path: Path, cfg: Config) -> None:
        self.path = path
        key = {k: v for k, v in asdict(cfg).items() if k not in ("out", "table_from", "batch")}
        self.data: dict[str, Any] = {"config": key, "runs": {}, "outcomes": {}, "eval_s": {}}
        if path.is_file():
            old = json.loads(path.read_text())
            if old.get("config") != json.loads(json.dumps(key)):
                raise ValueError(f"{path} was written by another configuration ({old.get('config')}); use another "
                                 "--output-dir or delete it.")
            self.data = old

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


def _evaluate(cfg: Config, run: dict[str, Any], seed: int, name: str) -> tuple[dict[str, bool], dict[str, Any]]:
    from algos.config import resolve
    from rsim_env.sources.data import load_problems

    source = SCALES[cfg.preset]["source"]
    problems = load_problems(source, limit=cfg.eval_limit, seed=1000)
    ecfg = _eval_config(cfg, resolve(cfg.preset, {}), seed, source, cfg.eval_limit)
    reasoner_spec = f"{run['run_dir']}#base={cfg.eval_base}"
    planner_spec = run["run_dir"] if cfg.learner == "stackelberg" else None
    reasoner, planner = _agents(reasoner_spec, planner_spec, ecfg, problems)
    mode = "trained" if planner is not None else "none"
    path = Path(cfg.output_dir) / "episodes" / f"{name}.jsonl"
    return _outcomes(mode, problems, reasoner, planner, ecfg, path)


def _rows(cfg: Config, cache: _Cache) -> list[dict[str, Any]]:
    """One outcome row per (arm, seed, problem), with the ``plan`` the trained planner played (``[]`` for a GRPO
    run; left out for an evaluation cached before plans were kept, rather than guessed)."""
    from benchmarks.plans.table import task_of
    from rsim_env.sources.data import load_problems

    tasks = {p.id: task_of(p) for p in load_problems(SCALES[cfg.preset]["source"], limit=cfg.eval_limit, seed=1000)}
    rows = []
    for arm, _ in parse_arms(cfg.arms):
        for s in cfg.seeds:
            plans = cache.data.get("plans", {}).get(f"{arm}_s{s}")
            for pid, ok in sorted(cache.data["outcomes"][f"{arm}_s{s}"].items()):
                row = {"mode": arm, "seed": s, "problem_id": pid, "task": tasks.get(pid), "correct": bool(ok)}
                if plans is not None:
                    row["plan"] = plans.get(pid)
                rows.append(row)
    return rows


def main(cfg: Config) -> dict[str, Any]:
    """Train both arms per seed, evaluate them alike, test, print the table; write JSON + outcomes with ``out``."""
    if cfg.table_from:
        rows = seedstats.read_outcomes(cfg.table_from)
        base = next(r["mode"] for r in rows)
        md = seedstats.markdown(seedstats.report(rows, base))
        print(md)
        return {"table_md": md}
    arms = parse_arms(cfg.arms)
    cache = _Cache(Path(cfg.output_dir) / "engine_study_cache.json", cfg)
    for s in cfg.seeds:  # arms interleaved: a busy stretch of the machine slows both
        for arm, spec in arms:
            name = f"{arm}_s{s}"
            if name not in cache.data["runs"]:
                _log(f"training {name} (model.reasoner={spec})")
                cache.data["runs"][name] = _train(cfg, spec, Path(cfg.output_dir) / name, s)
                cache.save()
                _log(f"trained {name} in {cache.data['runs'][name]['seconds']:.0f} s")
            if name not in cache.data["outcomes"]:
                t = time.perf_counter()
                out, det = _evaluate(cfg, cache.data["runs"][name], s, name)
                cache.data["outcomes"][name], cache.data["eval_s"][name] = out, time.perf_counter() - t
                cache.data.setdefault("plans", {})[name] = {pid: d.get("plan") for pid, d in det.items()}
                cache.save()
                _log(f"{name}: {sum(out.values())}/{len(out)} right")
    return _report(cfg, arms, cache)


def _report(cfg: Config, arms: tuple[tuple[str, str], ...], cache: _Cache) -> dict[str, Any]:
    (a, _), (b, _) = arms
    rows = _rows(cfg, cache)
    rep = seedstats.report(rows, a)
    runs = cache.data["runs"]
    per_seed = {}
    for s in cfg.seeds:
        oa, ob = cache.data["outcomes"][f"{a}_s{s}"], cache.data["outcomes"][f"{b}_s{s}"]
        ids = sorted(oa)
        per_seed[str(s)] = {"mcnemar": mcnemar_exact([oa[i] for i in ids], [ob[i] for i in ids]),
                            **{f"{arm}_{k}": runs[f"{arm}_s{s}"][k] for arm in (a, b)
                               for k in ("seconds", "mean_step_s", "mean_rollout_s")}}
    wall = {arm: sum(runs[f"{arm}_s{s}"]["seconds"] for s in cfg.seeds) for arm in (a, b)}
    roll = {arm: sum(runs[f"{arm}_s{s}"]["mean_rollout_s"] for s in cfg.seeds) / len(cfg.seeds) for arm in (a, b)}
    result = {"config": asdict(cfg), "arms": dict(arms), "seed_report": rep, "per_seed": per_seed,
              "train_wall_s": wall, "wall_ratio": wall[b] / wall[a], "mean_rollout_s": roll,
              "rollout_ratio": roll[b] / roll[a], "runs": runs, "eval_s": cache.data["eval_s"]}
    md = seedstats.markdown(rep)
    lines = [md, "| arm | training wall s (all seeds) | mean rollout s/step | mean step s |", "|---|---|---|---|"]
    for arm in (a, b):
        step = sum(runs[f"{arm}_s{s}"]["mean_step_s"] for s in cfg.seeds) / len(cfg.seeds)
        lines.append(f"| `{arm}` | {wall[arm]:.0f} | {roll[arm]:.2f} | {step:.2f} |")
    lines.append(f"\n{b} / {a}: training wall time {result['wall_ratio']:.2f}, rollout time {result['rollout_ratio']:.2f}")
    result["table_md"] = "\n".join(lines) + "\n"
    print(result["table_md"])
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        seedstats.write_outcomes(out.with_name(out.stem + "_outcomes.jsonl.gz"), rows)
        out.write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.engine_study", __doc__)
