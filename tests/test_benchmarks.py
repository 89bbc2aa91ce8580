"""Benchmarks as tests of behaviour (no timing assertions)."""

from benchmarks.learning_sanity import Config, main


def test_stackelberg_planner_learns_target_sequence(tmp_path):
    r = main(Config(steps=80, eval_every=10, output_dir=str(tmp_path), out=str(tmp_path / "r.json")))
    assert r["success_before"] <= 0.1 and r["success_random"] <= 0.02
    assert r["success_after"] >= 0.9, r["curve"]
    assert r["greedy_plan_after"] == ["decomposition", "validation", "termination"]
    assert (tmp_path / "r.json").is_file()


def test_code_sandbox_benchmark_every_benign_passes_and_every_hostile_fails(tmp_path):
    from benchmarks.code_sandbox import Config as SandboxBench
    from benchmarks.code_sandbox import main as sandbox_bench

    r = sandbox_bench(SandboxBench(problems=6, hostile_every=1, timeout_s=1.0, out=str(tmp_path / "c.json")))
    rows = {row["setting"]: row for row in r["rows"]}
    assert all(row["benign_passed"] == row["benign"] == 6 for row in rows.values())
    (mixed,) = [row for name, row in rows.items() if name.endswith("+ hostile")]
    assert mixed["hostile"] == 6 and mixed["hostile_passed"] == 0
    assert set(mixed["hostile_reasons"].values()) <= {"timeout", "crashed", "output_limit", "failed"}
    assert (tmp_path / "c.json").is_file()
