"""Does training help? The trained planner against every baseline a reviewer asks for, seed by seed.

For each seed, train two learners at equal compute (same preset, steps, groups and G):
``stackelberg`` (planner + reasoner) and ``grpo`` (reasoner alone, no planner). Then evaluate on
``eval_limit`` held-out problems (disjoint from training by question text). Every choice below is
made on *validation* problems drawn from the training split, never on the test problems:

* ``none``                  the base reasoner, no planner (greedy);
* ``random``                the base reasoner with a uniformly random planner (one per seed);
* ``best_fixed``            the best plan of the short candidate list ``--fixed`` (the v2 study's baseline);
* ``best_fixed_exhaustive`` the best of *every* plan of at most ``plan_rounds`` rounds ending in termination,
                            played on the validation problems through the replay cache (the plan table of
                            :mod:`benchmarks.plans.table`; 73 plans for L = 3);
* ``per_task``              per task, the plan best on that task's validation problems;
* ``bandit``                a contextual bandit planner (per-task Thompson sampling over the same plans,
                            trained on the validation problems against the replayed frozen reasoner,
                            ``bandit_episodes`` pulls, one run per seed), then greedy on the test problems;
* ``self_consistency``      majority vote of k sampled no-planner answers (T = ``sc_temperature``, one
                            sampling seed per seed); k matches the planner modes' reasoner tokens per
                            problem (:func:`self_consistency` reports the budget and the tokens used);
* ``trained``               the trained planner driving the jointly trained reasoner (Stackelberg, per seed);
* ``grpo``                  the GRPO-trained reasoner, no planner (per seed).

``best_fixed_exhaustive``, ``per_task`` and ``bandit`` are :mod:`algos.study.modes`' choices (``choose``,
``thompson``) on the validation plan table read as an :class:`algos.study.types.Table` whose planner reward is the
outcome (1 right, 0 wrong), so they choose by validation accuracy; a task whose best plan ties the exhaustive best
plays the exhaustive best. ``self_consistency`` votes with :func:`algos.study.modes.majority_vote`.

Greedy ``none`` and the plan modes do not depend on the seed: they run once and are reused for every seed.
Every mode gets accuracy with a 95 % seeds-then-problems bootstrap interval (a Wilson interval over the
(seed, problem) episodes would count seeds that play alike as independent evidence); ``tests``
compares pairs of modes on the same problems with a paired sign-flip permutation test clustered on problems
(``p_value``), the pooled exact McNemar test for reference, and the seed-level tests of
:mod:`benchmarks.plans.seedstats` (``sign_test_seeds``: exact sign test over seeds; ``bootstrap_seeds_problems``).
With ``--out F.json`` every (mode, seed, problem, sample) outcome goes to ``F_outcomes.jsonl.gz`` and
``outcomes_table_md`` is the table regenerated from that file (``--table-from`` prints it again).
Finished pieces are cached in ``<output_dir>/efficacy_cache.json``: rerun the same command to resume.
Every evaluation's episodes go to ``<output_dir>/episodes/`` -- read them before believing a number.
Learning curves (reward and accuracy per step, per seed and learner) go to ``F_curves.png``.

    python -m studies.efficacy --out results/efficacy.json                     # many hours on a CPU
    python -m studies.efficacy --preset tiny --eval-limit 40 --out /tmp/e.json  # toy agents, ~40 s
    python -m studies.efficacy --table-from results/efficacy_outcomes.jsonl.gz  # the table, from the file

This is not a unit test; never run the full version in CI (``tests/test_efficacy.py`` runs the
toy scale).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from . import efficacy_report
from .efficacy_stats import (COMPARISONS, DETERMINISTIC, Cache, mcnemar_exact, mode_summary, paired_permutation,
                             summaries, tests)

__all__ = ["Config", "main", "Cache", "mcnemar_exact", "mode_summary", "paired_permutation", "COMPARISONS", "MODES",
           "DETERMINISTIC"]

SCALES = {
    "study": {"source": "curriculum:heldout", "validation": "curriculum:train", "plan_rounds": 0},
    "tiny": {"source": "tiny", "validation": "tiny", "plan_rounds": 2},
}
"""Per preset: the held-out evaluation source, the validation source (for choosing plans) and the default L of
the exhaustive plan search (0 = env.max_steps: 73 plans for the study's 3 rounds; tiny: 9 plans, seconds)."""


def parse_fixed(text: str) -> tuple[int, ...]:
    """``--fixed 1,3,8`` -> ``(1, 3, 8)`` (:func:`algos.evaluation.parse_sequence`, imported when used)."""
    from algos.evaluation.config import parse_sequence

    return parse_sequence(text)


@dataclass(frozen=True)
class Config:
    """Efficacy study settings."""

    preset: str = "study"
    """Training preset (``rsim train --preset``): ``study`` (embedded SmolLM2) or ``tiny`` (toy agents, seconds)."""
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    """Training seeds (each trains both learners). Six, because an exact two-sided sign test over n seeds
    cannot go below 2 / 2**n: 0.0625 with five, 0.031 with six."""
    steps: int = 0
    """Optimizer steps per run (0 = the preset's)."""
    eval_limit: int = 400
    """Held-out problems evaluated per mode and seed."""
    validation_limit: int = 64
    """Training-split problems used to pick the best fixed sequence."""
    fixed: tuple[tuple[int, ...], ...] = field(default=((8,), (6, 8), (1, 6, 8), (7, 6, 8), (1, 3, 8), (2, 0, 8), (2, 8)),
                                               metadata={"parse": parse_fixed, "append": True})
    """Candidate fixed sequences (--fixed 1,3,8, repeatable; given ones replace the default list)."""
    batch: int = 32
    """Problems per batched evaluation rollout."""
    sc_seeds: int = 0
    """Sample self-consistency with the first ``sc_seeds`` seeds only (0 = every seed): each seed is another sampled,
    never replayed, evaluation of the base reasoner (5 min for 309 adaptive problems on 2 cores)."""
    random_seeds: int = 0
    """Evaluate the random planner with the first ``random_seeds`` seeds only (0 = every seed): each
    seed is another 400-problem evaluation of the same base reasoner, and the study's time is bounded."""
    output_dir: str = "runs/efficacy"
    """Where the training runs go (one subdirectory per learner and seed)."""
    out: str = ""
    """JSON result path; ``curves.png`` is written next to it ("" = print only)."""
    train_set: tuple[str, ...] = field(default=(), metadata={"parse": str, "append": True, "flag": "set"})
    """Extra training overrides (--set, repeatable), ``KEY=VALUE`` as in ``rsim train --set`` (e.g. ``reasoner.sample_dtype=bfloat16``):
    a variant of the study's training. Evaluation is unchanged (the preset's reasoner settings, fp32, greedy).
    ``{seed}`` in a value is the run's seed: ``model.planner=runs/po/planner_only_s{seed}`` warm-starts each seed's
    planner from the planner-only run of the same seed."""
    trained_learner: str = "stackelberg"
    """Learner of the ``trained`` mode: ``stackelberg`` (planner + reasoner, jointly) or ``planner_only`` (the planner
    alone against the frozen base reasoner; with ``--set model.reasoner=replay:default --set reasoner.greedy=true``
    every step the reasoner writes, in training and in evaluation, is decoded once and replayed after that)."""
    grpo: bool = True
    """Also train plain GRPO (the reasoner alone, mode ``grpo``) per seed at equal compute. A planner-only study
    trains no reasoner, so ``--no-grpo`` leaves the mode out."""
    baselines_from: str = ""
    """Another study's ``output_dir`` whose base-reasoner evaluations (validation, ``none``, fixed sequences,
    ``random``) to reuse when its evaluation settings match: they do not depend on training ("" = evaluate)."""

    plan_rounds: int = 0
    """L of ``best_fixed_exhaustive``, ``per_task`` and ``bandit``: every plan of at most L rounds ending in
    termination is played on the validation problems (0 = the preset's: study env.max_steps = 3, tiny 2; at most 4)."""
    bandit_episodes: int = 2000
    """Training episodes of the bandit planner (per-task Thompson sampling) on the validation problems."""
    sc_k: int = 0
    """Samples of self-consistency (0 = match the planner modes' reasoner tokens per problem)."""
    sc_temperature: float = 0.7
    """Sampling temperature of self-consistency's no-planner samples (the study preset's reasoner T)."""
    replay_store: str = ""
    """Replay cache of the validation plan table ("" = $RSIM_REPLAY_DIR/steps.sqlite, see agents.replay.reasoner)."""
    bootstrap_rounds: int = 4000
    """Replicates of the seeds-then-problems bootstrap (benchmarks.plans.seedstats)."""
    source: str = ""
    """Held-out evaluation source ("" = the preset's: ``curriculum:heldout`` / ``tiny``), e.g. ``adaptive:test``."""
    validation: str = ""
    """Validation source, where every choice is made ("" = the preset's: ``curriculum:train`` / ``tiny``), e.g.
    ``adaptive:val``. Training problems are ``--set data.source=...`` (e.g. ``adaptive:train``)."""
    table_from: str = ""
    """Only regenerate the outcome table from this ``*_outcomes.jsonl.gz`` (no study runs; --out F.md writes it)."""

    def __post_init__(self) -> None:
        if self.preset not in SCALES:
            raise ValueError(f"Config.preset={self.preset!r}: choose one of {sorted(SCALES)}.")
        if not self.seeds:
            raise ValueError("Config.seeds is empty; give at least one seed, e.g. (0, 1, 2).")
        for name in ("eval_limit", "validation_limit", "batch", "bandit_episodes", "bootstrap_rounds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"Config.{name}={v!r} is invalid: use an int >= 1.")
        for name in ("sc_seeds", "random_seeds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"Config.{name}={v!r}: use 0 (every seed) or a positive count.")
        if self.steps < 0:
            raise ValueError(f"Config.steps={self.steps!r}: use 0 (the preset's) or a positive count.")
        if not 0 <= self.plan_rounds <= 4:
            raise ValueError(f"Config.plan_rounds={self.plan_rounds!r}: use 0 (env.max_steps) or 1..4 (L = 4 is 585 plans).")
        if self.sc_k < 0:
            raise ValueError(f"Config.sc_k={self.sc_k!r}: use 0 (match the planner modes' tokens) or a count >= 1.")
        if not self.sc_temperature > 0:
            raise ValueError(f"Config.sc_temperature={self.sc_temperature!r}: use a positive temperature, e.g. 0.7.")
        from algos.config import learners_training

        planner_learners = learners_training("planner")  # the study compares trained planners
        if self.trained_learner not in planner_learners:
            raise ValueError(f"Config.trained_learner={self.trained_learner!r}: use "
                             f"{' or '.join(map(repr, planner_learners))}.")
        from rsim_env.sources.data import check_spec

        for spec in filter(None, (self.source, self.validation)):
            check_spec(spec)
        bad = [x for x in self.train_set if "=" not in x]
        if bad:
            raise ValueError(f"Config.train_set: {bad} are not KEY=VALUE (e.g. train.grpo.tis_cap=2).")

    def first_seeds(self, count: int) -> tuple[int, ...]:
        """The first ``count`` seeds (0 = every seed): ``random_seeds`` and ``sc_seeds``."""
        return self.seeds[:count] if count else self.seeds

    def sources(self) -> tuple[str, str]:
        """(held-out evaluation source, validation source): the given ones, else the preset's."""
        scale = SCALES[self.preset]
        return self.source or scale["source"], self.validation or scale["validation"]

    def overrides(self) -> dict[str, str]:
        """``train_set`` as a dict for :func:`algos.config.resolve`."""
        return dict(x.split("=", 1) for x in self.train_set)

    def shared_overrides(self) -> dict[str, str]:
        """The overrides that define the task and the frozen reasoner (``env.*``, ``model.reasoner``, the step
        caps): training and every evaluation use them. The rest (sample dtype, learning rates, ...) train only."""
        shared = ("model.reasoner", "reasoner.max_step_tokens", "reasoner.max_answer_tokens")
        return {k: v for k, v in self.overrides().items() if k.startswith("env.") or k in shared}

    def learners(self) -> tuple[str, ...]:
        """The learners trained per seed: the ``trained`` mode's, then ``grpo`` if asked."""
        return (self.trained_learner,) + (("grpo",) if self.grpo else ())


def _train(cfg: Config, learner: str, seed: int) -> dict[str, Any]:
    from algos.cli import train
    from algos.config import resolve

    out = Path(cfg.output_dir) / f"{learner}_s{seed}"
    given = {k: v.replace("{seed}", str(seed)) for k, v in cfg.overrides().items()}  # per-seed warm starts
    overrides = {**given, "learner": learner, "train.seed": seed, "train.output_dir": str(out),
                 "train.progress": False}
    if cfg.steps:  # the lambda schedule keeps its shape: half the steps in stage 1
        overrides["train.steps"] = cfg.steps
        overrides["schedule.stage1_steps"] = max(1, cfg.steps // 2)
    t0 = time.perf_counter()
    res = train(resolve(cfg.preset, overrides))
    curve = [{k: float(v) for k, v in m.items() if isinstance(v, (int, float)) and math.isfinite(v)}
             for m in res["history"]]
    return {"run_dir": str(out), "seconds": time.perf_counter() - t0, "curve": curve, "replay": res.get("replay")}


def _outcomes(mode: str, problems: Sequence[Any], reasoner: Any, planner: Any, ecfg: Any,
              episodes: Path | None = None) -> tuple[dict[str, bool], dict[str, Any]]:
    """``({problem_id: correct}, {problem_id: {plan, tokens, ...}})``; with ``ecfg.k > 1`` the outcome is the
    majority vote of the k samples (self-consistency) and ``samples`` holds each sample's outcome."""
    from algos.evaluation.run import evaluate_mode, make_planner

    from algos.study.modes import majority_vote

    rows, _ = evaluate_mode(mode, problems, reasoner, make_planner(mode, ecfg, planner), ecfg)
    if episodes is not None:
        episodes.parent.mkdir(parents=True, exist_ok=True)
        episodes.write_text("".join(json.dumps(r) + "\n" for r in rows))
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["problem_id"], []).append(r)
    out, det = {}, {}
    for pid, rs in by.items():
        rs.sort(key=lambda r: r["sample"])
        toks = [reasoner_tokens(r) for r in rs]
        plan = list(rs[0]["strategies"]) if rs[0].get("planner", True) else []  # an EpisodeRecord row
        det[pid] = {"plan": plan, "tokens": None if None in toks else sum(toks)}
        if ecfg.k > 1:
            det[pid] |= {"samples": [r["correct"] for r in rs]}
            out[pid] = majority_vote(rs)
        else:
            out[pid] = bool(rs[0]["correct"])
    return out, det


def plan_name(plan: Sequence[int]) -> str:
    """``(1, 3, 8)`` -> ``"1,3,8"`` (the one spelling of a plan)."""
    return ",".join(str(s) for s in plan)


def reasoner_tokens(row: dict[str, Any]) -> float | None:
    """Tokens the reasoner read and wrote in one episode (``None`` if it does not count what it wrote; a read
    count it does not report is 0: the toy agents read no prompt)."""
    tok = row.get("tokens") or {}
    written = tok.get("reasoner_written")
    return None if written is None else float(written + (tok.get("reasoner_read") or 0))


def validation_table(problems: Sequence[Any], reasoner: Any, plans: Sequence[tuple[int, ...]], max_steps: int,
                     protocol: str, batch: int, store: str, log: Any = None
                     ) -> tuple[dict[str, dict[str, bool]], list[dict[str, Any]], dict[str, Any]]:
    """Play every plan on every problem with the greedy ``reasoner`` wrapped in the replay cache
    (:func:`benchmarks.plans.table.play_table`, :class:`agents.replay.reasoner.ReplayReasoner`).

    Returns ``({problem_id: {plan: correct}}, rows with the step texts, replay stats)``. The env runs with
    ``max_steps`` rounds (the evaluation's), so a plan's steps here are the ones it gets on the test set.
    """
    from agents.replay.reasoner import ReplayReasoner, StepStore, default_store_path

    from benchmarks.plans.table import Config as TableConfig, play_table

    replay = reasoner if isinstance(reasoner, ReplayReasoner) else ReplayReasoner(reasoner, StepStore(store or default_store_path()))
    tcfg = TableConfig(max_rounds=max_steps, batch=batch, protocol=protocol)
    rows = play_table(tcfg, problems, plans, replay, log=log)
    table: dict[str, dict[str, bool]] = {}
    for r in rows:
        table.setdefault(r["problem_id"], {})[plan_name(r["plan"])] = bool(r["correct"])
    return table, rows, dict(replay.stats)


def selection_table(tab: dict[str, Any]) -> Any:
    """The validation plan table (:meth:`_Study.plan_table`) as an :class:`algos.study.types.Table` whose planner
    reward is the outcome (1 right, 0 wrong): :mod:`algos.study.modes`' choices on it are choices by accuracy."""
    from algos.study.types import Outcome, Table

    if not tab["table"]:
        raise ValueError("the validation plan table is empty; give validation problems (--validation-limit).")
    return Table("val", dict(tab["tasks"]), {pid: {tuple(int(x) for x in plan.split(",")): Outcome(bool(c), float(bool(c)), float("nan"))
                                                   for plan, c in by_plan.items()} for pid, by_plan in tab["table"].items()})


def choose_plans(tab: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, float]]:
    """``(best_fixed_exhaustive, per_task, every plan's validation accuracy)`` on the validation plan table, chosen
    by :func:`algos.study.modes.choose` (ties: shortest, then smallest plan); a task whose best accuracy the
    exhaustive best plan also reaches plays that plan."""
    from algos.study.modes import choose

    ids, plans = list(tab["table"]), tab["plans"]
    chosen = choose([selection_table(tab)])
    best = plan_name(chosen["best_single"])
    per_task = {}
    for t, plan in chosen["per_task_best"].items():
        mine = [i for i in ids if tab["tasks"][i] == t]
        tied = sum(tab["table"][i][best] for i in mine) == sum(tab["table"][i][plan_name(plan)] for i in mine)
        per_task[t] = best if tied else plan_name(plan)
    return best, per_task, {p: sum(tab["table"][i][p] for i in ids) / len(ids) for p in plans}


def train_bandit(tab: dict[str, Any], episodes: int, seed: int) -> dict[str, Any]:
    """The bandit planner: :func:`algos.study.modes.thompson` (per-task Thompson sampling, each pull the replayed
    frozen greedy reasoner's outcome on a validation problem), plans spelled as in the study's outputs."""
    from algos.study.modes import thompson

    b = thompson(selection_table(tab), episodes, seed)
    return {"choice": {t: plan_name(p) for t, p in b["choice"].items()}, "default": plan_name(b["default"]),
            "pulls": b["pulls"], "episodes": episodes, "seed": seed}


def self_consistency(st: Any, per_seed: dict, details: dict) -> dict[str, Any]:
    """Majority vote of k sampled no-planner answers per seed, k matching the planner modes' reasoner tokens
    (read + written) per problem over one greedy no-planner answer's (rounded, at least 1; 5 when the agents count
    no tokens; ``--sc-k`` when given).

    ``st`` is the :class:`_Study` (its cached ``evaluated``, ``sampler``, ``ecfg``); fills
    ``per_seed["self_consistency"]`` and ``details["self_consistency"]``; returns k, the budget and the tokens.
    """
    def mean_tokens(mode: str) -> float | None:
        toks = [d.get("tokens") for seed in details[mode].values() for d in seed.values()]
        return sum(toks) / len(toks) if toks and None not in toks else None

    planner_modes = ("best_fixed_exhaustive", "per_task", "bandit", "trained")
    per_mode = {m: mean_tokens(m) for m in planner_modes}
    known = [v for v in per_mode.values() if v is not None]
    budget = sum(known) / len(known) if known else None
    per_sample = mean_tokens("none")
    k = st.cfg.sc_k or (max(1, round(budget / per_sample)) if budget and per_sample else 5)
    for s in st.cfg.first_seeds(st.cfg.sc_seeds):
        ecfg = dataclasses.replace(st.ecfg[s], k=k, temperature=st.cfg.sc_temperature)
        key = f"self_consistency/k{k}/T{st.cfg.sc_temperature:g}/s{s}"  # sampled, also at k = 1
        per_seed["self_consistency"][s] = st.evaluated(key, "none", st.test,
                                                       functools.partial(st.sampler, ecfg, st.test), ecfg)
        details["self_consistency"][s] = st.details.get(key, {})
    used = [d["tokens"] for seed in details["self_consistency"].values() for d in seed.values()]
    return {"k": k, "temperature": st.cfg.sc_temperature, "token_budget_per_problem": budget,
            "planner_mode_tokens": per_mode, "tokens_per_sample_none": per_sample,
            "tokens_per_problem": sum(used) / len(used) if used and None not in used else None,
            "k_from": "--sc-k" if st.cfg.sc_k else "planner modes' mean reasoner tokens (read + written) per problem "
                      "/ greedy none's"}


def _eval_config(cfg: Config, run_cfg: Any, seed: int, source: str, limit: int) -> Any:
    from algos.evaluation import EvalConfig

    from algos.config import DataConfig

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


def replay_counts(reasoner: Any) -> dict[str, int] | None:
    """A replayed reasoner's counts so far (:mod:`agents.replay.reasoner`), None for a reasoner that is not replayed."""
    from agents.replay.reasoner import ReplayReasoner

    return dict(reasoner.stats) if isinstance(reasoner, ReplayReasoner) else None


def _minus(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: int(after[k] - before.get(k, 0)) for k in after}


def _total(counts: Any) -> dict[str, int] | None:
    """The sum of replay counts (None entries skipped); None when there are none."""
    parts = [c for c in counts if c]
    if not parts:
        return None
    return {k: int(sum(c.get(k, 0) for c in parts)) for k in sorted({k for c in parts for k in c})}


def _log(msg: str) -> None:
    print(f"[efficacy {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class _Study:
    """One study's problems, agents (built lazily, once) and cached evaluations."""

    def __init__(self, cfg: Config, cache: Cache) -> None:
        from algos.config import resolve
        from rsim_env.sources.data import load_problems

        self.cfg, self.cache = cfg, cache
        self.outs, self.timing, self.details = cache.data["outcomes"], cache.data["timing"], cache.data["details"]
        self.run_cfg = resolve(cfg.preset, cfg.shared_overrides())
        source, validation = cfg.sources()
        self.test = load_problems(source, limit=cfg.eval_limit, seed=1000)
        self.val = load_problems(validation, limit=cfg.validation_limit, seed=2000)
        overlap = {p.question for p in self.test} & {p.question for p in self.val}
        if overlap and (cfg.source or cfg.validation):  # the presets' own pairs are disjoint by construction
            raise ValueError(f"{len(overlap)} questions are both test ({source}) and validation ({validation}) problems, "
                             f"e.g. {sorted(overlap)[0][:80]!r}: give disjoint splits (e.g. adaptive:test, adaptive:val).")
        self.s0 = cfg.seeds[0]
        self.ecfg = {s: _eval_config(cfg, self.run_cfg, s, source, cfg.eval_limit) for s in cfg.seeds}
        self.vcfg = _eval_config(cfg, self.run_cfg, self.s0, validation, cfg.validation_limit)
        self.lazy: dict[str, Any] = {}

    def evaluated(self, key: str, mode: str, problems: Sequence[Any], agents: Any, ecfg: Any,
                  episodes: bool = True) -> dict[str, bool]:
        """Outcomes of ``mode`` (cached under ``key``); ``agents()`` builds (reasoner, planner) only when needed."""
        if key not in self.outs:
            _log(f"evaluating {key}")
            t = time.perf_counter()
            reasoner, planner = agents()
            path = Path(self.cfg.output_dir) / "episodes" / (
                key.replace("/", "_").replace(":", "-").replace(",", "-") + ".jsonl") if episodes else None
            before = replay_counts(reasoner)
            self.outs[key], self.details[key] = _outcomes(mode, problems, reasoner, planner, ecfg, path)
            self.timing[key] = time.perf_counter() - t
            if before is not None:  # what this evaluation read back and decoded (the base reasoner is shared)
                self.cache.data.setdefault("replay", {})[key] = _minus(replay_counts(reasoner), before)
            self.cache.save()
            _log(f"{key}: {sum(self.outs[key].values())}/{len(self.outs[key])} right in {self.timing[key]:.0f} s")
        return self.outs[key]

    def base(self, ecfg: Any, problems: Sequence[Any]) -> tuple[Any, None]:
        if "base" not in self.lazy:  # one greedy base reasoner for every mode that uses it
            self.lazy["base"] = _agents(self.run_cfg.model.reasoner, None, ecfg, problems)[0]
        return self.lazy["base"], None

    def sampler(self, ecfg: Any, problems: Sequence[Any]) -> tuple[Any, None]:
        if "sampler" not in self.lazy:  # self-consistency's sampling base reasoner (samples are never replayed)
            spec = self.run_cfg.model.reasoner
            # built as for k >= 2, so it samples at ecfg.temperature even when the budget allows one sample
            # (rsim eval's k = 1 means greedy, and a vote over one greedy answer is just mode `none`)
            sampling = dataclasses.replace(ecfg, k=max(2, ecfg.k))
            self.lazy["sampler"] = _agents(spec.removeprefix("replay:"), None, sampling, problems)[0]
        return self.lazy["sampler"], None

    def fixed(self, plan: str, problems: Sequence[Any], key: str) -> tuple[dict[str, bool], dict[str, Any]]:
        """The base reasoner under ``fixed:plan`` on ``problems`` (a subset reads the full test run if there is one)."""
        name = f"fixed:{plan}"
        full = f"{name}/s{self.s0}"
        if not (full in self.outs and all(p.id in self.outs[full] for p in problems)):
            ecfg = self.ecfg[self.s0]
            self.evaluated(key, name, problems, functools.partial(self.base, ecfg, self.test), ecfg)
            full = key
        det = self.details.get(full, {})
        return ({p.id: self.outs[full][p.id] for p in problems},
                {p.id: {"plan": [int(x) for x in plan.split(",")], "tokens": det.get(p.id, {}).get("tokens")}
                 for p in problems})

    def policy(self, choice: dict[str, str], default: str) -> tuple[dict[str, bool], dict[str, Any]]:
        """Outcomes on the test problems of the planner that plays ``choice[task]`` (``default`` for unseen tasks)."""
        from benchmarks.plans.table import task_of

        by_task: dict[str, list[Any]] = {}
        for p in self.test:
            by_task.setdefault(task_of(p), []).append(p)
        out: dict[str, bool] = {}
        det: dict[str, Any] = {}
        for t, ps in sorted(by_task.items()):
            plan = choice.get(t, default)
            got, d = self.fixed(plan, ps, f"fixed:{plan}/task:{t}/s{self.s0}")
            out |= got
            det |= d
        return out, det

    def plan_table(self) -> dict[str, Any]:
        """The validation plan table (every plan of <= L rounds), through the replay cache; cached."""
        from benchmarks.plans.table import all_plans, task_of

        steps = self.run_cfg.env.max_steps
        L = self.cfg.plan_rounds or SCALES[self.cfg.preset]["plan_rounds"] or steps
        if L > steps:
            raise ValueError(f"Config.plan_rounds={L} exceeds the preset's env.max_steps={steps}; use at most {steps}.")
        key = f"validation/L{L}"
        tables = self.cache.data.setdefault("tables", {})
        if key not in tables:
            plans = all_plans(L)
            _log(f"plan table: {len(plans)} plans x {len(self.val)} validation problems (replayed)")
            t = time.perf_counter()
            reasoner, _ = self.base(self.vcfg, self.val)
            batch = max(1, self.cfg.batch // len(plans))  # each problem is len(plans) copies in one rollout
            before = replay_counts(reasoner) or {}
            table, rows, stats = validation_table(self.val, reasoner, plans, min(steps, 4), self.run_cfg.env.protocol,
                                                  batch, self.cfg.replay_store, log=_log)
            stats = _minus(stats, before)  # the table's own counts (the base reasoner may have evaluated before)
            path = Path(self.cfg.output_dir) / "episodes" / f"plan_table_{key.replace('/', '_')}.jsonl.gz"
            path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(path, "wt", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            tables[key] = {"plans": [plan_name(p) for p in plans], "table": table, "replay": stats,
                           "tasks": {p.id: task_of(p) for p in self.val}, "seconds": time.perf_counter() - t,
                           "episodes": str(path)}
            self.cache.save()
        return tables[key]


def _seeded_modes(st: _Study, runs: dict[str, Any], per_seed: dict, details: dict, choices: dict[str, Any]) -> None:
    """Fill ``per_seed``/``details`` with every mode's test outcomes (none, random, fixed plans, bandit, trained)."""
    from algos.evaluation.config import fixed_name

    cfg, s0, test = st.cfg, st.s0, st.test
    random_seeds = cfg.first_seeds(cfg.random_seeds)
    tab = choices["table"]
    for s in cfg.seeds:
        ecfg = st.ecfg[s]
        base_here = functools.partial(st.base, ecfg, test)

        def put(mode: str, key: str, got: dict[str, bool], s: int = s) -> None:
            per_seed[mode][s] = got
            details[mode][s] = st.details.get(key, {})

        put("none", f"none/s{s0}", st.evaluated(f"none/s{s0}", "none", test, base_here, ecfg))
        best = choices["best_fixed"]
        put("best_fixed", f"{best}/s{s0}", st.evaluated(f"{best}/s{s0}", best, test, base_here, ecfg))
        ex = fixed_name(parse_fixed(choices["best_fixed_exhaustive"]))
        put("best_fixed_exhaustive", f"{ex}/s{s0}", st.evaluated(f"{ex}/s{s0}", ex, test, base_here, ecfg))
        if s in random_seeds:
            put("random", f"random/s{s}", st.evaluated(f"random/s{s}", "random", test, base_here, ecfg))
        per_seed["per_task"][s], details["per_task"][s] = st.policy(choices["per_task"], choices["best_fixed_exhaustive"])
        bandit = train_bandit(tab, cfg.bandit_episodes, seed=s)
        choices["bandit"][str(s)] = bandit
        per_seed["bandit"][s], details["bandit"][s] = st.policy(bandit["choice"], bandit["default"])
        learner = cfg.trained_learner
        run = runs[f"{learner}_s{s}"]["run_dir"]
        trained = functools.partial(_agents, run if learner != "planner_only" else st.run_cfg.model.reasoner,
                                    run, ecfg, test)
        put("trained", f"{learner}/s{s}", st.evaluated(f"{learner}/s{s}", "trained", test, trained, ecfg))
        if cfg.grpo:
            grpo = functools.partial(_agents, runs[f"grpo_s{s}"]["run_dir"], None, ecfg, test)
            put("grpo", f"grpo/s{s}", st.evaluated(f"grpo/s{s}", "none", test, grpo, ecfg))


MODES = ("none", "random", "best_fixed", "best_fixed_exhaustive", "per_task", "self_consistency", "bandit", "trained",
         "grpo")


def main(cfg: Config) -> dict[str, Any]:
    """Train, evaluate, test; print a table; write JSON, outcome file and curves when ``cfg.out``.

    Resumable: finished runs and evaluations are kept in ``<output_dir>/efficacy_cache.json``.
    """
    if cfg.table_from:
        return efficacy_report.table_from(cfg.table_from, cfg.out, cfg.bootstrap_rounds)
    t0 = time.perf_counter()
    cache = Cache(Path(cfg.output_dir) / "efficacy_cache.json", cfg)
    if cfg.baselines_from:
        _log(f"reusing {len(cache.adopt_baselines(cfg.baselines_from))} base-reasoner evaluations from {cfg.baselines_from}")
    st = _Study(cfg, cache)
    runs = _train_all(cfg, cache)
    val_acc = _validate_candidates(st)
    tab = st.plan_table()
    ex, per_task, ex_acc = choose_plans(tab)
    choices = {"best_fixed": max(val_acc, key=val_acc.get), "best_fixed_exhaustive": ex, "table": tab,
               "per_task": per_task, "bandit": {}}
    modes = tuple(m for m in MODES if m != "grpo" or cfg.grpo)
    per_seed: dict[str, dict[int, dict[str, bool]]] = {m: {} for m in modes}
    details: dict[str, dict[int, Any]] = {m: {} for m in modes}
    _seeded_modes(st, runs, per_seed, details, choices)
    sc = self_consistency(st, per_seed, details)
    rows = efficacy_report.outcome_rows(per_seed, details, st.test, DETERMINISTIC)
    summary = summaries(per_seed, st.test, modes, cfg.bootstrap_rounds)
    summary["best_fixed"]["sequence"] = choices["best_fixed"]
    summary["best_fixed_exhaustive"] |= {"plan": ex, "val_accuracy": ex_acc[ex], "plans_searched": len(tab["plans"])}
    summary["per_task"]["plans"] = choices["per_task"]
    summary["bandit"]["policies"] = {s: {"choice": b["choice"], "default": b["default"]} for s, b in choices["bandit"].items()}
    summary["self_consistency"] |= sc
    summary["trained"]["learner"] = {
        "stackelberg": "stackelberg (trained planner + jointly trained reasoner)",
        "planner_only": f"planner_only (trained planner, frozen reasoner {st.run_cfg.model.reasoner})"}[cfg.trained_learner]
    result = {"config": asdict(cfg), "preset": cfg.preset, "eval_source": cfg.sources()[0],
              "validation_source": cfg.sources()[1],
              "eval_problems": len(st.test), "validation_fixed_accuracy": val_acc, "modes": summary,
              "tests": tests(cfg.seeds, per_seed, st.test, rows, cfg.bootstrap_rounds),
              "plan_table": {"plans": len(tab["plans"]), "validation_accuracy": ex_acc, "replay": tab["replay"],
                             "seconds": tab["seconds"], "episodes": tab["episodes"],
                             "bandit_pulls": {s: b["pulls"] for s, b in choices["bandit"].items()}},
              "runs": runs, "replay": {"training": _total(r.get("replay") for r in runs.values()),
                                       "evaluation": _total(cache.data.get("replay", {}).values()),
                                       "plan_table": tab["replay"]},
              "eval_seconds": st.timing, "wall_s": time.perf_counter() - t0,
              "total_compute_s": sum(r["seconds"] for r in runs.values()) + sum(st.timing.values())}
    result["table_md"] = efficacy_report.table(result)
    print(result["table_md"])
    _write(cfg, result, rows, [{"mode": "validation_table", "seed": st.s0, "problem_id": pid, "sample": 0,
                                "task": tab["tasks"][pid], "plan": [int(x) for x in plan.split(",")], "correct": c}
                               for pid, by_plan in tab["table"].items() for plan, c in by_plan.items()])
    return result


def _write(cfg: Config, result: dict[str, Any], rows: list[dict[str, Any]], table_rows: list[dict[str, Any]]) -> None:
    """Outcome file, the table regenerated from it, the validation plan table (from which ``best_fixed_exhaustive``,
    ``per_task`` and the bandits' pulls can be recomputed), curves and JSON, beside ``cfg.out``."""
    from benchmarks.plans.seedstats import read_outcomes, write_outcomes

    from .efficacy_report import outcome_table

    if not cfg.out:
        result["outcomes_table_md"] = outcome_table(rows, efficacy_report.OUTCOME_BASELINE, cfg.bootstrap_rounds)
        return
    out = Path(cfg.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    path = write_outcomes(out.with_name(out.stem + "_outcomes.jsonl.gz"), rows)
    # the table from the file as written, so `--table-from` on it prints exactly this
    result["outcomes_table_md"] = outcome_table(read_outcomes(path), efficacy_report.OUTCOME_BASELINE,
                                                cfg.bootstrap_rounds)
    result["outcomes_file"] = str(path)
    result["plan_table"]["outcomes_file"] = str(write_outcomes(out.with_name(out.stem + "_validation_table.jsonl.gz"),
                                                              table_rows))
    result["curves_png"] = str(efficacy_report.plot_curves(result["runs"], out.with_name(out.stem + "_curves.png")))
    out.write_text(json.dumps(result, indent=2))


def _train_all(cfg: Config, cache: Cache) -> dict[str, Any]:
    done = cache.data["runs"]
    for s in cfg.seeds:
        for learner in cfg.learners():
            name = f"{learner}_s{s}"
            if name not in done:
                _log(f"training {name}")
                done[name] = _train(cfg, learner, s)
                cache.save()
                _log(f"trained {name} in {done[name]['seconds']:.0f} s")
    return {f"{learner}_s{s}": done[f"{learner}_s{s}"] for s in cfg.seeds for learner in cfg.learners()}


def _validate_candidates(st: _Study) -> dict[str, float]:
    """Validation accuracy of the candidate list ``cfg.fixed`` (the ``best_fixed`` mode of the v2 study)."""
    from algos.evaluation.config import fixed_name

    val_acc = {}
    for seq in st.cfg.fixed:
        name = fixed_name(seq)
        got = st.evaluated(f"validation/{name}", name, st.val, functools.partial(st.base, st.vcfg, st.val), st.vcfg,
                           episodes=False)
        val_acc[name] = sum(got.values()) / len(st.val)
    return val_acc


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.efficacy", __doc__)
