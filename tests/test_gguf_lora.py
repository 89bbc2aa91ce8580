"""PEFT LoRA -> llama.cpp GGUF adapter (agents/llamacpp/gguf_lora.py): names, layouts, q/k row order, refusals.

Model-free of llama.cpp: a tiny Llama with a PEFT adapter, and a stand-in base GGUF holding only the
tiny model's metadata and tensor table (what the writer checks against). tests/test_engine_lora.py
loads the written files into llama.cpp on the real model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

gguf = pytest.importorskip("gguf", reason="needs the gguf package (pip install gguf)")

from agents.llamacpp.gguf_lora import BaseTensors, adapter_tensors, check_adapter, write_adapter  # noqa: E402
from agents.hf.loading import tiny_model  # noqa: E402
from agents.hf.lora import LoraSpec, SharedBase  # noqa: E402


def _adapter(rank: int = 4, seed: int = 0, **model_overrides):
    model, _ = tiny_model("causal", seed=seed, **model_overrides)
    base = SharedBase(model, "tiny")
    slot = base.add("reasoner", LoraSpec(enabled=True, rank=rank, alpha=2.0 * rank))
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in slot.parameters().values():
            p.copy_(torch.randn(p.shape, generator=gen))
    return model, slot


def _base_gguf(path, model, arch: str = "llama"):
    """A GGUF with ``model``'s metadata and (zero) weights under llama.cpp's names: what the writer reads."""
    cfg = model.config
    w = gguf.GGUFWriter(str(path), arch)
    w.add_uint32(f"{arch}.attention.head_count", cfg.num_attention_heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", cfg.num_key_value_heads)
    names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
    for name, p in model.named_parameters():
        parts = name.replace(".base_layer", "").split(".")  # a PEFT-injected model's base weights
        if "layers" in parts and parts[-2] in names:
            w.add_tensor(f"blk.{parts[parts.index('layers') + 1]}.{names[parts[-2]]}.weight",
                         np.zeros(tuple(p.shape), np.float32))
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
    return path


@pytest.fixture
def tiny(tmp_path):
    model, slot = _adapter()
    return model, slot, BaseTensors.from_gguf(_base_gguf(tmp_path / "base.gguf", model))


def _tensors(path):
    reader = gguf.GGUFReader(str(path))
    return reader, {t.name: np.asarray(t.data).reshape(tuple(int(d) for d in reversed(t.shape))) for t in reader.tensors}


def test_written_file_has_llamacpp_metadata_names_and_peft_layouts(tmp_path, tiny):
    model, slot, base = tiny
    path = write_adapter(tmp_path / "a.gguf", slot.parameters(), 8.0, base, adapter="reasoner")
    reader, tensors = _tensors(path)
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["general.architecture"].contents() == "llama"
    assert reader.fields["adapter.type"].contents() == "lora"
    alpha = reader.fields["adapter.lora.alpha"]
    assert alpha.contents() == 8.0 and alpha.types == [gguf.GGUFValueType.FLOAT32]  # llama.cpp reads it as f32
    layers, modules = model.config.num_hidden_layers, 7
    assert len(tensors) == 2 * layers * modules
    params = slot.parameters()
    a = params["model.layers.1.mlp.down_proj.lora_A.reasoner.weight"].detach().numpy()
    b = params["model.layers.1.mlp.down_proj.lora_B.reasoner.weight"].detach().numpy()
    np.testing.assert_array_equal(tensors["blk.1.ffn_down.weight.lora_a"], a)  # [r, in]
    np.testing.assert_array_equal(tensors["blk.1.ffn_down.weight.lora_b"], b)  # [out, r]
    assert check_adapter(path, base) == {"tensors": layers * modules, "ranks": [4], "alpha": 8.0}


@pytest.mark.parametrize("module, heads", [("q_proj", 4), ("k_proj", 2)], ids=["q", "k"])
def test_q_and_k_rows_follow_the_converters_rotary_interleave(tiny, module, heads):
    """GGUF row ``h*d + 2*i + half`` holds HF row ``h*d + half*d/2 + i`` (d = head dim), for B only."""
    model, slot, base = tiny
    out = adapter_tensors(slot.parameters(), base, adapter="reasoner")
    name = {"q_proj": "attn_q", "k_proj": "attn_k"}[module]
    b = slot.parameters()[f"model.layers.0.self_attn.{module}.lora_B.reasoner.weight"].detach().numpy()
    a = slot.parameters()[f"model.layers.0.self_attn.{module}.lora_A.reasoner.weight"].detach().numpy()
    d = b.shape[0] // heads
    want = np.empty_like(b)
    for h in range(heads):
        for i in range(d // 2):
            for half in range(2):
                want[h * d + 2 * i + half] = b[h * d + half * d // 2 + i]
    np.testing.assert_array_equal(out[f"blk.0.{name}.weight.lora_b"], want)
    np.testing.assert_array_equal(out[f"blk.0.{name}.weight.lora_a"], a)


def test_trained_state_dict_and_peft_names_give_the_same_file(tiny):
    """``agents.hf.lora.Trained`` names ('__' for '.') and a saved PEFT dir's names map alike."""
    from agents.hf.lora import Trained

    model, slot, base = tiny
    from_params = adapter_tensors(slot.parameters(), base, adapter="reasoner")
    from_trained = adapter_tensors(Trained(slot.parameters()).state_dict(), base, adapter="reasoner")
    peft_names = {k.replace(".reasoner.", ".").replace("model.layers", "base_model.model.model.layers"): v
                  for k, v in slot.parameters().items()}
    from_peft = adapter_tensors(peft_names, base)
    for other in (from_trained, from_peft):
        assert other.keys() == from_params.keys()
        for k in other:
            np.testing.assert_array_equal(other[k], from_params[k])


