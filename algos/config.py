"""The resolved config of a training run, its presets and ``key=value`` overrides.

``RunConfig`` nests one frozen dataclass per component (train loop, GRPO loss, optimizers,
Stackelberg schedule, models, data). Presets are plain override dicts on top of the defaults, and
``--set train.grpo.clip_eps_high=0.3`` style overrides go through :func:`apply_overrides`, which
converts each value to the field's type and re-runs every ``__post_init__`` check.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from .stackelberg import StackelbergConfig
from .trainer import TrainConfig

LEARNERS = ("stackelberg", "grpo", "planner_only")


@dataclass(frozen=True)
class ModelConfig:
    """Which models play the two agents and how the reasoner decodes."""

    planner: str = "default"
    """"default" (embedded SmolLM2-135M), a hub id, a local path, or "tiny" (random-init toy agents)."""
    reasoner: str = "default"
    """Same choices as planner; "tiny" needs planner "tiny" too."""
    max_step_tokens: int = 64
    """Reasoner token cap per step."""
    max_answer_tokens: int = 512
    """Reasoner token cap of the single answer turn when there is no planner (learner "grpo")."""
    temperature: float = 1.0
    """Sampling temperature of both agents during training (chosen with benchmarks/calibrate.py)."""
    top_p: float = 1.0
    """Nucleus sampling mass of the reasoner during training (1.0 = off)."""
    dtype: str = "float32"
    """Weights dtype to load ("float32" or "bfloat16")."""

    def __post_init__(self) -> None:
        if (self.planner == "tiny") != (self.reasoner == "tiny"):
            raise ValueError(f"ModelConfig.planner={self.planner!r} / reasoner={self.reasoner!r}: the tiny toy agents "
                             "only work together; set both to 'tiny' or neither.")
        for f in ("max_step_tokens", "max_answer_tokens"):
            if getattr(self, f) < 1:
                raise ValueError(f"ModelConfig.{f}={getattr(self, f)!r} is invalid: use an int >= 1.")
        if not self.temperature > 0:
            raise ValueError(f"ModelConfig.temperature={self.temperature!r} is invalid: use a positive float.")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"ModelConfig.top_p={self.top_p!r} is invalid: use a float in (0, 1].")
        if self.dtype not in ("float32", "bfloat16"):
            raise ValueError(f"ModelConfig.dtype={self.dtype!r} is invalid: use 'float32' or 'bfloat16'.")


DATA_SOURCES = ("curriculum", "reasoning_gym", "gsm8k", "math", "tiny", "jsonl")


@dataclass(frozen=True)
class DataConfig:
    """Training problems."""

    source: str = "curriculum"
    """"curriculum" (embedded, offline, train split; rsim_env.curriculum), "reasoning_gym" (gsm_symbolic +
    basic_arithmetic), "gsm8k" / "math" (hub), "tiny" (digit sums), or "jsonl"."""
    path: str = ""
    """File for source="jsonl" (one Problem per line)."""
    size: int = 1024
    """Problems to load (curriculum / reasoning_gym / tiny generate this many; hub sets are cut to it)."""
    seed: int = 0
    """Generator seed for procedural sources."""

    def __post_init__(self) -> None:
        if self.source not in DATA_SOURCES:
            raise ValueError(f"DataConfig.source={self.source!r} is invalid: choose one of {DATA_SOURCES}.")
        if self.source == "jsonl" and not self.path:
            raise ValueError("DataConfig.path='' is invalid for source='jsonl': set data.path=/path/to/problems.jsonl.")
        if self.size < 1:
            raise ValueError(f"DataConfig.size={self.size!r} is invalid: use an int >= 1.")


@dataclass(frozen=True)
class RunConfig:
    """Everything ``rsim train`` needs."""

    learner: str = "stackelberg"
    """"stackelberg" (both agents), "grpo" (reasoner only, no planner), "planner_only" (frozen reasoner)."""
    train: TrainConfig = field(default_factory=TrainConfig)
    """Training loop, GRPO loss and optimizers."""
    schedule: StackelbergConfig = field(default_factory=StackelbergConfig)
    """Stackelberg lambda schedule (learner="stackelberg")."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """Agents' models."""
    data: DataConfig = field(default_factory=DataConfig)
    """Training problems."""
    resume: str = ""
    """Checkpoint dir or run dir to resume from ("" = fresh run)."""

    def __post_init__(self) -> None:
        if self.learner not in LEARNERS:
            raise ValueError(f"RunConfig.learner={self.learner!r} is invalid: choose one of {LEARNERS}.")


