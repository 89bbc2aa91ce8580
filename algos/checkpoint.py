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
tensors go to safetensors, everything else to JSON (``torch.load`` is never used). Loading checks
every file first and names the one that is truncated, edited or does not fit
(:mod:`algos.checkpoint_checks`).
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

from agents.runs import PREFIX, latest, list_checkpoints, weights_file

from .checkpoint_checks import (TMP_PREFIX, CheckpointError, InsufficientSpaceError, NonFiniteStateError,
                                check_free_space, check_safetensors, first_non_finite, fsync_dir, log,
                                read_json, remove_debris, require, state_bytes)

__all__ = ["PREFIX", "CheckpointError", "CheckpointWriteError", "InsufficientSpaceError", "NonFiniteStateError",
           "capture_rng", "find_checkpoints", "latest", "list_checkpoints", "load_checkpoint",
           "quarantine", "remove_debris", "restore_rng", "save_checkpoint"]


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


# ------------------------------------------------------------------------------ save

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


# ------------------------------------------------------------------------------ load

def find_checkpoints(path: str | Path) -> list[Path]:
    """``[path]`` if it is a checkpoint dir, else the run dir's complete checkpoints, newest first."""
    path = Path(path)
    if (path / "state.json").is_file():
        return [path]
    found = list_checkpoints(path / "checkpoints") or list_checkpoints(path)
    if not found:
        raise CheckpointError(f"resume: no complete checkpoint at or under {path}; pass a step_* dir or a run dir.")
    return found[::-1]


def load_checkpoint(
    path: str | Path,
    models: dict[str, torch.nn.Module],
    optimizers: dict[str, torch.optim.Optimizer],
    rank: int = 0,
    state_schema: dict[str, type] | None = None,
) -> dict[str, Any]:
    """Restore weights, optimizer states and this process's RNG from ``path``; return ``state.json``.

    ``path`` may be a checkpoint dir, or a run dir: then its newest checkpoint that loads is used,
    and older ones are tried (with a log line) when a newer one is corrupt. Every file is checked
    before anything is restored; a bad one raises :class:`CheckpointError` naming the file.

    Args:
        state_schema: keys ``state.json`` must hold, with their types (checked like ``step``).

    Returns:
        ``state.json`` plus ``config`` (``config.json``), ``path`` and ``skipped`` (the newer
        checkpoints that were passed over as corrupt).
    """
    errors: list[str] = []
    candidates = find_checkpoints(path)
    for i, cand in enumerate(candidates):
        try:
            state = _load_one(cand, models, optimizers, rank, state_schema or {})
        except CheckpointError as e:
            errors.append(str(e))
            if i + 1 < len(candidates):
                log.warning("checkpoint: cannot resume from %s (%s); trying the previous one", cand.name, e)
            continue
        state["skipped"] = [str(c) for c in candidates[:i]]
        return state
    if len(errors) == 1:
        raise CheckpointError(errors[0])
    raise CheckpointError(f"none of the {len(errors)} checkpoints under {path} can be loaded; "
                          f"the newest failed with: {errors[0]}")


def _load_one(path: Path, models, optimizers, rank: int, schema: dict[str, type]) -> dict[str, Any]:
    state = read_json(path / "state.json")
    if require(state, "step", int, path / "state.json") < 0:
        raise CheckpointError(f"{path / 'state.json'}: step={state['step']} is negative.")
    for key, kind in schema.items():
        require(state, key, kind, path / "state.json")
    config = read_json(path / "config.json")
    for name, model in models.items():  # check every file first: a bad one changes nothing
        f = weights_file(path, name)
        if not f.is_file():
            raise CheckpointError(f"{f}: missing; this checkpoint has no weights for agent {name!r} "
                                  f"(files: {sorted(p.name for p in path.iterdir())}).")
        check_safetensors(f, {k: tuple(v.shape) for k, v in model.state_dict().items()})
    docs = {name: _check_optim_files(path, name, opt) for name, opt in optimizers.items()}
    rng_meta = _check_rng_files(path, rank)
    for name, model in models.items():
        _load_model(weights_file(path, name), name, model)
    for name, opt in optimizers.items():
        _load_optim(path, name, opt, docs[name])
    restore_rng(load_file(str(path / f"rng.{rank}.safetensors")), rng_meta)
    state["config"] = config
    state["path"] = str(path)
    return state


