"""Store a study's planner-feature cache at half precision: one safetensors file, the same keys, half the bytes.

A study keeps the frozen planner backbone's feature of every decision context (``algos.study.features.FeatureStore``:
one ``[contexts, hidden]`` tensor named ``features``, the context keys and the backbone in its metadata) and plays
its heads on them with no forward pass. float32 is what the backbone computes; a head reads the features as float32
(``HeadPlanner`` upcasts), so a cache stored as float16 or bfloat16 changes the features by at most half a unit in the
last place of that type. Whether that changes a decision is the test's to say: ``tests/test_compact_features.py``
scores the committed study from a converted copy and checks every figure and every seed's plans. ::

    python -m tools.compact_features docs/study_results/adaptive/features/default.safetensors        # in place
    python -m tools.compact_features SRC --out DST --dtype bfloat16

float16 keeps 10 mantissa bits to bfloat16's 7, so it is the default; a value beyond float16's range (65504) is
refused, naming bfloat16 (8 exponent bits, float32's range). The metadata is kept as it is; the file is written to
a temporary sibling, then renamed into place.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

DTYPES = ("float16", "bfloat16")
"""The storage types offered: both two bytes a value."""


def compact(src: str | os.PathLike, out: str | os.PathLike | None = None, dtype: str = "float16") -> dict[str, Any]:
    """Write the feature store ``src`` with its tensors as ``dtype`` to ``out`` (default: ``src``, replaced) and return
    what changed: bytes before and after, the largest change of a value and the largest value."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    if dtype not in DTYPES:
        raise ValueError(f"--dtype {dtype!r}: choose one of {', '.join(DTYPES)}.")
    src, out = Path(src), Path(out or src)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no feature file; a study writes it (rsim study --stage score or train).")
    with safe_open(str(src), "pt") as f:
        meta = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    if "features" not in tensors:
        raise ValueError(f"{src} holds no 'features' tensor ({sorted(tensors)}): not a study's feature store.")
    target = getattr(torch, dtype)
    worst, largest = 0.0, 0.0
    converted = {}
    for name, t in tensors.items():
        if not t.is_floating_point():
            converted[name] = t
            continue
        full = t.float()
        if dtype == "float16" and full.abs().max().item() > torch.finfo(torch.float16).max:
            raise ValueError(f"{src}: {name} has values beyond float16's range ({full.abs().max().item():.4g}); use "
                             "--dtype bfloat16.")
        small = full.to(target).contiguous()
        if full.numel():
            worst = max(worst, (small.float() - full).abs().max().item())
            largest = max(largest, full.abs().max().item())
        converted[name] = small
    before = src.stat().st_size
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}-", dir=out.parent)
    os.close(fd)
    try:
        save_file(converted, tmp, metadata=meta)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"src": str(src), "out": str(out), "dtype": dtype, "bytes_before": before, "bytes_after": out.stat().st_size,
            "contexts": int(tensors["features"].shape[0]), "max_change": worst, "max_value": largest}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.compact_features", description=__doc__.splitlines()[0])
    ap.add_argument("src", help="a study's feature file (features/<planner>.safetensors)")
    ap.add_argument("--out", default="", help="where the converted file goes (default: replace SRC)")
    ap.add_argument("--dtype", default="float16", choices=DTYPES, help="storage type (default float16)")
    args = ap.parse_args(argv)
    try:
        r = compact(args.src, args.out or None, args.dtype)
    except (ValueError, FileNotFoundError) as e:
        print(f"compact_features: {e}", file=sys.stderr)
        return 1
    print(f"{r['out']}: {r['contexts']} contexts as {r['dtype']}, {r['bytes_before']:,} -> {r['bytes_after']:,} bytes; "
          f"largest change of a value {r['max_change']:.3g} (largest value {r['max_value']:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
