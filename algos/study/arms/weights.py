"""A trained arm's run's weights, by digest: its newest checkpoint's weights files, or, where the checkpoints are gone,
the digest its finished record wrote (so a study folder kept without checkpoints still reads its looks back)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["files_digest", "run_weights"]


def files_digest(checkpoint: str | Path) -> str:
    """SHA-256 of a checkpoint's weights files (``model.*``, by name and bytes)."""
    h = hashlib.sha256()
    for p in sorted(Path(checkpoint).glob("model.*")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def run_weights(spec: str) -> str | None:
    """The weights of a run dir ``spec``: its newest checkpoint's :func:`files_digest`, or, where its checkpoints are
    gone (deleted to save space, or never copied with the run's record), the digest its finished record
    (``arm.json``) wrote when it ended; None for anything else (a model by name, a head file)."""
    from agents.runs import find_checkpoint

    path = Path(spec) if spec else None
    if path is None or not path.is_dir():
        return None
    ck = find_checkpoint(path)
    if ck is not None:
        return files_digest(ck)
    rec = path / "arm.json"
    return json.loads(rec.read_text()).get("weights") if rec.is_file() else None
