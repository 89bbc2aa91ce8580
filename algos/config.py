"""The resolved config of a training run, its presets and ``key=value`` overrides.

``RunConfig`` is composed of each component's own frozen dataclass, next to its code: the
environment (:class:`rsim_env.EnvConfig`: rounds, reward weights, text caps, answer checking), the
two agents' models (:class:`ModelConfig`, specs as in :mod:`agents.registry`) and their own configs
(:class:`agents.planners.llm.PlannerConfig`, :class:`agents.reasoner.ReasonerConfig`), the data spec
(:class:`DataConfig`, :mod:`rsim_env.sources.data`), the learner, its schedule and the train loop. Presets
are plain override dicts on top of the defaults, and ``--set env.weights.follow=0.5`` style
overrides go through :func:`apply_overrides`, which converts each value to the field's type and
re-runs every ``__post_init__`` check.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.hf.lora import LoraSpec
from agents.planners.llm import PlannerConfig
from agents.reasoner import ReasonerConfig
from rsim_env.sources.data import check_spec
from rsim_env.game import EnvConfig
from rsim_env.validation import check_finite

from .dataclass_cli import apply_overrides
from .learners import LEARNERS, build_learner, check_learner_spec
from .stackelberg import StackelbergConfig
from .train_config import TrainConfig


@dataclass(frozen=True)
class ModelConfig:
    """Which models play the two agents (specs: see ``agents.registry``)."""

    planner: str = "default"
    """"default" (embedded SmolLM2-135M), hub id, local path, run dir, "tiny", "toy", "untrained:SPEC", "module:factory";
    "" = none (rsim eval without mode trained; a learner that runs the planner refuses it)."""
    reasoner: str = "default"
    """Same choices as planner, plus "template[:p]" (scripted, frozen)."""
    dtype: str = "float32"
    """Weights dtype to load ("float32" or "bfloat16")."""
    planner_lora: LoraSpec = field(default_factory=LoraSpec)
    """Planner as a LoRA adapter (+ its full head) on a frozen base; enabled=false trains the whole backbone."""
    frozen: str = "same"
    """Agents the learner never trains (planner_only's reasoner): "same", "bfloat16", "int8" (sampling only) or
    "compile" (torch.compile; same tokens). docs/lean.md measures speed and accuracy of each."""
    reasoner_lora: LoraSpec = field(default_factory=LoraSpec)
    """Reasoner as a LoRA adapter on a frozen base (one base in memory when both agents use the same spec)."""

    def __post_init__(self) -> None:
        check_finite(self)
        if not isinstance(self.planner, str):
            raise ValueError(f"ModelConfig.planner={self.planner!r} is invalid: use a model spec such as 'default'.")
        if not isinstance(self.reasoner, str) or not self.reasoner:
            raise ValueError(f"ModelConfig.reasoner={self.reasoner!r} is invalid: use a model spec such as 'default'.")
        from agents.registry import FROZEN

        if self.frozen not in FROZEN:
            raise ValueError(f"ModelConfig.frozen={self.frozen!r} is invalid: use one of {FROZEN}.")
        if self.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"ModelConfig.dtype={self.dtype!r} is invalid: use 'float32' or 'bfloat16'.")


@dataclass(frozen=True)
class DataConfig:
    """Problems to train or evaluate on (``--data SPEC`` in ``rsim train`` and ``rsim eval``; see ``rsim_env.sources.data``)."""

    source: str = "curriculum"
    """"curriculum" (embedded curriculum, train split), "default", "rg:TASK[+TASK][?k=v]", "tiny", a hub set by name
    (see --help), or a local file."""
    size: int = 1024
    """Problems to load (procedural sources generate this many; others are cut to it)."""
    seed: int = 0
    """Generator seed for procedural sources."""
    split: str = ""
    """Dataset split of hub sets ("" = the loader's default)."""

    def __post_init__(self) -> None:
        check_finite(self)
        check_spec(self.source)
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"DataConfig.size={self.size!r} is invalid: use an int >= 1.")


@dataclass(frozen=True)
class RunConfig:
    """Everything ``rsim train`` needs."""

    FLAGS: ClassVar[dict[str, str]] = {"planner": "model.planner", "reasoner": "model.reasoner", "data": "data.source",
                                       "steps": "train.steps", "out": "train.output_dir"}
    """Flags for the most used nested fields (:mod:`algos.dataclass_cli`); ``rsim eval`` names the same ones."""

    learner: str = "stackelberg"
    """"stackelberg" (both agents), "grpo" (reasoner only, no planner), "planner_only" (frozen reasoner), or your
    own as "package.module:factory" (factory(run_config) -> an algos.learners.Learner)."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """Agents' models."""
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    """How the planner picks strategies (sampling temperature, KV cache, ...)."""
    reasoner: ReasonerConfig = field(default_factory=ReasonerConfig)
    """How the reasoner decodes (token caps, temperature, ...)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """Episode limits, reward weights, answer checking (env.planner is set by the learner)."""
    data: DataConfig = field(default_factory=DataConfig)
    """Training problems."""
    schedule: StackelbergConfig = field(default_factory=StackelbergConfig)
    """Stackelberg lambda schedule (learner="stackelberg")."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """Training loop, GRPO loss and optimizers."""
    resume: str = ""
    """Checkpoint dir or run dir to resume from ("" = fresh run)."""
    allow_config_change: bool = False
    """With resume: accept changed optimiser/loss settings (learning rates, clipping, KL, temperatures, lambda
    schedule); shapes and meaning (models, learner, group size, seed, env, data) can never change (algos/resume_check.py)."""
    threads: int = 0
    """CPU threads for torch (--threads N); 0 = OMP_NUM_THREADS if set, else the physical cores less those other
    jobs keep busy (algos/threads.py). A run's saved config holds the count it used; a resume chooses again."""

    def __post_init__(self) -> None:
        check_finite(self)
        check_learner_spec(self.learner)
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"RunConfig.threads={self.threads!r} is invalid: use an int >= 1, or 0 to choose automatically.")


