"""Multi-process helpers of the training loop (no-ops on one process).

Each GRPO group stays on one process; gradients are averaged with one all-reduce per agent
instead of wrapping models in DDP, because agents run their modules through their own ``score``
method (DDP only syncs through its own ``forward``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator

__all__ = ["make_accelerator", "sync_grads", "process_weight", "check_replicas_agree"]


def make_accelerator(cfg: Any) -> Accelerator:
    """Accelerator with TensorBoard logging under ``cfg.output_dir`` and bf16 only where supported."""
    mp = cfg.mixed_precision
    if mp == "auto":
        mp = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "no"
    Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
    # `accelerate launch --cpu --num_processes N` starts ONE process unless an MPI hostfile is set;
    # `accelerate launch --multi_gpu --num_processes N` (torchrun) on a machine without GPUs needs
    # cpu=True here so the processes form a gloo group instead of N independent runs.
    cpu = "LOCAL_RANK" in os.environ and not torch.cuda.is_available()
    return Accelerator(mixed_precision=mp, log_with="tensorboard", project_dir=cfg.output_dir, cpu=cpu)


def sync_grads(acc: Accelerator, params: list[torch.nn.Parameter]) -> None:
    """Average ``params``' gradients over processes (one flat all-reduce)."""
    if acc.num_processes == 1:
        return
    flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in params])
    torch.distributed.all_reduce(flat)
    flat /= acc.num_processes
    o = 0
    for p in params:
        p.grad = flat[o:o + p.numel()].view_as(p).clone()
        o += p.numel()


def process_weight(acc: Accelerator, local_units: float, weight: float) -> float:
    """Loss multiplier making the all-reduced *mean* gradient equal the loss over the global batch.

    Each process normalises by its own count (``local_units``: tokens or sequences, from the loss
    aggregation); with uneven counts (skipped groups, different lengths) a plain mean over
    processes would over-weight the smaller ones. Multiplying by ``local * world / global`` fixes that.
    """
    local = local_units * weight
    if acc.num_processes == 1:
        return weight
    total = acc.reduce(torch.tensor(local, device=acc.device), "sum").item()
    return local * acc.num_processes / total if total > 0 else 0.0


def check_replicas_agree(acc: Accelerator, modules: list[torch.nn.Module]) -> None:
    """Internal invariant: every process holds the same weights (gradients were all-reduced)."""
    if acc.num_processes == 1:
        return
    sums = torch.stack([sum(p.detach().double().sum() for p in m.parameters()) for m in modules]).to(acc.device)
    every = acc.gather(sums[None]).view(acc.num_processes, -1)
    if not torch.allclose(every, every[0:1].expand_as(every), rtol=1e-6, atol=1e-6):
        raise RuntimeError(f"replicas diverged (per-process parameter sums {every.tolist()}); this is a bug.")
