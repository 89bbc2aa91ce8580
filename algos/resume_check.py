"""What may change when a run is resumed, checked against the config saved in its checkpoint.

Every dotted key of the resolved config falls in one of three classes:

* **benign** (:data:`BENIGN`) — how long, how often to log or save, where to write, cache
  layouts: changed freely, each change logged;
* **tunable** (:data:`TUNABLE`) — optimiser and loss hyper-parameters (learning rates, clipping,
  KL, temperatures, the lambda schedule): they change the run's trajectory but not its shapes or
  meaning, so they change only with ``--allow-config-change`` (logged);
* everything else is **fixed** — models, learner, agents' shapes and decoding caps, group size,
  groups per step, seed, environment and data: a resumed run with different values would be a
  different experiment (or a size-mismatch crash), so resuming refuses and lists each difference.

Unknown keys default to *fixed*: a new setting is safe until someone classifies it.
"""

from __future__ import annotations

import logging
from fnmatch import fnmatchcase
from typing import Any

log = logging.getLogger("rsim.resume")

BENIGN = (
    "train.steps", "train.log_every", "train.save_every", "train.keep_checkpoints", "train.sample_rollouts",
    "train.progress", "train.output_dir", "train.log_update_norm", "train.max_bad_steps",
    "planner.use_cache", "reasoner.cache", "reasoner.cache_capacity",
)
RUN_CONTROL = ("resume", "allow_config_change", "threads")
"""How this invocation runs, not what is trained: never compared."""
TUNABLE = (
    "train.planner_optim.*", "train.reasoner_optim.*", "train.grpo.clip_eps_*", "train.grpo.kl_coef",
    "train.grpo.entropy_coef", "train.grpo.adv_eps", "train.grpo.num_iterations", "train.grpo.scale_rewards",
    "train.grpo.loss_type", "train.grpo.max_length", "train.mixed_precision", "train.skip_zero_std_groups",
    "planner.temperature", "reasoner.temperature", "reasoner.top_p", "model.temperature", "schedule.lambda_stage*",
    "schedule.stage1_steps", "schedule.follower_updates",
)


class ResumeError(ValueError):
    """Resuming is refused: the new config changes what the checkpoint was trained as."""


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists and tuples are values)."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = list(v) if isinstance(v, tuple) else v
    return out


def kind(key: str) -> str:
    """``"benign"``, ``"tunable"`` or ``"fixed"`` for a dotted config key."""
    if any(fnmatchcase(key, p) for p in BENIGN):
        return "benign"
    if any(fnmatchcase(key, p) for p in TUNABLE):
        return "tunable"
    return "fixed"


def differences(saved: dict[str, Any], new: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """``{key: (saved value, new value)}`` for every dotted key whose value differs."""
    a, b = flatten(saved), flatten(new)
    missing = object()
    return {k: (a.get(k, missing), b.get(k, missing)) for k in sorted(set(a) | set(b))
            if k not in RUN_CONTROL and a.get(k, missing) != b.get(k, missing)}


def _show(diffs: dict[str, tuple[Any, Any]]) -> str:
    return "; ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in diffs.items())


def check_config_change(saved: dict[str, Any], new: dict[str, Any], allow_change: bool,
                        where: str = "the checkpoint") -> dict[str, tuple[Any, Any]]:
    """Refuse (:class:`ResumeError`) or log the differences between a saved and a new config.

    Args:
        saved: the resolved config stored in the checkpoint (``config.json``), in the current
            layout (see :func:`algos.config` helpers for older layouts).
        new: the resolved config of the resumed run.
        allow_change: the user passed ``--allow-config-change`` (tunable settings may change).
        where: the checkpoint, for messages.

    Returns:
        The accepted differences (each also logged).
    """
    diffs = differences(saved, new)
    fixed = {k: v for k, v in diffs.items() if kind(k) == "fixed"}
    if fixed:
        raise ResumeError(f"resume: cannot continue {where} with a different {', '.join(fixed)} "
                          f"({_show(fixed)}); these change the models' shapes or the meaning of the run. "
                          "Resume without these overrides, or start a new run with another --out.")
    tunable = {k: v for k, v in diffs.items() if kind(k) == "tunable"}
    if tunable and not allow_change:
        raise ResumeError(f"resume: {_show(tunable)} differ from {where}; these change the optimisation, "
                          "so pass --allow-config-change (set allow_config_change=true) to continue with "
                          "the new values, or drop the overrides.")
    if diffs:
        log.warning("resume: continuing %s with changed settings: %s", where, _show(diffs))
    return diffs


def check_not_complete(saved_step: int, steps: int, where: str) -> str | None:
    """The "already complete" message when ``steps`` does not exceed the checkpoint's step."""
    if steps > saved_step:
        return None
    return (f"rsim: the run is already complete: {where} is at step {saved_step} and train.steps={steps}; "
            f"nothing to do. Pass --steps N with N > {saved_step} to train further.")
