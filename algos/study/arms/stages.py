"""The arms' part of each ``rsim study`` stage (:func:`run`), called by :mod:`algos.study.cli` when ``--arms`` is
given, after the plug-in study's own part of the same stage:

* ``fill``: nothing more (every arm plays the study's splits; the plug-in fill fills their trees);
* ``train``: every trained arm's seeds (:mod:`.train`; the plug-in heads, trained first, are ``rsim_warm``'s warm
  starts);
* ``score``: every arm live on test, and on replication with ``--replicate`` (:mod:`.score`);
* ``report``: ``<out>/arms/report/`` (report.md, report.json, curves.png; :mod:`.report`);
* ``route``: not part of ``all``: the training route measured on val (:mod:`.route`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..config import StudyConfig, as_dict
from .spec import check_arms, parse_arms

__all__ = ["check", "run", "report"]


def _log(msg: str) -> None:
    print(f"[rsim study arms] {msg}", file=sys.stderr, flush=True)


def check(cfg: StudyConfig) -> None:
    """Everything that can be refused before anything runs: a trained arm of an untrainable reasoner."""
    check_arms(parse_arms(cfg.arms), cfg.reasoner)


def _readbacks(cfg: StudyConfig, split: str, arms: tuple[str, ...]) -> dict[str, dict[int, dict[str, bool]]]:
    """The plug-in study's tree read-backs of the untrained arms' policies: ``planner (tree)`` (its heads) and
    ``base_fixed (tree)`` (the best fixed plan), per seed and problem."""
    if "planner" not in arms and "base" not in arms:
        return {}
    from ..score import score

    _, modes = score(cfg, split)
    out = {}
    for name, mode in (("planner (tree)", "trained"), ("base_fixed (tree)", "best_fixed")):
        if mode in modes and (name.startswith("planner") and "planner" in arms or name.startswith("base")
                              and "base" in arms):
            out[name] = {s: {p: o.correct for p, o in by.items()} for s, by in modes[mode].outcomes.items()}
    return out


def report(cfg: StudyConfig) -> dict[str, Any]:
    """Build and write the arms' report from the kept looks and runs (scoring what is not kept yet)."""
    from . import report as rep
    from .score import score
    from .train import summaries

    arms = parse_arms(cfg.arms)
    test = score(cfg, "test", arms)
    from ..score import table

    tasks = dict(table(cfg, "test").tasks)
    records = summaries(cfg, arms)
    replication = None
    if cfg.replicate:
        r = score(cfg, "replication", arms)
        rtasks = dict(table(cfg, "replication").tasks)
        replication = rep.build(r["looks"], r["problems"], rtasks, records, ledger_count=r["ledger_count"])
    built = rep.build(test["looks"], test["problems"], tasks, records, ledger_count=test["ledger_count"],
                      readbacks=_readbacks(cfg, "test", arms), replication=replication,
                      meta={"reasoner": cfg.reasoner, "route": cfg.arm.route, "data": cfg.data, "config": as_dict(cfg)})
    for name, secs in test["decode_wall_s"].items():  # the live scoring's cost, every seed's looks together
        built["arms"][name]["decode_wall_s"] = secs
    n = _record_headline(cfg, built)
    if n is not None:  # the headline's own look counted too: the same m on every rerun
        from ..stats import holm_bound

        built["headline"]["configurations_scored"] = n
        built["headline"]["p_corrected"] = holm_bound(built["headline"]["p_value"], n)
    paths = rep.write(built, Path(cfg.out) / "arms" / "report")
    for p in paths:
        _log(f"wrote {p}")
    return {"paths": [str(p) for p in paths], "headline": built.get("headline"), "report": built}


def _record_headline(cfg: StudyConfig, built: dict[str, Any]) -> int | None:
    """The headline's look in the test ledger, with its p where the ledger takes one (``p=``, added by the ledger's
    Holm step-down; an older ledger records the look without it)."""
    from .. import ledger
    from ..fill import tree_path

    h = built.get("headline")
    if not h:
        return None
    settings = {"arms_headline": "rsim vs grpo", "route": cfg.arm.route, "arm": as_dict(cfg)["arm"],
                "difference": h["difference"]}
    digest = ledger.config_hash(settings, ledger.tree_fingerprint(tree_path(cfg, "test")))
    try:
        return ledger.record(cfg, digest, split="test", scored="arms:headline rsim vs grpo", settings=settings,
                             p=h["p_value"])  # type: ignore[call-arg]
    except TypeError:  # a ledger without p-values
        return ledger.record(cfg, digest, split="test", scored="arms:headline rsim vs grpo", settings=settings)


def run(cfg: StudyConfig, stage: str) -> dict[str, Any] | None:
    """The arms' part of ``stage`` (module docstring); None where there is none."""
    if stage == "train":
        from .train import train

        return train(cfg)
    if stage == "score":
        from .score import score

        out = {"test": {k: v for k, v in score(cfg, "test").items() if k != "looks"}}
        if cfg.replicate:
            out["replication"] = {k: v for k, v in score(cfg, "replication").items() if k != "looks"}
        return out
    if stage == "report":
        return report(cfg)
    if stage == "route":
        from .route import measure

        return measure(cfg)
    return None
