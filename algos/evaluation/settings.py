"""Which env and reasoner settings an evaluation plays under: the evaluated run's, then explicit overrides.

A run trained with ``env.max_step_chars=500`` or ``reasoner.max_step_tokens=32`` is scored under those
rules, not under the defaults (a newcomer's ``rsim eval --planner runs/demo`` plays the demo's 3 rounds
of 32 tokens). What is set explicitly (``--set env.KEY=VALUE`` / ``--set reasoner.KEY=VALUE``, or an
``env`` / ``reasoner`` that differs from the defaults) overrides the run's value and is recorded in
``results.json`` under ``settings``.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from agents.reasoner import ReasonerConfig
from rsim_env.game import EnvConfig

from ..config import config_from_saved
from ..dataclass_cli import apply_overrides
from .config import EvalConfig

__all__ = ["run_settings", "explicit_overrides", "resolve"]

SECTIONS = ("env", "reasoner")
"""The sections of EvalConfig taken from the evaluated run (RunConfig's sections of the same name)."""


def _flat(obj: Any, default: Any, prefix: str) -> dict[str, Any]:
    """Dotted keys of the fields of ``obj`` that differ from ``default`` (nested dataclasses flattened)."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        v, d = getattr(obj, f.name), getattr(default, f.name)
        if dataclasses.is_dataclass(v):
            out |= _flat(v, d, f"{prefix}{f.name}.")
        elif v != d:
            out[prefix + f.name] = v
    return out


def run_settings(cfg: EvalConfig) -> tuple[str, EnvConfig, ReasonerConfig] | None:
    """``(checkpoint path, env, reasoner settings)`` saved with the evaluated run, or None.

    The run is the planner's (mode ``trained``) when ``--planner`` names a run or checkpoint dir,
    else the reasoner's; a saved standalone agent or a model spec carries no run settings.
    """
    from agents.runs import find_checkpoint

    from ..preflight import read_resume_point

    for spec in (cfg.model.planner if "trained" in cfg.resolved_modes() else "", cfg.model.reasoner):
        path = spec.split(":", 1)[1] if spec.startswith("untrained:") else spec
        if not path or not Path(path).is_dir() or find_checkpoint(path) is None:
            continue
        point, saved, _ = read_resume_point(path)
        run = config_from_saved(saved, str(point))
        return str(point), run.env, run.reasoner
    return None


def explicit_overrides(cfg: EvalConfig) -> dict[str, Any]:
    """Every env and reasoner setting the user named, as dotted ``env.*`` / ``reasoner.*`` keys: fields of
    ``cfg.env`` / ``cfg.reasoner`` that differ from the defaults, and the ``--set`` items."""
    out = _flat(cfg.env, EnvConfig(), "env.") | _flat(cfg.reasoner, ReasonerConfig(), "reasoner.")
    return out | {k: v for k, v in cfg.set if k.split(".", 1)[0] in SECTIONS}


def resolve(cfg: EvalConfig, log: bool = True) -> tuple[EvalConfig, dict[str, Any]]:
    """``cfg`` with ``env`` / ``reasoner`` resolved, and where they came from (for results.json).

    Raises ``ValueError`` naming the key for an unknown or invalid override.
    """
    found = run_settings(cfg) if cfg.from_run else None
    base = {"env": found[1], "reasoner": found[2]} if found else {"env": EnvConfig(), "reasoner": ReasonerConfig()}
    overrides = explicit_overrides(cfg)
    for section in SECTIONS:
        sub = {k.split(".", 1)[1]: v for k, v in overrides.items() if k.startswith(section + ".")}
        base[section] = apply_overrides(base[section], sub, prefix=section + ".")
    resolved = dataclasses.replace(cfg, **base)
    info = {"from": found[0] if found else "defaults", "overrides": {k: str(v) for k, v in overrides.items()},
            "env": dataclasses.asdict(resolved.env), "reasoner": dataclasses.asdict(resolved.reasoner)}
    if log and found:  # the defaults need no announcement; a run's settings do
        r = resolved
        shown = (f"{r.env.max_steps} rounds x {r.reasoner.max_step_tokens} tokens, protocol "
                 f"{r.env.protocol!r}, max_step_chars {r.env.max_step_chars}")
        where = f"saved with {found[0]}"
        extra = f"; overridden: {', '.join(f'{k}={v}' for k, v in overrides.items())}" if overrides else ""
        print(f"rsim eval: env and reasoner settings {where}: {shown}{extra}", file=sys.stderr)
    return resolved, info
