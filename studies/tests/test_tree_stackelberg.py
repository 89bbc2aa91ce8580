"""studies.tree_stackelberg: the Stackelberg arm's bookkeeping (the training and live evaluations are hours of CPU;
what is tested here is everything between their episodes and the JSON, and the run settings they get)."""

from __future__ import annotations

import pytest

from studies import tree_stackelberg as ts


def _arm(correct: list[bool], plan: list[int], reward: float = 0.5) -> dict:
    return {"correct": correct, "reward": [reward + c for c in correct], "plan": [plan] * len(correct)}


def test_compare_pairs_modes_by_seed_and_reports_headroom():
    per_seed = {
        "stackelberg": {0: _arm([True, True, False, False], [4, 8]), 1: _arm([True, True, True, False], [4, 8])},
        "planner_only": {0: _arm([True, False, False, False], [3, 8]), 1: _arm([True, True, False, False], [3, 8])},
        "best_fixed_exhaustive": {0: _arm([True, False, False, False], [3, 8]),
                                  1: _arm([True, False, False, False], [3, 8])},
        "per_task": {0: _arm([True, True, False, False], [4, 8]), 1: _arm([True, True, False, False], [4, 8])},
    }
    got = ts.compare(per_seed, rounds=200)
    m = got["modes"]
    assert m["stackelberg"]["accuracy_by_seed"] == [0.5, 0.75]
    assert m["stackelberg"]["accuracy"] == pytest.approx(0.625)
    assert m["best_fixed_exhaustive"]["headroom_captured_accuracy"] == pytest.approx(0.0)
    assert m["per_task"]["headroom_captured_accuracy"] == pytest.approx(1.0)
    assert m["stackelberg"]["headroom_captured_accuracy"] == pytest.approx((0.625 - 0.25) / 0.25)
    assert m["stackelberg"]["reward"] == pytest.approx(0.5 + 0.625)
    t = got["tests"]
    assert set(t) == {"stackelberg_vs_best_fixed_exhaustive", "stackelberg_vs_planner_only", "stackelberg_vs_per_task"}
    sign = t["stackelberg_vs_planner_only"]["seed_sign_accuracy"]
    assert (sign["wins"], sign["losses"], sign["ties"]) == (2, 0, 0)
    assert t["stackelberg_vs_per_task"]["seed_sign_accuracy"]["ties"] == 1
    assert t["stackelberg_vs_best_fixed_exhaustive"]["bootstrap_accuracy"]["difference"] == pytest.approx(0.375)
    md = ts.markdown({"problems": 4, **got})
    assert "| `stackelberg` | 62.5 % | 1.125 | 50.0, 75.0 | 150 % |" in md
    assert "| stackelberg vs planner_only | 2 / 0 / 0 |" in md


def test_read_back_and_live_cells_cover_the_tree_problems():
    from algos.study.types import Outcome, Table

    table = Table("test", {"a": "t", "b": "t"},
                  {"a": {(3, 8): Outcome(True, 1.5, 1), (4, 8): Outcome(False, 0.5, 1)},
                   "b": {(3, 8): Outcome(False, 0.5, 1), (4, 8): Outcome(True, 1.5, 1)}})
    got = ts._read(table, ["a", "b"], {"a": [4, 8], "b": (4, 8)})
    assert got == {"plan": [[4, 8], [4, 8]], "correct": [False, True], "reward": [0.5, 1.5]}
    rows = [{"problem_id": "b", "strategies": [2, 8], "correct": True, "rewards": {"planner": 1.5}},
            {"problem_id": "a", "strategies": [8], "correct": False, "rewards": {"planner": 0.0}},
            {"problem_id": "z", "strategies": [8], "correct": True, "rewards": {"planner": 1.0}}]
    assert ts._cells(rows, ["a", "b"], "x") == {"plan": [[8], [2, 8]], "correct": [False, True], "reward": [0.0, 1.5]}
    with pytest.raises(ValueError, match="no episode for 1 of the test tree's problems"):
        ts._cells(rows[:1], ["a", "b"], "seed 0 stackelberg")


def test_agreement_and_reading_count_what_differs():
    a = {0: {"plan": [[3, 8], [4, 8]], "correct": [True, False]}}
    b = {0: {"plan": [[3, 8], [2, 8]], "correct": [False, False]}}
    assert ts._agreement(a, b) == {"0": {"same_plan": 1, "outcome_differs": 1, "problems": 2}}
    st = [{"problem_id": "p", "question": "q?", "answer": "1", "strategies": [3, 8], "steps": ["s1", "s2"],
           "extracted": "1", "correct": True},
          {"problem_id": "r", "question": "r?", "answer": "2", "strategies": [4, 8], "steps": [], "extracted": None,
           "correct": False}]
    ct = [dict(st[0], correct=False, extracted="7", strategies=[2, 8]), dict(st[1])]
    got = ts._reading(["p", "r"], st, ct)
    assert [g["problem_id"] for g in got] == ["p"]
    assert got[0]["stackelberg_extracted"] == "1" and got[0]["control_extracted"] == "7"
    assert got[0]["control_strategies"] == [2, 8]


