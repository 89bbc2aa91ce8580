"""benchmarks/runtime/train_step.py's ``ours_lora_engine`` row and ``ratio_vs_trl_engine`` (no timing assertions).

The ratio and skip tests are fast; the row itself runs on the embedded model (llama.cpp's 4-bit GGUF and its
fp32 torch twin), so it is ``slow`` and needs llama-cpp-python (``rsim[llamacpp]``) and the embedded GGUF.
"""

from __future__ import annotations

import pytest

from benchmarks.runtime.train_step import Config, skip_reason
from benchmarks.runtime.train_step import ratios


def _row(seconds: float) -> dict:
    return {"seconds_per_step": seconds}


def test_engine_ratio_is_ours_on_the_engine_over_trl_lora():
    r = ratios({"ours_lora": _row(3.0), "trl_lora": _row(4.0), "ours_lora_engine": _row(1.0)}, {})
    assert r["ratio_vs_trl_engine"] == pytest.approx(0.25) and r["ratio_vs_trl_engine_note"] is None
    assert r["ratio_vs_trl_by_mode"] == {"lora": pytest.approx(0.75)} and r["ratio_vs_trl"] == pytest.approx(0.75)


@pytest.mark.parametrize("rows, skipped, says", [
    ({"ours_lora_engine": _row(1.0)}, {"trl_lora": "trl is not installed"}, "trl_lora did not run: trl is not installed"),
    ({"ours_lora_engine": _row(1.0)}, {}, "trl_lora did not run: not in --rows"),
    ({"trl_lora": _row(1.0)}, {"ours_lora_engine": "llama-cpp-python is not installed"},
     "ours_lora_engine did not run: llama-cpp-python is not installed"),
], ids=["no-trl", "trl-not-asked", "no-engine"])
def test_engine_ratio_is_null_with_the_reason(rows, skipped, says):
    r = ratios(rows, skipped)
    assert r["ratio_vs_trl_engine"] is None and r["ratio_vs_trl_engine_note"] == says


def test_engine_row_is_skipped_for_a_model_without_a_gguf_twin(monkeypatch):
    import benchmarks.runtime.train_step as ts

    monkeypatch.setattr(ts, "_missing", lambda module: False)
    assert "--model default" in skip_reason(Config(model="tiny", rows="ours_lora_engine"), "ours_lora_engine")
    assert skip_reason(Config(model="default", rows="ours_lora_engine"), "ours_lora_engine") is None
    monkeypatch.setattr(ts, "_missing", lambda module: module == "llama_cpp")
    assert "rsim[llamacpp]" in skip_reason(Config(model="default"), "ours_lora_engine")
    assert skip_reason(Config(model="default"), "ours_lora") is None


def test_main_records_a_skipped_engine_row_and_a_null_ratio(tmp_path):
    """With the tiny model the engine row cannot run: main says so instead of failing, and runs the rest."""
    import json

    from benchmarks.runtime.train_step import main

    out = tmp_path / "ts.json"
    main(Config(model="tiny", steps=2, warmup=1, completion_tokens=4, group_size=2, rows="ours_lora,ours_lora_engine",
                out=str(out), output_dir=str(tmp_path / "runs")))
    saved = json.loads(out.read_text())
    assert list(saved["rows"]) == ["ours_lora"] and "ours_lora_engine" in saved["skipped"]
    assert saved["ratio_vs_trl_engine"] is None and "ours_lora_engine did not run" in saved["ratio_vs_trl_engine_note"]


@pytest.mark.slow
def test_engine_row_trains_with_an_adapter_sync_before_every_rollout(tmp_path):
    """The row on the embedded model, 2 steps of 2 x 8 tokens: the adapter went to the engine before the first
    rollout and again after every update, at forced length, training the LoRA's parameters only."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    import json

    from agents.embedded import embedded_gguf_path
    from benchmarks.runtime.train_step import main

    try:
        embedded_gguf_path()
    except ModuleNotFoundError as e:
        pytest.skip(f"embedded GGUF not fetched: {e}")
    out = tmp_path / "ts.json"
    main(Config(model="default", steps=2, warmup=1, completion_tokens=8, group_size=2, threads=1,
                rows="ours_lora_engine", out=str(out), output_dir=str(tmp_path / "runs")))
    row = json.loads(out.read_text())["rows"]["ours_lora_engine"]
    assert row["adapter_syncs"] == 1 + sum(row["updated_steps"][:-1]) and row["spec"].startswith("llamacpp:default#")
    assert row["tokens_per_step"] == 2 * 8  # forced length on the engine too
    assert 0 < row["rollout_seconds_per_step"] <= row["seconds_per_step"]
    assert 0 < row["trainable_params"] < 10_000_000  # the adapter only (the 135M base is frozen)