PRESETS: dict[str, dict[str, Any]] = {
    "tiny": {  # seconds on a laptop: toy agents, for tests and smoke runs
        "model.planner": "tiny", "model.reasoner": "tiny", "data.source": "tiny", "data.size": 32,
        "train.steps": 4, "train.groups_per_step": 2, "train.env_max_steps": 4, "train.output_dir": "runs/tiny",
        "train.planner_optim.lr": 1e-2, "train.reasoner_optim.lr": 1e-2, "schedule.stage1_steps": 2,
    },
    "demo": {  # a few minutes on a CPU with the embedded SmolLM2-135M for both agents
        "model.planner": "default", "model.reasoner": "default", "model.max_step_tokens": 32, "model.max_answer_tokens": 96,
        "data.source": "curriculum", "data.size": 64, "train.steps": 10, "train.groups_per_step": 2,
        "train.grpo.group_size": 4, "train.grpo.max_length": 96, "train.env_max_steps": 3,
        "train.planner_optim.lr": 1e-3, "train.reasoner_optim.lr": 2e-5, "train.output_dir": "runs/demo",
        # 2 groups x G=4 per step: with 1 group the planner's reward wandered (-1.67 -> -1.67 over
        # 8 steps in one run). With 2, one run rose from -1.25 to +0.52 (it learned to terminate) and
        # another only improved its repetition penalty (-1.92 -> -1.50): 10 steps are a demo, not a result.
        "train.save_every": 5,
        "train.mixed_precision": "no", "schedule.stage1_steps": 5,
    },
    "paper": {  # GPUs: Qwen2.5-0.5B-Instruct planner and reasoner on GSM8K, two-stage lambda schedule
        "model.planner": "Qwen/Qwen2.5-0.5B-Instruct", "model.reasoner": "Qwen/Qwen2.5-0.5B-Instruct",
        "model.max_step_tokens": 256, "model.max_answer_tokens": 1024, "model.dtype": "bfloat16", "data.source": "gsm8k", "data.size": 7473,
        "train.steps": 1000, "train.groups_per_step": 32, "train.grpo.group_size": 8, "train.grpo.max_length": 2048,
        "train.grpo.kl_coef": 0.04, "train.env_max_steps": 8, "train.planner_optim.lr": 1e-6,
        "train.reasoner_optim.lr": 1e-6, "train.planner_optim.warmup_steps": 20, "train.reasoner_optim.warmup_steps": 20,
        "train.save_every": 50, "train.log_every": 1, "train.output_dir": "runs/paper", "schedule.stage1_steps": 500,
    },
}


def _convert(key: str, current: Any, value: Any) -> Any:
    if not isinstance(value, str) or isinstance(current, str):
        return value
    try:
        if isinstance(current, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(current, int):
            return int(value)
        if isinstance(current, float):
            return float(value)
        if isinstance(current, tuple):
            return tuple(json.loads(value))
    except ValueError:
        pass
    else:
        return value
    raise ValueError(f"{key}={value!r}: expected a {type(current).__name__} (current value {current!r}).")


def apply_overrides(cfg: Any, overrides: dict[str, Any]) -> Any:
    """Return ``cfg`` with dotted-key overrides applied (values may be strings from the command line)."""
    grouped: dict[str, dict[str, Any]] = {}
    changes: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(cfg)}
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        if head not in names:
            raise ValueError(f"unknown config key {key!r} in {type(cfg).__name__}; valid: {sorted(names)} "
                             "(print them all with `rsim train --print-config`).")
        current = getattr(cfg, head)
        if rest:
            if not dataclasses.is_dataclass(current):
                raise ValueError(f"config key {key!r}: {head!r} is a value, not a section; use {head}=...")
            grouped.setdefault(head, {})[rest] = value
        elif dataclasses.is_dataclass(current):
            raise ValueError(f"config key {key!r} is a section; set one of its fields, e.g. {head}.<field>=...")
        else:
            changes[head] = _convert(key, current, value)
    for head, sub in grouped.items():
        changes[head] = apply_overrides(getattr(cfg, head), sub)
    return dataclasses.replace(cfg, **changes)


def resolve(preset: str | None = None, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Defaults, then a preset, then overrides (each step validated)."""
    cfg = RunConfig()
    if preset:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {sorted(PRESETS)}.")
        cfg = apply_overrides(cfg, PRESETS[preset])
    return apply_overrides(cfg, overrides or {})
