"""GPU: seconds per step of the paper preset with vLLM rollouts, ours (served LoRA route) vs TRL's ``use_vllm``.

**Written from vLLM's and TRL's docs and sources, never run on a GPU** (no GPU was lent while it was written);
``--dry-run`` prints the three commands and checks what can be checked on a CPU (``tests/test_vllm_train.py``).

Rows, each in its own process (so each gets the GPU's memory to itself):

* ``ours``: ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve MODEL --enable-lora ...`` is started, then
  ``rsim train --preset paper`` runs ``--steps`` steps with ``model.reasoner=openai:MODEL@URL`` and LoRA on both
  agents (:mod:`agents.served.train`: every rollout on the server, the adapter loaded by a new name before each
  rollout, torch scores and updates with ``tis_cap=2``), then the server is stopped;
* ``trl``: TRL's ``GRPOTrainer`` with ``use_vllm=True, vllm_mode="colocate"`` (vLLM in the trainer's process,
  the merged LoRA weights pushed to it each step) on the same GSM8K problems, the same LoRA, G and problems per
  step, rewarded by rSIM's own accuracy and format components (:mod:`rsim_env.integrations.trl_rewards`).

The workloads differ as the methods do: ours plays the planner game (up to ``env.max_steps`` rounds of
``reasoner.max_step_tokens``, planner and reasoner both trained), TRL writes one answer of up to
``max_answer_tokens`` (reasoner only); ``tokens_per_step`` is printed beside the step time. The first
``warmup`` steps are not counted. ``ratio`` = ours s/step ÷ TRL's.

    python -m studies.vllm_paper --steps 4 --out results/vllm_paper.json
    python -m studies.vllm_paper --dry-run
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROWS = ("ours", "trl")


@dataclass(frozen=True)
class Config:
    """Benchmark settings (defaults: the paper preset's model, problems, G and problems per step)."""

    model: str = "Qwen/Qwen2.5-0.5B-Instruct"
    """Hub id (or local dir) of the base both trainers load and vLLM serves."""
    steps: int = 4
    """Optimizer steps per row, including warmup."""
    warmup: int = 1
    """Leading steps not counted."""
    groups_per_step: int = 32
    """Problems per step (paper preset)."""
    group_size: int = 8
    """G completions per problem (paper preset)."""
    lora_rank: int = 16
    """LoRA rank (alpha = 2 * rank) of every trained agent, both trainers."""
    lora_lr: float = 1e-5
    """Learning rate of the adapters, both trainers."""
    max_answer_tokens: int = 1024
    """TRL's max_completion_length (the paper preset's reasoner.max_answer_tokens)."""
    port: int = 8000
    """Port of the vLLM server of row ``ours`` (127.0.0.1)."""
    gpu_memory_utilization: float = 0.35
    """GPU memory share of vLLM (the server of ``ours``, TRL's colocated engine); torch uses the rest."""
    max_model_len: int = 4096
    """vLLM's context window: a paper episode is up to 8 rounds of 256 tokens after the prompt."""
    server_timeout_s: float = 900.0
    """How long to wait for ``vllm serve`` to answer /health."""
    vllm: str = "vllm"
    """The vllm executable."""
    rows: str = ",".join(ROWS)
    """Comma-separated rows to run."""
    dry_run: bool = False
    """Print the commands (and the TRL config) instead of running them."""
    out: str | None = None
    """Where to write the JSON result."""
    output_dir: str = "runs/bench_vllm_paper"
    """Scratch dir of both trainers."""

    def __post_init__(self) -> None:
        if self.steps <= self.warmup:
            raise ValueError(f"Config.steps={self.steps} must exceed warmup={self.warmup} to measure anything.")
        bad = [r for r in self.rows.split(",") if r not in ROWS]
        if bad:
            raise ValueError(f"Config.rows: unknown rows {bad}; choose from {ROWS}.")
        if not 0 < self.gpu_memory_utilization < 1:
            raise ValueError(f"Config.gpu_memory_utilization={self.gpu_memory_utilization}: use a share in (0, 1).")


def serve_command(cfg: Config) -> tuple[list[str], dict[str, str]]:
    """``vllm serve`` with runtime LoRA (argv, extra environment)."""
    argv = [cfg.vllm, "serve", cfg.model, "--host", "127.0.0.1", "--port", str(cfg.port), "--dtype", "bfloat16",
            "--enable-lora", "--max-lora-rank", str(cfg.lora_rank), "--max-loras", "2",
            "--gpu-memory-utilization", str(cfg.gpu_memory_utilization), "--max-model-len", str(cfg.max_model_len)]
    return argv, {"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}


def ours_args(cfg: Config) -> list[str]:
    """``rsim train`` arguments of row ``ours`` (the served LoRA route)."""
    copies = cfg.groups_per_step * cfg.group_size
    spec = f"openai:{cfg.model}@http://127.0.0.1:{cfg.port}/v1#max_concurrency={copies}&timeout_s=600"
    sets = {"model.reasoner": spec, "model.reasoner_lora.enabled": "true", "model.planner_lora.enabled": "true",
            "model.reasoner_lora.rank": cfg.lora_rank, "model.reasoner_lora.alpha": 2.0 * cfg.lora_rank,
            "model.planner_lora.rank": cfg.lora_rank, "model.planner_lora.alpha": 2.0 * cfg.lora_rank,
            "train.grpo.tis_cap": 2, "train.groups_per_step": cfg.groups_per_step,
            "train.grpo.group_size": cfg.group_size, "train.reasoner_optim.lr": cfg.lora_lr,
            "train.planner_optim.lr": cfg.lora_lr, "train.save_every": 0, "train.score_chunk": 16}
    argv = ["train", "--preset", "paper", "--steps", str(cfg.steps), "--out", f"{cfg.output_dir}/ours"]
    for k, v in sets.items():
        argv += ["--set", f"{k}={v}"]
    return argv


def trl_kwargs(cfg: Config) -> dict[str, Any]:
    """``trl.GRPOConfig`` keywords of row ``trl`` (one generation of groups x G completions per optimizer step)."""
    accum = 4
    return {"output_dir": f"{cfg.output_dir}/trl", "max_steps": cfg.steps, "num_generations": cfg.group_size,
            "per_device_train_batch_size": cfg.groups_per_step * cfg.group_size // accum,
            "gradient_accumulation_steps": accum, "max_completion_length": cfg.max_answer_tokens,
            "learning_rate": cfg.lora_lr, "beta": 0.04, "temperature": 1.0, "bf16": True, "use_vllm": True,
            "vllm_mode": "colocate", "vllm_gpu_memory_utilization": cfg.gpu_memory_utilization,
            "vllm_max_model_length": cfg.max_model_len, "logging_steps": 1, "save_strategy": "no",
            "report_to": "none", "seed": 0, "disable_tqdm": True}


def _child_argv(cfg: Config, row: str, out: str) -> list[str]:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in asdict(cfg).items() if k not in ("out", "rows", "dry_run") and v is not None]
    return [sys.executable, "-c", "import sys; from studies.vllm_paper import _child; _child(sys.argv[1:])",
            row, out, *flags]


def run_ours(cfg: Config) -> dict:
    """Row ``ours`` in this process (the server must be up)."""
    from algos.cli import main as train

    out = train(ours_args(cfg))
    hist = out["history"][cfg.warmup:]
    return _summary([h["step_time"] for h in hist], [h.get("num_tokens", 0.0) for h in hist],
                    rollout_s=[h.get("rollout_time", 0.0) for h in hist])


def run_trl(cfg: Config) -> dict:
    """Row ``trl`` in this process: GRPOTrainer(use_vllm=True) on the paper preset's GSM8K problems."""
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from agents.hf.lora import LoraSpec
    from rsim_env.sources.data import load_problems
    from rsim_env.render import no_planner_chat
    from rsim_env.integrations.trl_rewards import make_accuracy_reward, make_format_reward

    problems = load_problems("gsm8k", limit=cfg.groups_per_step * cfg.steps, split="train")
    data = Dataset.from_list([{"prompt": no_planner_chat(p.question), "answer": p.answer} for p in problems])

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.t0 = [], 0.0

        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.times.append(time.perf_counter() - self.t0)

    timer = Timer()
    model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype="bfloat16")
    trainer = GRPOTrainer(model=model, reward_funcs=[make_accuracy_reward(), make_format_reward()],
                          args=GRPOConfig(**trl_kwargs(cfg)), train_dataset=data,
                          processing_class=AutoTokenizer.from_pretrained(cfg.model), callbacks=[timer],
                          peft_config=LoraSpec(enabled=True, rank=cfg.lora_rank, alpha=2.0 * cfg.lora_rank).peft_config())
    trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h][cfg.warmup:]
    out = _summary(timer.times[cfg.warmup:], [h["completions/mean_length"] * cfg.groups_per_step * cfg.group_size
                                              for h in logs])
    return dict(out, trl_version=trl.__version__)


