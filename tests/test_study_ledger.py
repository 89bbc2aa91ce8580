"""The ledger of a test set (algos/study/ledger.py) and Holm's step-down (algos/study/stats.py).

One ledger per test set, keyed by its problems' texts: a copied tree under another name finds it; ``rsim eval`` on
problems that touch it adds a look (no p-value: counted as p = 1); the report's headline corrected p is Holm's
step-down over the ledger's p-values; ``--stage report`` run twice changes no file outside ``report/``.
"""

from __future__ import annotations

import hashlib
import shutil
import types
from dataclasses import replace
from pathlib import Path

import pytest

from algos.study import jsonfile, ledger
from algos.study.stats import holm

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


# ----------------------------------------------------------------------------------------------- Holm


def test_holm_matches_the_textbook_step_down():
    """Four hypotheses, p = (0.01, 0.04, 0.03, 0.005), by hand: sorted 0.005, 0.01, 0.03, 0.04 are multiplied by
    4, 3, 2, 1 -> 0.02, 0.03, 0.06, 0.04; the running maximum makes the last 0.06. In the given order:
    (0.03, 0.06, 0.06, 0.02)."""
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # Holm (1979)-style: at alpha 0.05 the two smallest are rejected (0.02, 0.03), the step-down stops at 0.06
    assert [a <= 0.05 for a in holm([0.01, 0.04, 0.03, 0.005])] == [True, False, False, True]
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])  # a family of one is not corrected
    assert holm([0.01, None, 0.2]) == pytest.approx([0.02, None, 0.2])  # None is not in the family
    assert holm([0.01, 1.0, 1.0]) == pytest.approx([0.03, 1.0, 1.0])  # looks without a p: counted as p = 1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])


def test_holm_agrees_with_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    import numpy as np

    p = np.random.default_rng(0).uniform(0, 0.2, size=12)
    assert holm(list(p)) == pytest.approx(list(multitest.multipletests(p, method="holm")[1]))


# ----------------------------------------------------------------------------------------------- the ledger


def _line(h: str, p: float | None = None, command: str = "rsim study") -> dict:
    return ledger.look(h * 64 if len(h) == 1 else h, command=command, scored="x", p_value=p, problems=2)


def test_a_ledger_belongs_to_the_test_set_not_to_a_path_or_name(tmp_path, monkeypatch):
    """Created beside the trees and listed in the user's index; found again from another folder (a copied tree under
    another name) by the same questions, in any order."""
    monkeypatch.delenv("RSIM_LEDGER_DIR")
    questions = ["What is 2+2?", "Name a prime.", "What is 3*3?"]
    out = ledger.record_scoring(questions, _line("a", 0.2), own=[tmp_path / "one"], create_in=tmp_path / "one")
    assert len(out) == 1 and out[0].path.parent == tmp_path / "one" and out[0].key == ledger.test_set_key(questions)
    assert str(out[0].path.resolve()) in ledger.home_index().read_text()
    again = ledger.record_scoring(list(reversed(questions)), _line("b", 0.5), own=[tmp_path / "copy"],
                                  create_in=tmp_path / "copy")
    assert [lg.path for lg in again] == [out[0].path] and not (tmp_path / "copy").exists()
    lg = ledger.read(out[0].path)
    assert [f["p"] for f in ledger.family(lg)] == [0.2, 0.5]
    ledger.record_scoring(questions, _line("b", 0.5), own=[tmp_path / "one"], create_in=tmp_path / "one")
    assert len(ledger.read(out[0].path).looks) == 2  # an identical configuration adds no look
    other = ledger.record_scoring(["Another question"], _line("c", 0.3), own=[tmp_path / "one"],
                                  create_in=tmp_path / "one")
    assert other[0].path != out[0].path  # another test set: another ledger


def test_a_scoring_that_touches_a_set_is_a_look_at_it(tmp_path):
    questions = [f"question {i}" for i in range(5)]
    (sealed,) = ledger.record_scoring(questions, _line("a", 0.04), create_in=tmp_path / "trees")
    # an evaluation of two of its problems and one other: a look, with no p-value (counted as p = 1)
    touched = ledger.record_scoring(["question 1", "question 3", "elsewhere"], _line("e", None, "rsim eval"))
    assert [lg.path for lg in touched] == [sealed.path]
    lg = ledger.read(sealed.path)
    assert lg.looks[-1]["problems"] == 2 and lg.looks[-1]["p_value"] is None
    corr = ledger.holm_of(lg, "a" * 64)
    assert corr["m"] == 2 and corr["p_as_one"] == 1 and corr["p_holm"] == pytest.approx(holm([0.04, 1.0])[0])
    assert ledger.record_scoring(["unrelated"], _line("f", None, "rsim eval")) == []  # touches nothing: creates none
    with pytest.raises(ValueError, match="no look"):
        ledger.holm_of(lg, "9" * 64)
    with pytest.raises(ValueError, match="no p-value"):
        ledger.holm_of(lg, "e" * 64)


