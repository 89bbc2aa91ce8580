"""Benchmarks as tests of behaviour (no timing assertions)."""

import pytest


def test_code_sandbox_benchmark_every_benign_passes_and_every_hostile_fails(tmp_path):
    from benchmarks.grading.code_sandbox import Config as SandboxBench
    from benchmarks.grading.code_sandbox import main as sandbox_bench

    # 3 s (the benchmark's default): a benign program shares the cores with fork bombs and spinning loops, and
    # its bound runs from process start; 1 s left a loaded 2-core machine about 5x the 0.2 s such a run takes
    r = sandbox_bench(SandboxBench(problems=6, hostile_every=1, timeout_s=3.0, out=str(tmp_path / "c.json")))
    rows = {row["setting"]: row for row in r["rows"]}
    assert all(row["benign_passed"] == row["benign"] == 6 for row in rows.values())
    (mixed,) = [row for name, row in rows.items() if name.endswith("+ hostile")]
    assert mixed["hostile"] == 6 and mixed["hostile_passed"] == 0
    assert set(mixed["hostile_reasons"].values()) <= {"timeout", "crashed", "output_limit", "failed"}
    assert (tmp_path / "c.json").is_file()


def test_rollout_benchmark_smoke_on_tiny_model(tmp_path):
    """benchmarks/runtime/rollout.py end to end on the tiny random model: every documented key, identical tokens
    with and without prefix sharing, and the frozen bf16 variant runs (it once failed under inference mode)."""
    import json

    from benchmarks.runtime.rollout import BenchConfig, main

    out = tmp_path / "rollout.json"
    r = main(BenchConfig(model="tiny", batch=4, rounds=2, tokens_per_round=3, variants=("bf16", "int8"), out=str(out)))
    saved = json.loads(out.read_text())
    for key in ("speedup_vs_naive", "ratio_vs_generate", "ratio_vs_generate_decode_only", "peak_rss_mib",
                "prefix_sharing_speedup"):
        assert saved[key] > 0, key
    assert r["prefix_sharing_same_tokens"] is True
    assert r["a_cached"]["tokens"] == r["c_generate"]["tokens"] == 4 * 2 * 3
    assert r["a_cached"]["injection_tokens"] > 0  # round 2's injections, which (c) never reads
    for name in ("bf16", "int8"):
        v = r["e_variants"][name]
        assert "error" not in v and v["tokens"] == 24 and 0 <= v["argmax_agreement"] <= 1, v


def test_train_step_benchmark_smoke_on_tiny_model(tmp_path):
    """benchmarks/runtime/train_step.py end to end on the tiny model: our row reports groups updated (the tiny model's
    random text may have no digits, so 0 or 1 here) and a rollout time inside the step time."""
    import json

    from benchmarks.runtime.train_step import Config, main

    out = tmp_path / "ts.json"
    main(Config(model="tiny", steps=2, warmup=1, completion_tokens=4, rows="ours_full", out=str(out),
                output_dir=str(tmp_path / "runs")))
    row = json.loads(out.read_text())["rows"]["ours_full"]
    assert row["groups_updated"] in (0.0, 1.0) and 0 < row["rollout_seconds_per_step"] <= row["seconds_per_step"]
    assert row["trainable_params"] > 0 and row["peak_rss_mib"] > 0


def test_rollout_benchmark_engine_rows_on_a_tiny_gguf(tmp_path):
    """(f) on a tiny random GGUF (tests/tiny_gguf.py) beside the tiny torch model: one row per listed engine,
    a repeated file with the same options measured once, the first giving the headline keys."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    pytest.importorskip("gguf", reason="needs the gguf package")
    from benchmarks.runtime.rollout import BenchConfig, main
    from tests.tiny_gguf import write_tiny_gguf

    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    r = main(BenchConfig(model="tiny", batch=2, rounds=2, tokens_per_round=3, variants=(), skip_rollout=True,
                         engine=f"{path},{path}#threads=2,{path}"))
    assert list(r["f_engines"]) == [str(path), f"{path}#threads=2"]
    assert r["f_engines"][f"{path}#threads=2"]["threads"] == 2
    head = r["f_engines"][str(path)]
    assert head["tokens"] == 2 * 2 * 3 and r["engine_vs_generate"] == head["vs_generate"] > 0
    assert r["engine_lp_mismatch"] == head["lp_mismatch"] >= 0 and 0 <= head["fp32_argmax_agreement"] <= 1