def learners_training(role: str) -> tuple[str, ...]:
    """Names of the registered learners (:data:`algos.learners.LEARNERS`) that optimise ``role``
    (``"planner"`` or ``"reasoner"``), in registry order: read from the learners, never listed by hand."""
    return tuple(name for name in LEARNERS if role in build_learner(RunConfig(learner=name)).trained)


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {  # seconds on a laptop: toy agents, for tests and smoke runs
        "model.planner": "toy", "model.reasoner": "toy", "data.source": "tiny", "data.size": 32,
        "train.steps": 4, "train.groups_per_step": 2, "env.max_steps": 4, "train.output_dir": "runs/tiny",
        "train.planner_optim.lr": 1e-2, "train.reasoner_optim.lr": 1e-2, "schedule.stage1_steps": 2,
    },
    "demo": {  # a few minutes on a CPU with the embedded SmolLM2-135M for both agents
        "model.planner": "default", "model.reasoner": "default", "reasoner.max_step_tokens": 32,
        "reasoner.max_answer_tokens": 96, "reasoner.temperature": 0.7, "data.source": "curriculum", "data.size": 64, "train.steps": 10,
        "train.groups_per_step": 2, "train.grpo.group_size": 4, "train.grpo.max_length": 96, "env.max_steps": 3,
        "train.planner_optim.lr": 1e-3, "train.reasoner_optim.lr": 2e-4, "train.output_dir": "runs/demo",
        # 2 groups x G=4 per step: with 1 group the planner's reward wandered (-1.67 -> -1.67 over
        # 8 steps in one run). With 2, one run rose from -1.25 to +0.52 (it learned to terminate) and
        # another only improved its repetition penalty (-1.92 -> -1.50): 10 steps are a demo, not a result.
        "train.save_every": 5,
        "train.mixed_precision": "no", "schedule.stage1_steps": 5,
        # LoRA on one shared base: one 135M model in memory, checkpoints of a few MB.
        # Adapters take a larger learning rate than full fine-tuning (2e-5 before LoRA).
        "model.planner_lora.enabled": True, "model.reasoner_lora.enabled": True,
        "train.score_chunk": 2,  # 2 rows per forward/backward: a quarter of the activation memory, same gradient
    },
    # Reasoner temperature 0.7 in demo/study: studies/calibrate.py measured sampled pass@1 at T=0.7 above
    # T=1.0/top-p 0.9 on every curriculum task (docs/interaction.md).
    "study": {  # the embedded SmolLM2 on the calibrated curriculum. Target <= ~25 min on
        # 2 quiet cores; not timed yet (the shared machine never was quiet in the session that added it).
        "model.planner": "default", "model.reasoner": "default", "reasoner.max_step_tokens": 48,
        "reasoner.max_answer_tokens": 144, "reasoner.temperature": 0.7, "data.source": "curriculum", "data.size": 1024, "train.steps": 24,
        "train.groups_per_step": 2, "train.grpo.group_size": 8, "train.grpo.max_length": 160, "env.max_steps": 3,
        # planner lr 3e-4 and an entropy bonus: at 1e-3 without one the planner collapsed onto one plan for all
        # problems (the v2 study); with these it learns a plan per task family (docs/contextual.md)
        "train.planner_optim.lr": 3e-4, "train.grpo.entropy_coef": 0.1,
        "train.reasoner_optim.lr": 2e-4, "train.output_dir": "runs/study",
        "train.save_every": 8, "train.mixed_precision": "no", "schedule.stage1_steps": 12,
        # LoRA on one shared base, as in demo: adapter learning rate 2e-4 (2e-5 was the full-FT rate)
        "model.planner_lora.enabled": True, "model.reasoner_lora.enabled": True, "train.score_chunk": 4,
    },
    "paper": {  # GPUs: Qwen2.5-0.5B-Instruct planner and reasoner on GSM8K, two-stage lambda schedule
        "model.planner": "Qwen/Qwen2.5-0.5B-Instruct", "model.reasoner": "Qwen/Qwen2.5-0.5B-Instruct",
        "reasoner.max_step_tokens": 256, "reasoner.max_answer_tokens": 1024, "model.dtype": "bfloat16",
        "data.source": "gsm8k", "data.split": "train", "data.size": 7473,
        "train.steps": 1000, "train.groups_per_step": 32, "train.grpo.group_size": 8, "train.grpo.max_length": 2048,
        "train.grpo.kl_coef": 0.04, "env.max_steps": 8, "train.planner_optim.lr": 1e-6,
        "train.reasoner_optim.lr": 1e-6, "train.planner_optim.warmup_steps": 20, "train.reasoner_optim.warmup_steps": 20,
        "train.save_every": 50, "train.log_every": 1, "train.output_dir": "runs/paper", "schedule.stage1_steps": 500,
    },
}
PRESETS["planner"] = {  # the README's train-a-planner recipe: one seed of the efficacy study (in git history)
    **PRESETS["study"], "learner": "planner_only",
    # the frozen reasoner is replayed (agents/replay.py): each greedy step is decoded once, then read back
    "model.reasoner": "replay:default", "reasoner.greedy": True,
    # only the planner's linear head learns, on its frozen LM's features: no adapters on either agent
    "planner.head_only": True, "model.planner_lora.enabled": False, "model.reasoner_lora.enabled": False,
    # 125 steps x 2 problems x G = 8 = 2,000 episodes of 2 rounds
    "env.max_steps": 2, "data.size": 80, "train.steps": 125, "train.output_dir": "runs/planner",
}


