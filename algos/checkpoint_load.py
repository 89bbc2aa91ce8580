"""Loading a checkpoint: every file checked before anything is restored, corrupt ones skipped.

:func:`load_checkpoint` takes a checkpoint dir or a run dir (then its newest checkpoint that loads,
falling back past corrupt newer ones with a log line); a bad file raises
:class:`~algos.checkpoint_checks.CheckpointError` naming it, before any weight, optimizer or RNG
state is touched. :func:`quarantine` renames the corrupt ones that were passed over. The layout
is described in :mod:`algos.checkpoint`, which writes it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, load_model

from agents.runs import list_checkpoints, weights_file

from .checkpoint_checks import CheckpointError, check_safetensors, first_non_finite, log, read_json, require
from .checkpoint_state import optimizer_from_files, restore_rng

__all__ = ["find_checkpoints", "load_checkpoint", "quarantine"]


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