def test_a_new_set_that_shares_problems_with_a_looked_at_one_inherits_its_looks(tmp_path):
    """A second draw (or any new sealed set) overlapping a set already scored: the earlier looks touched some of its
    problems, so they are in its family (p = null, counted as 1), and the new look is recorded in both ledgers."""
    first = [f"question {i}" for i in range(5)]
    ledger.record_scoring(first, _line("a", 0.04), create_in=tmp_path / "trees")
    second = first[3:] + ["new 1", "new 2"]
    exact, older = ledger.record_scoring(second, _line("b", 0.2), create_in=tmp_path / "trees")
    assert exact.key == ledger.test_set_key(second) and older.key == ledger.test_set_key(first)
    inherited = exact.looks[0]
    assert inherited["hash"] == "a" * 64 and inherited["p_value"] is None and inherited["problems"] == 2
    assert inherited["inherited_from"] == older.key
    corr = ledger.holm_of(exact, "b" * 64)
    assert corr["m"] == 2 and corr["p_as_one"] == 1 and corr["p_holm"] == pytest.approx(holm([0.2, 1.0])[0])
    assert [r["hash"] for r in older.looks] == ["a" * 64, "b" * 64] and older.looks[1]["p_value"] is None
    again = ledger.record_scoring(second, _line("b", 0.2), create_in=tmp_path / "trees")
    assert [len(lg.looks) for lg in again] == [2, 2]  # the same look again adds nothing anywhere


def test_broken_or_old_ledgers_are_refused_with_the_fix(tmp_path):
    (tmp_path / "x.ledger.jsonl").write_text('{"hash": "abababababababab", "time": "t"}\n')
    with pytest.raises(ValueError, match="migrated"):
        ledger.read(tmp_path / "x.ledger.jsonl")
    (sealed,) = ledger.record_scoring(["q"], _line("a", 0.1), create_in=tmp_path / "t")
    with open(sealed.path, "a") as f:
        f.write("not json\n")
    with pytest.raises(ValueError, match="line 3 is not JSON"):
        ledger.read(sealed.path)
    with pytest.raises(ValueError, match="configuration hash"):
        ledger.look("short", command="x", scored="", p_value=None, problems=1)
    with pytest.raises(ValueError, match="p_value"):
        ledger.look("a" * 64, command="x", scored="", p_value=2.0, problems=1)


def test_rsim_eval_records_its_look_in_the_ledger_its_problems_touch(tmp_path):
    from algos.evaluation.looks import record_look

    problems = [types.SimpleNamespace(id=f"p{i}", question=f"question {i}") for i in range(4)]
    (sealed,) = ledger.record_scoring([p.question for p in problems[:3]], _line("a", 0.04),
                                      create_in=tmp_path / "trees")
    cfg = types.SimpleNamespace(ledger_dir="", data=types.SimpleNamespace(source="file.jsonl"),
                                model=types.SimpleNamespace(reasoner="tiny", planner="tiny"))
    settings = {"config": {"seed": 0}, "problem_ids": [p.id for p in problems], "checkpoint": ""}
    assert record_look(cfg, problems, settings, ["none", "trained"]) == [str(sealed.path)]
    assert record_look(cfg, problems, settings, ["none", "trained"]) == [str(sealed.path)]  # the same: no new look
    record_look(cfg, problems, {**settings, "config": {"seed": 1}}, ["none"])
    lg = ledger.read(sealed.path)
    assert [r["command"] for r in lg.looks] == ["rsim study", "rsim eval", "rsim eval"]
    assert lg.looks[1]["p_value"] is None and lg.looks[1]["problems"] == 3 and "p = 1" in lg.looks[1]["p_note"]
    assert record_look(cfg, problems[3:], settings, ["none"]) == []  # no problem of the split: no look


def test_rsim_eval_on_the_adaptive_test_split_finds_the_committed_ledger(monkeypatch):
    """``rsim eval --data adaptive:test`` (its first problems) touches the committed adaptive test ledger, whose
    header lists all 282 test questions: searched from a checkout (no RSIM_LEDGER_DIR), it is found."""
    from rsim_env.sources.data import load_problems

    monkeypatch.delenv("RSIM_LEDGER_DIR")
    problems = load_problems("adaptive:test", limit=20)
    hits = [(lg, n) for lg, n in ledger.touching([p.question for p in problems])
            if lg.path.parent.resolve() == (ROOT / "docs/study_results/adaptive/trees").resolve()]
    assert len(hits) == 1 and hits[0][1] >= 1 and len(hits[0][0].questions) == 282