def _load_model(f: Path, name: str, model: torch.nn.Module) -> None:
    try:
        load_model(model, str(f))
    except (RuntimeError, ValueError, KeyError) as e:
        raise CheckpointError(f"{f}: does not fit the {name!r} model ({str(e).splitlines()[0][:300]}); "
                              "the checkpoint was written for a different model.") from e
    bad = first_non_finite(model.state_dict().items())
    if bad is not None:
        raise CheckpointError(f"{f}: weight {bad!r} holds NaN or inf; this checkpoint is not usable.")


def _check_optim_files(path: Path, name: str, opt: torch.optim.Optimizer) -> dict[str, Any]:
    jf, sf = path / f"optim.{name}.json", path / f"optim.{name}.safetensors"
    doc = read_json(jf)
    groups, state = require(doc, "param_groups", list, jf), require(doc, "state", dict, jf)
    sizes = [len(g.get("params", ())) if isinstance(g, dict) else -1 for g in groups]
    want = [len(g["params"]) for g in opt.param_groups]
    if sizes != want:
        raise CheckpointError(f"{jf}: param groups hold {sizes} parameters, the {name!r} optimizer {want}; "
                              "the checkpoint was written for a different model or learner.")
    shapes = check_safetensors(sf)
    params = [p for g in opt.param_groups for p in g["params"]]
    for pid, entry in state.items():
        if not (pid.isdigit() and int(pid) < len(params) and isinstance(entry, dict)):
            raise CheckpointError(f"{jf}: state entry {pid!r} does not name one of the {len(params)} parameters.")
        for k, ref in entry.items():
            key = ref.get("tensor") if isinstance(ref, dict) else None
            if not isinstance(ref, dict) or ("value" not in ref and not isinstance(key, str)):
                raise CheckpointError(f"{jf}: state.{pid}.{k} should be {{'tensor': name}} or {{'value': v}}.")
            if key is not None and key not in shapes:
                raise CheckpointError(f"{sf}: tensor {key!r} named by {jf.name} is missing.")
            if key is not None and len(shapes[key]) > 0 and shapes[key] != tuple(params[int(pid)].shape):
                raise CheckpointError(f"{sf}: {key} has shape {list(shapes[key])}, the parameter "
                                      f"{list(params[int(pid)].shape)}; written for a different model.")
    return doc


def _load_optim(path: Path, name: str, opt: torch.optim.Optimizer, doc: dict[str, Any]) -> None:
    try:
        opt.load_state_dict(optimizer_from_files(load_file(str(path / f"optim.{name}.safetensors")), doc))
    except (ValueError, KeyError, TypeError, RuntimeError) as e:
        raise CheckpointError(f"{path / f'optim.{name}.json'}: optimizer state does not load ({e}).") from e


def _check_rng_files(path: Path, rank: int) -> dict[str, Any]:
    sf, jf = path / f"rng.{rank}.safetensors", path / f"rng.{rank}.json"
    if not sf.is_file():
        raise CheckpointError(f"{sf}: missing (no RNG state for process {rank}); the checkpoint is incomplete "
                              "or was written by fewer processes: resume with the same number of processes.")
    shapes = check_safetensors(sf)
    for key in ("torch", "numpy_keys"):
        if key not in shapes:
            raise CheckpointError(f"{sf}: tensor {key!r} is missing.")
    meta = read_json(jf)
    numpy_state, python_state = require(meta, "numpy", list, jf), require(meta, "python", list, jf)
    ok_np = (len(numpy_state) == 4 and isinstance(numpy_state[0], str)
             and all(isinstance(v, int) and not isinstance(v, bool) for v in numpy_state[1:3])
             and isinstance(numpy_state[3], (int, float)))
    ok_py = (len(python_state) == 3 and isinstance(python_state[0], int) and isinstance(python_state[1], list)
             and all(isinstance(v, int) for v in python_state[1]) and isinstance(python_state[2], (float, type(None))))
    if not (ok_np and ok_py):
        raise CheckpointError(f"{jf}: RNG state has the wrong shape or types "
                              "(expected numpy [name, pos, has_gauss, cached] and python [version, [ints], gauss]).")
    return meta


def quarantine(paths: list[str]) -> list[Path]:
    """Rename corrupt checkpoints to ``corrupt-step_*`` so that no later resume, eval or pruning
    takes them for complete ones (they are kept for inspection; delete them to free the space)."""
    moved = []
    for p in map(Path, paths):
        target = p.with_name(f"corrupt-{p.name}")
        if p.is_dir() and not target.exists():
            os.rename(p, target)
            moved.append(target)
    if moved:
        log.warning("checkpoint: moved %d corrupt checkpoint(s) aside: %s", len(moved), ", ".join(map(str, moved)))
    return moved
