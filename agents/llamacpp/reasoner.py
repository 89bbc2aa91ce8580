"""A reasoner decoded by llama.cpp: ``llamacpp:default`` (the embedded GGUF) or ``llamacpp:PATH.gguf``.

:func:`LlamaCppReasoner` is :class:`agents.reasoner.Reasoner` on an
:class:`agents.llamacpp.decoder.EngineDecoder`: the same turns as the torch reasoner (the same HF
tokenizer -- the one :mod:`agents.hf.loading` uses for the torch model, or the one transformers reads from
the GGUF -- the same chat-template prompt, turn glue, delimiters, lead-ins, stop rules and caps), so it
plays under every turn protocol; only the forward passes differ: the GGUF's own (here 4-bit) weights.
Records carry log-probs from llama.cpp's logits under :mod:`agents.hf.sampling`'s convention, so a torch
model can rescore them (``benchmarks/runtime/rollout.py`` measures the mismatch).

Frozen (``rsim eval``, planner-only training, the plug-in reasoner) it has no scorer and is not
:class:`agents.base.Trainable`. With ``model.reasoner_lora.enabled=true`` (:func:`build_trainable`) its
scorer is the torch :class:`agents.reasoner.Reasoner`'s LoRA learner on the embedded model's dequantised
weights (shared with a LoRA planner on ``default``): it scores records with gradients, is the KL
reference (adapter off) and is what optimizers and checkpoints see; at every reset the adapter is written
as a GGUF adapter and loaded on the engine when its tensors changed (:meth:`EngineDecoder.sync`), so the
rollouts of step t+1 use step t's weights. The engine's log-probs differ slightly from torch's: pair it
with ``train.grpo.tis_cap``; ``studies/engine_lora.py`` measures the mismatch. Only ``llamacpp:default``
trains (its torch twin is ``default``).

``llamacpp:q8_0`` decodes the embedded weights re-rounded to Q8_0 (built once offline from the shipped file,
:func:`agents.embedded.embedded_engine_gguf_path`): llama.cpp has batched CPU kernels for Q8_0 and not for Q4_1, so
it is faster (1.26-1.33x in one run), at a mean |d log p| to torch of 0.018 against the shipped file's 0.014;
``llamacpp:default`` stays the shipped file, which every committed engine result used (docs/lean.md).

Spec options after ``#``: ``n_ctx`` (tokens per conversation, default 2048), ``threads`` (default:
``OMP_NUM_THREADS`` or all cores), ``unified`` (0, default: one KV stream per copy; 1: one buffer
for all copies, faster but copies no longer decode independently, see :class:`agents.llamacpp.engine.Engine`), e.g. ``llamacpp:default#n_ctx=4096&threads=2``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


from ..decoding.turns import Turns
from ..reasoner import Reasoner, ReasonerConfig
from .decoder import EngineDecoder
from .engine import Engine

__all__ = ["LlamaCppReasoner", "build", "build_trainable", "load_tokenizer", "parse_spec"]

_OPTIONS = {"n_ctx": 1, "threads": 1, "unified": 0}  # option -> its smallest value


def parse_spec(rest: str) -> tuple[str, dict[str, int]]:
    """``"default"`` / ``"PATH.gguf"`` plus ``#key=value&...`` options -> ``(gguf path, options)``."""
    target, _, opts = rest.partition("#")
    options: dict[str, int] = {}
    for item in filter(None, opts.split("&")):
        key, eq, value = item.partition("=")
        if not eq or key not in _OPTIONS or not value.isdigit() or int(value) < _OPTIONS[key] or (key == "unified" and int(value) > 1):
            raise ValueError(f"reasoner spec 'llamacpp:{rest}': option {item!r} is not KEY=N with KEY one of "
                             f"{sorted(_OPTIONS)} and N an integer >= 1 (unified: 0 or 1).")
        options[key] = int(value)
    if not target or target == "default":
        from ..embedded import embedded_gguf_path

        return str(embedded_gguf_path()), options
    if target == "q8_0":  # the embedded weights re-rounded to Q8_0: faster batched kernels, see docs/lean.md
        from ..embedded import embedded_engine_gguf_path

        return str(embedded_engine_gguf_path()), options
    path = Path(target).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        raise ValueError(f"reasoner spec 'llamacpp:{rest}': {str(path)!r} is not an existing .gguf file; pass "
                         "llamacpp:PATH.gguf or llamacpp:default (the embedded model, python -m agents.embedded).")
    return str(path), options


