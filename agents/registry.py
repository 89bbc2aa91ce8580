"""One spec grammar for every agent: ``build_agent(spec, context) -> Built(agent, info)``.

``rsim train``, ``rsim eval`` and the benchmarks all build their planner and reasoner here, so they
accept the same specs:

==========================  ==================================================================
spec                        agent
==========================  ==================================================================
``default``                 the embedded SmolLM2-135M-Instruct (offline; :mod:`agents.hf.loading`)
hub id or local model dir   that model (``Qwen/Qwen2.5-0.5B-Instruct``, ``./my-model``)
saved planner dir           a :meth:`Planner.save_pretrained` dir (has ``planner.json``)
run or checkpoint dir       the agent trained by ``rsim train`` (its newest ``step_*``); ``RUN_DIR#base=SPEC``
                            decodes its trained weights on another spec of the same base model (a run trained
                            with ``llamacpp:default`` rollouts evaluated on torch ``default``, or the reverse)
``tiny``                    random-init tiny Llama + byte tokenizer (the real LLM agent classes)
``toy``                     MLP toy agents (:mod:`agents.scripted.toy`; ``rsim train --preset tiny``)
``template[:p]``            scripted reasoner, right with probability ``p`` (reasoner only)
``untrained:SPEC``          SPEC's base model with fresh weights where training would have put
                            them (a planner gets a new head; a run dir gives its base model)
``replay:SPEC``             SPEC's reasoner (greedy, frozen) with every step cached on disk and
                            read back when seen again (:mod:`agents.replay.reasoner`)
``tree:PATH``               the plan tree file PATH: every step of a frozen greedy reasoner under every plan of
                            <= L rounds, read back, never decoded (:mod:`agents.replay.plan_tree`)
``openai:MODEL@URL``        a reasoner served by an OpenAI-compatible API (completions endpoint: any protocol)
                            (:mod:`agents.served.reasoner`; ``#max_concurrency=16&...`` options); LoRA-trainable
                            on vLLM with ``reasoner_lora`` enabled (:mod:`agents.served.train`)
``llamacpp:default``        a reasoner decoded by llama.cpp from the embedded GGUF, LoRA-trainable with
                            ``reasoner_lora`` enabled (:mod:`agents.llamacpp.reasoner`: torch learns, the engine
                            rolls out, the adapter synced each step), or
``llamacpp:PATH.gguf``      frozen, from any GGUF file (:mod:`agents.llamacpp.reasoner`; ``pip install 'rsim[llamacpp]'``)
``llamacpp:q8_0``           the embedded weights as a Q8_0 GGUF copy (faster batched kernels; built once, offline)
``module:factory``          your own agent: ``factory(context)`` returns an object following
                            :class:`agents.base.Policy` (``Trainable`` to train it)
==========================  ==================================================================

Adding an agent kind (e.g. an API-served reasoner ``openai:MODEL@URL``) is one new module with a
``build(rest: str, ctx: AgentContext) -> Built`` function plus one line in :data:`PREFIXES`::

    PREFIXES["openai"] = lazy("agents.served.reasoner", "build")
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from .runs import RunCheckpoint, find_checkpoint, weights_file

__all__ = ["AgentContext", "Built", "Builder", "build_agent", "check_spec", "freeze", "FROZEN", "NAMES", "PREFIXES",
           "spec_help", "lazy"]

ROLES = ("planner", "reasoner")
FROZEN = ("same", "bfloat16", "int8", "compile")


@dataclass(frozen=True)
class AgentContext:
    """Everything besides the spec that building an agent may need."""

    role: str
    """"planner" or "reasoner"."""
    config: Any = None
    """The role's :class:`PlannerConfig` / :class:`ReasonerConfig` (None = its defaults)."""
    dtype: str = "float32"
    """Weights dtype of loaded models ("float32" or "bfloat16")."""
    device: Any = "cpu"
    """torch device the agent runs on."""
    seed: int = 0
    """Seed of random-init models (tiny, toy) and scripted agents."""
    max_rounds: int = 8
    """Rounds per episode (the toy planner's round features)."""
    problems: Sequence[Any] = field(default=(), compare=False)
    """Problems being played (the template reasoner's answer oracle)."""
    lora: Any = None
    """The role's :class:`agents.hf.lora.LoraSpec`; enabled = a LoRA adapter on a frozen base (None = off)."""
    frozen: str = "same"
    """For an agent that is never trained: "same" (as loaded), "bfloat16" or "int8" (dynamic int8 linears)."""
    shared: dict = field(default_factory=dict, compare=False)
    """Bases loaded so far, by (spec, dtype, device): pass one dict to both roles to share one base."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"AgentContext.role={self.role!r} is invalid: use one of {ROLES}.")
        if self.frozen not in FROZEN:
            raise ValueError(f"AgentContext.frozen={self.frozen!r} is invalid: use one of {FROZEN}.")

    @property
    def greedy(self) -> bool:
        """Whether the role's config asks for argmax decisions."""
        return bool(getattr(self.config, "greedy", False))


