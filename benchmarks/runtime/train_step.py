"""Seconds per GRPO optimizer step, ours vs TRL's ``GRPOTrainer``, full fine-tuning and LoRA.

Same model (the embedded SmolLM2-135M-Instruct), same prompt (one reasoning-gym problem, no
planner), G completions of exactly ``completion_tokens`` tokens, one optimizer step per rollout
batch, no KL (TRL's default beta=0), fp32 on CPU. So that every group really updates, both trainers
get the same dense reward of the completion text, :func:`dense_reward` (the share of digit
characters, capped), which varies between samples; ``groups_updated`` counts the groups with
reward variance that each trainer updated on (TRL's ``frac_reward_zero_std``, ours the same).

Rows (each in its own subprocess, so that ``peak_rss_mib`` is that row's alone):

* ``ours_full`` / ``trl_full``: every weight trains;
* ``ours_lora`` / ``trl_lora``: a LoRA adapter (same rank, alpha, target modules; TRL through
  ``peft_config``);
* ``ours_lora_engine``: ``ours_lora`` with its rollouts on llama.cpp (``llamacpp:default``, the embedded
  4-bit GGUF; :func:`agents.llamacpp.reasoner.build_trainable`): the adapter is written as a GGUF adapter and loaded before
  each rollout (``adapter_syncs`` counts them), torch scores the engine's tokens and updates, with
  truncated importance sampling (``tis_cap=2``). Needs ``rsim[llamacpp]`` and ``--model default``;
  otherwise it is skipped and the reason recorded under ``skipped``;
* ``ours_full_bf16`` / ``ours_lora_bf16``: ours decoding on a bf16 copy (``reasoner.sample_dtype``)
  with truncated importance sampling (``tis_cap=2``); not compared with TRL (its CPU generate has no
  such mode) and its effect on learning is not measured here;
* ``ours_full_amp`` / ``trl_full_amp``: full fine-tuning under bf16 autocast (ours: ``train.mixed_precision=bf16``,
  TRL: ``bf16=True``), fp32 weights and optimizer states; its effect on learning is not measured here;
* ``demo``: ``rsim train --preset demo`` (planner + reasoner, LoRA adapters on one shared base),
  its s/step, peak RSS and checkpoint size (a different workload: 2 groups x G=4, 3 rounds of 32 tokens);
* ``demo_full``: the same with LoRA off (both agents fully fine-tuned): the demo before LoRA adapters became its default.

``ratio_vs_trl`` is our s/step over TRL's in the same mode (the larger of the two modes; both are
in ``ratio_vs_trl_by_mode``); ``ratio_vs_trl_engine`` is ``ours_lora_engine`` over ``trl_lora`` (None,
with the reason in ``ratio_vs_trl_engine_note``, when either did not run). The first ``warmup`` steps of each row are not counted. TRL is optional
(``pip install rsim[trl]``); without it only our rows run.

    python -m benchmarks.runtime.train_step --out results/train_step.json
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

ROWS = ("ours_full", "trl_full", "ours_lora", "trl_lora", "ours_lora_engine", "ours_full_bf16", "ours_lora_bf16", "ours_full_amp", "trl_full_amp",
        "demo", "demo_full")


@dataclass(frozen=True)
class Config:
    """Benchmark settings."""

    model: str = "default"
    """Model spec for both trainers (see agents.hf.loading)."""
    group_size: int = 4
    """G completions per problem (one problem per step)."""
    completion_tokens: int = 64
    """Tokens generated per completion (forced: no early stop)."""
    steps: int = 4
    """Optimizer steps per trainer, including warmup."""
    warmup: int = 1
    """Leading steps not counted."""
    lr: float = 1e-6
    """Learning rate, full fine-tuning (both trainers)."""
    lora_lr: float = 1e-4
    """Learning rate, LoRA (both trainers)."""
    lora_rank: int = 16
    """LoRA rank (alpha = 2 * rank, all attention + MLP projections; both trainers)."""
    threads: int = 0
    """torch threads (0 = torch default)."""
    rows: str = ",".join(ROWS)
    """Comma-separated rows to run (see module docstring)."""
    seed: int = 0
    """Seed."""
    out: str | None = None
    """Where to write the JSON result."""
    output_dir: str = "runs/bench_train_step"
    """Scratch dir for the trainers' logs."""

    def __post_init__(self) -> None:
        if self.steps <= self.warmup:
            raise ValueError(f"Config.steps={self.steps} must exceed warmup={self.warmup} to measure anything.")
        bad = [r for r in self.rows.split(",") if r not in ROWS]
        if bad:
            raise ValueError(f"Config.rows: unknown rows {bad}; choose from {ROWS}.")


