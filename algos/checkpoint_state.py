"""The non-weight state of a checkpoint as safetensors + JSON: RNG states and optimizer state.

:func:`capture_rng` / :func:`restore_rng` cover torch (+ CUDA), numpy and Python's ``random`` of one
process; :func:`optimizer_to_files` / :func:`optimizer_from_files` split an optimizer's
``state_dict`` into tensors and a JSON document and back, so that nothing is pickled.
:mod:`algos.checkpoint` writes them, :mod:`algos.checkpoint_load` reads them.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

__all__ = ["capture_rng", "optimizer_from_files", "optimizer_to_files", "restore_rng"]


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
