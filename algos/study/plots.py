"""The report's plots (matplotlib, Agg): every plotted number is read from the report dict, none computed here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

__all__ = ["plot_all", "PLOTS"]

PLOTS = ("modes.png", "tasks.png", "seeds.png")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def _modes(r: Mapping[str, Any], path: Path) -> None:
    plt = _plt()
    names = list(r["modes"])
    acc = [r["modes"][m]["accuracy_pct"] for m in names]
    lo = [max(0.0, a - r["modes"][m]["ci95_pts"][0]) for a, m in zip(acc, names)]
    hi = [max(0.0, r["modes"][m]["ci95_pts"][1] - a) for a, m in zip(acc, names)]
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(names) + 2), 4))
    ax.bar(names, acc, yerr=[lo, hi], capsize=4, color="#4c72b0")
    for key, style in (("per_task_on_test", "--"), ("oracle", ":")):
        ax.axhline(r["ceilings"][key]["accuracy_pct"], ls=style, color="grey", label=f"{key} (ceiling)")
    ax.set_ylabel("accuracy % (95 % CI over problems)")
    ax.set_title(f"{r['meta']['problems']} {r['meta']['split']} problems")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tasks(r: Mapping[str, Any], path: Path) -> None:
    plt = _plt()
    by = r["concentration"]["by_task"]
    fig, ax = plt.subplots(figsize=(max(5, 0.3 * len(by) + 2), 4))
    ax.bar(list(by), list(by.values()), color=["#55a868" if v > 0 else "#c44e52" for v in by.values()])
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("trained − best fixed\n(problems, mean over seeds)")
    ax.tick_params(axis="x", rotation=90, labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _seeds(r: Mapping[str, Any], path: Path) -> None:
    plt = _plt()
    h = r["headline"]
    ys = h["seeds"]["trained_accuracy_by_seed_pct"]
    fig, ax = plt.subplots(figsize=(5, 4))
    lo, hi = r["modes"]["trained"]["ci95_pts"]
    ax.axhspan(lo, hi, color="#4c72b0", alpha=0.15, label="trained, seeds averaged: 95 % CI over problems")
    ax.plot(range(len(ys)), ys, "o", color="#4c72b0", label="trained, per seed")
    ax.axhline(h["best_fixed_accuracy_pct"], color="grey", ls="--", label=f"best fixed {h['best_fixed_plan']}")
    ax.set_title("the seeds share one test set: their spread is training noise", fontsize=9)
    ax.set_xlabel("seed (all on the same test problems)")
    ax.set_ylabel("accuracy %")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(r: Mapping[str, Any], folder: Path) -> list[Path]:
    """Draw every plot of :data:`PLOTS` into ``folder``; return their paths."""
    paths = [folder / name for name in PLOTS]
    for draw, path in zip((_modes, _tasks, _seeds), paths):
        draw(r, path)
    return paths
