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
from .config import StudyConfig
from .features import feature_store
from .heads import Head, HeadPlanner, find_heads, greedy_plans, load_head
from .paths import StudyPaths
from .tables import split_table
from .types import ModeResult, Table, mode_from_json, mode_to_json, table_from_json, table_to_json

__all__ = ["score", "heads", "write_scores", "read_scores"]


def _log(msg: str) -> None:
    print(f"[rsim study] {msg}", file=sys.stderr, flush=True)


def heads(cfg: StudyConfig) -> list[Head]:
    """The heads scored: another study's (``heads_from``: its ``heads/`` folder, or a folder of run dirs), else this
    study's ``learner.seeds`` seeds (each must be trained)."""
    from agents.runs import find_checkpoint

    paths = StudyPaths.of(cfg)
    if cfg.heads_from:
        return find_heads(paths.scored_heads())
    found = []
    for s in range(cfg.learner.seeds):
        ckpt = find_checkpoint(paths.head(s), "planner")
        if ckpt is None:
            raise ValueError(f"no trained head for seed {s} at {paths.head(s)}: train it first (rsim study --stage "
                             f"train), or point --heads-dir at the heads ({paths.heads} has none for that seed).")
        config = json.loads((ckpt / "config.json").read_text())
        found.append(Head(s, ckpt, str(config.get("model", {}).get("planner", cfg.planner))))
    return found


def _episodes(cfg: StudyConfig, kind: str, split: str) -> tuple[list[dict[str, Any]], str] | None:
    given = getattr(cfg, f"{kind}_episodes") if split == "test" else ""
    path = Path(given) if given else StudyPaths.of(cfg).episodes(kind, split)
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
    from .tables import Groups, game_env, tree_problems

    grader = GradeCache()  # one grade per (problem, final step) across the tables and every head's episodes
    train, val = split_table(cfg, "train", grader), split_table(cfg, "val", grader)
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
    out = {"trained": m.trained_mode(test, plans, heads_from=cfg.heads_from or str(StudyPaths.of(cfg).heads),
                                     planner=sorted(specs)),
           "best_fixed": m.fixed_mode(test, chosen, "train+val"),
           "per_task": m.per_task_mode(test, chosen, "train+val"),
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


def write_scores(path: str | Path, hash_: str, test: Table, modes: dict[str, ModeResult]) -> Path:
    """Keep a scoring (its configuration hash, the table and every mode) as JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"hash": hash_, "table": table_to_json(test),
                                "modes": {k: mode_to_json(v) for k, v in modes.items()}}) + "\n")
    return path


def read_scores(path: str | Path, hash_: str | None = None) -> tuple[Table, dict[str, ModeResult]] | None:
    """A kept scoring (None when there is none, or it is of another configuration than ``hash_``)."""
    path = Path(path)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    if hash_ is not None and data.get("hash") != hash_:
        return None
    return table_from_json(data["table"]), {k: mode_from_json(v) for k, v in data["modes"].items()}


def score(cfg: StudyConfig, split: str = "test") -> tuple[Table, dict[str, ModeResult]]:
    """Every mode on ``split``'s tree (module docstring): ``(table, {mode: ModeResult})``. Recorded in the tree's
    ledger; an identical configuration scored before is read back from ``<out>/scores/<split>.json``."""
    if split in ("train", "val"):
        raise ValueError(f"score(split={split!r}): the modes are chosen and trained on train and val; score a held-out "
                         "split (test, or replication).")
    h, settings = ledger.scoring_hash(cfg, split)
    path = StudyPaths.of(cfg).split_scores(split)
    kept = read_scores(path, h)
    if kept is None:
        test = split_table(cfg, split)
        modes = _modes(cfg, split, test)
        write_scores(path, h, test, modes)
        kept = (test, modes)
        _log(f"scored {len(test.outcomes)} {split} problems: {', '.join(modes)} -> {path}")
    n = ledger.record(cfg, h, split=split, scored=", ".join(kept[1]), settings=settings)
    _log(f"{split} tree scored under {n} configuration{'s' if n != 1 else ''} (ledger {ledger.ledger_path(cfg, split)})")
    return kept
