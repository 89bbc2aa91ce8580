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

A checkpoint is written into a hidden temp dir and renamed into place, so a crash mid-save never
leaves a half checkpoint behind; :func:`latest` only sees complete ones. Nothing is pickled:
tensors go to safetensors, everything else to JSON (``torch.load`` is never used).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, load_model, save_file, save_model

from agents.runs import PREFIX, find_checkpoint, latest, list_checkpoints, weights_file

__all__ = ["PREFIX", "capture_rng", "restore_rng", "save_checkpoint", "list_checkpoints", "latest", "load_checkpoint"]


# -------------------------------------------------------------------------------------- RNG

def capture_rng() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """This process's RNG states as ``(tensors, json)``."""
    np_state = np.random.get_state()
    tensors = {"torch": torch.get_rng_state(), "numpy_keys": torch.from_numpy(np_state[1].astype(np.int64))}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"cuda.{i}"] = s
    version, internal, gauss = random.getstate()
    meta = {"numpy": [np_state[0], int(np_state[2]), int(np_state[3]), float(np_state[4])],
            "python": [version, list(internal), gauss]}
    return tensors, meta


def restore_rng(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    """Inverse of :func:`capture_rng`."""
    torch.set_rng_state(tensors["torch"])
    name, pos, has_gauss, cached = meta["numpy"]
    np.random.set_state((name, tensors["numpy_keys"].numpy().astype(np.uint32), pos, has_gauss, cached))
    version, internal, gauss = meta["python"]
    random.setstate((version, tuple(internal), gauss))
    cuda = [tensors[k] for k in sorted(tensors) if k.startswith("cuda.")]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)


# -------------------------------------------------------------------------------- optimizer

def optimizer_to_files(sd: dict[str, Any]) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Split ``optimizer.state_dict()`` into safetensors-able tensors and a JSON document."""
    tensors: dict[str, torch.Tensor] = {}
    state_json: dict[str, dict[str, Any]] = {}
    for pid, entry in sd["state"].items():
        state_json[str(pid)] = {}
        for k, v in entry.items():
            if isinstance(v, torch.Tensor):
                key = f"state.{pid}.{k}"
                tensors[key] = v.detach().contiguous().cpu()
                state_json[str(pid)][k] = {"tensor": key}
            else:
                state_json[str(pid)][k] = {"value": v}
    return tensors, {"state": state_json, "param_groups": sd["param_groups"]}


def optimizer_from_files(tensors: dict[str, torch.Tensor], doc: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`optimizer_to_files` (ready for ``optimizer.load_state_dict``)."""
    state = {int(pid): {k: tensors[v["tensor"]] if "tensor" in v else v["value"] for k, v in entry.items()}
             for pid, entry in doc["state"].items()}
    groups = [dict(g, betas=tuple(g["betas"])) if "betas" in g else g for g in doc["param_groups"]]
    return {"state": state, "param_groups": groups}


# ------------------------------------------------------------------------------ save / load

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

    Args:
        rng: one :func:`capture_rng` result per process (index = rank); default: this process.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{PREFIX}{step:08d}"
    tmp = root / f".tmp-{final.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
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
    if final.exists():
        shutil.rmtree(final)
    os.rename(tmp, final)
    for old in list_checkpoints(root)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(
    path: str | Path,
    models: dict[str, torch.nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    rank: int = 0,
) -> dict[str, Any]:
    """Restore weights, optimizer states and this process's RNG from ``path``; return ``state.json``.

    ``path`` may be a checkpoint dir or a run dir (then its newest checkpoint is used).
    """
    found = find_checkpoint(path)
    if found is None:
        raise ValueError(f"resume: no complete checkpoint at or under {path}; pass a step_* dir or a run dir.")
    path = found
    for name, model in models.items():
        f = weights_file(path, name)
        if not f.is_file():
            raise ValueError(f"resume: {path} has no weights for agent {name!r} (files: {sorted(p.name for p in path.iterdir())}).")
        load_model(model, str(f))
    for name, opt in optimizers.items():
        doc = json.loads((path / f"optim.{name}.json").read_text())
        opt.load_state_dict(optimizer_from_files(load_file(str(path / f"optim.{name}.safetensors")), doc))
    rng_file = path / f"rng.{rank}.safetensors"
    if not rng_file.is_file():
        raise ValueError(f"resume: {path} has no RNG state for process {rank}; resume with the same number of processes.")
    restore_rng(load_file(str(rng_file)), json.loads((path / f"rng.{rank}.json").read_text()))
    state = json.loads((path / "state.json").read_text())
    state["config"] = json.loads((path / "config.json").read_text())
    state["path"] = str(path)
    return state