class Built(NamedTuple):
    """An agent and a JSON-able description of what was loaded (reported by ``rsim eval``)."""

    agent: Any
    info: dict[str, Any]


Builder = Callable[[str, AgentContext], Built]
"""``builder(rest_of_spec, context) -> Built``."""


def lazy(module: str, name: str) -> Builder:
    """A builder imported on first use (keeps heavy imports out of ``import agents.registry``)."""
    def build(rest: str, ctx: AgentContext) -> Built:
        return getattr(importlib.import_module(module), name)(rest, ctx)
    return build


# ------------------------------------------------------------------------------------ builders

def _torch_dtype(name: str) -> Any:
    import torch

    if name not in ("float32", "bfloat16"):
        raise ValueError(f"dtype={name!r} is invalid: use 'float32' or 'bfloat16'.")
    return getattr(torch, name)


def _configs(ctx: AgentContext) -> Any:
    if ctx.role == "planner":
        from .planners.llm import PlannerConfig

        return ctx.config or PlannerConfig()
    from .reasoner import ReasonerConfig

    return ctx.config or ReasonerConfig()


def _lora_on(ctx: AgentContext) -> bool:
    return bool(getattr(ctx.lora, "enabled", False))


def _hf(spec: str, ctx: AgentContext) -> Built:
    """"default", a hub id or a local model dir."""
    from .hf.loading import load_backbone, load_causal_lm

    if _lora_on(ctx):
        return _with_lora(spec, ctx, lambda: load_causal_lm(spec, dtype=_torch_dtype(ctx.dtype)))
    load = load_backbone if ctx.role == "planner" else load_causal_lm
    model, tok = load(spec, dtype=_torch_dtype(ctx.dtype))
    info = {"kind": "model", "spec": spec} | ({"frozen": ctx.frozen} if ctx.frozen != "same" else {})
    return Built(_wrap(freeze(model.to(ctx.device), ctx.frozen), tok, ctx), info)


def freeze(model: Any, how: str) -> Any:
    """``model`` as a sampling-only agent (``how`` in :data:`FROZEN`), converted in place: bf16 or int8 read
    fewer bytes per token, ``compile`` builds kernels (``benchmarks/runtime/rollout.py`` measures each)."""
    import torch

    if how == "same":
        return model
    model.requires_grad_(False)
    if how == "bfloat16":
        return model.to(torch.bfloat16)
    if how == "compile":  # same weights and tokens; the first calls build kernels (minutes on a CPU, needs a C++ compiler)
        model.forward = torch.compile(model.forward, dynamic=True)
        return model
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def _with_lora(spec: str, ctx: AgentContext, load: Callable[[], Any]) -> Built:
    """The role's agent as a LoRA adapter on the base ``spec``, loaded once per ``ctx.shared``."""
    from .hf.lora import SharedBase

    key = (spec, ctx.dtype, str(ctx.device))
    if key not in ctx.shared:
        model, tok = load()
        ctx.shared[key] = (SharedBase(model.to(ctx.device), spec), tok)
    base, tok = ctx.shared[key]
    slot = base.add(ctx.role, ctx.lora)
    model = base.model.get_decoder() if ctx.role == "planner" else base.model
    agent = _wrap(model, tok, ctx).attach_lora(slot)
    return Built(agent, {"kind": "model", "spec": spec, "lora": True, "shared_base": len(base.adapters) > 1})


def _wrap(model: Any, tok: Any, ctx: AgentContext) -> Any:
    if ctx.role == "planner":
        from .planners.llm import Planner

        return Planner(model, tok, config=_configs(ctx))
    from .reasoner import Reasoner

    return Reasoner(model, tok, config=_configs(ctx))


def _tiny(rest: str, ctx: AgentContext) -> Built:
    from .hf.loading import tiny_model

    if _lora_on(ctx):
        return _with_lora("tiny", ctx, lambda: tiny_model("causal", seed=ctx.seed))
    model, tok = tiny_model("backbone" if ctx.role == "planner" else "causal", seed=ctx.seed)
    return Built(_wrap(freeze(model.to(ctx.device), ctx.frozen), tok, ctx), {"kind": "tiny"})


def _toy(rest: str, ctx: AgentContext) -> Built:
    from .scripted.toy import ToyPlanner, ToyReasoner

    agent = (ToyPlanner(max_rounds=ctx.max_rounds, device=ctx.device) if ctx.role == "planner"
             else ToyReasoner(device=ctx.device))
    agent.greedy = ctx.greedy
    return Built(agent, {"kind": "toy"})


