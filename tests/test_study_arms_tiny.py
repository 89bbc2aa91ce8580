"""``rsim study --preset tiny --arms base,planner,grpo,grpo_fixed,rsim,rsim_warm``: every arm end to end on tiny
random-init models (seconds), then the same command again trains and decodes nothing new and adds no ledger entry."""

from __future__ import annotations

import json

import pytest

from algos import cli
from algos.study import docs_block, ledger
from algos.study.arms.spec import TRAINED
from algos.study.config import resolve

ALL = "base,planner,grpo,grpo_fixed,rsim,rsim_warm"


def _test_ledger(cfg):
    """The ledger of exactly the study's test problems (the arms' looks and the plug-in study's go there)."""
    from algos.study.arms.score import split_problems

    found = ledger.find(ledger.test_set_key([p.question for p in split_problems(cfg, "test")]),
                        ledger.study_folders(cfg))
    assert found is not None
    return found


def test_every_arm_runs_end_to_end_on_tiny_models_and_a_rerun_reuses_everything(tmp_path, monkeypatch):
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    out = tmp_path / "study"
    argv = ["study", "--preset", "tiny", "--out", str(out), "--threads", "1", "--arms", ALL]
    first = cli.main(argv)
    assert not any(r["reused"] for r in first["arms"]["train"]["runs"])
    assert len(first["arms"]["train"]["runs"]) == len(TRAINED) * 2  # 2 seeds an arm in the tiny preset
    rep = json.loads((out / "arms" / "report" / "report.json").read_text())
    looks = {"base", "base_fixed", "planner", "grpo", "grpo_fixed", "rsim", "rsim_warm"}
    assert looks | {"planner (tree)", "base_fixed (tree)"} == set(rep["arms"])
    for arm in TRAINED:  # the equal budget, as the runs recorded it: 2 steps x 2 problems x G 2
        t = rep["arms"][arm]["training"]
        assert t["episodes"] == [8, 8] and t["steps"] == [2, 2] and t["wall_s"] > 0
        assert rep["arms"][arm]["seeds"] == 2 and t["reasoner_tokens_decoded"] > 0
    assert rep["arms"]["rsim"]["training"]["planner_token_share"] > 0 == rep["arms"]["grpo"]["training"][
        "planner_token_share"]
    problems = rep["meta"]["problems"]
    assert problems == 4 and rep["headline"]["n"] == problems and len(rep["headline"]["ci95"]) == 2
    assert [(c["a"], c["b"]) for c in rep["comparisons"]][-2:] == [("rsim", "grpo_fixed"), ("rsim_warm", "planner")]
    assert (out / "arms" / "report" / "curves.png").stat().st_size > 0
    assert "Headline (rsim vs grpo" in (out / "arms" / "report" / "report.md").read_text()
    cfg = resolve("tiny", {"out": str(out)})
    scored = [r["scored"] for r in _test_ledger(cfg).looks]
    assert sum(s.startswith("arms:") for s in scored) == 7  # six arms' looks and the headline's
    assert rep["headline"]["configurations_scored"] == len(ledger.family(_test_ledger(cfg)))
    n = len(_test_ledger(cfg).looks)
    again = cli.main(argv)
    assert all(r["reused"] for r in again["arms"]["train"]["runs"])
    assert len(_test_ledger(cfg).looks) == n
    # the route, measured on val (never test): every route the reasoner has, side by side; the test ledger untouched
    route = cli.main(argv[:-1] + ["grpo", "--stage", "route", "--set", "arm.seeds=1"])["route"]["routes"]
    assert route["torch"]["arms"]["grpo"]["episodes"] == 8 and route["torch"]["val_problems"] == 4
    assert 0 <= route["torch"]["arms"]["grpo"]["val_accuracy"] <= 1
    assert route["torch"]["arms"]["grpo"]["seconds_per_episode"] > 0 and "skipped" in route["llamacpp"]
    assert len(_test_ledger(cfg).looks) == n
    # --docs: the arms' block in docs/results.md, written from the arms' report (read only: no new look)
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    begin, end = docs_block.markers("arms")
    for page in docs_block.ARMS_PAGES:  # without the block: refused before any stage runs, naming the two lines
        (repo / page).write_text("# a page\n")
    monkeypatch.chdir(repo)
    with pytest.raises(ValueError, match="docs/results.md has no study:arms block; put the two lines"):
        cli.main(argv + ["--stage", "report", "--docs"])
    assert not (repo / "docs" / "results.md").read_text().count("study:arms")
    for page in docs_block.ARMS_PAGES:
        (repo / page).write_text(f"# a page\n\n{begin}\nstale\n{end}\n")
    done = cli.main(argv + ["--stage", "report", "--docs"])
    assert done["docs"] == list(docs_block.ARMS_PAGES) == ["docs/results.md"]
    rep = json.loads((out / "arms" / "report" / "report.json").read_text())
    body = docs_block.block((repo / "docs" / "results.md").read_text(), "arms")
    assert body.startswith("**`rsim` (reasoner trained with a planner) vs `grpo` (trained alone) at equal episodes: "
                           + rep["headline"]["verdict"])
    assert f"Holm's step-down over the {rep['headline']['configurations_scored']} looks" in body
    assert all(f"`{arm}` " in body for arm in ("base", "planner", *TRAINED))
    assert "`rsim` vs `grpo_fixed` (the scaffold control:" in body and "stale" not in body
    assert "`rsim_warm` vs `planner` (training the reasoner on top of the plug-in planner)" in body
    link = body.rsplit("](", 1)[1].split(")")[0]
    assert (repo / "docs" / link).resolve() == (out / "arms" / "report" / "report.md").resolve()
    assert len(_test_ledger(cfg).looks) == n
