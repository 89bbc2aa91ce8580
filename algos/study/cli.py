"""``rsim study``: does a trained strategy planner help this reasoner, on these tasks, beyond a plan picked by hand?

Stages, each resumable (what is done is not done again) and each selectable with ``--stage``:

1. ``fill``: decode the frozen reasoner's whole game once per split into plan trees (cost printed first; a progress
   bar while decoding);
2. ``train``: train ``learner.seeds`` head-only planners on the train tree (backbone features cached);
3. ``score``: play every mode on the test tree -- trained per seed, best fixed and per-task plans chosen on train +
   val, a per-task bandit given the planner's episodes, random, none, self-consistency at equal tokens -- each scoring
   a look recorded, with its p-value, in the ledger of the test set (found by the problems' content; an identical
   configuration adds no look);
4. ``report``: reads the scores and the ledger and writes ``<out>/report/`` (report.md, report.json, plots) and
   nothing else (missing or stale scores: refused, naming the command): the problem-level difference of the trained
   planner vs the best fixed plan with its 95 % CI, its p-value corrected by Holm over the ledger's looks; ceilings,
   per-task table, concentration, within-task conditioning. With ``--replicate`` the replication tree (a second test
   draw) is scored too (another configuration or another draw is another look, counted in its ledger), and the
   headline says whether a significant result replicated.

``all`` runs them in order. With ``--arms base,planner,grpo,grpo_fixed,rsim,rsim_warm`` each stage also runs the
arms' part (:mod:`algos.study.arms`: the reasoner trained alone, under a fixed plan, with a planner, at equal
episodes, scored live; ``<out>/arms/report/``); ``--stage route`` measures the arms' training route on val. ::

    rsim study --preset adaptive                                  # the committed trees and heads: no decoding
    rsim study --reasoner openai:MODEL@http://HOST:8000/v1 --data rg:gcd+lcm --out runs/my_study
    rsim study --preset tiny --stage fill --print-config
    rsim study --preset arms                                      # the paper's headline on the embedded reasoner
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from . import fill, jsonfile, report, score, train
from .config import DOCS_OUT, PRESETS, StudyConfig, as_dict, resolve
from .paths import StudyPaths

if TYPE_CHECKING:
    import argparse

    from .types import ModeResult, Table

__all__ = ["parse", "run", "main", "ORDER"]

ORDER = ("fill", "train", "score", "report")
"""The stages ``--stage all`` runs, in order."""



def parse(argv: Sequence[str]) -> tuple[StudyConfig, bool]:
    """``rsim study`` flags (generated from :class:`StudyConfig`) -> ``(config, print_only)``; a bad flag or value
    raises ``ValueError``."""
    cfg, a = _parse(argv)
    return cfg, a.print_config


def _parse(argv: Sequence[str]) -> tuple[StudyConfig, argparse.Namespace]:
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
                   "(<!-- study:NAME begin ... -->) in README.md and docs/results.md from it (run in the repository; with "
                   "--arms, the block study:arms in docs/results.md from the arms' report); "
                   "with a preset and no --out, its scores and report go to the preset's committed folder "
                   f"({', '.join(f'{k}: {v}' for k, v in DOCS_OUT.items())}): the only way the command writes into "
                   "tracked docs/ files besides the test set's ledger")
    p.add_argument("--debug", action="store_true", help="show the traceback of an error (or set RSIM_DEBUG=1)")
    add_fields(p, StudyConfig)
    a = p.parse_args(list(argv))
    flags = given(StudyConfig, a)
    if a.docs and a.preset in DOCS_OUT and "out" not in flags:  # the committed study folder, only with --docs
        flags["out"] = DOCS_OUT[a.preset]
    cfg = resolve(a.preset, flags)
    if a.docs and cfg.stage not in ("report", "all"):
        p.error(f"--docs rewrites the docs from the report: use it with --stage report or all, not {cfg.stage}.")
    return cfg, a


def _score(cfg: StudyConfig, split: str) -> tuple[Table, dict[str, ModeResult]]:
    return score.score(cfg, split=split)


def _kept(cfg: StudyConfig, split: str) -> tuple[Table, dict[str, ModeResult], dict[str, Any]]:
    """``split``'s kept scoring, its configuration hash and the ledger's Holm correction of its look, read only;
    missing or stale scores (another configuration than ``cfg``'s) raise with the command that scores them."""
    from . import ledger
    from .score import features_digest, read_scores

    path = StudyPaths.of(cfg).split_scores(split)
    redo = (f"run rsim study --stage score with the same settings{' and --replicate' if split == 'replication' else ''}"
            f" (--out {cfg.out}), then --stage report")
    if not path.is_file():
        raise ValueError(f"--stage report: no {split} scores at {path}; {redo}.")
    h, _ = ledger.scoring_hash(cfg, split, {"features": features_digest(cfg, split)})
    data = jsonfile.read(path)
    if data.get("hash") != h or "test_set" not in data:
        raise ValueError(f"--stage report: the {split} scores at {path} are of another configuration (hash "
                         f"{str(data.get('hash'))[:16]}…, these settings {h[:16]}…): stale; {redo}.")
    found = ledger.find(data["test_set"], ledger.study_folders(cfg))
    if found is None:
        raise ValueError(f"--stage report: no ledger of the {split} set {data['test_set'][:16]}… in "
                         f"{[str(d) for d in ledger.folders(ledger.study_folders(cfg))]}; {redo} (it records the look).")
    test, modes = read_scores(path, h)
    return test, modes, {**ledger.holm_of(found, h), "hash": h}


def _report(cfg: StudyConfig) -> dict[str, Any]:
    """The report stage: reads the kept scores and the ledgers, writes ``<out>/report/`` and nothing else."""
    from .splits import external

    test, modes, corr = _kept(cfg, "test")
    rep = None
    if cfg.replicate:
        rt, rm, rcorr = _kept(cfg, "replication")
        rep = (rt, rm)
    meta = {"reasoner": cfg.reasoner, "data": cfg.data, "planner": cfg.planner, "rounds": cfg.rounds,
            "terminate_last_round": cfg.terminate_last_round, "test_tree": str(StudyPaths.of(cfg).tree("test")),
            "ledger": corr["path"], "test_set": corr["test_set"], "config_hash": corr["hash"],
            "heads_from": cfg.heads_from, "test_data": external(cfg, "test"),
            "replication_data": external(cfg, "replication"), "config": as_dict(cfg)}
    if cfg.replicate:
        meta["replication_ledger"] = rcorr["path"]
    built = report.build(test, modes, ledger=corr, replication=rep, meta=meta,
                         **({"replication_ledger": rcorr} if cfg.replicate else {}))
    paths = report.write(built, StudyPaths.of(cfg).report)
    return {"paths": [str(p) for p in paths], "headline": built.get("headline", {}), "ledger_count": corr["m"],
            "report": built}


def run(cfg: StudyConfig) -> dict[str, Any]:
    """Run ``cfg.stage`` (or every stage, in order); returns each stage's result by name."""
    from ..threads import use_threads

    stages = ORDER if cfg.stage == "all" else (cfg.stage,)
    out: dict[str, Any] = {"config": as_dict(cfg)}
    scored: dict[str, tuple[Table, dict[str, ModeResult]]] = {}
    if cfg.arms or cfg.stage == "route":  # algos/study/arms: refused before anything runs, else after each stage
        from .arms import stages as arms

        arms.check(cfg)
        if cfg.stage == "route":
            out["route"] = arms.run(cfg, "route")
            return out
    for stage in stages:
        print(f"[rsim study] stage {stage}", file=sys.stderr, flush=True)
        if stage == "fill":
            out["fill"] = fill.run(cfg)
        elif stage == "train":
            use_threads(cfg.threads)
            out["train"] = train.train(cfg)
        elif stage == "score":
            use_threads(cfg.threads)
            scored["test"] = _score(cfg, "test")
            out["score"] = {"test": {"problems": len(scored["test"][0].outcomes), "modes": sorted(scored["test"][1])}}
            if cfg.replicate:
                rep_tree = StudyPaths.of(cfg).tree("replication")
                if not rep_tree.exists():
                    raise ValueError(f"--replicate: no replication tree at {rep_tree}; fill it "
                                     "first (rsim study --stage fill --replicate, or --fill-splits replication).")
                scored["replication"] = _score(cfg, "replication")
                out["score"]["replication"] = {"problems": len(scored["replication"][0].outcomes)}
        else:
            out["report"] = _report(cfg)
            for p in out["report"]["paths"]:
                print(f"[rsim study] wrote {p}", file=sys.stderr)
        if cfg.arms:
            got = arms.run(cfg, stage)
            if got is not None:
                out.setdefault("arms", {})[stage] = got
    return out


def _docs_pages(cfg: StudyConfig) -> tuple[list[Path], str]:
    """The pages ``--docs`` rewrites and the block's name, checked before anything runs: each page must be here (the
    command runs from the repository) and carry the block's two markers."""
    from . import docs_block

    name = "arms" if cfg.arms else cfg.name
    pages = [Path(p) for p in (docs_block.ARMS_PAGES if cfg.arms else docs_block.PAGES)]
    missing = [str(p) for p in pages if not p.is_file()]
    if missing:
        raise ValueError(f"--docs: no {', '.join(missing)} here; run rsim study --docs from the repository root.")
    for p in pages:
        if docs_block.block(p.read_text(), name) is None:
            begin, end = docs_block.markers(name)
            raise ValueError(f"--docs: {p} has no study:{name} block; put the two lines\n{begin}\n{end}\nwhere the "
                             "answer belongs, then rerun with --docs.")
    return pages, name


def _docs(cfg: StudyConfig, out: dict[str, Any]) -> list[Path]:
    """Rewrite the study's generated block in its pages (from the current directory: the repository): with arms, block
    ``arms`` from the arms' report in :data:`~algos.study.docs_block.ARMS_PAGES` (the plug-in study's block is its own
    preset's); else block ``cfg.name`` from the plug-in report in :data:`~algos.study.docs_block.PAGES`."""
    from . import docs_block

    pages, name = _docs_pages(cfg)
    if cfg.arms:
        got = (out.get("arms") or {}).get("report")
        if got is None:
            raise ValueError("--docs with --arms: no arms report was written (run --stage report or all).")
        return docs_block.sync(pages, got["report"], Path(cfg.out) / "arms" / "report" / "report.md", name=name,
                               render=docs_block.arms_markdown)
    return docs_block.sync(pages, out["report"]["report"], StudyPaths.of(cfg).report / "report.md", name=name)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """``main(["--preset", "tiny", ...])`` or console (``sys.argv``) -> each stage's result."""
    cfg, a = _parse(sys.argv[1:] if argv is None else argv)
    if a.print_config:
        print(json.dumps(as_dict(cfg), indent=1))
        return {"config": as_dict(cfg)}
    if a.docs:
        _docs_pages(cfg)  # a page without the block is refused now, not after the stages have run
    out = run(cfg)
    if a.docs:
        out["docs"] = [str(p) for p in _docs(cfg, out)]
        for p in out["docs"]:
            print(f"[rsim study] rewrote the study block in {p}", file=sys.stderr)
    return out