def _summary(times: list[float], tokens: list[float], **extra: list[float]) -> dict:
    out = {"seconds_per_step": statistics.median(times), "step_times": times,
           "tokens_per_step": statistics.mean(tokens) if tokens else None}
    return out | {k: statistics.median(v) for k, v in extra.items() if v}


class Server:
    """``vllm serve`` in its own process group, up once /health answers 200; stopped on exit."""

    def __init__(self, cfg: Config) -> None:
        argv, env = serve_command(cfg)
        self.proc = subprocess.Popen(argv, env={**os.environ, **env}, start_new_session=True)
        health, t0 = f"http://127.0.0.1:{cfg.port}/health", time.monotonic()
        while time.monotonic() - t0 < cfg.server_timeout_s:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vllm serve exited with code {self.proc.returncode}; see its output above.")
            try:
                with urllib.request.urlopen(health, timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(2)
        self.stop()
        raise RuntimeError(f"vllm serve did not answer {health} within {cfg.server_timeout_s} s.")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def dry_run(cfg: Config) -> dict:
    """The commands a real run would start, printed."""
    serve, env = serve_command(cfg)
    commands = {"serve": " ".join(f"{k}={v}" for k, v in env.items()) + " " + " ".join(serve),
                "ours": "rsim " + " ".join(_quote(a) for a in ours_args(cfg)),
                "trl": f"GRPOTrainer(args=trl.GRPOConfig(**{trl_kwargs(cfg)!r}), peft_config=LoRA r={cfg.lora_rank})"}
    for name, line in commands.items():
        print(f"[{name}] {line}")
    return {"dry_run": True, "config": asdict(cfg), "commands": commands, "serve_argv": serve, "serve_env": env,
            "ours_args": ours_args(cfg), "trl_kwargs": trl_kwargs(cfg)}


def _quote(arg: str) -> str:
    return f"'{arg}'" if any(c in arg for c in "#&? ") else arg


def main(cfg: Config) -> dict:
    if cfg.dry_run:
        return dry_run(cfg)
    result: dict = {"config": asdict(cfg), "rows": {}, "untested_on_gpu_when_written": True}
    for row in cfg.rows.split(","):
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            if row == "ours":
                with Server(cfg):
                    subprocess.run(_child_argv(cfg, row, f.name), check=True)
            else:
                subprocess.run(_child_argv(cfg, row, f.name), check=True)
            result["rows"][row] = json.loads(Path(f.name).read_text())
    r = result["rows"]
    if "ours" in r and "trl" in r:
        result["ratio"] = r["ours"]["seconds_per_step"] / r["trl"]["seconds_per_step"]
    print(f"{'row':>6} {'s/step':>8} {'tokens/step':>12} {'rollout s':>10}")
    for name, v in r.items():
        print(f"{name:>6} {v['seconds_per_step']:8.2f} {v['tokens_per_step'] or 0:12.0f} {v.get('rollout_s', 0):10.2f}")
    if "ratio" in result:
        print(f"ours / TRL use_vllm s/step: {result['ratio']:.2f}")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _child(argv: list[str]) -> None:
    """Entry of the fresh process :func:`main` starts per row: ``ROW OUT_JSON --config-flags ...``."""
    from algos.dataclass_cli import parse_config

    row, out, *flags = argv
    cfg = parse_config(Config, flags, prog="studies.vllm_paper row")
    Path(out).write_text(json.dumps(run_ours(cfg) if row == "ours" else run_trl(cfg)))


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.vllm_paper", __doc__)
