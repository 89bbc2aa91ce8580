"""Where a training run keeps each agent: the checkpoint layout ``rsim train`` writes.

A run dir holds ``checkpoints/step_XXXXXXXX/``; a complete checkpoint has ``state.json`` (written
last), ``config.json`` (the resolved run config) and ``model.<role>.safetensors`` for every agent
that was trained. :mod:`algos.checkpoint` writes this layout and :mod:`agents.registry` reads the
agents back out of it, so both use the names defined here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rsim_env.game import EnvConfig

__all__ = ["PREFIX", "weights_file", "list_checkpoints", "latest", "find_checkpoint", "check_base", "RunCheckpoint"]

PREFIX = "step_"
"""Checkpoint directory names: ``step_`` + the zero-padded optimizer step."""


def weights_file(checkpoint: str | Path, role: str) -> Path:
    """Path of ``role``'s weights in a checkpoint dir."""
    return Path(checkpoint) / f"model.{role}.safetensors"


def list_checkpoints(root: str | Path) -> list[Path]:
    """Complete checkpoints under ``root``, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name.startswith(PREFIX) and (p / "state.json").is_file())


def latest(root: str | Path) -> Path | None:
    """Newest complete checkpoint under ``root`` (or ``None``)."""
    found = list_checkpoints(root)
    return found[-1] if found else None


def find_checkpoint(path: str | Path, role: str | None = None) -> Path | None:
    """A complete checkpoint at ``path`` (a ``step_*`` dir), or the newest under a run / checkpoints dir; with
    ``role``, only one that holds ``role``'s weights (:func:`weights_file`)."""
    path = Path(path)
    if not path.is_dir():
        return None
    if (path / "state.json").is_file():
        return path if role is None or weights_file(path, role).is_file() else None
    found = list_checkpoints(path / "checkpoints") or list_checkpoints(path)
    found = [p for p in found if role is None or weights_file(p, role).is_file()]
    return found[-1] if found else None


def check_base(state: dict[str, Any], role: str, digest: str, where: str) -> None:
    """Raise unless ``state["base"][role]`` (written with LoRA adapters) names a base with ``digest``."""
    saved = (state.get("base") or {}).get(role)
    if saved is None:
        raise ValueError(f"{where}: no base-model identity for the {role}'s LoRA adapter in state.json; "
                         "it was not written by a LoRA run (set model.<role>_lora.enabled to what the run used).")
    if saved.get("sha256") != digest:
        raise ValueError(f"{where}: the {role}'s adapter was trained on base {saved.get('spec')!r} "
                         f"(sha256 {str(saved.get('sha256'))[:12]}...), but the base loaded now has sha256 "
                         f"{digest[:12]}...; load the same base model (model.{role}={saved.get('spec')!r}).")


class RunCheckpoint:
    """Read-only view of one checkpoint: its run config, step and per-agent weights."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.config: dict[str, Any] = _read_object(path / "config.json")
        self.state: dict[str, Any] = _read_object(path / "state.json")

    def base_spec(self, role: str) -> str:
        """The model spec the run built ``role`` from (``config.model.<role>``)."""
        return str(self.config["model"][role])

    def lora(self, role: str) -> Any:
        """The :class:`agents.hf.lora.LoraSpec` the run trained ``role`` with (None: full fine-tuning)."""
        raw = (self.config.get("model") or {}).get(f"{role}_lora")
        if not raw or not raw.get("enabled"):
            return None
        from .hf.lora import LoraSpec

        return LoraSpec(**dict(raw, target_modules=tuple(raw["target_modules"])))

    def check_base(self, role: str, digest: str) -> None:
        """Refuse a base model whose weights differ from the one ``role``'s adapter was trained on."""
        check_base(self.state, role, digest, str(self.path))

    @property
    def max_steps(self) -> int:
        """Rounds per episode the run trained with."""
        env = self.config.get("env") or {}
        return int(env.get("max_steps") or self.config.get("train", {}).get("env_max_steps", EnvConfig.max_steps))

    def info(self, role: str) -> dict[str, Any]:
        """What ``rsim eval`` reports about an agent loaded from this checkpoint."""
        other = "reasoner" if role == "planner" else "planner"
        out = {"kind": "checkpoint", "checkpoint": str(self.path), "base": self.base_spec(role),
               "learner": self.config.get("learner"), "step": self.state.get("step")}
        if role == "planner":
            out |= {"trained_with_reasoner": self.config["model"].get(other), "train_data": self.config.get("data")}
        return out


def _read_object(f: Path) -> dict[str, Any]:
    """A checkpoint's JSON object, or a ``ValueError`` naming the file (truncated or edited)."""
    try:
        doc = json.loads(f.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{f}: unreadable checkpoint file ({e}); the checkpoint is corrupt.") from e
    if not isinstance(doc, dict):
        raise ValueError(f"{f}: expected a JSON object, found {type(doc).__name__}; the checkpoint is corrupt.")
    return doc