def _template(rest: str, ctx: AgentContext) -> Built:
    from .scripted.policies import TemplateReasoner

    if ctx.role != "reasoner":
        raise ValueError("spec 'template' is a scripted reasoner; a planner needs another spec (see `rsim train --help`).")
    try:
        p = float(rest) if rest else 1.0
    except ValueError as e:
        raise ValueError(f"spec 'template:{rest}': expected a probability, e.g. template:0.5.") from e
    oracle = {pr.question: pr.answer for pr in ctx.problems}
    return Built(TemplateReasoner(oracle=oracle, p_correct=p, seed=ctx.seed), {"kind": "template", "p_correct": p})


def _untrained(rest: str, ctx: AgentContext) -> Built:
    if not rest:
        raise ValueError("spec 'untrained:' needs a model spec after the colon, e.g. untrained:default.")
    ck = find_checkpoint(rest) if Path(rest).is_dir() else None
    base = RunCheckpoint(ck).base_spec(ctx.role) if ck is not None else rest
    if (Path(base) / "planner.json").is_file():
        base = str(Path(base) / "backbone")
    agent, info = build_agent(base, ctx)
    return Built(agent, {"kind": "untrained", "spec": rest, "loaded": info})


def split_base(spec: str, role: str) -> tuple[str, str]:
    """``RUN_DIR#base=SPEC`` -> ``(RUN_DIR, SPEC)``, or a ValueError naming the expected form."""
    run, _, opts = spec.partition("#")
    key, eq, base = opts.partition("=")
    if key != "base" or not eq or not base.strip():
        raise ValueError(f"{role} spec {spec!r}: after '#' a run dir takes only base=SPEC (e.g. runs/study#base=default, "
                         "to decode the trained weights on another spec of the same base model).")
    if not Path(run).is_dir() or find_checkpoint(Path(run)) is None:
        raise ValueError(f"{role} spec {spec!r}: {run!r} is not a run or checkpoint dir of `rsim train`; "
                         "'#base=SPEC' applies to one.")
    return run, base.strip()


def _directory(path: Path, ctx: AgentContext, base: str | None = None) -> Built:
    """A saved planner, a trainer checkpoint / run dir (``base``: decode its weights on this spec), or a model dir."""
    if ctx.role == "planner" and (path / "planner.json").is_file():
        from .planners.llm import Planner

        planner = Planner.from_pretrained(path, config=_configs(ctx), dtype=_torch_dtype(ctx.dtype))
        return Built(planner.to(ctx.device), {"kind": "save_pretrained", "path": str(path)})
    ck = find_checkpoint(path)
    if ck is not None:
        return _checkpoint(path, RunCheckpoint(ck), ctx, base)
    if (path / "config.json").is_file():
        return _hf(str(path), ctx)
    raise ValueError(f"{ctx.role} spec {str(path)!r} is neither a saved planner (planner.json), a trainer checkpoint / "
                     "run dir (state.json, checkpoints/step_*) nor a model dir (config.json); train one with "
                     "`rsim train` or pass untrained:SPEC.")


def _checkpoint(spec: Path, ck: RunCheckpoint, ctx: AgentContext, base: str | None = None) -> Built:
    from safetensors.torch import load_model

    weights = weights_file(ck.path, ctx.role)
    base = base or ck.base_spec(ctx.role)
    if not weights.is_file():
        raise ValueError(f"{ctx.role} spec {str(spec)!r}: checkpoint {ck.path} has no trained {ctx.role} "
                         f"({weights.name}); its learner ({ck.config.get('learner')}) did not train it. "
                         f"Pass its base model {base!r} instead.")
    if ctx.role == "planner" and (ck.config.get("planner") or {}).get("head_only"):
        from .planners.llm import PlannerConfig  # the run trained a head on the frozen base: its weights are the head's

        ctx = replace(ctx, config=replace(ctx.config or PlannerConfig(), head_only=True))
    agent, _ = build_agent(base, replace(ctx, max_rounds=ck.max_steps, lora=ck.lora(ctx.role)))
    if getattr(agent, "lora", None) is not None:
        ck.check_base(ctx.role, agent.lora.base.digest)
    try:
        load_model(agent.module, str(weights), device=str(ctx.device))
    except Exception as e:  # SafetensorError (truncated) or RuntimeError (another model): name the file
        raise ValueError(f"{ctx.role} spec {str(spec)!r}: {weights} does not load ({str(e).splitlines()[0][:200]}); "
                         "the checkpoint is corrupt or was written for another base model.") from e
    return Built(agent, ck.info(ctx.role))


_MODULE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")


