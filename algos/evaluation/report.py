"""Evaluation output: markdown table, JSON, episodes JSONL and matplotlib PNG plots (Agg backend).

Input is the results dict of :func:`algos.evaluation.run`; nothing here computes a figure, it only
lays them out, so every number in a table or plot is also in ``results.json``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

__all__ = ["markdown_table", "write_json", "write_all", "plot_accuracy", "plot_strategies", "plot_accuracy_vs_count"]

PLOTS = ("accuracy_by_mode.png", "strategy_histograms.png", "accuracy_vs_strategies.png")


def _f(x: Any, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def markdown_table(results: dict[str, Any]) -> str:
    """One row per mode: accuracy with 95% CI, pass@k, strategy use, token cost, wall time."""
    k = results["config"]["k"]
    head = ["mode", "n", "accuracy %", "95% CI"] + ([f"pass@{k} %"] if k > 1 else []) + [
        "distinct strategies", "rounds", "planner tok read", "reasoner tok read", "reasoner tok written",
        "s/problem"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for mode, m in results["modes"].items():
        tc = m["token_cost"]
        lo, hi = m["ci95"]
        cells = [f"`{mode}`", str(m["problems"]), _f(100 * m["accuracy"]), f"[{100 * lo:.1f}, {100 * hi:.1f}]"]
        if k > 1:
            cells.append(_f(100 * m[f"pass@{k}"]))
        cells += [_f(m["mean_distinct_strategies"], 2), _f(m["mean_rounds"], 2), _f(tc["planner_read_mean"], 0),
                  _f(tc["reasoner_read_mean"], 0), _f(tc["reasoner_written_mean"], 0), _f(tc["wall_s_per_problem"], 2)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(path: Path, obj: Any) -> None:
    """Atomic JSON write (temp file + rename)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)


def write_all(results: dict[str, Any], rows: Sequence[dict[str, Any]], out: Path, plots: bool = True) -> dict[str, str]:
    """Write ``results.json``, ``episodes.jsonl``, ``table.md`` and (optionally) the plots into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"results": str(out / "results.json"), "episodes": str(out / "episodes.jsonl"),
             "table": str(out / "table.md")}
    tmp = out / ".episodes.jsonl.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, default=str) + "\n")
    os.replace(tmp, out / "episodes.jsonl")
    (out / "table.md").write_text(results["table_md"] + "\n", encoding="utf-8")
    if plots:
        files["plot_accuracy"] = str(plot_accuracy(results, out / PLOTS[0]))
        files["plot_strategies"] = str(plot_strategies(results, out / PLOTS[1]))
        files["plot_accuracy_vs_strategies"] = str(plot_accuracy_vs_count(results, out / PLOTS[2]))
    results["files"] = files
    write_json(out / "results.json", results)
    return files


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    return plt


def plot_accuracy(results: dict[str, Any], path: Path) -> Path:
    """Bar chart of accuracy per mode with 95% Wilson CI error bars."""
    plt = _plt()
    modes = list(results["modes"])
    acc = [100 * results["modes"][m]["accuracy"] for m in modes]
    lo = [max(0.0, a - 100 * results["modes"][m]["ci95"][0]) for a, m in zip(acc, modes)]
    hi = [max(0.0, 100 * results["modes"][m]["ci95"][1] - a) for a, m in zip(acc, modes)]
    fig, ax = plt.subplots(figsize=(max(5, 0.9 * len(modes) + 2), 4))
    ax.bar(range(len(modes)), acc, yerr=[lo, hi], capsize=4, color="tab:blue", alpha=0.8)
    ax.set_xticks(range(len(modes)), modes, rotation=30, ha="right")
    ax.set_ylabel("accuracy (%) with 95% CI")
    ax.set_title(f"reasoner {results['config']['model']['reasoner']!r}, data {results['data']['source']!r}, "
                 f"n={results['data']['problems']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_strategies(results: dict[str, Any], path: Path) -> Path:
    """Per mode: strategies injected (top) and detected in the reasoner's text (bottom)."""
    plt = _plt()
    modes = list(results["modes"])
    names = next(iter(results["modes"].values()))["strategies"]["names"]
    fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    width = 0.8 / max(1, len(modes))
    for panel, (key, label) in enumerate((("injected", "injected plans per episode"),
                                          ("detected_episodes", "episodes showing strategy (%)"))):
        ax = axes[panel]
        for i, m in enumerate(modes):
            h = results["modes"][m]["strategies"][key]
            n = results["modes"][m]["samples"]
            vals = [v / n for v in h] if key == "injected" else [100 * v / n for v in h]
            ax.bar([x + i * width for x in range(len(names))], vals, width=width, label=m)
        ax.set_ylabel(label)
    axes[1].set_xticks([x + 0.4 - width / 2 for x in range(len(names))], names, rotation=30, ha="right")
    axes[0].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_accuracy_vs_count(results: dict[str, Any], path: Path) -> Path:
    """Accuracy against the number of distinct detected strategies, per mode and pooled (with CI)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    series = [(m, f["accuracy_by_strategy_count"]["bins"]) for m, f in results["modes"].items()]
    series.append(("all modes", results["strategy_vs_accuracy"]["bins"]))
    for m, bins in series:
        xs = [int(c) for c in bins]
        ys = [100 * b["accuracy"] for b in bins.values()]
        if m == "all modes":
            err = [[max(0.0, y - 100 * b["ci95"][0]) for y, b in zip(ys, bins.values())],
                   [max(0.0, 100 * b["ci95"][1] - y) for y, b in zip(ys, bins.values())]]
            ax.errorbar(xs, ys, yerr=err, color="black", lw=2, capsize=4, marker="o", label=m)
        else:
            ax.plot(xs, ys, marker=".", alpha=0.6, label=m)
    r = results["strategy_vs_accuracy"]["pearson_r"]
    ax.set_title("accuracy vs distinct strategies" + (f" (pooled r={r:.2f})" if r is not None else ""))
    ax.set_xlabel("distinct strategies detected in the episode")
    ax.set_ylabel("accuracy (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