def test_the_committed_adaptive_ledger_lists_the_earlier_looks():
    """The migrated adaptive test ledger: its 282 questions, the looks git history shows marked historical (two
    efficacy runs on adaptive:test among them), the study's own look with its p-value."""
    paths = [p for p in ROOT.glob(f"{ledger.COMMITTED}/*.ledger.jsonl")]
    sets = {ledger.read(p).described: ledger.read(p) for p in paths}
    test = next(lg for d, lg in sets.items() if "test split" in d)
    assert len(test.questions) == 282
    hist = [r for r in test.looks if r.get("historical")]
    assert len(hist) >= 7 and all(r.get("note") and r.get("time") for r in hist)
    assert sum("efficacy" in r["scored"] for r in hist) == 2
    assert any(r["command"] == "rsim study" and r["p_value"] is not None for r in test.looks)


# ----------------------------------------------------------------------------------------------- the study, end to end


def _tree_files(cfg) -> dict[str, str]:
    from algos.study.paths import StudyPaths

    out = {}
    for base in {Path(cfg.out), StudyPaths.of(cfg).trees, *map(Path, ledger.folders(ledger.study_folders(cfg)))}:
        for p in base.rglob("*") if base.is_dir() else []:
            if p.is_file():
                out[str(p.resolve())] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def test_the_study_records_its_look_and_the_report_only_reads_it(tmp_path, monkeypatch):
    """A scripted study scored once (its look recorded with its p, in a ledger created beside its trees); a
    historical look with no p-value and an earlier look with a small p are in its ledger: the report's corrected p is
    Holm's step-down over those p-values; ``--stage report`` twice changes nothing outside ``report/``; a copy of the
    trees under another name and folder finds the same ledger."""
    from algos.study import cli as study_cli
    from algos.study.score import score
    from algos.study.tables import tree_problems
    from algos.study.train import train
    from tests.study_helpers import study

    monkeypatch.delenv("RSIM_LEDGER_DIR")  # beside the trees, listed in the (test's own) index
    cfg = study(tmp_path / "own")
    train(cfg)
    trees = Path(cfg.out) / "trees"
    _, items = tree_problems(cfg, "test")
    questions = [p.question for p in items]
    ledger.record_scoring(questions, _line("1", None, "historical") | {"historical": True, "note": "by hand"},
                          own=ledger.study_folders(cfg), create_in=trees)
    ledger.record_scoring(questions, _line("2", 1e-4), own=ledger.study_folders(cfg), create_in=trees)
    score(cfg)
    cfg = replace(cfg, stage="report")
    first = study_cli.run(cfg)["report"]["report"]
    lg = ledger.read(first["ledger"]["path"])
    assert lg.path.parent == trees and len(lg.looks) == 3 and lg.looks[-1]["command"] == "rsim study"
    ps = [r["p_value"] for r in lg.looks]
    want = holm([1.0 if p is None else p for p in ps])[2]
    h = first["headline"]
    assert h["p_value"] == ps[2] and h["p_holm"] == pytest.approx(want) and h["configurations_scored"] == 3
    assert first["ledger"]["p_as_one"] == 1 and first["ledger"]["historical"] == 1
    before = _tree_files(cfg)
    study_cli.run(cfg)
    study_cli.run(cfg)
    after = _tree_files(cfg)
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert all("/report/" in p for p in changed), changed  # at most the report's own files rewritten
    assert set(before) == set(after)
    # the trees copied under another name into another folder, scored with one seed: a new look, the same ledger
    copy = tmp_path / "copy"
    shutil.copytree(trees, copy / "trees", ignore=shutil.ignore_patterns("*.ledger.jsonl"))
    for p in (copy / "trees").glob("study_*"):
        p.rename(p.with_name(p.name.replace("study_", "renamed_")))
    moved = replace(cfg, out=str(copy / "study"), tree_dir=str(copy / "trees"), name="renamed", stage="score",
                    heads_dir=str(Path(cfg.out) / "heads"), features_dir=str(Path(cfg.out) / "features"),
                    learner=replace(cfg.learner, seeds=1))
    score(moved)
    assert len(ledger.read(lg.path).looks) == 4 and not list((copy / "trees").glob("*.ledger.jsonl"))
    assert jsonfile.read(copy / "study" / "scores" / "test.json.gz")["test_set"] == lg.key


def test_rsim_eval_end_to_end_adds_its_look_to_a_sealed_split_it_touches(tmp_path):
    from algos.evaluation import main

    argv = ["--reasoner", "template", "--data", "rg:basic_arithmetic", "--limit", "4", "--batch", "4", "--modes",
            "none", "--no-progress"]
    first = main(argv)
    assert first["ledgers"] == []  # no sealed split among its problems: nothing recorded, nothing created
    questions = sorted({r["question"] for r in first["per_problem"]})
    (sealed,) = ledger.record_scoring(questions[:2] + ["a question of the split it never saw"], _line("a", 0.04),
                                      create_in=tmp_path / "trees")
    again = main(argv + ["--ledger-dir", str(tmp_path / "trees")])
    assert again["ledgers"] == [str(sealed.path)]
    look = ledger.read(sealed.path).looks[-1]
    assert look["command"] == "rsim eval" and look["problems"] == 2 and look["p_value"] is None
    assert ledger.holm_of(ledger.read(sealed.path), "a" * 64)["p_as_one"] == 1
