"""The arms' part of each ``rsim study`` stage (:func:`run`), called by :mod:`algos.study.cli` when ``--arms`` is
given, after the plug-in study's own part of the same stage:

* ``fill``: nothing more (every arm plays the study's splits; the plug-in fill fills their trees);
* ``train``: every trained arm's seeds (:mod:`.train`; the plug-in heads, trained first, are ``rsim_warm``'s warm
  starts), each run decoded on test (and replication, with ``--replicate``) as soon as it ends, so that its weights
  are needed only until then (:func:`.score.score_run`);
* ``score``: every arm live on test, and on replication with ``--replicate`` (:mod:`.score`; a trained run's looks
  are read back), each arm's scoring recorded as a look in the split's ledger;
* ``report``: ``<out>/arms/report/`` (report.md, report.json, curves.png; :mod:`.report`); an arm whose scoring is
  not a look in the ledger is refused;
* ``route``: not part of ``all``: the training route measured on val (:mod:`.route`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ..config import StudyConfig, as_dict
from .spec import check_arms, parse_arms

__all__ = ["check", "run", "rebuild", "report", "ScoreAsTrained"]


def _log(msg: str) -> None:
    print(f"[rsim study arms] {msg}", file=sys.stderr, flush=True)


def check(cfg: StudyConfig) -> None:
    """Everything that can be refused before anything runs: a trained arm of an untrainable reasoner."""
    check_arms(parse_arms(cfg.arms), cfg.reasoner)


NOT_SETTINGS = ("stage", "threads")
"""Config keys that do not change a report (which stage wrote it, the torch threads): left out of its ``meta``."""


class ScoreAsTrained:
    """The train stage's scorer (:class:`algos.study.arms.train.Scorer`): each finished run decoded on the held-out
    splits right away (:func:`algos.study.arms.score.score_run`), so that its weights are needed only until then."""

    def __init__(self, cfg: StudyConfig) -> None:
        self.cfg = cfg

    def problems(self) -> list[Any]:
        from .score import score_splits, split_problems

        return [p for split in score_splits(self.cfg) for p in split_problems(self.cfg, split)]

    def done(self, arm: str, seed: int) -> bool:
        from .score import run_scored

        return run_scored(self.cfg, arm, seed)

    def __call__(self, arm: str, seed: int) -> None:
        from .score import score_run

        score_run(self.cfg, arm, seed)


def _readbacks(cfg: StudyConfig, split: str, arms: tuple[str, ...]) -> dict[str, dict[int, dict[str, bool]]]:
    """The plug-in study's tree read-backs of the untrained arms' policies: ``planner (tree)`` (its heads) and
    ``base_fixed (tree)`` (the best fixed plan), per seed and problem, from the plug-in study's kept scoring of
    ``split`` (read only: its score stage ran before)."""
    if "planner" not in arms and "base" not in arms:
        return {}
    from ..paths import StudyPaths
    from ..score import read_scores

    path = StudyPaths.of(cfg).split_scores(split)
    kept = read_scores(path)
    if kept is None:
        raise ValueError(f"no kept {split} scoring of the plug-in study at {path}: run rsim study --stage score "
                         f"(--out {cfg.out}) first.")
    _, modes = kept
    out = {}
    for name, mode in (("planner (tree)", "trained"), ("base_fixed (tree)", "best_fixed")):
        if mode in modes and (name.startswith("planner") and "planner" in arms or name.startswith("base")
                              and "base" in arms):
            out[name] = {s: {p: o.correct for p, o in by.items()} for s, by in modes[mode].outcomes.items()}
    return out


def _build(cfg: StudyConfig, read_only: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arms' report data from the kept looks (``read_only``: the report stage) or scoring what is not kept yet
    (the score stage); returns ``(report, test scoring)``. The headline's correction is filled in by the caller."""
    from ..tables import split_table
    from . import report as rep
    from .score import score
    from .train import summaries

    arms = parse_arms(cfg.arms)
    test = score(cfg, "test", arms, read_only=read_only)
    tasks = dict(split_table(cfg, "test").tasks)
    records = summaries(cfg, arms)
    replication = None
    if cfg.replicate:
        r = score(cfg, "replication", arms, read_only=read_only)
        rtasks = dict(split_table(cfg, "replication").tasks)
        replication = rep.build(r["looks"], r["problems"], rtasks, records)
    built = rep.build(test["looks"], test["problems"], tasks, records, readbacks=_readbacks(cfg, "test", arms),
                      replication=replication,
                      meta={"reasoner": cfg.reasoner, "route": cfg.arm.route, "data": cfg.data, "config": {
                          k: v for k, v in as_dict(cfg).items() if k not in NOT_SETTINGS}})
    for name, secs in test["decode_wall_s"].items():  # the live scoring's cost, every seed's looks together
        built["arms"][name]["decode_wall_s"] = secs
    return built, test


