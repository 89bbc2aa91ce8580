"""``rsim study``: does a trained strategy planner help this reasoner, on these tasks, beyond a plan picked by hand?

Stages, each resumable (what is done is not done again) and each selectable with ``--stage``:

1. ``fill``: decode the frozen reasoner's whole game once per split into plan trees (cost printed first; a progress
   bar while decoding);
2. ``train``: train ``learner.seeds`` head-only planners on the train tree (backbone features cached);
3. ``score``: play every mode on the test tree -- trained per seed, best fixed and per-task plans chosen on train +
   val, a per-task bandit given the planner's episodes, random, none, self-consistency at equal tokens -- each scoring
   recorded in the test tree's ledger (an identical configuration adds no entry);
4. ``report``: ``<out>/report/`` (report.md, report.json, plots): the problem-level difference of the trained planner
   vs the best fixed plan with its 95 % CI, corrected for the configurations scored on the test tree; ceilings,
   per-task table, concentration, within-task conditioning. With ``--replicate`` the replication tree (a second test
   draw) is scored too (another configuration or another draw is another look, counted in its ledger), and the
   headline says whether a significant result replicated.

``all`` runs them in order. ::

    rsim study --preset adaptive                                  # the committed trees and heads: no decoding
    rsim study --reasoner openai:MODEL@http://HOST:8000/v1 --data rg:gcd+lcm --out runs/my_study
    rsim study --preset tiny --stage fill --print-config
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .config import PRESETS, StudyConfig, as_dict, resolve

__all__ = ["parse", "run", "main", "ORDER"]

ORDER = ("fill", "train", "score", "report")
"""The stages ``--stage all`` runs, in order."""
OWNERS = {"train": "algos/study/train.py (train(cfg))", "score": "algos/study/score.py (score(cfg, split))",
          "report": "algos/study/report.py (build(...), write(...))"}


def parse(argv: Sequence[str]) -> tuple[StudyConfig, bool]:
    """``rsim study`` flags (generated from :class:`StudyConfig`) -> ``(config, print_only)``; a bad flag or value
    raises ``ValueError``."""
    cfg, a = _parse(argv)
    return cfg, a.print_config


def _parse(argv: Sequence[str]) -> tuple[StudyConfig, Any]:
    import argparse

    from agents.registry import spec_help as agent_specs
    from rsim_env.sources.data import spec_help

    from ..dataclass_cli import ArgumentParser, add_fields, given

    description, _, rest = __doc__.partition("\n\n")
    epilog = (f"{rest}\nagent specs (--reasoner / --planner, as in rsim train):\n  {agent_specs()}\n"
              f"data specs (--data; each problem's task is its source, or a file's --task-column):\n  {spec_help()}")
    p = ArgumentParser(prog="rsim study", description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a preset (adaptive: the committed adaptive "
                   "study, no decoding or training; tiny: tiny models, seconds); flags and --set override it")
    p.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    p.add_argument("--docs", action="store_true", help="after the report, rewrite the study's generated block "
                   "(<!-- study:NAME begin ... -->) in README.md and docs/results.md from it (run in the repository)")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error (or set RSIM_DEBUG=1)")
    add_fields(p, StudyConfig)
    a = p.parse_args(list(argv))
    cfg = resolve(a.preset, given(StudyConfig, a))
    if a.docs and cfg.stage not in ("report", "all"):
        p.error(f"--docs rewrites the docs from the report: use it with --stage report or all, not {cfg.stage}.")
    return cfg, a


def _stage(name: str) -> Any:
    """The module of stage ``name``, imported now (a stage not built yet says so)."""
    try:
        return importlib.import_module(f"algos.study.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"algos.study.{name}":
            raise
        raise RuntimeError(f"the {name} stage is not available in this install ({OWNERS[name]} is "
                           "missing); run the stages before it with --stage, or update rsim.") from None


def _ledger_count(cfg: StudyConfig, split: str) -> int:
    """Configurations scored on ``split``'s tree; records this one if the score stage did not."""
    from . import ledger

    h, settings = ledger.scoring_hash(cfg, split)
    if any(row["hash"] == h for row in ledger.entries(cfg, split)):
        return ledger.count(cfg, split)
    return ledger.record(cfg, h, split=split, scored="rsim study score", settings=settings)


