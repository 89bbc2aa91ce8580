"""Checks ``rsim train`` / ``rsim eval`` run before they load any model, so that a typo or a missing
sandbox costs no model load (model specs: :func:`agents.registry.check_spec`; data specs:
:func:`rsim_env.sources.data.check_spec`; the code sandbox: :func:`check_sandbox`).

Each function takes plain values (paths, spec strings) and raises ``ValueError`` (or
:class:`algos.checkpoint.CheckpointError`, also a ``ValueError``) naming the problem, the value
and the fix.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterable

from . import checkpoint as ckpt
from .checkpoint_checks import CheckpointError, read_json, require


def check_output_dir(out: str | Path, resume_from: Path | None) -> Path:
    """Raise unless ``out`` can hold this run's logs and checkpoints; return it.

    Args:
        out: ``train.output_dir``.
        resume_from: the checkpoint being resumed (None for a fresh run). A fresh run must not
            write into a dir that already holds another run's checkpoints: the two would mix and
            ``--resume`` / ``rsim eval`` would pick up the wrong one.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"train.output_dir={str(out)!r} is a file; pass a directory with --out DIR.")
    parent = out
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"train.output_dir={str(out)!r} cannot be created: {str(parent)!r} is a file.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"train.output_dir={str(out)!r} is not writable ({str(parent)!r} denies it); "
                         "pass another --out DIR.")
    existing = ckpt.latest(out / "checkpoints")
    if existing is not None:
        same_run = resume_from is not None and resume_from.resolve().parent == existing.resolve().parent
        if not same_run:
            raise ValueError(f"train.output_dir={str(out)!r} already holds the checkpoints of a run (newest "
                             f"{existing.name}); continue it with --resume {out}, or start a new run with another "
                             "--out (or delete that directory).")
    return out


def read_resume_point(path: str | Path) -> tuple[Path, dict[str, Any], int]:
    """The checkpoint a resume would start from, its saved config and step, read from JSON only.

    A run dir's newest checkpoint whose ``state.json`` / ``config.json`` do not parse is passed over
    (as :func:`algos.checkpoint.load_checkpoint` does). Raises :class:`CheckpointError` naming
    the path when nothing usable is there.
    """
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"resume: {str(p)!r} does not exist; pass a run dir (--out of the earlier run) "
                              "or one of its checkpoints/step_* dirs.")
    if not p.is_dir():
        raise CheckpointError(f"resume: {str(p)!r} is a file; pass a run dir or a checkpoints/step_* dir.")
    errors = []
    for cand in ckpt.find_checkpoints(p):
        try:
            state = read_json(cand / "state.json")
            step = require(state, "step", int, cand / "state.json")
            return cand, read_json(cand / "config.json"), step
        except CheckpointError as e:
            errors.append(str(e))
    raise CheckpointError(errors[0] if len(errors) == 1 else
                          f"resume: none of the {len(errors)} checkpoints under {p} is readable; newest: {errors[0]}")


def check_sandbox(problems: Iterable[Any], log: bool = True) -> dict[str, str] | None:
    """Make sure model-written programs will be confined as asked, before any model loads.

    Only problems with tests (code problems) run programs; for none of them this returns None.
    Otherwise it builds the process-wide sandbox executor, which raises
    :class:`rsim_env.code.SandboxUnavailable` (a ``RuntimeError``: one line naming bubblewrap and
    the ``RSIM_SANDBOX=rlimits`` opt-in) when ``isolation="auto"`` finds no working bubblewrap,
    and returns how programs are confined (``isolation``, ``network``, ``asked``). An opted-in
    weaker mode is logged on stderr (every run that uses it says so; results record it too).
    """
    if not any(p.tests for p in problems):
        return None
    from rsim_env.code import default_executor

    info = default_executor().describe()
    if log and info["isolation"] != "bwrap":
        print(f"rsim: code sandbox isolation={info['isolation']!r} (opted in, asked {info['asked']!r}): resource "
              f"limits and a dedicated uid; network: {info['network']}; the filesystem and the machine's other "
              "processes stay visible to model-written programs (docs/sandbox.md).", file=sys.stderr)
    return info