def dense_reward(text: str) -> float:
    """Share of digit characters among the first 200 characters, times 5, capped at 1 (varies by sample)."""
    head = text[:200]
    return min(1.0, 5.0 * sum(ch.isdigit() for ch in head) / max(1, len(head)))


def _problem():
    from rsim_env.sources.data import load_problems

    return load_problems("default", limit=2, seed=0)[0]


def _lora(cfg: Config, enabled: bool):
    from agents.hf.lora import LoraSpec

    return LoraSpec(enabled=enabled, rank=cfg.lora_rank, alpha=2.0 * cfg.lora_rank)


def run_ours(cfg: Config, lora: bool, sample_dtype: str = "float32", mixed_precision: str = "no",
             engine: bool = False) -> dict:
    """Our GRPO steps; ``engine``: the LoRA reasoner rolls out on llama.cpp (``llamacpp:default``)."""
    from accelerate.utils import set_seed

    from agents.reasoner import ReasonerConfig
    from agents.registry import AgentContext, build_agent
    from algos.grpo import GRPOConfig
    from algos.grpo_baseline import GRPOBaseline
    from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator

    class DenseRewardTrainer(Trainer):
        """Our trainer with the reasoner's reward replaced by :func:`dense_reward` of its completion."""

        def rollout(self, problems, seed):
            results, records = super().rollout(problems, seed)
            tok = self.agents["reasoner"].tokenizer
            for res, rec in zip(results, records["reasoner"]):
                gen = [t for t, m in zip(rec.input_ids, rec.gen_mask) if m]
                res["rewards"] = dict(res["rewards"], reasoner=dense_reward(tok.decode(gen)))
            return results, records

    tcfg = TrainConfig(steps=cfg.steps, groups_per_step=1, seed=cfg.seed, progress=False, mixed_precision=mixed_precision,
                       output_dir=f"{cfg.output_dir}/ours_{'lora' if lora else 'full'}_{sample_dtype}_{mixed_precision}"
                                  f"{'_engine' if engine else ''}", save_every=0,
                       grpo=GRPOConfig(group_size=cfg.group_size, max_length=cfg.completion_tokens,
                                       tis_cap=2.0 if sample_dtype != "float32" or engine else 0.0),
                       reasoner_optim=OptimConfig(lr=cfg.lora_lr if lora else cfg.lr))
    acc = make_accelerator(tcfg)
    set_seed(cfg.seed)
    rcfg = ReasonerConfig(max_step_tokens=cfg.completion_tokens, max_answer_tokens=cfg.completion_tokens,
                          stop_at_delimiter=False, sample_dtype=sample_dtype)
    spec = cfg.model
    if engine:  # KV per copy: prompt + completion with room to spare, a multiple of 256 (llama.cpp rounds down)
        spec = f"llamacpp:{cfg.model}#n_ctx={1024 * (1 + cfg.completion_tokens // 512)}" + (f"&threads={cfg.threads}" if cfg.threads else "")
    reasoner = build_agent(spec, AgentContext("reasoner", rcfg, lora=_lora(cfg, lora))).agent
    trainer = DenseRewardTrainer(tcfg, GRPOBaseline(), {"reasoner": reasoner}, [_problem()], acc)
    times, tokens, groups, rollout, updated = [], [], 0.0, [], []
    for i in range(cfg.steps):
        m = trainer.train_step()
        updated.append(m.get("reasoner/skipped", 1.0) == 0.0)
        if i >= cfg.warmup:
            times.append(m["step_time"]); tokens.append(m["completions/mean_length"] * cfg.group_size)
            rollout.append(m["rollout_time"])
            if updated[-1]:
                groups += 1.0 - m["reasoner/frac_reward_zero_std"]
    acc.end_training()
    # the sync is at the next rollout's start: 1 (the initial adapter) + each update before the last step
    extra = {"adapter_syncs": reasoner.decoder.adapter_syncs, "updated_steps": updated, "spec": spec} if engine else {}
    return dict(_summary(times, tokens), groups_updated=groups, trainable_params=_count(reasoner.module),
                rollout_seconds_per_step=statistics.median(rollout), **extra)


