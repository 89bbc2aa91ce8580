"""A study's kept JSON (scores, read-back tables) as gzip files: compact in a checkout, and identical bytes for
identical content (no timestamp in the gzip header), so rewriting an unchanged scoring changes no file."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["read", "write"]


def read(path: str | os.PathLike) -> Any:
    """The JSON value in the gzip file ``path``."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def write(path: str | os.PathLike, value: Any) -> Path:
    """Write ``value`` as compact JSON into the gzip file ``path`` (a temporary sibling renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = gzip.compress((json.dumps(value, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8"),
                         compresslevel=9, mtime=0)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
