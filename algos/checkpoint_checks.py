"""What a checkpoint save or load must check so that nothing is lost and nothing fails silently.

* Crash debris: a save killed midway leaves ``.tmp-step_<n>-<pid>/``; :func:`remove_debris`
  deletes those no live process owns (one log line), at start-up and before every save.
* Disk space: :func:`check_free_space` refuses to start a save that cannot fit.
* Non-finite state: :func:`first_non_finite` finds NaN/inf in weights or optimizer tensors, which
  must never be written (they would become the newest checkpoint and prune the good ones).
* Durability: :func:`fsync_dir` makes a rename survive a power loss.
* Corruption: :func:`read_json` and :func:`check_safetensors` turn truncated or edited files into
  one :class:`CheckpointError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Iterable

import torch

log = logging.getLogger("rsim.checkpoint")

TMP_PREFIX = ".tmp-"
SPACE_MARGIN = 1.1
"""Free space must exceed the expected checkpoint size by this factor."""


class CheckpointError(ValueError):
    """A checkpoint file is missing, truncated, edited or does not fit the run (names the file)."""


class NonFiniteStateError(ValueError):
    """Refused to write a checkpoint whose weights or optimizer state hold NaN or inf."""


class InsufficientSpaceError(OSError):
    """Not enough free disk space to write a checkpoint (checked before writing anything)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not enough free disk space"


# ------------------------------------------------------------------------------ crash debris

def _debris_pid(name: str) -> int | None:
    """The pid in ``.tmp-step_<n>-<pid>`` (``None`` if the name is not a temp checkpoint dir)."""
    if not name.startswith(TMP_PREFIX):
        return None
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (our own pid counts as dead: see below)."""
    if pid == os.getpid():
        # Never live debris: this process saves one checkpoint at a time and removes its own temp
        # dir on failure, so a dir with our pid is from an earlier run that had the same pid
        # (containers often start the trainer with the same small pid every time).
        return False
    if os.name == "nt":  # no safe liveness probe (os.kill(pid, 0) sends CTRL_C_EVENT there)
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a killed, not yet reaped process
    except (OSError, IndexError):
        return True


def dir_size(path: Path) -> int:
    """Bytes of the files under ``path`` (0 if it vanished meanwhile)."""
    total = 0
    for f in path.rglob("*"):
        try:
            total += f.stat().st_size if f.is_file() else 0
        except OSError:
            pass
    return total


def remove_debris(root: str | Path) -> list[Path]:
    """Delete temp checkpoint dirs under ``root`` that no live process owns; log one line."""
    root = Path(root)
    if not root.is_dir():
        return []
    stale = [p for p in root.iterdir()
             if p.is_dir() and (pid := _debris_pid(p.name)) is not None and not pid_alive(pid)]
    if not stale:
        return []
    size = sum(dir_size(p) for p in stale)
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)
    log.warning("checkpoint: removed %d unfinished save(s) left by a crash in %s (%s, %.1f MB freed)",
                len(stale), root, ", ".join(sorted(p.name for p in stale)), size / 1e6)
    return stale


# ------------------------------------------------------------------------------ disk space

def state_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes the distinct tensors take on disk (tied/shared storage counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for t in tensors:
        key = (t.untyped_storage().data_ptr(), t.storage_offset()) if t.numel() else (id(t), 0)
        if key not in seen:
            seen.add(key)
            total += t.numel() * t.element_size()
    return total


def check_free_space(root: Path, expected: int, last: Path | None) -> None:
    """Raise :class:`InsufficientSpaceError` unless ``root`` has room for a checkpoint.

    Args:
        expected: estimated bytes of the new checkpoint (from its tensors).
        last: the newest existing checkpoint; its size is used when larger than the estimate.
    """
    need = max(expected, dir_size(last) if last is not None else 0)
    free = shutil.disk_usage(root).free
    if free < need * SPACE_MARGIN:
        raise InsufficientSpaceError(
            f"checkpoint: not enough disk space in {root}: a checkpoint needs about {need / 1e6:.1f} MB "
            f"(+{SPACE_MARGIN - 1:.0%} margin) and {free / 1e6:.1f} MB are free; nothing was written and "
            "the existing checkpoints are intact. Free some space (or point train.output_dir elsewhere) "
            "and resume from the last checkpoint; LoRA adapters (model.<role>_lora.enabled=true) make "
            "checkpoints of a few MB.")


# ------------------------------------------------------------------------------ non-finite

def first_non_finite(named: Iterable[tuple[str, torch.Tensor]]) -> str | None:
    """Name of the first floating tensor holding NaN or inf (``None`` if all are finite)."""
    for name, t in named:
        if t.is_floating_point() and t.numel() and not bool(torch.isfinite(t).all()):
            return name
    return None


# ------------------------------------------------------------------------------ durability

def fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk; a no-op where unsupported."""
    if os.name == "nt":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ reading back

def read_json(path: Path) -> dict[str, Any]:
    """A checkpoint JSON document (a dict), or :class:`CheckpointError` naming the file."""
    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; the checkpoint is incomplete.")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CheckpointError(f"{path}: not UTF-8 text (byte {e.start}); the file is corrupt.") from e
    except json.JSONDecodeError as e:
        raise CheckpointError(f"{path}: not valid JSON ({e.msg} at line {e.lineno}); "
                              "the file was truncated or edited.") from e
    if not isinstance(doc, dict):
        raise CheckpointError(f"{path}: expected a JSON object, found {type(doc).__name__}.")
    return doc


def require(doc: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    """``doc[key]`` if present with type ``kind`` (bools are not ints), else :class:`CheckpointError`."""
    if key not in doc:
        raise CheckpointError(f"{path}: key {key!r} is missing.")
    v = doc[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(v, kinds) or (isinstance(v, bool) and bool not in kinds):
        want = " or ".join(k.__name__ for k in kinds)
        raise CheckpointError(f"{path}: {key!r} should be {want}, found {type(v).__name__} ({v!r:.60}).")
    return v


def check_safetensors(path: Path, expected: dict[str, tuple[int, ...]] | None = None) -> dict[str, tuple[int, ...]]:
    """Shapes stored in a safetensors file; raise :class:`CheckpointError` if it is missing,
    truncated, or (given ``expected`` shapes) holds a tensor whose shape differs."""
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise CheckpointError(f"{path}: file is missing; the checkpoint is incomplete.")
    try:
        with safe_open(str(path), "pt") as f:
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    except (SafetensorError, OSError) as e:
        raise CheckpointError(f"{path}: unreadable safetensors ({e}); the file is truncated or corrupt.") from e
    for k, shape in shapes.items():
        if expected is not None and k in expected and expected[k] != shape:
            raise CheckpointError(
                f"{path}: tensor {k!r} has shape {list(shape)} but the model's is {list(expected[k])}; "
                "the checkpoint was written for a different model (or head size).")
    return shapes
