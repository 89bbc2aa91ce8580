"""Fault injection on engine LoRA adapter files: a truncated file, or one made for another base model, is refused in
one line naming it, and the adapter the engine decodes with stays loaded.

Model-free of llama.cpp: every check runs before llama.cpp sees the file, so the engine's llama.cpp calls are a fake
here (:class:`FakeLlama`). tests/test_engine_lora.py repeats the refusals on the real engine (``slow``).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

gguf = pytest.importorskip("gguf", reason="needs the gguf package (pip install gguf)")

from agents.llamacpp.gguf_lora import BaseTensors, check_adapter, write_adapter  # noqa: E402
from agents.llamacpp.decoder import EngineDecoder, read_peft_dir  # noqa: E402
from agents.llamacpp.engine import Engine  # noqa: E402
from tests.test_gguf_lora import _adapter, _base_gguf  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The tiny model's base GGUF and an adapter for it; a wider model's adapter (written against its own base)."""
    d = tmp_path_factory.mktemp("adapters")
    model, slot = _adapter()
    base_path = _base_gguf(d / "base.gguf", model)
    base = BaseTensors.from_gguf(base_path)
    wide_model, wide_slot = _adapter(hidden_size=48)
    wide_base = BaseTensors.from_gguf(_base_gguf(d / "wide-base.gguf", wide_model))
    return SimpleNamespace(dir=d, base_path=base_path, base=base, slot=slot, wide_slot=wide_slot,
                           good=write_adapter(d / "good.gguf", slot.parameters(), 8.0, base, adapter="reasoner"),
                           other=write_adapter(d / "other.gguf", wide_slot.parameters(), 8.0, wide_base, adapter="reasoner"))


def _cut(files, name: str, where) -> Path:
    """A copy of the good adapter cut at byte ``where(size, start of the tensor data)``."""
    data = files.good.read_bytes()
    start = min(int(t.data_offset) for t in gguf.GGUFReader(str(files.good)).tensors)
    path = files.dir / f"cut-{name}.gguf"
    path.write_bytes(data[:where(len(data), start)])
    return path


CUTS = {  # where the file ends: GGUF = magic, version, counts (24 bytes), metadata, tensor table, tensor data
    "empty": lambda n, start: 0,
    "mid-magic": lambda n, start: 2,
    "mid-header": lambda n, start: 16,
    "mid-metadata": lambda n, start: 60,
    "mid-tensor-table": lambda n, start: start // 2,
    "before-tensor-data": lambda n, start: start,
    "mid-tensor-data": lambda n, start: (start + n) // 2,
    "last-byte-missing": lambda n, start: n - 1,
}


def _one_line(e: pytest.ExceptionInfo, path: Path) -> None:
    assert "\n" not in str(e.value) and str(path) in str(e.value), str(e.value)


@pytest.mark.parametrize("cut", list(CUTS), ids=list(CUTS))
def test_truncated_adapter_is_refused_in_one_line(files, cut):
    path = _cut(files, cut, CUTS[cut])
    with pytest.raises(ValueError, match=f"{re.escape(str(path))}.* is not a readable GGUF file, or is truncated.*"
                                         "write or download it again") as e:
        check_adapter(path, files.base)
    _one_line(e, path)


def test_truncated_base_model_is_refused_in_one_line(files):
    path = files.dir / "cut-base.gguf"
    path.write_bytes(files.base_path.read_bytes()[:-7])
    with pytest.raises(ValueError, match="is truncated") as e:
        BaseTensors.from_gguf(path)
    _one_line(e, path)


class FakeLlama:
    """llama.cpp's adapter calls, recorded: ``init`` hands out ``"adapter-N"`` (None when ``refuse``)."""

    def __init__(self) -> None:
        self.inits: list[bytes] = []
        self.freed: list[str] = []
        self.refuse = False

    def llama_set_adapters_lora(self, *args):
        return 0

    def llama_adapter_lora_init(self, model, path: bytes):
        self.inits.append(path)
        return None if self.refuse else f"adapter-{len(self.inits)}"

    def llama_adapter_lora_free(self, adapter: str) -> None:
        self.freed.append(adapter)


