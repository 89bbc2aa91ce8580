"""Settings of the training loop: :class:`TrainConfig` (steps, batching, logging, checkpoints, GRPO
loss) and one :class:`OptimConfig` per agent. ``RunConfig.train`` is a :class:`TrainConfig`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rsim_env.validation import check_finite

from .grpo import GRPOConfig

__all__ = ["MIXED_PRECISION", "OptimConfig", "TrainConfig"]

MIXED_PRECISION = ("auto", "no", "bf16", "fp16")


@dataclass(frozen=True)
class OptimConfig:
    """AdamW settings for one agent."""

    lr: float = 1e-6
    """Base learning rate (the Stackelberg schedule multiplies it by lambda or 1 - lambda)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Clip the agent's gradient to this global norm (0 = no clipping)."""
    warmup_steps: int = 0
    """Linear warm-up of the learning rate over this many optimizer steps."""

    def __post_init__(self) -> None:
        check_finite(self)
        if not (isinstance(self.lr, (int, float)) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"OptimConfig.lr={self.lr!r} is invalid: use a positive float such as 1e-6.")
        if not self.weight_decay >= 0:
            raise ValueError(f"OptimConfig.weight_decay={self.weight_decay!r} is invalid: use >= 0.")
        if not self.max_grad_norm >= 0:
            raise ValueError(f"OptimConfig.max_grad_norm={self.max_grad_norm!r} is invalid: use >= 0 (0 = off).")
        if not isinstance(self.warmup_steps, int) or self.warmup_steps < 0:
            raise ValueError(f"OptimConfig.warmup_steps={self.warmup_steps!r} is invalid: use an int >= 0.")


@dataclass(frozen=True)
class TrainConfig:
    """The training loop (learner-independent)."""

    steps: int = 10
    """Optimizer steps to run (a resumed run continues up to this total)."""
    groups_per_step: int = 2
    """Problems per optimizer step (each rolled out group_size times); must divide by #processes."""
    seed: int = 0
    """Seeds model init, sampling, data order and the environments."""
    log_every: int = 1
    """Log metrics and sample rollouts every this many steps."""
    save_every: int = 10
    """Checkpoint every this many steps (0 = only at the end); a crash loses at most this many steps."""
    keep_checkpoints: int = 2
    """Newest checkpoints kept on disk."""
    output_dir: str = "runs/rsim"
    """TensorBoard logs, samples.jsonl and checkpoints/ go here."""
    mixed_precision: str = "auto"
    """"auto" = bf16 on a GPU that has it, else off; or "no" / "bf16" / "fp16"."""
    sample_rollouts: int = 2
    """Rollouts written to samples.jsonl per logging step (main process)."""
    progress: bool = True
    """Show a tqdm progress bar."""
    skip_zero_std_groups: bool = True
    """Don't score groups whose rewards are all equal (zero advantage) unless the KL term needs them."""
    score_chunk: int = 0
    """Rows per scoring forward/backward (0 = the whole batch at once). Smaller chunks cut activation
    memory with the same gradient; a multiple of G keeps each group's prompt encoded once."""
    log_update_norm: bool = False
    """Log each agent's parameter update norm (``<role>/update_norm``; keeps one copy of its weights)."""
    max_bad_steps: int = 5
    """Stop after this many consecutive steps whose loss or gradient norm was not finite (each such update is skipped)."""
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    """GRPO loss settings (shared by both agents; group_size is G)."""
    planner_optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-5))
    """Planner optimizer."""
    reasoner_optim: OptimConfig = field(default_factory=OptimConfig)
    """Reasoner optimizer."""

    def __post_init__(self) -> None:
        check_finite(self)
        for f in ("steps", "groups_per_step", "log_every", "max_bad_steps"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"TrainConfig.{f}={v!r} is invalid: use an int >= 1.")
        for f in ("save_every", "keep_checkpoints", "sample_rollouts", "seed", "score_chunk"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"TrainConfig.{f}={v!r} is invalid: use an int >= 0.")
        if self.mixed_precision not in MIXED_PRECISION:
            raise ValueError(f"TrainConfig.mixed_precision={self.mixed_precision!r} is invalid: choose one of {MIXED_PRECISION}.")
