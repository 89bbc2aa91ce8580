"""studies.atlas_restate: the committed restated atlas is a recomputation of the committed atlas outcomes (leaked test
problems and scorer-refused tasks dropped), and docs/atlas.md copies its table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from studies.atlas_restate import Config, docs_table, main

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("reasoning_gym")


def test_committed_restatement_matches_its_outcomes_and_the_docs(tmp_path):
    res = main(Config(outcomes=str(ROOT / "docs/atlas_results/atlas.outcomes.jsonl.gz"),
                      atlas=str(ROOT / "docs/atlas_results/atlas.json"), out=str(tmp_path / "r.json")))
    committed = json.loads((ROOT / "docs/atlas_results/atlas_restated.json").read_text())
    for k in ("tasks", "refused", "leaked_test_problems", "n_test", "accuracy", "reward", "ties", "per_task"):
        assert json.loads(json.dumps(res[k])) == committed[k], k
    assert [r["task"] for r in committed["refused"]] == ["game_of_life_halting"]
    assert committed["n_test"] + committed["n_leaked"] + 20 == 640  # 20: game_of_life_halting's test problems
    h = committed["accuracy"]["headroom"]
    assert h["ci95"][0] <= h["point"] <= h["ci95"][1]
    doc = (ROOT / "docs/atlas.md").read_text()
    block = re.search(r"<!-- atlas restated: python -m studies\.atlas_restate -->\n(.*?)\n<!-- /atlas restated -->", doc,
                      re.S)
    assert block and block.group(1) == docs_table(committed), "docs/atlas.md: the restated table is stale"


def test_no_kept_test_problem_shares_its_text_with_validation_of_its_task():
    from benchmarks.plans.atlas import read_rows

    committed = json.loads((ROOT / "docs/atlas_results/atlas_restated.json").read_text())
    rows = [r for r in read_rows(ROOT / "docs/atlas_results/atlas.outcomes.jsonl.gz") if r["row"] == "outcome"]
    for task in committed["tasks"]:
        val = {r["question"] for r in rows if r["task"] == task and r["split"] == "val"}
        n_test = len({r["problem_id"] for r in rows if r["task"] == task and r["split"] == "test" and r["index"] < 40
                      and r["question"] not in val})
        assert n_test == committed["per_task"][task]["n_test"], task
