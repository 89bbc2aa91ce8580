"""benchmarks.plans.paired_eval: two evaluations of the same problems compared problem by problem."""

from __future__ import annotations

import json

import pytest

from benchmarks.plans.paired_eval import Config, main
from benchmarks.plans.seedstats import read_outcomes


def _results(path, outcomes):
    rows = [{"mode": m, "problem_id": p, "sample": 0, "correct": c, "shown_steps": [f"{p} {c}"]}
            for (m, p), c in outcomes.items()]
    path.write_text(json.dumps({"per_problem": rows}))
    return str(path)


def test_counts_mcnemar_and_outcome_file(tmp_path):
    a = {("none", f"p{i}"): i < 10 for i in range(20)} | {("fixed:3,8", "p0"): True}
    b = {("none", f"p{i}"): i < 2 for i in range(20)} | {("fixed:3,8", "p0"): True, ("other", "p0"): True}
    res = main(Config(a=_results(tmp_path / "a.json", a), b=_results(tmp_path / "b.json", b), a_name="torch",
                      b_name="engine", out=str(tmp_path / "cmp.json")))
    none = res["modes"]["none"]
    assert (none["n"], none["right_a"], none["right_b"], none["only_a"], none["only_b"]) == (20, 10, 2, 8, 0)
    assert none["mcnemar_p"] == pytest.approx(2 / 2 ** 8)  # 8 discordant pairs, all one way
    assert set(res["modes"]) == {"none", "fixed:3,8"}  # "other" is B's only: not paired
    rows = read_outcomes(tmp_path / "cmp_outcomes.jsonl.gz")
    assert len(rows) == 2 * 21 and {r["mode"] for r in rows} == {"torch:none", "engine:none", "torch:fixed:3,8",
                                                                    "engine:fixed:3,8"}


def test_bad_inputs_name_the_fix(tmp_path):
    with pytest.raises(ValueError, match="results.json"):
        main(Config(a=str(tmp_path / "nope.json"), b=str(tmp_path / "nope.json")))
    a = _results(tmp_path / "a.json", {("none", "p1"): True})
    b = _results(tmp_path / "b.json", {("none", "p2"): True})
    with pytest.raises(ValueError, match="share no"):
        main(Config(a=a, b=b))
