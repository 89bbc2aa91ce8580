"""llama.cpp decode speed by weight type, LoRA adapter and OpenMP wait policy: why the engine is as fast as it is.

Two findings about the llama.cpp engine's speed rest on this script:

* **Wait policy.** llama.cpp's CPU backend ends every graph node with an OpenMP barrier (a LoRA adapter adds
  four nodes per adapted weight), and in an ``rsim`` process it shares torch's libgomp. Under
  ``OMP_WAIT_POLICY=PASSIVE`` (rSIM's default before) each barrier is a sleep and a wake-up; a short spin
  (``GOMP_SPINCOUNT=1000``, rSIM's default, :mod:`algos.threads`) keeps the barriers cheap. libgomp reads the
  policy once, when it loads, so every policy runs in its own child process.
* **Weight type.** The embedded GGUF is Q4_1. llama.cpp has no batched (GEMM) CPU kernel for Q4_1, so its
  prompt processing runs at decode speed; Q4_0 and Q8_0 have them. The other types are made here from the
  embedded file (``llama_model_quantize``, re-quantizing: their accuracy is not measured by this script).

Each cell: ``batch`` sequences read a ``prompt``-token prompt in one call (prompt tok/s), then decode
``decode`` tokens each, one ``llama_decode`` per token over all of them (decode tok/s), greedy.

    python -m studies.engine_kernels --out docs/lean_results/engine_kernels.json    # ~3 min on 2 cores
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

POLICIES = {"spin1000": {"GOMP_SPINCOUNT": "1000"}, "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
            "libgomp_default": {}}
"""Wait policy -> the child's environment (``libgomp_default``: libgomp's own ~3 ms spin)."""
QUANTS = ("q4_1", "q4_0", "q8_0")


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    quants: str = "q4_1,q4_0,q8_0"
    """Weight types: q4_1 (the embedded GGUF as shipped), q4_0, q8_0 (re-quantized from it)."""
    policies: str = "spin1000,passive,libgomp_default"
    """OpenMP wait policies, one child process each."""
    batch: int = 16
    """Sequences decoded together (the study preset's 2 groups x G = 8)."""
    prompt: int = 200
    """Prompt tokens per sequence."""
    decode: int = 32
    """Decoded tokens per sequence."""
    threads: int = 2
    """llama.cpp threads."""
    cache_dir: str = ""
    """Where the re-quantized GGUFs go ("" = the embedded model's cache dir)."""
    out: str = ""
    """JSON path ("" = print only)."""

    def __post_init__(self) -> None:
        bad = [q for q in self.quants.split(",") if q not in QUANTS] + [
            p for p in self.policies.split(",") if p not in POLICIES]
        if bad:
            raise ValueError(f"unknown {bad}: quants are {QUANTS}, policies {tuple(POLICIES)}.")
        if min(self.batch, self.prompt, self.decode, self.threads) < 1:
            raise ValueError("batch, prompt, decode and threads must be >= 1.")


def gguf_of(quant: str, cache_dir: str) -> Path:
    """The embedded GGUF (q4_1) or a re-quantized copy of it, made once."""
    from agents.embedded import fetched_gguf_path
    from agents.llamacpp.engine import import_llama_cpp

    src = Path(fetched_gguf_path())
    if quant == "q4_1":
        return src
    dst = Path(cache_dir or src.parent) / f"{src.stem}.requant-{quant}.gguf"
    if not dst.is_file():
        lib = import_llama_cpp()
        params = lib.llama_model_quantize_default_params()
        params.ftype = {"q4_0": lib.LLAMA_FTYPE_MOSTLY_Q4_0, "q8_0": lib.LLAMA_FTYPE_MOSTLY_Q8_0}[quant]
        params.allow_requantize = True
        tmp = dst.with_suffix(".part")
        if lib.llama_model_quantize(str(src).encode(), str(tmp).encode(), ctypes.byref(params)) != 0:
            raise RuntimeError(f"llama_model_quantize to {quant} failed")
        tmp.replace(dst)
    return dst


def random_adapter(path: Path, gguf: Path, rank: int = 16) -> Path:
    """A rank-``rank`` LoRA adapter on all 7 projections of every layer (random weights: speed only)."""
    import numpy as np

    from agents.llamacpp.gguf_lora import HF_TO_GGUF, BaseTensors, write_adapter

    base = BaseTensors.from_gguf(gguf)
    rng = np.random.default_rng(0)
    state = {}
    for layer in sorted({int(k.split(".")[1]) for k in base.shapes if k.startswith("blk.")}):
        for hf, gg in HF_TO_GGUF.items():
            out_dim, in_dim = base.shapes[f"blk.{layer}.{gg}.weight"]
            group = "mlp" if hf in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            key = f"base_model.model.model.layers.{layer}.{group}.{hf}"
            state[f"{key}.lora_A.weight"] = rng.normal(0, 0.01, (rank, in_dim)).astype(np.float32)
            state[f"{key}.lora_B.weight"] = rng.normal(0, 0.01, (out_dim, rank)).astype(np.float32)
    return write_adapter(path, state, 2.0 * rank, base)


def cell(cfg: Config, gguf: Path, adapter: Path | None) -> dict[str, float]:
    """Prompt and decode tokens/s of one engine (see module docstring)."""
    import numpy as np

    from agents.llamacpp.engine import Engine

    engine = Engine(gguf, n_ctx=cfg.prompt + cfg.decode + 8, threads=cfg.threads)
    try:
        if adapter is not None:
            engine.load_adapter(adapter)
        engine.reset(cfg.batch)
        text = " ".join(f"Step {i}: the sum of {i} and {2 * i} is {3 * i}." for i in range(200))
        prompt = engine.tokenize(text)[:cfg.prompt]
        t = time.perf_counter()
        logits = engine.feed({s: prompt for s in range(cfg.batch)})
        prompt_s = time.perf_counter() - t
        t = time.perf_counter()
        for _ in range(cfg.decode):
            logits = engine.feed({s: [int(np.argmax(x))] for s, x in logits.items()})
        decode_s = time.perf_counter() - t
    finally:
        engine.close()
    return {"prompt_tok_s": cfg.batch * cfg.prompt / prompt_s, "decode_tok_s": cfg.batch * cfg.decode / decode_s,
            "decode_ms_per_step": 1000 * decode_s / cfg.decode}


def child(cfg: Config) -> list[dict[str, Any]]:
    """Every (weight type, adapter) cell in this process (its wait policy is the environment's)."""
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for quant in cfg.quants.split(","):
            gguf = gguf_of(quant, cfg.cache_dir)
            adapter = random_adapter(Path(tmp) / f"lora-{quant}.gguf", gguf)
            for lora in (False, True):
                rows.append({"quant": quant, "lora": lora, **cell(cfg, gguf, adapter if lora else None)})
    return rows


def main(cfg: Config) -> dict[str, Any]:
    """Run each wait policy in a child process; print the table; write JSON if ``cfg.out``."""
    for quant in cfg.quants.split(","):  # made once, before the timed children
        gguf_of(quant, cfg.cache_dir)
    result: dict[str, Any] = {"config": asdict(cfg), "rows": []}
    for policy in cfg.policies.split(","):
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
        env.update(POLICIES[policy], OMP_NUM_THREADS=str(cfg.threads))
        p = subprocess.run([sys.executable, "-m", "studies.engine_kernels", "--child", json.dumps(asdict(cfg))],
                           env=env, capture_output=True, text=True, timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"policy {policy}: the child failed: {p.stderr[-1500:]}")
        result["rows"] += [{"policy": policy, **r} for r in json.loads(p.stdout.strip().splitlines()[-1])]
    _summarize(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _summarize(result: dict[str, Any]) -> None:
    rows = result["rows"]
    print(f"{'policy':>16} {'weights':>7} {'LoRA':>5} {'prompt tok/s':>12} {'decode tok/s':>12} {'ms/step':>8}")
    for r in rows:
        print(f"{r['policy']:>16} {r['quant']:>7} {str(r['lora']):>5} {r['prompt_tok_s']:>12.1f} "
              f"{r['decode_tok_s']:>12.1f} {r['decode_ms_per_step']:>8.1f}")
    find = {(r["policy"], r["quant"], r["lora"]): r for r in rows}
    for lora in (False, True):
        a, b = find.get(("passive", "q4_1", lora)), find.get(("spin1000", "q4_1", lora))
        if a and b:
            key = f"passive_vs_spin_decode_time{'_lora' if lora else ''}"
            result[key] = b["decode_tok_s"] / a["decode_tok_s"]
            print(f"{key}: {result[key]:.2f}x (decode time under PASSIVE / under GOMP_SPINCOUNT=1000, q4_1)")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(Config(**json.loads(sys.argv[2])))))
    else:
        from algos.dataclass_cli import cli_main

        cli_main(main, Config, "python -m studies.engine_kernels", __doc__)
