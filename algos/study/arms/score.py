"""The arms' score stage: every arm played live, greedily, on one decode route with a fixed batch, on a held-out split.

A trained reasoner has no plan tree, so every arm is decoded live, and so that a difference between arms is never a
difference between decoders, the untrained ones are decoded live on the same route too (beside their tree
read-backs in the report): the reasoner spec of ``arm.route`` (:func:`algos.study.arms.spec.route_reasoner`), the
study's game and step lengths, greedy, ``arm.batch`` problems a batched decode (llama.cpp's greedy output depends on
the batch), on exactly the problems of the split's tree (the read-backs' problems, so every comparison is paired).

=============  ==========================================================  ==================
arm            planner seat                                                reasoner
=============  ==========================================================  ==================
base           none (``base``), and the best fixed plan (``base_fixed``)   untrained
planner        the study's heads, one look a seed                          untrained
grpo           none                                                        the run's adapter
grpo_fixed     the best fixed plan (the one it trained under)              the run's adapter
rsim(_warm)    the run's planner                                           the run's adapter
=============  ==========================================================  ==================

Each (arm, seed) is an ``rsim eval`` journal under ``<out>/arms/eval/<split>/`` (an interrupted scoring resumes by
batch) and its compact episodes go to ``<out>/arms/scores/<split>/<look>.jsonl.gz``. Every arm's scoring is one look
at the split's tree, recorded in its ledger (:mod:`algos.study.ledger`; its hash covers the arm, the settings, the
route and the weights of every seed's run): an identical rescoring adds no entry. The replication split is scored
once: another configuration of an arm already scored on it is refused.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .. import ledger
from ..config import StudyConfig
from ..paths import StudyPaths
from .spec import TRAINED, parse_arms, route_reasoner
from .train import best_fixed_plan, run_dir
from .weights import run_weights

__all__ = ["looks", "eval_config", "score_look", "score", "read", "weights_digest",
           "split_problems", "exact_ledger", "is_kept", "score_run", "run_scored", "recorded", "score_splits", "COMPACT"]

COMPACT = ("problem_id", "correct", "strategies", "detected", "tokens", "rewards", "extracted", "terminated")
"""The episode fields kept per scored problem."""


def _log(msg: str) -> None:
    print(f"[rsim study arms] {msg}", file=sys.stderr, flush=True)


def looks(cfg: StudyConfig, arm: str) -> list[dict[str, Any]]:
    """The live scorings of ``arm``: ``{"name", "seed", "mode", "planner", "reasoner"}`` each (the route's reasoner
    spec, or a run dir; mode as ``rsim eval``'s)."""
    route = route_reasoner(cfg.reasoner, cfg.arm.route)
    if arm == "base":
        plan = ",".join(map(str, best_fixed_plan(cfg)))
        return [{"name": "base", "seed": 0, "mode": "none", "planner": "", "reasoner": route},
                {"name": "base_fixed", "seed": 0, "mode": f"fixed:{plan}", "planner": "", "reasoner": route}]
    if arm == "planner":
        return [{"name": "planner", "seed": s, "mode": "trained", "planner": str(StudyPaths.of(cfg).head(s)), "reasoner": route}
                for s in range(cfg.learner.seeds)]
    out = []
    for s in range(cfg.arm.seeds):
        run = str(run_dir(cfg, arm, s))
        if arm == "grpo":
            out.append({"name": arm, "seed": s, "mode": "none", "planner": "", "reasoner": run})
        elif arm == "grpo_fixed":
            rec = Path(run) / "arm.json"  # the plan it trained under; before it has trained, the one it will
            plan = json.loads(rec.read_text())["fixed_plan"] if rec.is_file() else list(best_fixed_plan(cfg))
            out.append({"name": arm, "seed": s, "mode": "fixed:" + ",".join(map(str, plan)), "planner": "",
                        "reasoner": run})
        else:
            out.append({"name": arm, "seed": s, "mode": "trained", "planner": run, "reasoner": run})
    return out


def eval_config(cfg: StudyConfig, look: dict[str, Any], out: Path) -> Any:
    """The ``rsim eval`` config of one look: the study's game (``rsim train --preset study`` with the study's
    rounds), its step lengths, greedy, the fixed batch; the env and reasoner settings are the study's for every arm
    (never a run's own)."""
    from algos.config import ModelConfig, resolve
    from algos.evaluation import EvalConfig

    run = resolve("study", {"env.max_steps": cfg.rounds, "env.terminate_last_round": cfg.terminate_last_round,
                            "reasoner.max_step_tokens": cfg.max_step_tokens,
                            "reasoner.max_answer_tokens": cfg.max_answer_tokens})
    return EvalConfig(model=ModelConfig(planner=look["planner"], reasoner=look["reasoner"]), env=run.env,
                      reasoner=run.reasoner, modes=(look["mode"],), k=1, seed=0, batch=cfg.arm.batch,
                      from_run=False, max_answer_tokens=cfg.max_answer_tokens, out=str(out), plots=False,
                      progress=False)


def _compact(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in COMPACT}


def score_look(cfg: StudyConfig, look: dict[str, Any], problems: Sequence[Any], split: str,
               decode: bool = True) -> list[dict[str, Any]]:
    """One look's compact episodes on ``problems`` (kept in ``<out>/arms/scores/<split>/``; a kept scoring of the
    same problems and weights is read back). ``decode=False`` (the report stage) only reads: a look not kept raises
    with the command that scores it."""
    name = f"{look['name']}_s{look['seed']}"
    path = Path(cfg.out) / "arms" / "scores" / split / f"{name}.jsonl.gz"
    ids = [p.id for p in problems]
    if is_kept(cfg, look, split, ids):
        return read(path)
    if not decode:
        raise ValueError(f"--stage report: no kept {split} scoring of {name} with these weights at {path}; run rsim "
                         f"study --arms {cfg.arms} --stage score (--out {cfg.out}) first, then --stage report.")
    _check_weights(cfg, look, name, split)
    digest = weights_digest([look["planner"], look["reasoner"]])
    rows, stats = _decode(cfg, look, problems, Path(cfg.out) / "arms" / "eval" / split / name, digest,
                          f"{name} on {split}")
    compact = [_compact(r) for r in rows]
    if look["mode"].startswith("fixed:"):  # the scripted planner reads nothing
        for r in compact:
            r["tokens"] = dict(r.get("tokens") or {}, planner_read=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in compact)
    _meta_path(cfg, split, look).write_text(json.dumps({"ids": ids, "weights": digest, "look": look,
                                                        "timing": stats}) + "\n")
    return compact


def _check_weights(cfg: StudyConfig, look: dict[str, Any], name: str, split: str) -> None:
    """A look to decode whose run has lost its weights is refused, naming the stage that trains it again."""
    from agents.runs import find_checkpoint

    gone = sorted({s for s in (look["planner"], look["reasoner"])
                   if s and (Path(s) / "arm.json").is_file() and find_checkpoint(Path(s)) is None})
    if gone:
        raise ValueError(f"{name}: the weights of {', '.join(gone)} are gone (no checkpoint) and its {split} scoring "
                         f"is not kept; run rsim study --arms {cfg.arms} --stage train (--out {cfg.out}), which trains "
                         "such a run again, then score.")


def _decode(cfg: StudyConfig, look: dict[str, Any], problems: Sequence[Any], out: Path, digest: str,
            desc: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play ``look`` on ``problems`` as ``rsim eval`` does, journaled in ``out`` (an interrupted look resumes by
    batch), with a progress bar (minutes a look on the embedded reasoner)."""
    from tqdm.auto import tqdm

    from algos.evaluation.journal import Journal, settings_of
    from algos.evaluation.run import build_reasoner, evaluate_mode, load_planner, make_planner

    ecfg = eval_config(cfg, look, out)
    journal = Journal(out, settings_of(ecfg, [p.id for p in problems], digest), True)
    shared: dict = {}
    reasoner = build_reasoner(look["reasoner"], ecfg, problems, shared).agent
    planner = None
    if look["mode"] == "trained":
        planner = load_planner(look["planner"], ecfg, shared).agent
    elif look["mode"].startswith("fixed:"):
        planner = make_planner(look["mode"], ecfg, None)
    with tqdm(total=len(problems), desc=desc, unit="problem", dynamic_ncols=True, file=sys.stderr,
              leave=False) as bar:
        return evaluate_mode(look["mode"], problems, reasoner, planner, ecfg, bar, journal=journal)


def is_kept(cfg: StudyConfig, look: dict[str, Any], split: str, ids: Sequence[str]) -> bool:
    """Whether ``look``'s scoring of exactly ``ids`` with its current weights is kept (read back, not decoded)."""
    path = _meta_path(cfg, split, look).with_suffix(".jsonl.gz")
    meta_path = _meta_path(cfg, split, look)
    if not (path.is_file() and meta_path.is_file()):
        return False
    meta = json.loads(meta_path.read_text())
    return (meta.get("ids") == list(ids) and meta.get("look") == look
            and meta.get("weights") == weights_digest([look["planner"], look["reasoner"]]))


def score_splits(cfg: StudyConfig) -> tuple[str, ...]:
    """The held-out splits the arms are scored on: test, and replication with ``--replicate``."""
    return ("test", "replication") if cfg.replicate else ("test",)


def run_looks(cfg: StudyConfig, arm: str, seed: int) -> list[dict[str, Any]]:
    """The looks of trained ``arm``'s seed-``seed`` run (:func:`looks`)."""
    return [lk for lk in looks(cfg, arm) if lk["seed"] == seed]


def run_scored(cfg: StudyConfig, arm: str, seed: int) -> bool:
    """Whether every look of the run is kept on every split it is scored on (its weights are no longer needed)."""
    for split in score_splits(cfg):
        ids = [p.id for p in split_problems(cfg, split)]  # the split's tree read once, not once a look
        if not all(is_kept(cfg, lk, split, ids) for lk in run_looks(cfg, arm, seed)):
            return False
    return True


def score_run(cfg: StudyConfig, arm: str, seed: int) -> None:
    """Decode a just-trained run's looks on every split it is scored on (the train stage calls this after each run),
    so that its weights are needed only until then: the score stage reads these back and records each arm's look in
    the split's ledger; the report refuses an arm whose look is not recorded."""
    for split in score_splits(cfg):
        problems = split_problems(cfg, split)
        for lk in run_looks(cfg, arm, seed):
            if not is_kept(cfg, lk, split, [p.id for p in problems]):
                _log(f"{arm} seed {seed}: scoring on {len(problems)} {split} problems")
            score_look(cfg, lk, problems, split)


def recorded(cfg: StudyConfig, arm: str, split: str, problems: Sequence[Any]) -> bool:
    """Whether ``arm``'s scoring of ``split`` (its current looks and weights) is a look in the split's ledger."""
    settings = _settings(cfg, arm, split, looks(cfg, arm))
    h = ledger.config_hash(settings, ledger.tree_fingerprint(StudyPaths.of(cfg).tree(split)))
    found = exact_ledger(cfg, problems)
    return found is not None and any(r["hash"] == h for r in found.looks)


def _meta_path(cfg: StudyConfig, split: str, look: dict[str, Any]) -> Path:
    """Beside a look's episodes: its problems, weights digest, look and decode timing."""
    return Path(cfg.out) / "arms" / "scores" / split / f"{look['name']}_s{look['seed']}.json"


def read(path: str | Path) -> list[dict[str, Any]]:
    """A kept look's compact episodes."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def weights_digest(specs: Sequence[str]) -> str:
    """SHA-256 over ``specs`` and the weights of every run dir among them (:func:`run_weights`): a retrained run is
    another look, and a finished run whose checkpoints are gone keeps its digest (its kept looks are still read)."""
    h = hashlib.sha256()
    for spec in specs:
        h.update(spec.encode())
        w = run_weights(spec)
        if w is not None:
            h.update(w.encode())
    return h.hexdigest()


def split_problems(cfg: StudyConfig, split: str) -> list[Any]:
    """The split tree's complete problems, in its table's order (the read-backs' problems)."""
    from ..tables import split_table, tree_problems

    ids = split_table(cfg, split).ids()
    _, items = tree_problems(cfg, split)
    by = {p.id: p for p in items}
    return [by[i] for i in ids]


def _settings(cfg: StudyConfig, arm: str, split: str, arm_looks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"arms": arm, "looks": arm_looks, "route": cfg.arm.route, "batch": cfg.arm.batch, "split": split,
            "arm_settings": dataclasses.asdict(cfg.arm) if arm in TRAINED else None,
            "weights": weights_digest([s for lk in arm_looks for s in (lk["planner"], lk["reasoner"])]),
            "study": ledger.score_settings(cfg)}


def exact_ledger(cfg: StudyConfig, problems: Sequence[Any]) -> ledger.Ledger | None:
    """The ledger of exactly the split's scored ``problems`` (None before the first look at them)."""
    return ledger.find(ledger.test_set_key([p.question for p in problems]), ledger.study_folders(cfg))


def _record(cfg: StudyConfig, arm: str, split: str, arm_looks: list[dict[str, Any]], problems: Sequence[Any]) -> int:
    """Record ``arm``'s scoring of ``split`` as one look (p = null: an arm's scoring has no primary comparison of its
    own; the headline's look keeps the p) in every ledger its problems touch; returns the exact ledger's family
    size. On the replication split another configuration of an arm already scored there is refused."""
    settings = _settings(cfg, arm, split, arm_looks)
    h = ledger.config_hash(settings, ledger.tree_fingerprint(StudyPaths.of(cfg).tree(split)))
    found = exact_ledger(cfg, problems)
    if split == "replication" and found is not None:
        rows = [r for r in found.looks if str(r.get("scored", "")).startswith(f"arms:{arm} ")]
        if rows and all(r["hash"] != h for r in rows):
            raise ValueError(f"arm {arm!r} was already scored on the replication split under another configuration "
                             f"({found.path}): it is scored once, at the end of a study.")
    line = ledger.look(h, command="rsim study --arms", scored=f"arms:{arm} live on route {cfg.arm.route}, "
                       f"{len(arm_looks)} look(s)", p_value=None, problems=len(problems), settings=settings,
                       split=split)
    written = ledger.record_scoring([p.question for p in problems], line, own=ledger.study_folders(cfg),
                                    create_in=StudyPaths.of(cfg).trees,
                                    described=f"{cfg.name} {split} split of {cfg.data}")
    return len(ledger.family(written[0]))


def score(cfg: StudyConfig, split: str = "test", arms: Sequence[str] | None = None,
          read_only: bool = False) -> dict[str, Any]:
    """Every look of every arm of ``cfg.arms`` on ``split`` (module docstring): ``{look name: {seed: rows}}`` and
    the ledger count after recording them. ``read_only`` (the report stage): kept scorings only, nothing decoded or
    recorded."""
    if split in ("train", "val"):
        raise ValueError(f"arms score(split={split!r}): score a held-out split (test, or replication); the route is "
                         "measured on val by --stage route.")
    arms = list(arms if arms is not None else parse_arms(cfg.arms))
    problems = split_problems(cfg, split)
    if not read_only:
        from algos.preflight import check_sandbox

        check_sandbox(problems)  # before any model loads (code problems run model-written programs)
    out: dict[str, dict[int, list[dict[str, Any]]]] = {}
    seconds: dict[str, float] = {}
    found = exact_ledger(cfg, problems)
    n = len(ledger.family(found)) if found is not None else 0
    for arm in arms:
        arm_looks = looks(cfg, arm)
        for lk in arm_looks:
            out.setdefault(lk["name"], {})[lk["seed"]] = score_look(cfg, lk, problems, split, decode=not read_only)
            meta = json.loads(_meta_path(cfg, split, lk).read_text())
            seconds[lk["name"]] = seconds.get(lk["name"], 0.0) + float(meta["timing"]["wall_s"])
        if read_only:
            continue
        n = _record(cfg, arm, split, arm_looks, problems)
        _log(f"{arm}: {len(arm_looks)} look(s) on {len(problems)} {split} problems (ledger: {n} configurations)")
    return {"looks": out, "ledger_count": n, "problems": [p.id for p in problems], "decode_wall_s": seconds}