def _score(cfg: StudyConfig, split: str) -> tuple[Any, Any]:
    return _stage("score").score(cfg, split=split)


def _report(cfg: StudyConfig, scored: dict[str, Any]) -> dict[str, Any]:
    from . import ledger
    from .fill import tree_path
    from .splits import external

    report = _stage("report")
    test, modes = scored.get("test") or _score(cfg, "test")
    n = _ledger_count(cfg, "test")
    rep = None
    if cfg.replicate:
        rep = scored.get("replication") or _score(cfg, "replication")
        _ledger_count(cfg, "replication")
    h, _ = ledger.scoring_hash(cfg, "test")
    meta = {"reasoner": cfg.reasoner, "data": cfg.data, "planner": cfg.planner, "rounds": cfg.rounds,
            "terminate_last_round": cfg.terminate_last_round, "test_tree": str(tree_path(cfg, "test")),
            "ledger": str(ledger.ledger_path(cfg, "test")), "config_hash": h, "heads_from": cfg.heads_from,
            "test_data": external(cfg, "test"), "replication_data": external(cfg, "replication"),
            "config": as_dict(cfg)}
    built = report.build(test, modes, ledger_count=n, replication=rep, meta=meta)
    paths = report.write(built, Path(cfg.out) / "report")
    return {"paths": [str(p) for p in paths], "headline": built.get("headline", {}), "ledger_count": n,
            "report": built}


def run(cfg: StudyConfig) -> dict[str, Any]:
    """Run ``cfg.stage`` (or every stage, in order); returns each stage's result by name."""
    from ..threads import use_threads
    from .fill import tree_path

    stages = ORDER if cfg.stage == "all" else (cfg.stage,)
    out: dict[str, Any] = {"config": as_dict(cfg)}
    scored: dict[str, Any] = {}
    for stage in stages:
        print(f"[rsim study] stage {stage}", file=sys.stderr, flush=True)
        if stage == "fill":
            out["fill"] = _stage("fill").run(cfg)
        elif stage == "train":
            use_threads(cfg.threads)
            out["train"] = _stage("train").train(cfg)
        elif stage == "score":
            use_threads(cfg.threads)
            scored["test"] = _score(cfg, "test")
            out["score"] = {"test": {"problems": len(scored["test"][0].outcomes), "modes": sorted(scored["test"][1])}}
            if cfg.replicate:
                if not tree_path(cfg, "replication").exists():
                    raise ValueError(f"--replicate: no replication tree at {tree_path(cfg, 'replication')}; fill it "
                                     "first (rsim study --stage fill --replicate, or --fill-splits replication).")
                scored["replication"] = _score(cfg, "replication")
                out["score"]["replication"] = {"problems": len(scored["replication"][0].outcomes)}
        else:
            out["report"] = _report(cfg, scored)
            for p in out["report"]["paths"]:
                print(f"[rsim study] wrote {p}", file=sys.stderr)
    return out


def _docs(cfg: StudyConfig, report: dict[str, Any]) -> list[Path]:
    """Rewrite ``cfg.name``'s generated block in the pages of :data:`algos.study.docs_block.PAGES` (from the current
    directory: the repository) from ``report``."""
    from . import docs_block

    pages = [Path(p) for p in docs_block.PAGES]
    missing = [str(p) for p in pages if not p.is_file()]
    if missing:
        raise ValueError(f"--docs: no {', '.join(missing)} here; run rsim study --docs from the repository root.")
    return docs_block.sync(pages, report, Path(cfg.out) / "report" / "report.md", name=cfg.name)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``main(["--preset", "tiny", ...])`` or console (``sys.argv``) -> each stage's result."""
    cfg, a = _parse(sys.argv[1:] if argv is None else argv)
    if a.print_config:
        print(json.dumps(as_dict(cfg), indent=1))
        return {"config": as_dict(cfg)}
    out = run(cfg)
    if a.docs:
        out["docs"] = [str(p) for p in _docs(cfg, out["report"]["report"])]
        for p in out["docs"]:
            print(f"[rsim study] rewrote the study block in {p}", file=sys.stderr)
    return out
