"""The score stage: every mode of the study on a held-out tree (test, or the replication draw), as ModeResults.

The split's :class:`Table` is read back from its tree (:mod:`algos.study.tables`), and so are the train and val
tables the plan baselines are chosen on. The trained heads (this study's ``heads/``, or another study's with
``heads_from``: plug-in transfer) are played greedily on the planner backbone's features of the split's contexts,
computed once and kept in the features folder (:mod:`algos.study.features`): a rerun runs no forward pass. The modes
are those of :mod:`algos.study.modes`; ``none`` and ``sc`` are read from episodes where the study has them.

Every scoring is recorded in the split tree's ledger (:mod:`algos.study.ledger`); the result is kept in
``<out>/scores/<split>.json`` under the configuration's hash, so rescoring an identical configuration reads it back
and adds no ledger entry.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from . import ledger
from .config import StudyConfig, head_dir, heads_dir
from .fill import tree_path
from .heads import Head, HeadPlanner, _checkpoint, find_heads, greedy_plans, load_head
from .types import ModeResult, Outcome, Table

__all__ = ["score", "table", "tree_problems", "heads", "features_path", "feature_store", "write_scores", "read_scores"]


def _log(msg: str) -> None:
    print(f"[rsim study] {msg}", file=sys.stderr, flush=True)


def tree_problems(cfg: StudyConfig, split: str) -> tuple[Any, list[Any]]:
    from agents.replay.plan_tree import PlanTree

    from .splits import problems
    from .tables import complete

    tree = PlanTree.load(tree_path(cfg, split))
    return tree, complete(tree, problems(cfg, split))


def table(cfg: StudyConfig, split: str, grader: Any = None) -> Table:
    """``split``'s read-back table (kept in ``<out>/scores/tables/<split>.json`` beside its tree's fingerprint)."""
    from .splits import task_of
    from .tables import read_table

    cache = Path(cfg.out) / "scores" / "tables" / f"{_label(cfg, split)}.json"
    fingerprint = ledger.tree_fingerprint(tree_path(cfg, split))
    if cache.is_file():
        data = json.loads(cache.read_text())
        if data.get("tree") == fingerprint and data.get("per_task") == cfg.per_task(split):
            return _table_from(data)
    tree, items = tree_problems(cfg, split)
    t = read_table(tree, items, split, task_of, grader)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"tree": fingerprint, "per_task": cfg.per_task(split), **_table_json(t)}) + "\n")
    return t


def _label(cfg: StudyConfig, split: str) -> str:
    """``split``, or ``split_<sha256[:12]>`` for a split read from your own file (its scores kept apart)."""
    from .splits import external

    own = external(cfg, split)
    return split if own is None else f"{split}_{own['sha256'][:12]}"


def _table_json(t: Table) -> dict[str, Any]:
    from .tables import plan_key

    return {"split": t.split, "tasks": dict(t.tasks),
            "outcomes": {p: {plan_key(pl): [o.correct, o.reward, o.tokens] for pl, o in by.items()}
                         for p, by in t.outcomes.items()}}


def _plan(key: str) -> tuple[int, ...]:
    return tuple(int(s) for s in key.split(","))


def _table_from(d: dict[str, Any]) -> Table:
    return Table(d["split"], d["tasks"], {p: {_plan(k): Outcome(bool(c), float(r), float(n)) for k, (c, r, n) in by.items()}
                                          for p, by in d["outcomes"].items()})


def heads(cfg: StudyConfig) -> list[Head]:
    """The heads scored: another study's (``heads_from``: its ``heads/`` folder, or a folder of run dirs), else this
    study's ``learner.seeds`` seeds (each must be trained)."""
    if cfg.heads_from:
        src = Path(cfg.heads_from)
        return find_heads(src / "heads" if (src / "heads").is_dir() else src)
    found = []
    for s in range(cfg.learner.seeds):
        ckpt = _checkpoint(head_dir(cfg, s))
        if ckpt is None:
            raise ValueError(f"no trained head for seed {s} at {head_dir(cfg, s)}: train it first (rsim study --stage "
                             f"train), or point --heads-dir at the heads ({heads_dir(cfg)} has none for that seed).")
        config = json.loads((ckpt / "config.json").read_text())
        found.append(Head(s, ckpt, str(config.get("model", {}).get("planner", cfg.planner))))
    return found


def features_path(cfg: StudyConfig, spec: str) -> Path:
    """Where the features of planner backbone ``spec`` are kept for this study."""
    from .features import store_path

    return store_path(cfg.features_dir or Path(cfg.out) / "features", spec)


def feature_store(cfg: StudyConfig, spec: str, tree: Any, items: list[Any]) -> Any:
    """The feature store of ``spec`` with every decision context of ``items`` on ``tree`` (missing ones computed
    with the backbone, then saved)."""
    from .features import FeatureStore, compute, tree_contexts

    path = features_path(cfg, spec)
    store = FeatureStore.load(path, spec)
    contexts = tree_contexts(tree, items)
    need = store.missing(contexts)
    if need:
        from .features import feature_planner

        _log(f"computing {need} planner features with {spec!r} (once; kept in {path})")
        compute(store, feature_planner(spec), contexts, progress=True)
        store.save(path)
    return store


