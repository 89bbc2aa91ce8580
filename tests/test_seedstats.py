"""Seed-level statistics and per-problem outcome files (benchmarks/plans/seedstats.py)."""

import gzip

import pytest

from benchmarks.plans import seedstats as ss


def test_sign_test_three_seeds_can_never_reach_005():
    r = ss.seed_sign_test([0.2, 0.3, 0.4], [0.1, 0.1, 0.1])
    assert (r["wins"], r["losses"]) == (3, 0) and r["p_value"] == pytest.approx(0.25) and r["min_p"] == pytest.approx(0.25)
    r = ss.seed_sign_test([0.2] * 6, [0.1] * 6)
    assert r["p_value"] == pytest.approx(2 / 64)
    assert ss.seed_sign_test([0.1, 0.2], [0.1, 0.2])["p_value"] == 1.0  # all ties
    with pytest.raises(ValueError, match="one accuracy per seed"):
        ss.seed_sign_test([0.1], [0.1, 0.2])


def test_bootstrap_widens_with_seed_spread_that_a_pooled_view_hides():
    n = 200
    base = {"-": [i % 10 == 0 for i in range(n)]}                          # 10 %
    steady = {s: [i % 10 == 0 or i % 10 == 1 for i in range(n)] for s in range(5)}   # 20 % every seed
    lucky = {0: [i % 2 == 0 for i in range(n)], 1: base["-"], 2: base["-"], 3: base["-"], 4: base["-"]}  # 50, 10, 10, 10, 10
    a = ss.hierarchical_bootstrap(steady, base, rounds=2000)
    b = ss.hierarchical_bootstrap(lucky, base, rounds=2000)
    assert a["difference"] == pytest.approx(0.10) and b["difference"] == pytest.approx(0.08)
    assert a["p_value"] < 0.01 and a["ci95"][0] > 0
    assert b["ci95"][0] <= 0 < b["ci95"][1] and b["p_value"] > 0.05      # one lucky seed is not a procedure
    assert ss.hierarchical_bootstrap(steady, base, rounds=500) == ss.hierarchical_bootstrap(steady, base, rounds=500)


def test_bootstrap_refuses_arms_on_different_problems():
    with pytest.raises(ValueError, match="same non-empty problems"):
        ss.hierarchical_bootstrap({0: [True, False]}, {0: [True]})


def _rows():
    rows = []
    for s in range(5):
        for i in range(40):
            rows.append({"mode": "trained", "seed": s, "problem_id": f"p/{i}", "correct": i % 4 == 0, "plan": [3, 8]})
    rows += [{"mode": "best_fixed", "seed": "-", "problem_id": f"p/{i}", "correct": i % 8 == 0} for i in range(40)]
    return rows


def test_outcome_file_round_trip_and_table_regenerates(tmp_path):
    path = ss.write_outcomes(tmp_path / "o.jsonl.gz", _rows())
    rows = ss.read_outcomes(path)
    assert rows == [dict(sorted(r.items())) for r in _rows()]
    out = tmp_path / "t.md"
    rep = ss.main(ss.Config(outcomes=str(path), baseline="best_fixed", rounds=500, out=str(out)))
    t = rep["tests"]["trained_vs_best_fixed"]
    assert t["sign_test_seeds"]["wins"] == 5 and t["sign_test_seeds"]["p_value"] == pytest.approx(2 / 32)
    assert rep["per_seed"]["trained"] == {str(s): 0.25 for s in range(5)}
    text = out.read_text()
    assert "| `trained` | 5 | 25.0 / 25.0 / 25.0 / 25.0 / 25.0 | 25.0 | +12.5" in text
    assert out.with_suffix(".json").is_file()


def test_bad_outcome_files_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="jsonl.gz"):
        ss.write_outcomes(tmp_path / "o.json", _rows())
    with pytest.raises(ValueError, match=r"row 0 lacks \['correct'\]"):
        ss.write_outcomes(tmp_path / "o.jsonl.gz", [{"mode": "x", "seed": 0, "problem_id": "p"}])
    bad = tmp_path / "b.jsonl.gz"
    with gzip.open(bad, "wt") as f:
        f.write('{"mode": "x", "seed": 0, "problem_id": "p", "correct": true}\n{oops\n')
    with pytest.raises(ValueError, match="b.jsonl.gz:2: not JSON"):
        ss.read_outcomes(bad)
    rows = _rows()[:-1]  # best_fixed lost a problem
    with pytest.raises(ValueError, match="different numbers of problems"):
        ss.report(rows, "best_fixed")
    with pytest.raises(ValueError, match="baseline mode 'none' is not in the outcomes"):
        ss.report(_rows(), "none")
