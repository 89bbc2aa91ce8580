"""A PEFT LoRA adapter of a llama-architecture model as a llama.cpp GGUF adapter file.

llama.cpp applies a LoRA adapter at run time (``llama_adapter_lora_init``) to a quantised base it
never re-reads, so a training step only has to write the adapter (a few MB) in this format:

* metadata ``general.type = "adapter"``, ``general.architecture`` = the base's (llama.cpp refuses
  another), ``adapter.type = "lora"`` and ``adapter.lora.alpha`` (float32): llama.cpp scales the
  update by ``alpha / rank`` with rank read from the tensors, PEFT's (non-rslora) scale;
* per adapted linear two tensors named after the base tensor, ``blk.N.attn_q.weight.lora_a`` /
  ``.lora_b``. ggml's shapes are numpy's reversed, so PEFT's own layouts fit as they are:
  ``lora_A`` ``[rank, in]`` and ``lora_B`` ``[out, rank]`` (llama.cpp checks ``a.ne[0] == W.ne[0]``,
  ``b.ne[1] == W.ne[1]``, ``a.ne[1] == b.ne[0]``);
* the llama converter stores ``attn_q`` / ``attn_k`` with their rows permuted per head (rotary
  halves interleaved), and transformers undoes that when it reads the GGUF. The adapter's update
  ``B @ A`` must follow the rows of the stored weight, so ``lora_B`` of q and k gets the same row
  permutation (``A`` acts on the input side and is unchanged).

Every name and shape is checked here against the base GGUF's own tensor table before a file is
written or loaded (:func:`check_adapter`): llama.cpp only logs why it refused an adapter.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["BaseTensors", "HF_TO_GGUF", "adapter_tensors", "write_adapter", "check_adapter"]

HF_TO_GGUF = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
"""Llama/Qwen linear names -> llama.cpp tensor names (``blk.N.<name>.weight``)."""

ARCHS = ("llama",)
"""Base architectures whose tensor layout this writer knows (q/k row permutation included)."""

_KEY = re.compile(r"layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])(?:\.([^.]+))?\.weight$")


@dataclass(frozen=True)
class BaseTensors:
    """What an adapter must fit: the base GGUF's architecture, head counts and 2-D tensor shapes."""

    arch: str
    """``general.architecture``."""
    n_head: int
    """Query heads (``<arch>.attention.head_count``)."""
    n_head_kv: int
    """Key/value heads (``<arch>.attention.head_count_kv``)."""
    shapes: Mapping[str, tuple[int, int]]
    """Base tensor name -> torch layout ``(out, in)``."""
    source: str = ""
    """The file it was read from (for messages)."""

    @classmethod
    def from_gguf(cls, path: str | Path) -> "BaseTensors":
        """Read the tables of a model (or adapter) GGUF file, without loading its weights."""
        reader = _reader(path)
        arch = _field(reader, "general.architecture", path)
        n_head = int(_field(reader, f"{arch}.attention.head_count", path, default=0))
        n_head_kv = int(_field(reader, f"{arch}.attention.head_count_kv", path, default=n_head))
        shapes = {t.name: (int(t.shape[1]), int(t.shape[0])) for t in reader.tensors if len(t.shape) == 2}
        return cls(arch, n_head, n_head_kv, shapes, str(path))


def _reader(path: str | Path) -> Any:
    import gguf

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"GGUF file {str(path)!r} does not exist; pass an existing .gguf file.")
    try:
        return gguf.GGUFReader(str(path))  # parses every table and maps every tensor: a cut file fails here
    except Exception as e:  # noqa: BLE001 -- a truncated file fails anywhere in the parser (ValueError, IndexError)
        detail = " ".join(f"{type(e).__name__}: {e}".split())[:200]
        raise ValueError(f"{str(path)!r} is not a readable GGUF file, or is truncated ({detail}); write or "
                         "download it again.") from e


