"""Tables and plots of :mod:`studies.efficacy`, and the table regenerated from a study's outcome file.

    python -m studies.efficacy --table-from docs/efficacy_results/v3_outcomes.jsonl.gz

prints (and ``--out F.md`` writes) the per-mode accuracy and the seed-level tests from the committed
per-problem outcomes alone (:func:`outcome_table`); it is the same text as the
``outcomes_table_md`` of the study that wrote the file.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

__all__ = ["table", "plot_curves", "table_from", "plans_table", "outcome_rows", "outcome_table"]

OUTCOME_BASELINE = "best_fixed_exhaustive"
"""The mode every other is tested against, with the seed as the unit, in the outcome table."""


def _name(mode: str, f: dict[str, Any]) -> str:
    for key in ("sequence", "plan"):
        if key in f:
            return f"{mode} ({f[key]})"
    return f"{mode} (k = {f['k']})" if "k" in f else mode


def table(result: dict[str, Any]) -> str:
    """Markdown: accuracy per mode, then the paired tests (problem-clustered and seed-level)."""
    lines = ["| mode | accuracy | 95% CI (bootstrap: seeds, then problems) | n | per seed |", "|---|---|---|---|---|"]
    for m, f in result["modes"].items():
        seeds = "–" if f["deterministic"] else " / ".join(f"{100 * v['accuracy']:.1f}" for v in f["per_seed"].values())
        lines.append(f"| {_name(m, f)} | {100 * f['accuracy']:.1f}% | {100 * f['ci_low']:.1f}–{100 * f['ci_high']:.1f}% | "
                     f"{f['n']} | {seeds} |")
    lines += ["", "| comparison | accuracy difference | paired permutation p (problems) | only a right | only b right "
              "| pooled McNemar p | sign test p (seeds) | bootstrap p (seeds, then problems) |",
              "|---|---|---|---|---|---|---|---|"]
    for name, t in result["tests"].items():
        sign, boot = t.get("sign_test_seeds"), t.get("bootstrap_seeds_problems")
        seed_cells = (f"{sign['p_value']:.3g} ({sign['wins']}/{sign['losses']}) | {boot['p_value']:.3g}"
                      if sign and boot else "– | –")
        lines.append(f"| {name} | {100 * t['difference']:+.1f} pts | {t['p_value']:.3g} | {t['only_a']} | "
                     f"{t['only_b']} | {t['mcnemar_pooled_p']:.3g} | {seed_cells} |")
    return "\n".join(lines)


def table_from(path: str, out: str = "", rounds: int = 4000) -> dict[str, Any]:
    """Regenerate the outcome table from a study's ``*_outcomes.jsonl.gz``; print it, write it to ``out``."""
    from benchmarks.plans.seedstats import read_outcomes

    if not Path(path).is_file():
        raise ValueError(f"--table-from {path}: no such file; give a study's *_outcomes.jsonl.gz.")
    rows = read_outcomes(path)
    md = outcome_table(rows, OUTCOME_BASELINE, rounds=rounds)
    plans = plans_table(rows)
    print(md)
    print(plans)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(md, encoding="utf-8")
    return {"outcomes": path, "table_md": md, "plans_md": plans}


def outcome_rows(per_seed: Mapping[str, Mapping[int, Mapping[str, bool]]], details: Mapping[str, Mapping[int, Any]],
                 problems: Sequence[Any], deterministic: Sequence[str]) -> list[dict[str, Any]]:
    """One row per (mode, seed, problem) -- sample 0 -- plus ``details[mode][seed][problem_id]["samples"]``
    as samples 0..k-1 of mode ``<mode>_samples`` (self-consistency's individual answers).

    ``details[mode][seed][problem_id]`` may give ``plan`` (the plan played); a deterministic mode is written
    once, under its first seed (:func:`benchmarks.plans.seedstats.hierarchical_bootstrap` reads it as one arm).
    """
    from benchmarks.plans.table import task_of

    rows = []
    for mode, seeds in per_seed.items():
        for s in list(seeds)[:1] if mode in deterministic else list(seeds):
            extra = details.get(mode, {}).get(s, {})
            for p in problems:
                d = extra.get(p.id, {})
                base = {"seed": s, "problem_id": p.id, "task": task_of(p)}
                rows.append({"mode": mode, **base, "sample": 0, "plan": d.get("plan"), "correct": bool(seeds[s][p.id])})
                for k, c in enumerate(d.get("samples", ())):
                    rows.append({"mode": f"{mode}_samples", **base, "sample": k, "plan": [], "correct": bool(c)})
    return rows


