"""studies.strategy_variants: the turn-protocol variants compared from atlas outcome files, model-free.

Two atlas runs of the fake reasoner of tests/test_atlas.py (the default protocol and ``chat+lead:action``) feed the
comparison; the per-step facts are checked on hand-written rows; the committed screen's tables must be in
docs/atlas.md as the study prints them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.plans.atlas import Config as AtlasConfig
from benchmarks.plans.atlas import main as atlas_main
from rsim_env.protocols import exemplar
from studies.strategy_variants import SCREEN, Config, main, sign_test, step_facts, table

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("variants")
    paths = []
    for proto in ("chat+lead", "chat+lead:action"):
        out = tmp / f"{proto.replace(':', '_').replace('+', '_')}.json"
        atlas_main(AtlasConfig(reasoner="tests.test_atlas:fake_reasoner", tasks=("curriculum:add2_1d", "curriculum:mul_1d"),
                               problems=10, pilot_problems=10, batch=10, bootstrap=200, mix_size=2, protocol=proto,
                               store=str(tmp / "s.sqlite"), out=str(out), extend=False))
        paths.append(str(out))
    return tmp, paths


def test_compares_protocols_cell_by_cell(runs):
    tmp, paths = runs
    res = main(Config(atlases=tuple(paths), out=str(tmp / "v.json")))
    assert json.loads((tmp / "v.json").read_text()) == json.loads(json.dumps(res))
    ref, act = res["protocols"]
    assert (ref["protocol"], act["protocol"]) == ("chat+lead", "chat+lead:action")
    assert ref["episodes"] == act["episodes"] == 2 * 10 * 9
    # the fake answers by the plan alone, so both protocols score every cell alike
    q = res["paired_vs_first"]["chat+lead:action"]
    assert q["cells"] == 180 and q["wins"] == q["losses"] == 0 and q["correct"] == q["ref_correct"] > 0
    assert ref["best_plan_per_task"] == {"curriculum:add2_1d": [3, 8], "curriculum:mul_1d": [4, 8]}
    assert ref["distinct_best_plans"] == 2
    # the fake's first step, "Let me think about it.", says nothing new (no number, no equation)
    assert ref["first_step"]["n"] == 2 * 10 * 8 and ref["first_step"]["vacuous"] == 1.0
    assert ref["first_step"]["copy"] == 0.0
    assert len(res["quoted"]) == 2 and set(res["quoted"][0]["by_protocol"]) == {"chat+lead", "chat+lead:action"}
    assert "| chat+lead:action | 180 |" in table(res)


def _row(step: str, strategy: int, question: str = "What is 6 * 7?", extracted: str = "42") -> dict:
    return {"plan": [strategy, 8], "question": question, "steps": [step, "42}."], "extracted": extracted}


def test_step_facts_on_written_steps():
    q = "What is 6 * 7?"
    # validation under the action texts: echoing the lead is an echo, recomputing is not
    echoed = step_facts(_row("Let me recompute the last result another way.", 3), "chat+lead:action")
    assert echoed["echo"] and echoed["vacuous"]
    worked = step_facts(_row("42 / 7 = 6, so 6 * 7 = 42.", 3), "chat+lead:action")
    assert not worked["echo"] and not worked["vacuous"] and worked["answer_in_step1"]
    # a step that writes the shown example's numbers copies it; the same numbers in the question do not count
    ex = exemplar("validation", q, 0)
    nums = [w.strip(".,;") for w in ex.split() if w.strip(".,;").isdigit()]
    assert step_facts(_row(f"{nums[0]} + {nums[1]} = {nums[2]}", 3), "chat+lead:exemplar")["copy"]
    assert not step_facts(_row("6 * 7 = 42", 3), "chat+lead:exemplar")["copy"]
    assert step_facts({"plan": [8], "question": q, "steps": ["42}."]}, "chat+lead") is None
    assert not step_facts(_row("6 * 7 = 41", 3), "chat+lead")["answer_in_step1"]


def test_sign_test():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(0, 10) == sign_test(10, 0)


def test_missing_atlas_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="benchmarks.plans.atlas --out"):
        main(Config(atlases=(str(tmp_path / "nope.json"),)))


CONFIRM = ("docs/atlas_results/atlas.json", "docs/atlas_results/atlas_action.json")


@pytest.mark.parametrize("atlases, committed_json", [
    (SCREEN, "docs/atlas_results/screen.json"),  # the screen: 3 protocols on 8 tasks
    (CONFIRM, "docs/atlas_results/confirm_action.json"),  # the action texts against the default on every atlas task
])
def test_docs_quote_the_committed_comparisons(atlases, committed_json):
    """The committed comparison JSON and docs/atlas.md's tables are the study's output on the committed atlases."""
    import os

    if not all((ROOT / p).is_file() for p in atlases):
        pytest.skip("the atlases are not committed yet")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        res = main(Config(atlases=atlases))
    finally:
        os.chdir(cwd)
    committed = json.loads((ROOT / committed_json).read_text())
    assert committed["protocols"] == json.loads(json.dumps(res["protocols"]))
    assert committed["paired_vs_first"] == json.loads(json.dumps(res["paired_vs_first"]))
    doc = (ROOT / "docs/atlas.md").read_text()
    for line in table(res).splitlines():
        assert line in doc, f"docs/atlas.md lacks {committed_json}'s line {line!r}: python -m studies.strategy_variants"