def _field(reader: Any, key: str, path: Any, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise ValueError(f"{str(path)!r} has no {key!r} metadata; is it a llama.cpp GGUF file?")
        return default
    return field.contents()


def _permute_rows(b: np.ndarray, n_head: int) -> np.ndarray:
    """The llama converter's per-head row order for q/k: rows (head, half, i) are stored as (head, i, half)."""
    out = b.shape[0]
    if n_head < 1 or out % (2 * n_head):
        raise ValueError(f"cannot permute {out} rows into {n_head} heads of rotary halves; wrong base model?")
    return b.reshape(n_head, 2, out // n_head // 2, *b.shape[1:]).swapaxes(1, 2).reshape(b.shape)


def _split_key(key: str, adapter: str | None) -> tuple[int, str, str] | None:
    """``(layer, hf module, "A"|"B")`` of a PEFT adapter weight name, or None for other tensors."""
    m = _KEY.search(key.replace("__", "."))  # agents.hf.lora.Trained names use "__" for "."
    if m is None:
        return None
    layer, module, ab, name = m.groups()
    if adapter is not None and name not in (None, adapter):
        return None
    return int(layer), module, ab


def adapter_tensors(state: Mapping[str, Any], base: BaseTensors, adapter: str | None = None) -> dict[str, np.ndarray]:
    """PEFT adapter weights -> ``{"blk.N.attn_q.weight.lora_a": float32 array, ...}`` laid out for ``base``.

    Args:
        state: Adapter weights by PEFT name (``...layers.3.self_attn.q_proj.lora_A[.NAME].weight``; torch
            tensors or arrays). Other entries (a planner head) are ignored.
        base: The base GGUF's tables (:meth:`BaseTensors.from_gguf`).
        adapter: Keep only this PEFT adapter's weights (a shared base carries one per agent).

    Raises:
        ValueError: no adapter weights, a module llama.cpp has no name for, an A without its B, or a
            shape that does not fit ``base`` (another model's adapter).
    """
    if base.arch not in ARCHS:
        raise ValueError(f"{base.source or 'the base'} is a {base.arch!r} model; LoRA export knows {ARCHS} only.")
    pairs: dict[tuple[int, str], dict[str, np.ndarray]] = {}
    for key, value in state.items():
        split = _split_key(key, adapter)
        if split is None:
            continue
        layer, module, ab = split
        if module not in HF_TO_GGUF:
            raise ValueError(f"adapter weight {key!r}: llama.cpp has no tensor for module {module!r}; target only "
                             f"{sorted(HF_TO_GGUF)} (model.reasoner_lora.target_modules).")
        array = value.detach().float().cpu().numpy() if hasattr(value, "detach") else np.asarray(value, np.float32)
        pairs.setdefault((layer, module), {})[ab] = np.ascontiguousarray(array, dtype=np.float32)
    if not pairs:
        raise ValueError(f"no LoRA weights (names like '...layers.N.self_attn.q_proj.lora_A.weight') in the "
                         f"{len(state)} tensors given" + (f" for adapter {adapter!r}" if adapter else "") + ".")
    out: dict[str, np.ndarray] = {}
    for (layer, module), ab in sorted(pairs.items()):
        name = f"blk.{layer}.{HF_TO_GGUF[module]}.weight"
        if set(ab) != {"A", "B"}:
            raise ValueError(f"layer {layer} {module}: lora_A and lora_B must come together, got only {sorted(ab)}.")
        a, b = ab["A"], ab["B"]
        _check_pair(name, a.shape, b.shape, base)
        if module == "q_proj":
            b = _permute_rows(b, base.n_head)
        elif module == "k_proj":
            b = _permute_rows(b, base.n_head_kv)
        out[f"{name}.lora_a"], out[f"{name}.lora_b"] = a, np.ascontiguousarray(b)
    return out


def _check_pair(name: str, a: tuple[int, ...], b: tuple[int, ...], base: BaseTensors) -> None:
    where = base.source or "the base model"
    if name not in base.shapes:
        raise ValueError(f"LoRA tensor {name!r} has no base tensor in {where} (it has {len(base.shapes)} 2-D tensors); "
                         "the adapter belongs to another model.")
    out_dim, in_dim = base.shapes[name]
    if len(a) != 2 or len(b) != 2 or a[1] != in_dim or b[0] != out_dim or a[0] != b[1]:
        raise ValueError(f"LoRA tensor {name!r}: lora_A {tuple(a)} / lora_B {tuple(b)} do not fit the base weight "
                         f"[{out_dim}, {in_dim}] of {where} (want lora_A [r, {in_dim}], lora_B [{out_dim}, r]); "
                         "the adapter belongs to another model.")


def write_adapter(path: str | Path, state: Mapping[str, Any], alpha: float, base: BaseTensors | str | Path,
                  adapter: str | None = None) -> Path:
    """Write ``state``'s LoRA weights as a llama.cpp adapter GGUF at ``path`` (atomically); return the path.

    ``alpha`` is PEFT's ``lora_alpha`` (the update is ``alpha / r * B @ A``); ``base`` the base GGUF
    (path or :class:`BaseTensors`) whose names and shapes the adapter must fit.
    """
    import gguf

    if isinstance(base, (str, Path)):
        base = BaseTensors.from_gguf(base)
    if not isinstance(alpha, (int, float)) or not alpha > 0:
        raise ValueError(f"alpha={alpha!r}: use PEFT's positive lora_alpha (agents.hf.lora.LoraSpec.alpha).")
    tensors = adapter_tensors(state, base, adapter)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-", suffix=".gguf")
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(tmp, base.arch)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
        for name, array in tensors.items():
            writer.add_tensor(name, array)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def check_adapter(path: str | Path, base: BaseTensors) -> dict[str, Any]:
    """Check that the adapter GGUF at ``path`` fits ``base`` as llama.cpp will; return its summary.

    Raises:
        ValueError: not an adapter file, another architecture, a tensor the base lacks or of the wrong shape.
    """
    reader = _reader(path)
    file_type = _field(reader, "general.type", path, default="model")
    if file_type != "adapter" or _field(reader, "adapter.type", path, default="") != "lora":
        raise ValueError(f"{str(path)!r} is not a LoRA adapter GGUF (general.type={file_type!r}); write one with "
                         "agents.llamacpp.gguf_lora.write_adapter.")
    arch = _field(reader, "general.architecture", path)
    if arch != base.arch:
        raise ValueError(f"adapter {str(path)!r} is for a {arch!r} model but {base.source or 'the base'} is {base.arch!r}.")
    shapes = {t.name: tuple(int(d) for d in reversed(t.shape)) for t in reader.tensors}
    names = {n.rsplit(".", 1)[0] for n in shapes}
    for name in sorted(names):
        a, b = shapes.get(f"{name}.lora_a"), shapes.get(f"{name}.lora_b")
        if a is None or b is None:
            raise ValueError(f"adapter {str(path)!r}: {name!r} needs both .lora_a and .lora_b tensors.")
        try:
            _check_pair(name, a, b, base)
        except ValueError as e:  # name the file that does not fit, not only the base
            raise ValueError(f"adapter {str(path)!r}: {e}") from None
    ranks = {shapes[f"{n}.lora_a"][0] for n in names}
    return {"tensors": len(names), "ranks": sorted(ranks), "alpha": float(_field(reader, "adapter.lora.alpha", path))}