def _plugin(spec: str, ctx: AgentContext) -> Built:
    """``package.module:factory`` -> ``factory(ctx)``."""
    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"{ctx.role} spec {spec!r}: cannot import {name!r} from module {module!r} ({e}); "
                         "a plug-in spec is 'package.module:factory' with the module on the Python path.") from e
    agent = factory(ctx)
    missing = [m for m in ("reset", "act", "records") if not hasattr(agent, m)]
    if missing or getattr(agent, "role", ctx.role) != ctx.role:
        raise TypeError(f"{ctx.role} spec {spec!r}: {name}() returned {type(agent).__name__}, which is not a "
                        f"{ctx.role} agent (missing {missing}, role {getattr(agent, 'role', None)!r}); "
                        "follow agents.base.Policy.")
    return Built(agent, {"kind": "plugin", "spec": spec})


NAMES: dict[str, Builder] = {"tiny": _tiny, "toy": _toy, "template": _template}
"""Specs that are a bare name."""

PREFIXES: dict[str, Builder] = {"template": _template, "untrained": _untrained,
                                 "openai": lazy("agents.served.reasoner", "build"),
                                 "replay": lazy("agents.replay.reasoner", "build"),
                                 "tree": lazy("agents.replay.plan_tree", "build"),
                                 "llamacpp": lazy("agents.llamacpp.reasoner", "build")}
"""Specs ``PREFIX:REST``; add a line here (with :func:`lazy`) for a new kind of agent."""

_CORE_HELP = ("default | HUB_ID | MODEL_DIR | SAVED_PLANNER_DIR | RUN_OR_CHECKPOINT_DIR | tiny | toy | "
              "template[:p] (reasoner) | untrained:SPEC")


def spec_help() -> str:
    """One-line summary of the grammar (including every added :data:`PREFIXES` kind), for ``--help``."""
    added = [f"{p}:..." for p in PREFIXES if p not in ("template", "untrained")]
    return " | ".join([_CORE_HELP, *added, "package.module:factory"])


HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
"""``org/name`` as the Hugging Face hub writes repo ids."""


def check_spec(spec: str, role: str) -> None:
    """Raise ``ValueError`` if ``spec`` cannot name a ``role`` agent, without loading anything.

    Catches what would otherwise surface as a hub error after a long import: a local path that does
    not exist (``./my-model``, ``/models/x``, ``runs/typo`` when ``runs/`` is a local dir), and a
    hub id that is not cached while ``HF_HUB_OFFLINE`` is set.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"{role} spec must be a non-empty string ({spec_help()}), got {spec!r}.")
    spec = spec.strip()
    head, sep, rest = spec.partition(":")
    if spec in NAMES or spec == "default" or Path(spec).expanduser().exists():
        return
    if "#" in spec and spec.partition(":")[0] not in PREFIXES:
        run, base = split_base(spec, role)
        return check_spec(base, role)
    if sep and head in PREFIXES:
        return check_spec(rest, role) if head in ("untrained", "replay") and rest else None
    if sep and _MODULE.match(head) and rest.isidentifier():
        return  # module:factory, imported when built
    if HUB_ID.match(spec) and not Path(spec.split("/")[0]).is_dir():
        if os.environ.get("HF_HUB_OFFLINE", "") in ("1", "true", "True") and not _in_hub_cache(spec):
            raise ValueError(f"{role} spec {spec!r} is not a local directory and not in the hub cache, and "
                             "HF_HUB_OFFLINE is set; download it first or pass a local model dir.")
        return  # a hub id: downloading it is a legitimate first load
    raise ValueError(f"{role} spec {spec!r}: no such file or directory (a hub id is org/name with no local dir "
                     f"'org'); pass an existing model dir, a run dir of `rsim train`, a hub id or one of: {spec_help()}.")


def _in_hub_cache(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
_NO_LORA = ("toy", "template")


def build_agent(spec: str, ctx: AgentContext) -> Built:
    """Build the agent named by ``spec`` for ``ctx.role`` (see module docstring)."""
    check_spec(spec, ctx.role)
    spec = spec.strip()
    if _lora_on(ctx) and spec.partition(":")[0] in _NO_LORA:
        raise ValueError(f"{ctx.role} spec {spec!r} is not a transformer model, so it cannot take a LoRA adapter; "
                         f"set model.{ctx.role}_lora.enabled=false or use a model spec (default, tiny, a hub id).")
    if spec in NAMES:
        return NAMES[spec]("", ctx)
    head, sep, rest = spec.partition(":")
    if sep and head in PREFIXES:
        return PREFIXES[head](rest, ctx)
    if Path(spec).is_dir():
        return _directory(Path(spec), ctx)
    if "#" in spec:
        run, base = split_base(spec, ctx.role)
        return _directory(Path(run), ctx, base=base)
    if sep and _MODULE.match(head) and rest.isidentifier():
        return _plugin(spec, ctx)
    return _hf(spec, ctx)