def _count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def run_trl(cfg: Config, lora: bool, bf16: bool = False) -> dict:
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig as TRLConfig, GRPOTrainer

    from agents.hf.loading import resolve
    from rsim_env.render import no_planner_chat

    p = _problem()
    data = Dataset.from_list([{"prompt": no_planner_chat(p.question)}] * (cfg.steps * 2))

    def reward(completions, **_):
        return [dense_reward(c[0]["content"] if isinstance(c, list) else c) for c in completions]

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.t0 = [], 0.0

        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            self.times.append(time.perf_counter() - self.t0)

    if cfg.model == "tiny":  # smoke runs: the random-init tiny model, written where from_pretrained finds it
        from agents.hf.loading import tiny_model

        m, t = tiny_model("causal", seed=cfg.seed)
        path = tempfile.mkdtemp(prefix="rsim-tiny-")
        m.save_pretrained(path); t.save_pretrained(path)
    else:
        path = resolve(cfg.model)
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    args = TRLConfig(output_dir=f"{cfg.output_dir}/trl_{'lora' if lora else 'full'}{'_bf16' if bf16 else ''}",
                     per_device_train_batch_size=cfg.group_size, num_generations=cfg.group_size,
                     max_completion_length=cfg.completion_tokens,
                     generation_kwargs={"min_new_tokens": cfg.completion_tokens}, max_steps=cfg.steps,
                     learning_rate=cfg.lora_lr if lora else cfg.lr, logging_steps=1, report_to="none", use_cpu=True,
                     bf16=bf16, save_strategy="no", seed=cfg.seed, beta=0.0, disable_tqdm=True)
    timer = Timer()
    peft_config = _lora(cfg, True).peft_config() if lora else None
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data, processing_class=tok,
                          callbacks=[timer], peft_config=peft_config)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "completions/mean_length" in h][cfg.warmup:]
    out = _summary(timer.times[cfg.warmup:], [h["completions/mean_length"] * cfg.group_size for h in logs])
    groups = sum(1.0 - h.get("frac_reward_zero_std", 1.0) for h in logs)
    return dict(out, groups_updated=groups, trainable_params=_count(trainer.model), trl_version=trl.__version__)


def run_demo(cfg: Config, lora: bool = True) -> dict:
    from algos.cli import main as train
    from algos.config import resolve

    full = {} if lora else {"model.planner_lora.enabled": False, "model.reasoner_lora.enabled": False,
                            "train.planner_optim.lr": 2e-5, "train.reasoner_optim.lr": 2e-5}
    out = train(resolve("demo", {"train.output_dir": f"{cfg.output_dir}/demo{'' if lora else '_full'}",
                                 "train.steps": cfg.steps, "train.progress": False, "train.save_every": 0, **full}))
    times = [m["step_time"] for m in out["history"][cfg.warmup:]]
    ck = Path(out["checkpoint"])
    return dict(_summary(times, []), checkpoint_mib=sum(f.stat().st_size for f in ck.rglob("*") if f.is_file()) / 2**20,
                trainable_params={r: _count(m) for r, m in out["params"].items()})


def _summary(times: list[float], tokens: list[float]) -> dict:
    return {"seconds_per_step": statistics.median(times), "step_times": times,
            "tokens_per_step": statistics.mean(tokens) if tokens else None,
            "tokens_per_s": (sum(tokens) / sum(times)) if tokens else None}


