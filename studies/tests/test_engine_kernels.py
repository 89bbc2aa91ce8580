"""studies/engine_kernels.py: its settings are checked, and one tiny cell of each kind runs on the embedded GGUF."""

from __future__ import annotations

import pytest

from studies.engine_kernels import Config, child


@pytest.mark.parametrize("kw,match", [({"quants": "q3_k"}, "unknown"), ({"policies": "active"}, "unknown"),
                                      ({"batch": 0}, ">= 1")])
def test_bad_settings_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        Config(**kw)


@pytest.mark.slow
def test_child_measures_each_weight_type_with_and_without_an_adapter(gguf, tmp_path):  # noqa: F811
    rows = child(Config(quants="q4_1,q8_0", batch=2, prompt=8, decode=2, threads=1, cache_dir=str(tmp_path)))
    assert [(r["quant"], r["lora"]) for r in rows] == [("q4_1", False), ("q4_1", True), ("q8_0", False), ("q8_0", True)]
    assert all(r["prompt_tok_s"] > 0 and r["decode_tok_s"] > 0 for r in rows)
    assert (tmp_path / "SmolLM2-135M-Instruct-Q4_1.requant-q8_0.gguf").is_file() or list(tmp_path.glob("*q8_0.gguf"))