def resolve(preset: str | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Defaults, then a preset, then overrides (each step validated)."""
    cfg = RunConfig()
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")
        cfg = apply_overrides(cfg, PRESETS[preset])
    return apply_overrides(cfg, overrides or {})


def config_from_saved(saved: dict[str, Any], where: str = "checkpoint") -> RunConfig:
    """The :class:`RunConfig` stored in a checkpoint's ``config.json`` (validated like any other).

    Keys this version does not know are dropped with a log line (another version wrote them);
    missing keys take their defaults.
    """
    import logging

    from .resume_check import flatten

    known, unknown = {}, []
    for key, value in flatten(saved).items():
        node: Any = RunConfig()
        for part in key.split("."):
            node = getattr(node, part, _MISSING) if dataclasses.is_dataclass(node) else _MISSING
        if node is _MISSING:
            unknown.append(key)
        else:  # lists are tuples saved as JSON: hand them back as text for the tuple conversion
            known[key] = json.dumps(value) if isinstance(value, list) else value
    if unknown:
        logging.getLogger("rsim.resume").warning("resume: %s: ignoring saved config keys unknown to this version: %s",
                                                 where, ", ".join(unknown))
    try:
        return apply_overrides(RunConfig(), known)
    except ValueError as e:
        raise ValueError(f"{where}: the saved config is invalid here: {e}") from e


_MISSING = object()


def resolve_resumed(saved: dict[str, Any], preset: str | None, overrides: dict[str, Any],
                    where: str = "checkpoint") -> RunConfig:
    """A resumed run's config: the saved one, then ``preset`` (if given), then ``overrides``.

    Resuming never falls back to the defaults: the saved config is the base and the command line
    only overrides what it names (:mod:`algos.resume_check` then decides which changes are allowed).
    """
    cfg = config_from_saved(saved, where)
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")
        cfg = apply_overrides(cfg, PRESETS[preset])
    return apply_overrides(cfg, overrides)