def _episodes(cfg: StudyConfig, kind: str, split: str) -> tuple[list[dict[str, Any]], str] | None:
    given = getattr(cfg, f"{kind}_episodes") if split == "test" else ""
    path = Path(given) if given else Path(cfg.out) / "episodes" / f"{kind}_{split}.jsonl.gz"
    if not path.is_file():
        if given:
            raise ValueError(f"--{kind}-episodes {given!r}: no such file; give rsim eval's episodes.jsonl(.gz).")
        return None
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()], str(path)


def _modes(cfg: StudyConfig, split: str, test: Table) -> dict[str, ModeResult]:
    from rsim_env.grading import GradeCache

    from . import modes as m
    from .breakdown import tied_plans
    from .tables import Groups, game_env

    grader = GradeCache()  # one grade per (problem, final step) across the tables and every head's episodes
    train, val = table(cfg, "train", grader), table(cfg, "val", grader)
    chosen = m.choose([train, val])
    tree, items = tree_problems(cfg, split)
    items = [p for p in items if p.id in test.outcomes]
    groups = Groups(game_env(tree), grader)
    plans, specs = {}, set()
    for h in heads(cfg):
        store = feature_store(cfg, h.spec, tree, items)
        plans[h.seed] = greedy_plans(HeadPlanner(*load_head(h), store), tree, items, groups.env, groups)
        specs.add(h.spec)
    seeds = sorted(plans)
    episodes = cfg.learner.steps * cfg.learner.groups_per_step * cfg.learner.group_size
    out = {"trained": m.trained_mode(test, plans, heads_from=cfg.heads_from or str(heads_dir(cfg)),
                                     planner=sorted(specs)),
           "best_fixed": m.fixed_mode(test, chosen, "train+val"),
           "per_task": m.per_task_mode(test, chosen, "train+val", tied=tied_plans([train, val])),
           "bandit": m.bandit_mode(train, test, episodes, seeds),
           "random": m.random_mode(test, seeds)}
    none = _episodes(cfg, "none", split)
    if none:
        out["none"] = m.episode_mode("none", test, *none)
    sc = _episodes(cfg, "sc", split)
    if sc:
        t = out["trained"]
        budget = sum(o.tokens for by in t.outcomes.values() for o in by.values()) / sum(map(len, t.outcomes.values()))
        out["sc"] = m.sc_mode(test, sc[0], budget, sc[1])
    return out


def _mode_json(r: ModeResult) -> dict[str, Any]:
    from .tables import plan_key

    return {"name": r.name, "chosen_on": r.chosen_on, "info": r.info,
            "outcomes": {str(s): {p: [o.correct, o.reward, o.tokens] for p, o in by.items()} for s, by in r.outcomes.items()},
            "plans": None if r.plans is None else {str(s): {p: plan_key(pl) for p, pl in by.items()}
                                                   for s, by in r.plans.items()}}


def _mode_from(d: dict[str, Any]) -> ModeResult:
    outcomes = {int(s): {p: Outcome(bool(c), float(r), float(n)) for p, (c, r, n) in by.items()}
                for s, by in d["outcomes"].items()}
    plans = None if d["plans"] is None else {int(s): {p: _plan(k) for p, k in by.items()} for s, by in d["plans"].items()}
    return ModeResult(d["name"], outcomes, plans, d["chosen_on"], d["info"])


def write_scores(path: str | Path, hash_: str, test: Table, modes: dict[str, ModeResult]) -> Path:
    """Keep a scoring (its configuration hash, the table and every mode) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hash": hash_, "table": _table_json(test),
                                "modes": {k: _mode_json(v) for k, v in modes.items()}}) + "\n")
    return path


def read_scores(path: str | Path, hash_: str | None = None) -> tuple[Table, dict[str, ModeResult]] | None:
    """A kept scoring (None when there is none, or it is of another configuration than ``hash_``)."""
    path = Path(path)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if hash_ is not None and data.get("hash") != hash_:
        return None
    return _table_from(data["table"]), {k: _mode_from(v) for k, v in data["modes"].items()}


def score(cfg: StudyConfig, split: str = "test") -> tuple[Table, dict[str, ModeResult]]:
    """Every mode on ``split``'s tree (module docstring): ``(table, {mode: ModeResult})``. Recorded in the tree's
    ledger; an identical configuration scored before is read back from ``<out>/scores/<split>.json``."""
    if split in ("train", "val"):
        raise ValueError(f"score(split={split!r}): the modes are chosen and trained on train and val; score a held-out "
                         "split (test, or replication).")
    h, settings = ledger.scoring_hash(cfg, split)
    path = Path(cfg.out) / "scores" / f"{_label(cfg, split)}.json"
    kept = read_scores(path, h)
    if kept is None:
        test = table(cfg, split)
        modes = _modes(cfg, split, test)
        write_scores(path, h, test, modes)
        kept = (test, modes)
        _log(f"scored {len(test.outcomes)} {split} problems: {', '.join(modes)} -> {path}")
    n = ledger.record(cfg, h, split=split, scored=", ".join(kept[1]), settings=settings)
    _log(f"{split} tree scored under {n} configuration{'s' if n != 1 else ''} (ledger {ledger.ledger_path(cfg, split)})")
    return kept
