"""benchmarks.plans.shift: did training the reasoner change which plans work (model-free, synthetic tables)."""

import gzip
import json

import numpy as np
import pytest

from benchmarks.plans import shift as plan_shift

PLANS = [(8,), (3, 8), (5, 8)]


def _write(path, correct):
    """correct[problem][plan] -> an episodes file as benchmarks.plans.table writes it."""
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i, row in enumerate(correct):
            for p, c in zip(PLANS, row):
                f.write(json.dumps({"problem_id": f"t/{i}", "task": "t", "plan": list(p), "correct": bool(c)}) + "\n")
    return str(path)


def _ref(n=40):
    # (8,) best at 50 %, (3, 8) 25 %, (5, 8) 25 %
    return [[i % 2 == 0, i % 4 == 0, i % 4 == 1] for i in range(n)]


def test_identical_tables_change_nothing(tmp_path):
    ref = plan_shift.load_table(_write(tmp_path / "r.jsonl.gz", _ref()))
    res = plan_shift.shift(ref, [ref, ref], ["a", "b"], bootstrap=500)
    assert res["reference_best"] == [8] and res["trained_best"] == [[8], [8]]
    assert all(r["change"] == 0 for r in res["per_plan"])
    assert not res["changed_which_plans_work"]
    assert res["spearman"] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_a_plan_that_gains_more_than_the_old_best_is_named(tmp_path):
    ref = _ref()
    trained = [[a, True, c] for a, b, c in ref]  # (3, 8) now solves everything; the others unchanged
    res = plan_shift.shift(plan_shift.load_table(_write(tmp_path / "r.jsonl.gz", ref)),
                           [plan_shift.load_table(_write(tmp_path / "t.jsonl.gz", trained))], ["s0"], bootstrap=2000)
    assert res["trained_best"] == [[3, 8]]
    assert res["changed_which_plans_work"] and res["overtook_reference_best"] == [[3, 8]]
    row = {tuple(r["plan"]): r for r in res["per_plan"]}
    assert row[(3, 8)]["change"] == pytest.approx(0.75) and row[(3, 8)]["interaction_ci"][0] > 0
    assert row[(3, 8)]["overtake"] == pytest.approx(0.5) and row[(3, 8)]["overtake_ci"][0] > 0
    assert row[(5, 8)]["interaction_ci"][0] <= 0 <= row[(5, 8)]["interaction_ci"][1]
    assert row[(5, 8)]["overtake"] == pytest.approx(-0.25) and row[(5, 8)]["overtake_ci"][0] < 0
    assert "yes: `[3, 8]` now beat `[8]`" in plan_shift.markdown(res)


def test_catching_up_at_the_ceiling_is_not_a_change_of_plans(tmp_path):
    rng = np.random.default_rng(0)
    ref = [[bool(x) for x in rng.random(3) < 0.3] for _ in range(60)]
    trained = [[True] * 3 for _ in ref]  # every plan now right: better reasoner, same (flat) ranking question
    res = plan_shift.shift(plan_shift.load_table(_write(tmp_path / "r.jsonl.gz", ref)),
                           [plan_shift.load_table(_write(tmp_path / "t.jsonl.gz", trained))], bootstrap=2000)
    assert all(r["change"] > 0.5 for r in res["per_plan"])
    # plans worse than the best gain more (positive interaction), yet none beats it: the verdict is no
    assert any(r.get("interaction", 0) > 0 for r in res["per_plan"])
    assert all(r["overtake"] == 0 for r in res["per_plan"] if "overtake" in r)
    assert not res["changed_which_plans_work"]


def test_incomplete_or_mismatched_tables_are_refused(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps({"problem_id": "t/0", "task": "t", "plan": [8], "correct": True}) + "\n")
        f.write(json.dumps({"problem_id": "t/1", "task": "t", "plan": [3, 8], "correct": True}) + "\n")
    with pytest.raises(ValueError, match="not a complete plan table"):
        plan_shift.load_table(path)
    ref = plan_shift.load_table(_write(tmp_path / "r.jsonl.gz", _ref(40)))
    other = plan_shift.load_table(_write(tmp_path / "o.jsonl.gz", _ref(20)))
    with pytest.raises(ValueError, match="same --source, --problems"):
        plan_shift.shift(ref, [other])
    with pytest.raises(ValueError, match="at least one trained"):
        plan_shift.shift(ref, [])


def test_main_writes_json_and_markdown(tmp_path):
    r = _write(tmp_path / "frozen.episodes.jsonl.gz", _ref())
    t = _write(tmp_path / "s0.episodes.jsonl.gz", _ref())
    out = tmp_path / "shift.json"
    plan_shift.main(plan_shift.Config(reference=r, trained=t, bootstrap=200, out=str(out)))
    assert json.loads(out.read_text())["names"] == ["s0"]
    assert "Did training change which plans work? no plan now beats" in out.with_suffix(".md").read_text()
    with pytest.raises(ValueError, match="--reference and --trained are required"):
        plan_shift.main(plan_shift.Config())