def test_train_overrides_are_a_valid_study_run_in_the_planner_only_game():
    from algos.config import resolve

    cfg = ts.Config(steps=30, planners="docs/training_results/planners/tree_adaptive_40_std")
    over = ts.train_overrides(cfg, 2, "adaptive:train", 1240)
    run = resolve("study", over)
    assert run.learner == "stackelberg" and run.train.seed == 2
    assert run.model.planner.endswith("tree_adaptive_40_std/last_round_s2")
    assert run.env.max_steps == 2 and run.env.terminate_last_round
    assert run.planner.head_only and not run.model.planner_lora.enabled and run.model.reasoner_lora.enabled
    assert (run.train.steps, run.schedule.stage1_steps, run.data.size) == (30, 15, 1240)


@pytest.mark.parametrize("kw, match", [({"seeds": ()}, "seeds is empty"), ({"steps": 1}, "at least 2 steps"),
                                       ({"planner_lr": 0.0}, "positive learning rate")])
def test_config_refuses_bad_settings(kw, match):
    with pytest.raises(ValueError, match=match):
        ts.Config(**kw)


def test_main_names_an_unknown_study():
    with pytest.raises(ValueError, match="rsim study preset"):
        ts.main(ts.Config(study="nope"))


def test_a_finished_evaluation_that_covers_the_tree_is_reused(tmp_path, monkeypatch):
    """An evaluation run with a larger --limit (more problems of the same split) is reused, not redone; one that
    lacks a tree problem is run again."""
    import json

    import algos.evaluation

    rows = [{"problem_id": p, "strategies": [3, 8], "correct": True, "rewards": {"planner": 1.5}} for p in "abc"]
    (tmp_path / "results.json").write_text("{}")
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = []
    monkeypatch.setattr(algos.evaluation, "main", lambda argv: calls.append(argv))
    assert ts._evaluate(tmp_path, "P", "R", "test", 310, 16, ["a", "b"]) == rows and not calls
    ts._evaluate(tmp_path, "P", "R", "test", 310, 16, ["a", "z"])
    assert calls and calls[0][calls[0].index("--limit") + 1] == "310"


def _result() -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).resolve().parents[2] / "docs/training_results/tree_stackelberg_40.json").read_text())


def test_committed_result_recomputes_from_its_per_problem_outcomes_and_episodes():
    """Every mode and test of the committed Stackelberg arm is recomputed from its per-problem lists, and the live
    modes' lists are the committed episodes'."""
    import gzip
    import json
    from pathlib import Path

    res = _result()
    pp = res["per_problem"]
    ids = pp["problem_ids"]
    assert res["problems"] == len(ids) == 282 and res["config"]["seeds"] == [0, 1, 2]
    per_seed = {m: {int(s): v for s, v in pp[m].items()} for m in ts.MODES}
    again = ts.compare(per_seed, res["config"]["rounds"])
    assert again["modes"] == res["modes"] and again["tests"] == res["tests"]
    path = Path(__file__).resolve().parents[2] / "docs/training_results/tree_stackelberg_40.episodes.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    for arm in ("stackelberg", "control_live"):
        for s in (0, 1, 2):
            got = ts._cells([r for r in rows if r["arm"] == arm and r["seed"] == s], ids, arm)
            assert got == pp[arm][str(s)], (arm, s)


def test_docs_copy_the_stackelberg_arm():
    """docs/training.md's Stackelberg table is the committed JSON's, and its sentence the JSON's figures."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    res = _result()
    text = (root / "docs" / "training.md").read_text()
    block = re.search(r"<!-- tree stackelberg: [^\n]*-->\n(.*?)\n<!-- /tree stackelberg -->", text, re.S)
    assert block and block.group(1) == ts.markdown(res), "docs/training.md: the Stackelberg table is stale"
    m, t = res["modes"], res["tests"]["stackelberg_vs_best_fixed_exhaustive"]
    sign = t["seed_sign_accuracy"]
    figure = (f"3 seeds score {100 * m['stackelberg']['accuracy']:.1f} % against "
              f"{100 * m['best_fixed_exhaustive']['accuracy']:.1f} % for `[3, 8]`, {sign['wins']} of 3 seeds above")
    assert figure in " ".join((root / "docs/training.md").read_text().split())