def load_tokenizer(gguf: str | Path) -> Any:
    """The HF tokenizer the torch reasoner would use for ``gguf``: the converted embedded model's for
    the embedded file, else the one transformers builds from the GGUF's own vocabulary and template."""
    from transformers import AutoTokenizer

    from ..embedded import is_embedded_gguf
    from ..hf.loading import DEFAULT_SPEC, resolve

    gguf = Path(gguf)
    if is_embedded_gguf(gguf):
        return AutoTokenizer.from_pretrained(resolve(DEFAULT_SPEC))
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def build(rest: str, ctx: Any) -> Any:
    """Agent-registry builder for ``llamacpp:default`` / ``llamacpp:PATH.gguf[#n_ctx=..&threads=..]``."""
    from ..registry import Built

    if ctx.role != "reasoner":
        raise ValueError("spec 'llamacpp:...' is a reasoner; a planner needs another spec (e.g. default).")
    if getattr(ctx, "frozen", "same") != "same":
        raise ValueError(f"model.frozen={ctx.frozen}: the llamacpp: reasoner decodes the GGUF's own weights as they "
                         "are; drop model.frozen (or use it with a torch reasoner spec).")
    if getattr(ctx.lora, "enabled", False):  # trained: rollouts here, updates in torch (the LoRA scorer)
        return build_trainable(rest, ctx)
    path, options = parse_spec(rest)
    engine = Engine(path, **options)
    config = ctx.config if isinstance(ctx.config, ReasonerConfig) else ReasonerConfig(seed=ctx.seed)
    reasoner = LlamaCppReasoner(engine, load_tokenizer(path), config)
    return Built(reasoner, {"kind": "llamacpp", "gguf": path, "n_ctx": engine.n_ctx, "threads": engine.threads,
                            "unified": engine.unified})


def build_trainable(rest: str, ctx: Any) -> Any:
    """Registry builder for ``llamacpp:default`` with ``ctx.lora.enabled`` (module docstring)."""
    from ..embedded import is_embedded_gguf
    from ..hf.loading import load_causal_lm
    from ..registry import Built, _torch_dtype, _with_lora

    path, options = parse_spec(rest)
    if not is_embedded_gguf(path):
        raise ValueError(f"a LoRA reasoner on the engine needs a torch twin of the GGUF to learn on; only "
                         f"llamacpp:default (the embedded model, or its llamacpp:q8_0 copy) has one, not {path!r}. Use "
                         "llamacpp:default or a torch reasoner spec.")
    learner = _with_lora("default", ctx, lambda: load_causal_lm("default", dtype=_torch_dtype(ctx.dtype))).agent
    engine = Engine(path, **options)
    return Built(LlamaCppReasoner(engine, learner.tokenizer, learner.config, scorer=learner.scorer),
                 {"kind": "llamacpp", "gguf": path, "n_ctx": engine.n_ctx, "threads": engine.threads,
                  "unified": engine.unified, "lora": True, "learner": "default"})


def LlamaCppReasoner(engine: Engine, tokenizer: Any, config: ReasonerConfig | None = None,
                     scorer: Any = None) -> Reasoner:
    """A :class:`agents.reasoner.Reasoner` that decodes on the llama.cpp ``engine`` (module docstring).

    Args:
        engine: The :class:`agents.llamacpp.engine.Engine` on the GGUF.
        tokenizer: The GGUF's tokenizer (checked against the engine's own vocabulary).
        config: How to decode.
        scorer: A torch LoRA learner on the GGUF's weights (:class:`agents.hf.decoder.TorchLM`): the reasoner
            trains, and its adapter is sent to the engine at every reset when it changed.
    """
    config = config or ReasonerConfig()
    turns = Turns(tokenizer, config)
    return Reasoner(config=config, decoder=EngineDecoder(engine, turns), scorer=scorer, turns=turns)