def _headline_hash(cfg: StudyConfig, built: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    from .. import ledger
    from ..paths import StudyPaths

    h = built["headline"]
    settings = {"arms_headline": "rsim vs grpo", "route": cfg.arm.route, "arm": as_dict(cfg)["arm"],
                "difference": h["difference"], "p_value": h["p_value"]}
    return ledger.config_hash(settings, ledger.tree_fingerprint(StudyPaths.of(cfg).tree("test"))), settings


def score_headline(cfg: StudyConfig) -> dict[str, Any] | None:
    """The score stage's last step: the headline (rsim vs grpo) computed from the arms' test looks and recorded as a
    look with its p in the test set's ledger (an identical headline adds none); None without both arms."""
    from .. import ledger
    from ..paths import StudyPaths
    from .score import exact_ledger, split_problems

    built, test = _build(cfg, read_only=False)
    h = built.get("headline")
    if not h:
        return None
    digest, settings = _headline_hash(cfg, built)
    problems = split_problems(cfg, "test")
    line = ledger.look(digest, command="rsim study --arms", scored="arms:headline rsim vs grpo", p_value=h["p_value"],
                       problems=len(problems), settings=settings, split="test")
    written = ledger.record_scoring([p.question for p in problems], line, own=ledger.study_folders(cfg),
                                    create_in=StudyPaths.of(cfg).tree("test").parent)  # the exact set keeps the p
    exact = exact_ledger(cfg, problems)
    return {"p_value": h["p_value"], "ledgers": [str(lg.path) for lg in written],
            "m": None if exact is None else len(ledger.family(exact))}


def rebuild(cfg: StudyConfig) -> dict[str, Any]:
    """The arms' report (``report.json``'s content) from the kept looks and run records, and the ledger's correction
    of the headline look; reads only, and needs no checkpoint (the runs' records keep their weights' digests), so a
    clone rebuilds a committed report from its committed looks. Missing looks, an arm's scoring the score stage did
    not record, or a headline it did not record raise with the command to run."""
    from .. import ledger
    from .score import exact_ledger, recorded, score_splits, split_problems

    built, _ = _build(cfg, read_only=True)

    for split in score_splits(cfg):
        problems = split_problems(cfg, split)
        missing = [a for a in parse_arms(cfg.arms) if not recorded(cfg, a, split, problems)]
        if missing:  # a look decoded but never counted would be a look the correction misses
            raise ValueError(f"--stage report: the {split} scoring of arm(s) {', '.join(missing)} is not a look in the "
                             f"split's ledger; run rsim study --arms {cfg.arms} --stage score (--out {cfg.out}), which "
                             "records it.")
    if built.get("headline"):
        digest, _ = _headline_hash(cfg, built)
        problems = split_problems(cfg, "test")
        found = exact_ledger(cfg, problems)
        if found is None or all(r["hash"] != digest for r in found.looks):
            raise ValueError("--stage report: the arms' headline (rsim vs grpo) has no look in the test set's ledger; "
                             f"run rsim study --arms {cfg.arms} --stage score (--out {cfg.out}), which records it.")
        corr = ledger.holm_of(found, digest)
        h = built["headline"]
        h["p_corrected"], h["configurations_scored"], h["looks_as_p1"] = corr["p_holm"], corr["m"], corr["p_as_one"]
        h["ledger"] = corr["path"]
    return built


def report(cfg: StudyConfig) -> dict[str, Any]:
    """Build (:func:`rebuild`) and write the arms' report: ``<out>/arms/report/``."""
    from . import report as rep

    built = rebuild(cfg)
    paths = rep.write(built, Path(cfg.out) / "arms" / "report")
    for p in paths:
        _log(f"wrote {p}")
    return {"paths": [str(p) for p in paths], "headline": built.get("headline"), "report": built}


def run(cfg: StudyConfig, stage: str) -> dict[str, Any] | None:
    """The arms' part of ``stage`` (module docstring); None where there is none."""
    if stage == "train":
        from .train import train

        return train(cfg, scorer=ScoreAsTrained(cfg))
    if stage == "score":
        from .score import score

        out = {"test": {k: v for k, v in score(cfg, "test").items() if k != "looks"}}
        if cfg.replicate:
            out["replication"] = {k: v for k, v in score(cfg, "replication").items() if k != "looks"}
        out["headline"] = score_headline(cfg)
        return out
    if stage == "report":
        return report(cfg)
    if stage == "route":
        from .route import measure

        return measure(cfg)
    return None
