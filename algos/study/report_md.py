"""``report.md``: the report dict of :func:`algos.study.report.build` laid out as markdown; it computes nothing."""

from __future__ import annotations

from typing import Any, Mapping

from .sentences import ci

__all__ = ["markdown"]


def _f(x: Any, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _modes(r: Mapping[str, Any]) -> list[str]:
    show_reward = not r["reward_vs_accuracy"]["constant"]
    head = ["mode", "chosen on (information)", "seeds", "accuracy %", "95 % CI", "vs best fixed (points, 95 % CI)",
            "reasoner tokens / problem"] + (["reward"] if show_reward else [])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, m in r["modes"].items():
        lo, hi = m["ci95_pts"]
        cells = [f"`{name}`", m["chosen_on"] or "–", str(len(m["seeds"])), _f(m["accuracy_pct"]),
                 f"{_f(lo)} – {_f(hi)}", ci(m["vs_best_fixed"]) if name != "best_fixed" else "–",
                 _f(m["tokens_per_problem"], 0)] + ([_f(m["reward"], 3)] if show_reward else [])
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _per_task(r: Mapping[str, Any]) -> list[str]:
    modes = [m for m in r["modes"] if r["modes"][m]["plays_plans"]]
    head = ["task", "problems"] + [f"`{m}` plan / acc %" for m in modes] + ["best on test (ceiling)", "gain (problems)"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for t, v in r["per_task"].items():
        cells = [t, str(v["problems"])]
        for m in modes:
            c = v["modes"][m]
            extra = f" (and {c['distinct_plans'] - 1} other)" if c["distinct_plans"] and c["distinct_plans"] > 1 else ""
            cells.append(f"{c['plan']}{extra} / {_f(c['accuracy_pct'])}")
        cells += [f"{v['test_best']['plan']} / {_f(v['test_best']['accuracy_pct'])}",
                  "–" if v["gain_problems"] is None else f"{v['gain_problems']:+.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _replication(r: Mapping[str, Any]) -> list[str]:
    rep = r["replication"]
    if rep is None:
        return []
    lines = ["| mode | accuracy % (replication) |", "| --- | --- |"]
    lines += [f"| `{m}` | {_f(a)} |" for m, a in rep["modes"].items()]
    c = rep["coverage"]
    lines += ["", "| task | test problems | replication problems |", "| --- | --- | --- |"]
    lines += [f"| {t} | {n} | {c['replication'].get(t, 0)} |" for t, n in c["test"].items()]
    lines += [f"| {t} | 0 | {c['replication'][t]} |" for t in c["replication_extra"]]
    return ["", "## Replication", "", r["headline"]["sentences"]["replication"], "", *lines]


def _p(x: Any) -> str:
    return "–" if x is None else "< 0.001" if x < 0.001 else f"{x:.3f}"


def _corrections(r: Mapping[str, Any]) -> list[str]:
    """The headline's family (every look in the test set's ledger) and the secondary family, each with Holm's p."""
    lg = r["ledger"]
    lines = ["", "## Multiple comparisons", "", f"Ledger `{lg.get('path')}` (test set `{str(lg.get('test_set'))[:16]}…`):"
             f" Holm's step-down over its {lg['configurations_scored']} looks; a look with no p-value kept counts as "
             "p = 1.", "", "| when | by | what was scored | p | p kept | Holm p |", "| --- | --- | --- | --- | --- | --- |"]
    for f in lg.get("family", []):
        who = "**this report**" if f["hash"] == lg.get("this") else f.get("command") or "–"
        what = str(f.get("scored", "")).replace("|", "/")
        lines.append(f"| {str(f.get('time', ''))[:10]} | {who} | {what[:160]}{'…' if len(what) > 160 else ''} | "
                     f"{_p(f['p'])} | {'yes' if f['p_kept'] else 'no (p = 1)'} | {_p(f.get('p_holm'))} |")
    sec = r.get("secondary")
    if sec and sec["m"]:
        lines += ["", f"Secondary comparisons: {sec['note']}.", "", "| comparison | p | Holm p (secondary family) |",
                  "| --- | --- | --- |"]
        lines += [f"| {m['where']} | {_p(m['p_value'])} | {_p(m['p_holm'])} |" for m in sec["members"]]
    return lines


def markdown(r: Mapping[str, Any]) -> str:
    """The whole report: the headline first, then seeds, ceilings, modes, per task, concentration, within-task
    conditioning, reward vs accuracy, the ledger, replication, the multiple-comparison families and the study's
    setup."""
    s = r["headline"]["sentences"]
    lines = ["# Does a trained planner help this reasoner?", "", f"**{s['headline']}**", "", s["replication"], "",
             s["coverage"], "", s["ledger"], "", "## Seeds (secondary)", "", s["seeds"], "", "## Ceilings", "", s["ceiling"], "",
             "## Modes (same test problems)", "", *_modes(r), "", s["reward"], "", "## Per task", "", *_per_task(r),
             "", "## Concentration", "", s["concentration"], "", "## Within a task", "", s["within_task"],
             *_replication(r), *_corrections(r), "", "## Setup", "", "| key | value |", "| --- | --- |"]
    lines += [f"| {k} | `{v}` |" for k, v in r["meta"].items() if not isinstance(v, (dict, list))]
    nested = [k for k, v in r["meta"].items() if isinstance(v, (dict, list))]
    if nested:
        lines += ["", f"In `report.json` under `meta`: {', '.join(f'`{k}`' for k in nested)}."]
    lines += ["", "Plots: `modes.png` (accuracy per mode, ceilings dashed), `tasks.png` (gain per task), `seeds.png` "
              "(per-seed accuracy on the one test set). Keys of `report.json`: docs/study.md."]
    return "\n".join(lines)
