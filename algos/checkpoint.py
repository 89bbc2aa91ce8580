"""Atomic, pickle-free checkpoints that resume training exactly.

Layout of ``<root>/step_00000010/``::

    model.<agent>.safetensors      weights (safetensors handles tied embeddings)
    optim.<agent>.safetensors      optimizer tensors (Adam moments, step counts)
    optim.<agent>.json             optimizer scalars + param_groups, with tensor keys
    rng.<rank>.safetensors / .json torch (+ CUDA) / numpy / python RNG states, one pair per process
    state.json                     step, data position, token count, learner name, process count
                                   (the schedule is a pure function of the step; metrics live in TensorBoard)
    config.json                    the resolved config

The directory layout (names, ``latest``) is shared with the agent registry: :mod:`agents.runs`.

A checkpoint is written into a hidden temp dir and renamed into place (files, temp dir and parent
dir fsynced), so a crash mid-save never leaves a half checkpoint behind; :func:`latest` only sees
complete ones, and the next save (or start-up) removes the dead temp dir. Nothing is pickled:
tensors go to safetensors, everything else to JSON (``torch.load`` is never used).

This module writes checkpoints. The rest of the job lives next to it, and every public name is
importable from here too: RNG and optimizer state as tensors + JSON (:mod:`algos.checkpoint_state`),
loading, which checks every file first and names the one that is truncated, edited or does not fit
(:mod:`algos.checkpoint_load`), and those checks, debris and disk-space rules
(:mod:`algos.checkpoint_checks`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file, save_model

from agents.runs import PREFIX, latest, list_checkpoints, weights_file

from .checkpoint_checks import (TMP_PREFIX, CheckpointError, InsufficientSpaceError, NonFiniteStateError,
                                check_free_space, first_non_finite, fsync_dir, remove_debris, state_bytes)
from .checkpoint_load import find_checkpoints, load_checkpoint, quarantine
from .checkpoint_state import capture_rng, optimizer_from_files, optimizer_to_files, restore_rng

__all__ = ["PREFIX", "CheckpointError", "CheckpointWriteError", "InsufficientSpaceError", "NonFiniteStateError",
           "capture_rng", "find_checkpoints", "latest", "list_checkpoints", "load_checkpoint",
           "optimizer_from_files", "optimizer_to_files", "quarantine", "remove_debris", "restore_rng",
           "save_checkpoint"]


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True, default=_json_default))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.integer, np.floating)):
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"checkpoint: {type(o).__name__} is not JSON-serialisable ({o!r:.80}); store plain values.")


def _named_state(models: dict[str, torch.nn.Module], optimizers: dict[str, torch.optim.Optimizer]):
    """Every tensor a checkpoint will hold, named for error messages (no copies are made)."""
    for name, model in models.items():
        for k, t in model.state_dict().items():
            yield f"model.{name}:{k}", t
    for name, opt in optimizers.items():
        for pid, entry in enumerate(opt.state.values()):
            for k, v in entry.items():
                if isinstance(v, torch.Tensor):
                    yield f"optim.{name}:state.{pid}.{k}", v


def save_checkpoint(
    root: str | Path,
    step: int,
    models: dict[str, torch.nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    state: dict[str, Any],
    config: dict[str, Any],
    rng: list[tuple[dict[str, torch.Tensor], dict[str, Any]]] | None = None,
    keep: int = 2,
) -> Path:
    """Write ``<root>/step_<step>`` atomically and prune to the newest ``keep`` checkpoints.

    Before writing: removes crash debris, refuses non-finite weights or optimizer state
    (:class:`NonFiniteStateError`; nothing written, nothing pruned) and checks free disk space
    (:class:`InsufficientSpaceError`). A failed write removes its temp dir and raises
    :class:`CheckpointWriteError`; the existing checkpoints stay intact either way.

    Args:
        rng: one :func:`capture_rng` result per process (index = rank); default: this process.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    remove_debris(root)
    bad = first_non_finite(_named_state(models, optimizers))
    if bad is not None:
        raise NonFiniteStateError(f"checkpoint step {step} not written: {bad} holds NaN or inf; the existing "
                                  f"checkpoints in {root} are kept and none was pruned.")
    check_free_space(root, state_bytes(t for _, t in _named_state(models, optimizers)), latest(root))
    final = root / f"{PREFIX}{step:08d}"
    tmp = root / f"{TMP_PREFIX}{final.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        _write_files(tmp, step, models, optimizers, state, config, rng)
    except BaseException as e:  # leave no debris behind, whatever stopped the write
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError):
            raise CheckpointWriteError(f"checkpoint step {step} not written to {root}: {e}; nothing was left "
                                       "half-written and the existing checkpoints are intact.") from e
        raise
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)
    fsync_dir(root)  # the rename itself must survive a power loss, not just the files
    for old in list_checkpoints(root)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


class CheckpointWriteError(OSError):
    """Writing a checkpoint failed (disk full, I/O error); its temp dir was removed."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "checkpoint write failed"


def _write_files(tmp: Path, step: int, models, optimizers, state, config, rng) -> None:
    for name, model in models.items():
        save_model(model, str(weights_file(tmp, name)))
    for name, opt in optimizers.items():
        tensors, doc = optimizer_to_files(opt.state_dict())
        save_file(tensors, str(tmp / f"optim.{name}.safetensors"))
        _write_json(tmp / f"optim.{name}.json", doc)
    for rank, (tensors, meta) in enumerate(rng if rng is not None else [capture_rng()]):
        save_file(tensors, str(tmp / f"rng.{rank}.safetensors"))
        _write_json(tmp / f"rng.{rank}.json", meta)
    _write_json(tmp / "config.json", config)
    _write_json(tmp / "state.json", dict(state, step=step))  # written last: marks completeness
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    fsync_dir(tmp)
