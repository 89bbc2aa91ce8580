"""The engine's Q8_0 copy of the embedded GGUF (agents/embedded.py): made from the same weights, hash-checked, remade
when it or its source changes. Runs on the tiny random GGUF of ``tests/tiny_gguf.py`` (quantized to Q4_1 here, as the
embedded file is), so no real weights are read; the real file's check is ``slow``."""

from __future__ import annotations

import ctypes
import json

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="needs the gguf package (pip install gguf)")

from agents import embedded  # noqa: E402
from tests.tiny_gguf import write_tiny_gguf  # noqa: E402


@pytest.fixture(scope="module")
def q4_1(tmp_path_factory):
    """The tiny model as a Q4_1 GGUF (llama.cpp's quantizer), like the shipped file."""
    lib = pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    folder = tmp_path_factory.mktemp("gguf")
    f32 = write_tiny_gguf(folder / "tiny-f32.gguf")
    dst = folder / "tiny-q4_1.gguf"
    params = lib.llama_model_quantize_default_params()
    params.ftype = lib.LLAMA_FTYPE_MOSTLY_Q4_1
    with embedded._quiet_stderr():
        assert lib.llama_model_quantize(str(f32).encode(), str(dst).encode(), ctypes.byref(params)) == 0
    types = {t.tensor_type.name for t in gguf.GGUFReader(str(dst)).tensors}
    assert "Q4_1" in types, types
    return dst


def test_q8_0_copy_is_the_same_weights_within_half_a_step_and_is_hash_checked(q4_1, tmp_path):
    dst = tmp_path / "copy.gguf"
    meta = embedded.requantize_q8_0(q4_1, dst)
    types = {t.tensor_type.name for t in gguf.GGUFReader(str(dst)).tensors}
    assert "Q4_1" not in types and "Q8_0" in types, types
    assert 0 < meta["max_error_q8_0_steps"] <= embedded.Q8_0_STEP_SLACK
    assert meta["sha256"] == embedded.file_sha256(dst) and meta["source_sha256"] == embedded.file_sha256(q4_1)
    assert json.loads((tmp_path / "copy.gguf.sha256.json").read_text()) == meta
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.gguf", "copy.gguf.sha256.json"]  # no temp files left


def test_verified_copy_is_reused_and_remade_when_it_or_its_source_changes(q4_1, tmp_path, monkeypatch):
    dst = tmp_path / "copy.gguf"
    assert embedded.verified_engine_gguf(q4_1, dst) == dst
    made = []
    real = embedded.requantize_q8_0
    monkeypatch.setattr(embedded, "requantize_q8_0", lambda s, d: made.append(d) or real(s, d))
    embedded.verified_engine_gguf(q4_1, dst)
    assert made == []  # matches its sidecar: used as it is
    with open(dst, "r+b") as f:  # a corrupted copy is made again
        f.seek(-8, 2)
        f.write(b"\0" * 8)
    embedded.verified_engine_gguf(q4_1, dst)
    assert made == [dst]
    src = tmp_path / "other-source.gguf"  # another source: the copy is not its Q8_0
    src.write_bytes(q4_1.read_bytes() + b"")
    with open(src, "ab") as f:
        f.write(b"\0" * 32)  # trailing bytes change the hash, not the tensors
    embedded.verified_engine_gguf(src, dst)
    assert made == [dst, dst]


def test_both_embedded_files_are_recognised_and_nothing_else():
    assert embedded.is_embedded_gguf(embedded.fetched_gguf_path()) and embedded.is_embedded_gguf(embedded.engine_gguf_path())
    assert not embedded.is_embedded_gguf("/models/other.Q8_0.gguf")


def _f32_gguf(path, values):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tensor("blk.0.ffn_up.weight", np.asarray(values, np.float32).reshape(2, 32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path


def test_check_refuses_a_copy_whose_weights_moved(tmp_path):
    x = np.linspace(-1, 1, 64)
    src = _f32_gguf(tmp_path / "a.gguf", x)
    assert embedded.check_requantized(src, _f32_gguf(tmp_path / "same.gguf", x)) == 0.0
    near = x + np.abs(x).max() / 127 * 0.4  # within half a Q8_0 step: a re-rounding
    assert 0.3 < embedded.check_requantized(src, _f32_gguf(tmp_path / "near.gguf", near)) < 0.5
    with pytest.raises(ValueError, match="Q8_0 steps"):
        embedded.check_requantized(src, _f32_gguf(tmp_path / "far.gguf", x * 1.1))


@pytest.mark.slow
def test_embedded_engine_gguf_is_the_torch_weights_in_q8_0(gguf):  # noqa: F811 (the conftest fixture)
    """The real file: every weight of the Q8_0 copy within half a step (+ scale rounding) of the shipped Q4_1."""
    from agents.embedded import embedded_engine_gguf_path

    path = embedded_engine_gguf_path()
    assert embedded.check_requantized(gguf, path) <= embedded.Q8_0_STEP_SLACK


def test_the_q8_0_copy_is_opt_in_by_spec(monkeypatch, tmp_path):
    """``llamacpp:q8_0`` names the copy; ``llamacpp:default`` stays the shipped file (every committed engine result)."""
    import agents.embedded as embedded_model
    from agents.llamacpp.reasoner import parse_spec

    copy, shipped = tmp_path / "SmolLM2-135M-Instruct.Q4_1-as-Q8_0.gguf", tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    monkeypatch.setattr(embedded_model, "embedded_engine_gguf_path", lambda: copy)
    monkeypatch.setattr(embedded_model, "embedded_gguf_path", lambda: shipped)
    assert parse_spec("q8_0#threads=2") == (str(copy), {"threads": 2})
    assert parse_spec("default")[0] == str(shipped)
