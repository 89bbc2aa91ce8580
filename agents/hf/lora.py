"""LoRA adapters (through ``peft``) on one frozen base model shared by the planner and the reasoner.

When both agents are built from the same model spec with LoRA on, they share **one** copy of the
base weights in memory: the causal LM is loaded once, wrapped by ``peft`` with two adapters
(``"planner"`` and ``"reasoner"``), and

* the reasoner runs the causal LM with its adapter active;
* the planner runs the same decoder (``get_decoder()``) with its adapter active, plus its own
  fully trainable linear head;
* the KL reference of either agent is the same base with the adapters disabled (no third copy).

Which adapter a forward uses is per-base state, switched by :meth:`AdapterSlot.active` around every
agent entry point (``act``, ``score``). We set peft's per-layer active/disabled flags directly
instead of calling ``set_adapter`` / ``disable_adapter``, because those also flip ``requires_grad``
of the adapter weights, which would silently drop the other agent's adapter from its optimizer.

What is trained (and checkpointed) is :class:`Trained`: the adapter weights (+ the planner head),
a few megabytes instead of the whole model.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import torch

__all__ = ["LoraSpec", "SharedBase", "AdapterSlot", "Trained", "base_digest", "cast_copy"]


@dataclass(frozen=True)
class LoraSpec:
    """LoRA adapter settings for one agent (``peft``); ``enabled=False`` trains every weight."""

    enabled: bool = False
    """Train a LoRA adapter on a frozen base instead of the whole model."""
    rank: int = 16
    """Rank r of the low-rank update."""
    alpha: float = 32.0
    """Scaling numerator: the update is ``(alpha / rank) * B @ A``."""
    dropout: float = 0.0
    """Dropout on the adapter's input (training forwards only)."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    """Names of the linear layers that get an adapter (Llama/Qwen naming)."""
    merged_sampler: bool = True
    """Reasoner decoding runs on a copy of the adapted layers with the adapter merged in (plain
    linears: peft's per-layer overhead is paid per token otherwise), refreshed after each update;
    costs one copy of the adapted weights. Scoring (the loss) always runs the LoRA path."""

    def __post_init__(self) -> None:
        if isinstance(self.rank, bool) or not isinstance(self.rank, int) or self.rank < 1:
            raise ValueError(f"LoraSpec.rank={self.rank!r} is invalid: use an int >= 1 (e.g. 16).")
        if not isinstance(self.alpha, (int, float)) or not self.alpha > 0:
            raise ValueError(f"LoraSpec.alpha={self.alpha!r} is invalid: use a positive number (e.g. 2 * rank).")
        if not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ValueError(f"LoraSpec.dropout={self.dropout!r} is invalid: use a float in [0, 1).")
        if not self.target_modules or not all(isinstance(m, str) and m for m in self.target_modules):
            raise ValueError(f"LoraSpec.target_modules={self.target_modules!r} is invalid: list linear layer "
                             "names such as ('q_proj', 'v_proj').")

    def peft_config(self) -> Any:
        from peft import LoraConfig

        return LoraConfig(r=self.rank, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=list(self.target_modules), bias="none")


def _tuner_layers(model: torch.nn.Module) -> list[Any]:
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [m for m in model.modules() if isinstance(m, BaseTunerLayer)]


