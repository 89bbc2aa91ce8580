"""Benchmarks as tests of behaviour (no timing assertions)."""

from benchmarks.learning_sanity import Config, main


def test_stackelberg_planner_learns_target_sequence(tmp_path):
    r = main(Config(steps=80, eval_every=10, output_dir=str(tmp_path), out=str(tmp_path / "r.json")))
    assert r["success_before"] <= 0.1 and r["success_random"] <= 0.02
    assert r["success_after"] >= 0.9, r["curve"]
    assert r["greedy_plan_after"] == ["decomposition", "validation", "termination"]
    assert (tmp_path / "r.json").is_file()
