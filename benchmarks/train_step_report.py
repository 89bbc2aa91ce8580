"""The ratios and the printed table of ``benchmarks/train_step.py`` (kept apart to keep that script short).

:func:`ratios` turns the rows' seconds per step into the compared figures: ``ratio_vs_trl_by_mode``
(ours / TRL in the same mode), ``ratio_vs_trl`` (the larger of the fp32 modes) and
``ratio_vs_trl_engine`` (ours with llama.cpp rollouts / TRL's LoRA row), each None when a row it needs
did not run, with the reason in ``ratio_vs_trl_engine_note``.
"""

from __future__ import annotations

__all__ = ["print_table", "ratios"]


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