def outcome_table(rows: Sequence[Mapping[str, Any]], baseline: str, rounds: int = 4000) -> str:
    """The study's table from its outcome rows: accuracy per mode with a 95 % seeds-then-problems bootstrap
    interval (:func:`benchmarks.plans.seedstats.bootstrap_accuracy`: the seeds of one problem are not independent
    evidence), then :mod:`benchmarks.plans.seedstats`' per-seed table and seed-level tests against ``baseline``.
    Deterministic in ``rows``."""
    from benchmarks.plans import seedstats

    table = seedstats.by_mode_seed(rows)
    lines = ["| mode | accuracy | 95% CI (bootstrap over seeds, then problems) | seeds × problems |", "|---|---|---|---|"]
    for mode, seeds in table.items():
        b = seedstats.bootstrap_accuracy(seeds, rounds=rounds)
        lines.append(f"| `{mode}` | {100 * b['accuracy']:.1f}% | {100 * b['ci95'][0]:.1f}–{100 * b['ci95'][1]:.1f}% | "
                     f"{b['seeds']} × {b['problems']} |")
    rep = seedstats.report(rows, baseline, rounds=rounds)
    return "\n".join(lines) + "\n\n" + seedstats.markdown(rep)


POLICY_MODES = ("per_task", "bandit", "trained")
"""Modes whose plan is a policy's choice: :func:`plans_table` lists what they played."""


def plans_table(rows: Sequence[Mapping[str, Any]], modes: Sequence[str] = POLICY_MODES, wide: int = 8) -> str:
    """Markdown: per mode and seed, the plan played on each task's test problems (the outcome file's ``plan``
    column; ``[3, 8] x40, [4, 8] x1`` when a task got more than one) and the seed's accuracy.

    Cells that differ from the most frequent plan of the table are in bold, so a deviation is read, not
    counted by hand. Modes absent from ``rows`` are left out. With more than ``wide`` tasks the table is
    turned: one row per task, one column per (mode, seed), and the accuracies in the last row.
    """
    cells: dict[tuple[str, Any], dict[str, Counter]] = {}
    acc: dict[tuple[str, Any], list[bool]] = {}
    for r in rows:
        if r["mode"] in modes and r.get("sample", 0) == 0:
            key = (r["mode"], r["seed"])
            cells.setdefault(key, {}).setdefault(r.get("task") or "?", Counter())[str(r.get("plan"))] += 1
            acc.setdefault(key, []).append(bool(r["correct"]))
    if not cells:
        return ""
    tasks = sorted({t for c in cells.values() for t in c})
    usual = Counter(p for c in cells.values() for t in c.values() for p in t.elements()).most_common(1)[0][0]
    keys = [k for mode in modes for k in sorted((k for k in cells if k[0] == mode), key=lambda k: str(k[1]))]

    def cell(key: tuple[str, Any], t: str) -> str:
        got = cells[key].get(t, Counter())
        text = ", ".join(p if len(got) == 1 else f"{p} x{c}" for p, c in got.most_common()) or "–"
        return text if list(got) == [usual] or not got else f"**{text}**"

    def accuracy(key: tuple[str, Any]) -> str:
        a = acc[key]
        return f"{100 * sum(a) / len(a):.1f}%"

    if len(tasks) > wide:
        lines = ["| task | " + " | ".join(f"`{m}` {s}" for m, s in keys) + " |", "|---|" + "---|" * len(keys)]
        lines += [f"| `{t}` | " + " | ".join(cell(k, t) for k in keys) + " |" for t in tasks]
        lines.append("| accuracy | " + " | ".join(accuracy(k) for k in keys) + " |")
        return "\n".join(lines) + "\n"
    lines = ["| mode | seed | " + " | ".join(f"`{t}`" for t in tasks) + " | accuracy |",
             "|---|---|" + "---|" * len(tasks) + "---|"]
    for key in keys:
        lines.append(f"| `{key[0]}` | {key[1]} | " + " | ".join(cell(key, t) for t in tasks) + f" | {accuracy(key)} |")
    return "\n".join(lines) + "\n"


def plot_curves(runs: dict[str, Any], path: Path) -> Path:
    """Reward and accuracy per training step for every run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = ("planner/reward", "reasoner/reward", "accuracy")
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 3.5))
    for ax, key in zip(axes, keys):
        for i, (name, run) in enumerate(runs.items()):  # one colour per run in every panel (GRPO has no planner)
            ys = [m.get(key) for m in run["curve"]]
            if any(y is not None for y in ys):
                ax.plot(range(1, len(ys) + 1), [float("nan") if y is None else y for y in ys], label=name,
                        color=f"C{i}", linestyle="-" if name.startswith("stackelberg") else "--")
        ax.set_title(key)
        ax.set_xlabel("step")
    handles = {h.get_label(): h for ax in axes for h in ax.get_lines()}
    axes[-1].legend(list(handles.values()), list(handles), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