def run_row(cfg: Config, row: str) -> dict:
    """One row in this process (the parent runs each row in a fresh subprocess)."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    fn = {"ours_full": lambda: run_ours(cfg, False), "ours_lora": lambda: run_ours(cfg, True),
          "ours_lora_engine": lambda: run_ours(cfg, True, engine=True),
          "ours_full_bf16": lambda: run_ours(cfg, False, "bfloat16"), "ours_lora_bf16": lambda: run_ours(cfg, True, "bfloat16"),
          "ours_full_amp": lambda: run_ours(cfg, False, mixed_precision="bf16"),
          "trl_full": lambda: run_trl(cfg, False), "trl_lora": lambda: run_trl(cfg, True),
          "trl_full_amp": lambda: run_trl(cfg, False, bf16=True), "demo": lambda: run_demo(cfg),
          "demo_full": lambda: run_demo(cfg, lora=False)}
    out = fn[row]()
    out["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out["torch_threads"] = torch.get_num_threads()
    return out


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


def skip_reason(cfg: Config, row: str) -> str | None:
    """Why ``row`` cannot run here (an optional dependency or the model), or None."""
    if row.startswith("trl") and _missing("trl"):
        return "trl is not installed (pip install 'rsim[trl]')"
    if row == "ours_lora_engine":
        if _missing("llama_cpp"):
            return "llama-cpp-python is not installed (pip install 'rsim[llamacpp]')"
        if cfg.model != "default":
            return f"the engine trains only the embedded model (--model default), not {cfg.model!r}"
    return None


def main(cfg: Config) -> dict:
    requested = cfg.rows.split(",")
    skipped = {r: why for r in requested if (why := skip_reason(cfg, r))}
    rows = [r for r in requested if r not in skipped]
    result: dict = {"config": asdict(cfg), "rows": {}, "skipped": skipped}
    for row in rows:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            argv = [sys.executable, "-c", "import sys; from benchmarks.runtime.train_step import _child; _child(sys.argv[1:])",
                    row, f.name]
            argv += [f"--{k.replace('_', '-')}={v}" for k, v in asdict(cfg).items() if k not in ("out", "rows") and v is not None]
            subprocess.run(argv, check=True)
            result["rows"][row] = json.loads(Path(f.name).read_text())
        print(f"[train_step] {row}: {result['rows'][row]['seconds_per_step']:.2f} s/step", flush=True)
    r = result["rows"]
    result.update(ratios(r, skipped))
    result["groups_updated"] = {k: v["groups_updated"] for k, v in r.items() if "groups_updated" in v}
    result["peak_rss_mib"] = {k: v["peak_rss_mib"] for k, v in r.items()}
    print_table(result)
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1))
    return result


def _child(argv: list[str]) -> None:
    """Entry of the fresh process :func:`main` starts per row: ``ROW OUT_JSON --config-flags ...``."""
    from algos.dataclass_cli import parse_config

    row, out, *flags = argv
    cfg = parse_config(Config, flags, prog="benchmarks.runtime.train_step row")
    Path(out).write_text(json.dumps(run_row(cfg, row)))


# ---------------------------------------------------------------- the compared figures and the table

def ratios(rows: dict[str, dict], skipped: dict[str, str]) -> dict:
    """The s/step ratios of ``rows`` (row -> its result); ``skipped`` says why a requested row did not run."""
    sps = {name: row["seconds_per_step"] for name, row in rows.items()}
    by_mode = {m: sps[f"ours_{m}"] / sps[f"trl_{m}"] for m in ("full", "lora", "full_amp")
               if f"ours_{m}" in sps and f"trl_{m}" in sps}
    fp32 = [v for m, v in by_mode.items() if m in ("full", "lora")]  # the target: fp32, full and LoRA
    out = {"ratio_vs_trl_by_mode": by_mode, "ratio_vs_trl": max(fp32) if fp32 else None,
           "ratio_vs_trl_engine": None, "ratio_vs_trl_engine_note": None}
    if "ours_lora_engine" in sps and "trl_lora" in sps:
        out["ratio_vs_trl_engine"] = sps["ours_lora_engine"] / sps["trl_lora"]
    else:
        missing = [r for r in ("ours_lora_engine", "trl_lora") if r not in sps]
        out["ratio_vs_trl_engine_note"] = "; ".join(
            f"{r} did not run: {skipped.get(r, 'not in --rows')}" for r in missing)
    return out


def print_table(res: dict) -> None:
    """Print one line per row, then the checkpoint sizes, the ratios and the skipped rows."""
    print(f"{'row':>16} {'s/step':>8} {'rollout s':>9} {'tokens/s':>9} {'groups upd':>11} {'trainable':>11} "
          f"{'peak RSS MiB':>13}")
    for name, x in res["rows"].items():
        tp = x.get("trainable_params")
        tp = sum(tp.values()) if isinstance(tp, dict) else tp
        roll = x.get("rollout_seconds_per_step")
        print(f"{name:>16} {x['seconds_per_step']:>8.2f} {'' if roll is None else f'{roll:.2f}':>9} "
              f"{x['tokens_per_s'] or 0:>9.1f} {x.get('groups_updated', float('nan')):>11.1f} {tp or 0:>11d} "
              f"{x['peak_rss_mib']:>13.0f}")
    for name, x in res["rows"].items():
        if "checkpoint_mib" in x:
            print(f"{name}: checkpoint {x['checkpoint_mib']:.0f} MiB")
        if "adapter_syncs" in x:
            print(f"{name}: {x['adapter_syncs']} adapter syncs to the engine in {res['config']['steps']} steps")
    for mode, v in res["ratio_vs_trl_by_mode"].items():
        print(f"ours / TRL s/step ({mode}): {v:.2f}   (target <= 0.5)")
    if res["ratio_vs_trl_engine"] is not None:
        print(f"ours on the engine / TRL s/step (lora): {res['ratio_vs_trl_engine']:.2f}   (target <= 0.5)")
    elif "ours_lora_engine" in res["rows"]:
        print(f"ours on the engine / TRL: not computed ({res['ratio_vs_trl_engine_note']})")
    for name, why in res.get("skipped", {}).items():
        print(f"{name}: skipped ({why})")


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m benchmarks.runtime.train_step", __doc__)
