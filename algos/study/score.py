"""The score stage: every mode of the study on a held-out tree (test, or the replication draw), as ModeResults.

The split's :class:`Table` is read back from its tree (:mod:`algos.study.tables`), and so are the train and val
tables the plan baselines are chosen on. The trained heads (this study's ``heads/``, or another study's with
``heads_from``: plug-in transfer) are played greedily on the planner backbone's features of the split's contexts,
computed once and kept in the features folder (:mod:`algos.study.features`): a rerun runs no forward pass. The modes
are those of :mod:`algos.study.modes`; ``none`` and ``sc`` are read from episodes where the study has them.

Every scoring is a look at the split's problems, recorded with its primary comparison's p-value (:func:`primary_p`)
in the ledger of the split's test set and in every other ledger its problems touch (:mod:`algos.study.ledger`); the
result is kept in ``<out>/scores/<split>.json`` under the configuration's hash (the settings, the tree, the heads'
weights, the features played on: :func:`features_digest`, and the episodes read), with the test set's key and the
p-value, so rescoring an identical configuration reads it back and adds no look. The report stage only reads that
file.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from . import jsonfile, ledger
from .config import StudyConfig
from .features import feature_store
from .heads import Head, HeadPlanner, find_heads, greedy_plans, load_head
from .paths import StudyPaths
from .tables import split_table, tree_problems
from .types import ModeResult, Table, mode_from_json, mode_to_json, table_from_json, table_to_json

__all__ = ["score", "heads", "features_digest", "primary_p", "write_scores", "read_scores"]


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


def features_digest(cfg: StudyConfig, split: str, ensure: bool = False) -> str:
    """SHA-256 of the planner features the heads play on ``split``'s contexts (each head's backbone; the keys and the
    vectors): part of the configuration hash, so other features are another look. ``"missing"`` when a context has
    none; with ``ensure`` the missing ones are computed first (:func:`algos.study.features.feature_store`)."""
    import hashlib

    from .features import context_key, load_store, tree_contexts

    tree, items = tree_problems(cfg, split)
    contexts = tree_contexts(tree, items)
    keys = sorted({context_key(q, path[:d]) for q, path, n in contexts for d in range(n)})
    h = hashlib.sha256()
    for spec in sorted({hd.spec for hd in heads(cfg)}):
        store = (feature_store(cfg, spec, tree, items) if ensure
                 else load_store(cfg, spec))
        if any(k not in store for k in keys):
            return "missing"
        h.update(spec.encode())
        for k in keys:
            h.update(k.encode())
            h.update(store[k].float().cpu().numpy().tobytes())
    return h.hexdigest()


def primary_p(test: Table, modes: dict[str, ModeResult]) -> float | None:
    """The primary comparison's p-value: ``trained`` (pooled over seeds) vs ``best_fixed``, paired by problem
    (:func:`algos.study.stats.paired`, the report's replicates and seed); None when either mode is missing."""
    from .stats import paired
    from .view import View

    if "trained" not in modes or "best_fixed" not in modes:
        return None
    view = View.of(test, modes)
    return paired(view.modes["trained"].pooled(), view.modes["best_fixed"].pooled())["p_value"]


def _episodes(cfg: StudyConfig, kind: str, split: str) -> tuple[list[dict[str, Any]], str] | None:
    path, given = StudyPaths.of(cfg).episodes(kind, split)
    if not path.is_file():
        if given:
            raise ValueError(f"--{kind}-episodes {str(path)!r}: no such file; give rsim eval's episodes.jsonl(.gz).")
        return None
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()], str(path)


def _modes(cfg: StudyConfig, split: str, test: Table) -> dict[str, ModeResult]:
    from rsim_env.grading import GradeCache

    from . import modes as m
    from .breakdown import tied_plans
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


def write_scores(path: str | Path, hash_: str, test: Table, modes: dict[str, ModeResult], **extra: Any) -> Path:
    """Keep a scoring (its configuration hash, ``extra``: the test set's key and the p-value, the table and every
    mode) as JSON."""
    path = Path(path)
    jsonfile.write(path, {"hash": hash_, **extra, "table": table_to_json(test),
                          "modes": {k: mode_to_json(v) for k, v in modes.items()}})
    return path


def read_scores(path: str | Path, hash_: str | None = None) -> tuple[Table, dict[str, ModeResult]] | None:
    """A kept scoring (None when there is none, or it is of another configuration than ``hash_``)."""
    path = Path(path)
    if not path.is_file():
        return None
    data = jsonfile.read(path)
    if hash_ is not None and data.get("hash") != hash_:
        return None
    return table_from_json(data["table"]), {k: mode_from_json(v) for k, v in data["modes"].items()}


def score(cfg: StudyConfig, split: str = "test") -> tuple[Table, dict[str, ModeResult]]:
    """Every mode on ``split``'s tree (module docstring): ``(table, {mode: ModeResult})``. The look is recorded in the
    ledgers its problems touch; an identical configuration scored before is read back from ``<out>/scores/<split>.json``
    and adds no look."""
    if split in ("train", "val"):
        raise ValueError(f"score(split={split!r}): the modes are chosen and trained on train and val; score a held-out "
                         "split (test, or replication).")
    h, settings = ledger.scoring_hash(cfg, split, {"features": features_digest(cfg, split, ensure=True)})
    path = StudyPaths.of(cfg).split_scores(split)
    kept = read_scores(path, h)
    _, items = tree_problems(cfg, split)
    fresh = kept is None
    if fresh:
        test = split_table(cfg, split)
        kept = (test, _modes(cfg, split, test))
    questions = [p.question for p in items if p.id in kept[0].outcomes]
    p_value = primary_p(*kept)
    if fresh:
        write_scores(path, h, *kept, test_set=ledger.test_set_key(questions), p_value=p_value)
        _log(f"scored {len(kept[0].outcomes)} {split} problems: {', '.join(kept[1])} -> {path}")
    line = ledger.look(h, command="rsim study", scored=f"{split} split: {', '.join(kept[1])}",
                       p_value=p_value, problems=len(questions), settings=settings, split=split)
    written = ledger.record_scoring(questions, line, own=ledger.study_folders(cfg), create_in=StudyPaths.of(cfg).tree(split).parent,
                                    described=f"{cfg.name} {split} split of {cfg.data}")
    for lg in written:
        _log(f"{split} problems looked at {len(ledger.family(lg))} time(s) (ledger {lg.path})")
    return kept