def _engine(files) -> Engine:
    """An :class:`Engine` of the tiny base with no llama.cpp behind it (no context yet: nothing to attach to)."""
    engine = Engine.__new__(Engine)
    engine.lib, engine.model, engine.ctx, engine.path, engine.past = FakeLlama(), SimpleNamespace(model=None), None, \
        files.base_path, []
    engine.adapter, engine.adapter_path, engine.adapter_scale, engine._base_tensors = None, None, 1.0, files.base
    return engine


def _bad_files(files) -> dict[str, tuple[Path, str]]:
    text = files.dir / "notes.gguf"
    text.write_text("not an adapter\n")
    return {"truncated": (_cut(files, "engine", CUTS["mid-tensor-data"]), "truncated"),
            "another-base-model": (files.other, "do not fit the base weight .* another model"),
            "the-base-model-itself": (files.base_path, "not a LoRA adapter GGUF"),
            "a-text-file": (text, "not a readable GGUF file"),
            "missing": (files.dir / "missing.gguf", "does not exist")}


def test_engine_refuses_a_bad_adapter_before_llamacpp_and_keeps_the_loaded_one(files):
    engine = _engine(files)
    engine.load_adapter(files.good)
    assert engine.adapter == "adapter-1" and engine.adapter_path == files.good
    for case, (path, what) in _bad_files(files).items():
        with pytest.raises(ValueError, match=what) as e:
            engine.load_adapter(path)
        _one_line(e, path)
        assert (engine.adapter, engine.adapter_path) == ("adapter-1", files.good), case
    assert len(engine.lib.inits) == 1 and engine.lib.freed == []  # llama.cpp never saw a bad file
    engine.lib.refuse = True  # a file that passes the checks but llama.cpp still refuses
    with pytest.raises(ValueError, match="llama.cpp refused the adapter") as e:
        engine.load_adapter(files.good)
    _one_line(e, files.good)
    assert engine.adapter == "adapter-1" and engine.lib.freed == []
    engine.lib.refuse = False
    engine.load_adapter(files.good)  # and the next good one replaces it
    assert engine.adapter == "adapter-3" and engine.lib.freed == ["adapter-1"]


def _reasoner(files) -> EngineDecoder:
    """The engine decoder's adapter sync over :func:`_engine` (no tokenizer or turns needed to sync)."""
    r = EngineDecoder.__new__(EngineDecoder)
    r.engine, r.adapter_syncs, r._adapter_dir = _engine(files), 0, None
    return r


def test_reasoner_sync_refuses_another_models_weights_and_a_truncated_peft_dir(files, tmp_path):
    r = _reasoner(files)
    r.sync_adapter(files.slot.parameters(), alpha=8.0, name="reasoner")
    loaded = r.engine.adapter
    with pytest.raises(ValueError, match="do not fit the base weight .* another model"):
        r.sync_adapter(files.wide_slot.parameters(), alpha=8.0, name="reasoner")
    assert not list(r._adapter_dir.iterdir())  # refused before a file was written

    files.slot.base.peft.save_pretrained(str(tmp_path / "peft"), selected_adapters=["reasoner"])
    d = next(p.parent for p in (tmp_path / "peft").rglob("adapter_config.json"))
    weights = d / "adapter_model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(ValueError, match="cannot be read, truncated or not safetensors.*save the adapter again") as e:
        r.sync_adapter(d)
    _one_line(e, weights)
    (d / "adapter_config.json").write_text('{"r": 4, "lora_alpha":')
    with pytest.raises(ValueError, match="is not valid JSON") as e:
        read_peft_dir(d)
    _one_line(e, d / "adapter_config.json")
    assert r.engine.adapter == loaded and r.adapter_syncs == 1