def base_digest(model: torch.nn.Module) -> str:
    """SHA-256 over the base weights (names + bytes, adapters excluded): the base model's identity."""
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        if "lora_" in name:
            continue
        h.update(name.replace(".base_layer", "").encode())
        h.update(str(t.dtype).encode())
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class SharedBase:
    """One frozen causal LM carrying one LoRA adapter per agent.

    Args:
        model: The causal LM (``AutoModelForCausalLM``); its weights are frozen.
        spec: The model spec it was loaded from (its identity in checkpoints, with :attr:`digest`).
    """

    def __init__(self, model: torch.nn.Module, spec: str) -> None:
        self.spec = spec
        self.peft = None
        self.model = model  # the (adapter-injected) causal LM every agent runs
        self.adapters: dict[str, LoraSpec] = {}
        self._digest: str | None = None
        self._sampler: torch.nn.Module | None = None
        self._sampler_key: tuple | None = None
        model.requires_grad_(False)

    def add(self, name: str, lora: LoraSpec) -> "AdapterSlot":
        """Add adapter ``name`` (trainable; everything else stays frozen) and return its slot."""
        if name in self.adapters:
            raise ValueError(f"adapter {name!r} already exists on base {self.spec!r}")
        if self.peft is None:
            from peft import get_peft_model

            self.peft = get_peft_model(self.model, lora.peft_config(), adapter_name=name)
            self.model = self.peft.get_base_model()
        else:
            self.peft.add_adapter(name, lora.peft_config())
        self.adapters[name] = lora
        for n, p in self.model.named_parameters():  # only adapter weights train; no flipping later
            p.requires_grad_("lora_" in n)
        return AdapterSlot(self, name)

    def adapter_parameters(self, name: str) -> dict[str, torch.nn.Parameter]:
        """Adapter ``name``'s weights by their names in :attr:`model`."""
        return {n: p for n, p in self.model.named_parameters() if "lora_" in n and f".{name}." in n}

    def _layers(self) -> list[Any]:
        if getattr(self, "_tuner_cache", None) is None or self._tuner_cache[0] != len(self.adapters):
            self._tuner_cache = (len(self.adapters), _tuner_layers(self.model))
        return self._tuner_cache[1]

    def _set(self, adapter: str | None) -> tuple[list, list]:
        layers = self._layers()
        before = ([layer._active_adapter for layer in layers], [layer._disable_adapters for layer in layers])
        for layer in layers:
            if adapter is None:
                layer._disable_adapters = True
            else:
                layer._active_adapter = [adapter]
                layer._disable_adapters = False
        return before

    @contextlib.contextmanager
    def using(self, adapter: str | None) -> Iterator[None]:
        """Forwards inside run with ``adapter`` active (``None``: the bare base, adapters off)."""
        layers = self._layers()
        active, disabled = self._set(adapter)
        try:
            yield
        finally:
            for layer, a, d in zip(layers, active, disabled):
                layer._active_adapter, layer._disable_adapters = a, d

    def sampler(self, adapter: str, dtype: torch.dtype | None = None) -> torch.nn.Module:
        """A plain causal LM computing base + ``adapter`` with merged weights, for decoding only.

        Only the adapted linears have their own storage (base + scale * B @ A); embeddings, norms and
        everything else are the base's own tensors. Re-merged when the adapter's weights changed
        (an optimizer step) since the last call.
        """
        dtype = dtype or next(self.model.parameters()).dtype
        if self._sampler is None or next(self._sampler.parameters()).dtype != dtype:
            self._sampler, self._sampler_key = self._build_sampler(dtype), None
        params = self.adapter_parameters(adapter).values()
        key = (adapter, tuple(p._version for p in params), tuple(p.data_ptr() for p in params))
        if key != self._sampler_key:
            with torch.no_grad():
                for name, layer in self._named_lora_layers():
                    w = layer.base_layer.weight
                    if adapter in layer.lora_A:
                        w = w + layer.get_delta_weight(adapter).to(w.dtype)
                    self._sampler.get_submodule(name).weight.copy_(w)
            self._sampler_key = key
        return self._sampler

    def _named_lora_layers(self) -> list[tuple[str, Any]]:
        return [(n, m) for n, m in self.model.named_modules() if hasattr(m, "base_layer") and hasattr(m, "lora_A")]

    def _build_sampler(self, dtype: torch.dtype) -> torch.nn.Module:
        """Adapted linears get their own storage; the rest is the base's (or a cast copy if ``dtype`` differs)."""
        from transformers import AutoModelForCausalLM

        cfg = self.model.config
        with torch.device("meta"):
            sampler = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        own = {f"{n}.weight" for n, _ in self._named_lora_layers()}
        shared = {n.replace(".base_layer", ""): p for n, p in self.model.named_parameters() if "lora_" not in n}
        for name, _ in list(sampler.named_parameters()):
            owner, _, leaf = name.rpartition(".")
            module, t = sampler.get_submodule(owner), shared[name]
            if name in own or t.dtype != dtype:
                copy = torch.empty_like(t, dtype=dtype)
                if name not in own:
                    copy.copy_(t.detach())
                setattr(module, leaf, torch.nn.Parameter(copy, requires_grad=False))
            else:
                setattr(module, leaf, t)
        for name, _ in list(sampler.named_buffers()):  # rotary inv_freq etc.: the base's values
            owner, _, leaf = name.rpartition(".")
            sampler.get_submodule(owner).register_buffer(leaf, dict(self.model.named_buffers())[name].clone(),
                                                         persistent=False)
        if getattr(cfg, "tie_word_embeddings", False):
            sampler.lm_head.weight = sampler.get_input_embeddings().weight
        return sampler.eval().requires_grad_(False)

    @property
    def digest(self) -> str:
        """:func:`base_digest` of the base weights (computed once; they never change)."""
        if self._digest is None:
            with torch.no_grad():
                self._digest = base_digest(self.model)
        return self._digest

    def identity(self) -> dict[str, Any]:
        """What a checkpoint records about the base: spec, content hash, adapters."""
        return {"spec": self.spec, "sha256": self.digest, "adapters": {k: asdict(v) for k, v in self.adapters.items()}}


def cast_copy(model: torch.nn.Module, dtype: torch.dtype, previous: torch.nn.Module | None = None) -> torch.nn.Module:
    """``model`` in ``dtype`` for decoding only, reusing ``previous`` and re-copying only after ``model`` changed."""
    params = list(model.parameters())
    key = tuple(p._version for p in params) + tuple(p.data_ptr() for p in params)
    if previous is None:
        import copy

        previous = copy.deepcopy(model).to(dtype).eval().requires_grad_(False)
        previous._rsim_key = key
    elif getattr(previous, "_rsim_key", None) != key:
        with torch.no_grad():
            for dst, src in zip(previous.parameters(), params):
                dst.copy_(src)
        previous._rsim_key = key
    return previous


class AdapterSlot:
    """An agent's handle on its adapter in a :class:`SharedBase`."""

    def __init__(self, base: SharedBase, name: str) -> None:
        self.base, self.name = base, name

    def active(self) -> contextlib.AbstractContextManager:
        """Context: this agent's adapter is the active one."""
        return self.base.using(self.name)

    def disabled(self) -> contextlib.AbstractContextManager:
        """Context: the bare base (the KL reference)."""
        return self.base.using(None)

    def parameters(self) -> dict[str, torch.nn.Parameter]:
        return self.base.adapter_parameters(self.name)

    def sampler(self) -> torch.nn.Module:
        """The base with this adapter merged in, for decoding (:meth:`SharedBase.sampler`)."""
        return self.base.sampler(self.name)


class Trained(torch.nn.Module):
    """The trained tensors of an agent on a shared frozen base, as one module.

    Its parameters *are* the agent's adapter (and head) parameters — the same tensor objects — so an
    optimizer over ``Trained.parameters()`` updates the agent, and ``state_dict`` / ``load_state_dict``
    (what checkpoints save and load) hold only them.
    """

    def __init__(self, params: dict[str, torch.nn.Parameter]) -> None:
        super().__init__()
        for name, p in params.items():
            self.register_parameter(name.replace(".", "__"), p)