def test_another_models_adapter_is_refused(tmp_path, tiny):
    _, _, base = tiny
    _, wide = _adapter(hidden_size=48)
    with pytest.raises(ValueError, match="do not fit the base weight .* another model"):
        adapter_tensors(wide.parameters(), base, adapter="reasoner")
    _, deep = _adapter(layers=3)
    with pytest.raises(ValueError, match="'blk.2.ffn_down.weight' has no base tensor"):
        adapter_tensors(deep.parameters(), base, adapter="reasoner")
    # a file written for the other model is refused when checked against this base
    wide_model, wide_slot = _adapter(hidden_size=48)
    wide_base = BaseTensors.from_gguf(_base_gguf(tmp_path / "wide.gguf", wide_model))
    path = write_adapter(tmp_path / "wide-adapter.gguf", wide_slot.parameters(), 8.0, wide_base)
    with pytest.raises(ValueError, match="do not fit the base weight"):
        check_adapter(path, base)


def test_bad_inputs_are_refused_with_the_fix(tmp_path, tiny):
    model, slot, base = tiny
    params = slot.parameters()
    with pytest.raises(ValueError, match="no LoRA weights"):
        adapter_tensors({"lm_head.weight": torch.zeros(3, 3)}, base)
    half = {k: v for k, v in params.items() if "lora_B" not in k}
    with pytest.raises(ValueError, match="must come together"):
        adapter_tensors(half, base)
    with pytest.raises(ValueError, match="no tensor for module 'fc9'"):
        adapter_tensors({"model.layers.0.mlp.fc9.lora_A.weight": torch.zeros(2, 32)}, base)
    with pytest.raises(ValueError, match="positive lora_alpha"):
        write_adapter(tmp_path / "x.gguf", params, 0.0, base)
    with pytest.raises(ValueError, match="not a LoRA adapter"):
        check_adapter(tmp_path / "base.gguf", base)
    qwen = BaseTensors.from_gguf(_base_gguf(tmp_path / "qwen.gguf", model, arch="qwen2"))
    with pytest.raises(ValueError, match="knows \\('llama',\\) only"):
        adapter_tensors(params, qwen, adapter="reasoner")
    path = write_adapter(tmp_path / "a.gguf", params, 8.0, base, adapter="reasoner")
    with pytest.raises(ValueError, match="is for a 'llama' model but .* is 'qwen2'"):
        check_adapter(path, qwen)
    assert not list(tmp_path.glob(".part-*"))  # failed writes leave no debris


def test_peft_dir_reader_keeps_peft_scale(tmp_path, tiny):
    """A saved PEFT dir gives llama.cpp the same scale: alpha / r, or alpha / sqrt(r) under rslora."""
    from agents.llamacpp.decoder import read_peft_dir

    model, slot, _ = tiny
    slot.base.peft.save_pretrained(str(tmp_path / "dir"), selected_adapters=["reasoner"])
    d = tmp_path / "dir" / "reasoner" if (tmp_path / "dir" / "reasoner").is_dir() else tmp_path / "dir"
    weights, alpha = read_peft_dir(d)
    assert alpha == 8.0 and any(".lora_A." in k for k in weights)
    cfg = json.loads((d / "adapter_config.json").read_text())
    (d / "adapter_config.json").write_text(json.dumps(cfg | {"use_rslora": True}))
    assert read_peft_dir(d)[1] == pytest.approx(8.0 * 4 ** 0.5)  # llama.cpp's alpha / r == 8 / sqrt(4)
    with pytest.raises(ValueError, match="not a PEFT adapter dir"):
        read_peft_dir(tmp_path)
