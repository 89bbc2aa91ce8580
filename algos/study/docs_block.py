"""The current answer of a study, copied into README.md and docs/results.md as a generated, marker-delimited block.

A page carries the block between two markers (``name`` is the preset, e.g. ``adaptive``)::

    <!-- study:adaptive begin (generated: rsim study --preset adaptive --stage report --replicate --docs) -->
    ...
    <!-- study:adaptive end -->

:func:`answer_markdown` writes the block's lines from a report dict (:func:`algos.study.report.build`): the headline
with its interval first, the seeds as secondary, the ceiling, the concentration, the replication, how many times the
test tree was scored, and a link to the full report. :func:`sync` rewrites the blocks of the given pages and returns
the pages it changed; ``tests/test_study_docs.py`` checks that each committed block is exactly what the committed
report gives, so no copied figure can drift from the report's JSON.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .arms.report import concentration_sentence, p_is, p_text

__all__ = ["command", "COMMANDS", "answer_markdown", "arms_markdown", "sync", "block", "markers", "PAGES", "ARMS_PAGES", "REPORT"]

PAGES = ("README.md", "docs/results.md")
"""The pages that carry the adaptive study's block (relative to the repository root)."""
ARMS_PAGES = ("docs/results.md",)
"""The pages that carry the arms study's block (the README, a front door of at most 200 lines, links to it)."""
REPORT = "docs/study_results/adaptive/report/report.json"
"""Where the adaptive study's committed report lives (relative to the repository root)."""


COMMANDS = {"adaptive": "rsim study --preset adaptive --stage report --replicate --docs"}
"""The command that regenerates a committed block, where it is not ``rsim study --preset NAME --stage report --docs``
(the adaptive study's committed report has its replication, which the report stage includes only with
``--replicate``)."""


def command(name: str) -> str:
    """The command a block's begin marker names (:data:`COMMANDS`)."""
    return COMMANDS.get(name, f"rsim study --preset {name} --stage report --docs")


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of study ``name``'s block."""
    return f"<!-- study:{name} begin (generated: {command(name)}) -->", f"<!-- study:{name} end -->"


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- study:{re.escape(name)} begin[^\n]*-->\n)(.*?)(<!-- study:{re.escape(name)} end -->)",
                      re.S)


def block(text: str, name: str = "adaptive") -> str | None:
    """The lines between ``name``'s markers in ``text`` (None when the page has no such block)."""
    m = _pattern(name).search(text)
    return None if m is None else m.group(2)


def answer_markdown(report: Mapping[str, Any], link: str) -> str:
    """The block's lines (ending in a newline) for ``report``; ``link`` is the full report's path from the page."""
    s = report["headline"]["sentences"]
    return "\n".join([
        f"**{s['headline']}**",
        f"* Seeds (secondary): {s['seeds']}",
        f"* {s['ceiling']}",
        f"* Concentration: {s['concentration']}",
        f"* Within a task: {s['within_task']}",
        f"* Replication: {s['replication']}",
        f"* {s['ledger']} Full report: [{link}]({link}).",
    ]) + "\n"


def _pct(x: float | None) -> str:
    return "--" if x is None else f"{100 * x:.1f} %"


def _pts(x: float | None) -> str:
    return "--" if x is None else f"{100 * x:+.1f}"


def arms_markdown(report: Mapping[str, Any], link: str) -> str:
    """The arms study's block (:mod:`algos.study.arms.report`): the headline (``rsim`` vs ``grpo`` at equal episodes)
    with its interval, p, the ledger's correction and the detectable difference first; the seeds as secondary; the
    scaffold control (``rsim`` vs ``grpo_fixed``) and the warm start vs the plug-in (``rsim_warm`` vs ``planner``);
    each arm's accuracy, strategies per answer and tokens; the trained runs' budget; the replication; a link."""
    m, h, arms = report["meta"], report.get("headline"), report["arms"]
    if not h:
        raise ValueError("the arms report has no headline (rsim vs grpo): score both arms, then --stage report --docs.")
    seeds = h.get("seeds")
    lines = [f"**`rsim` (reasoner trained with a planner) vs `grpo` (trained alone) at equal episodes: "
             f"{h['verdict']} on {m['problems']} test problems of {m['tasks']} tasks "
             f"({_pct(arms['rsim']['accuracy'])} vs {_pct(arms['grpo']['accuracy'])}; paired by problem, seeds "
             f"averaged); p {p_is(h['p_value'])}; Holm's step-down over the {h.get('configurations_scored')} looks "
             f"at this test set in its ledger, p {p_is(h.get('p_corrected'))}. The design detects a difference of "
             f"{_pts(h['mdd']).lstrip('+')} points (80 % power).**"]
    if seeds:
        lines.append(f"* Seeds (secondary): `rsim` above `grpo` in {seeds['above']}, below in {seeds['below']}, tied in "
                     f"{seeds['tied']} (sign p {seeds['p_value']:.3f}); the seeds share one test set.")
    live = [(k, a) for k, a in arms.items() if not a.get("read_back")]
    lines.append("* Accuracy (live, greedy, one route; seeds averaged): " + ", ".join(
        f"`{k}` {_pct(a['accuracy'])}" for k, a in live) + ".")
    lines += _controls(report)
    others = [c for c in report.get("comparisons", []) if c["b"] == "base"]
    if others:
        lines.append("* Against the untrained reasoner (`base`): " + "; ".join(
            f"`{c['a']}` {_pts(c['difference'])} points (95 % CI {_pts(c['ci95'][0])}, {_pts(c['ci95'][1])}; "
            f"Holm p {p_text(c.get('p_holm'))})" for c in others) + ".")
    if (h.get("concentration") or {}).get("tasks_carrying"):  # a net gain to place
        lines.append("* Where the gain sits: " + concentration_sentence(h["concentration"], lead="the"))
    lines += _arms_per_arm(live)
    rep = (report.get("replication") or {}).get("headline")
    if rep:
        lines.append(f"* Replication (other problems, once at the end): {rep['verdict']} (p {p_is(rep['p_value'])}).")
    lines.append(f"* Full report: [{link}]({link}).")
    return "\n".join(lines) + "\n"


READINGS = {
    ("rsim", "grpo_fixed"): ("the scaffold control: the reasoner trained alone under the best fixed plan, in the "
                             "planner's seat of the same game",
                             {"above": "a learned plan adds to the scaffold of the planner's game",
                              "none": "the data do not separate a learned plan from the scaffold of the planner's game",
                              "below": "the fixed plan's scaffold trains the reasoner better than a learned plan"}),
    ("rsim_warm", "planner"): ("training the reasoner on top of the plug-in planner",
                               {"above": "training the reasoner under the plug-in planner adds to it",
                                "none": "training the reasoner under the plug-in planner is not shown to change it",
                                "below": "training the reasoner under the plug-in planner loses to the plug-in alone"}),
}
"""The controls the block reads out, each with what it controls and what each outcome would mean."""


def _reading(c: Mapping[str, Any]) -> str:
    lo, hi = c["ci95"]
    return "above" if lo > 0 else "below" if hi < 0 else "none"


def _controls(report: Mapping[str, Any]) -> list[str]:
    """The control lines: each comparison of :data:`READINGS` on test (Holm over the report's family), what it
    means, and the same comparison on the replication split."""
    rep = {(c["a"], c["b"]): c for c in ((report.get("replication") or {}).get("comparisons") or [])}
    arms, out = report["arms"], []
    for c in report.get("comparisons", []):
        key = (c["a"], c["b"])
        if key not in READINGS:
            continue
        what, meaning = READINGS[key]
        line = (f"* `{c['a']}` vs `{c['b']}` ({what}): {_pct(arms[c['a']]['accuracy'])} vs "
                f"{_pct(arms[c['b']]['accuracy'])}, {_pts(c['difference'])} points (95 % CI {_pts(c['ci95'][0])}, "
                f"{_pts(c['ci95'][1])}; Holm p over the report's {len(report['comparisons'])} secondary comparisons "
                f"{p_text(c.get('p_holm'))}): {meaning[_reading(c)]}.")
        r = rep.get(key)
        if r is not None:
            line += (f" On replication: {_pts(r['difference'])} points (95 % CI {_pts(r['ci95'][0])}, "
                     f"{_pts(r['ci95'][1])}).")
        out.append(line)
    return out


def _arms_per_arm(live: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The arms block's per-arm lines: the plans the planners played, strategies per answer and tokens, the budget."""
    lines: list[str] = []
    played = [(k, a["plans"]) for k, a in live if a.get("plans") and k in ("rsim", "rsim_warm", "planner")]
    if played:
        lines.append("* Plans the planners played: " + "; ".join(
            f"`{k}` {p['distinct']} distinct, {p['modal']} on {_pct(p['modal_share'])} of episodes" for k, p in played)
            + " (one plan everywhere is a fixed plan in effect).")
    answered = [(k, a["answered"]) for k, a in live if a.get("answered") is not None]
    if answered:
        lines.append("* Episodes with an answer the checker could read (`\\boxed{}`, an answer tag or \"the answer "
                     "is\"; without one an episode scores 0): " + ", ".join(f"`{k}` {_pct(v)}" for k, v in answered) + ".")
    lines.append("* Strategies used per answer (distinct strategies the reasoner's own words perform): " + ", ".join(
        f"`{k}` {a['strategies_per_answer']:.2f}" for k, a in live if a.get("strategies_per_answer") is not None)
        + "; reasoner tokens per problem: " + ", ".join(
        f"`{k}` {a['tokens_per_problem']['reasoner']:.0f}" for k, a in live
        if (a.get("tokens_per_problem") or {}).get("reasoner") is not None) + ".")
    budget = [(k, a["training"]) for k, a in live if a.get("training")]
    if budget:
        lines.append("* Budget a trained run (equal episodes is the contract): " + "; ".join(
            f"`{k}` {', '.join(map(str, sorted(set(t['episodes']))))} episodes x {t['runs']} seeds, "
            f"{t['reasoner_tokens_decoded']:.0f} reasoner tokens decoded, {_pct(t['groups_with_signal'])} of groups "
            f"with a learning signal, {t['cpu_s']:.0f} CPU s" for k, t in budget) + ".")
    return lines


def sync(paths: Sequence[str | Path], report: Mapping[str, Any], report_md: str | Path,
         name: str = "adaptive", render: Callable[[Mapping[str, Any], str], str] | None = None) -> list[Path]:
    """Rewrite ``name``'s block in each page from ``report``; return the pages whose text changed.

    Args:
        paths: The pages (each must carry both markers).
        report: The report dict.
        report_md: The full report's markdown file (the block links to it, relative to each page).
        name: The study's block name.
        render: Writes the block's lines from ``report`` and the link (:func:`answer_markdown` when None;
            :func:`arms_markdown` for the arms' report).
    """
    changed = []
    for path in map(Path, paths):
        text = path.read_text()
        if block(text, name) is None:
            begin, end = markers(name)
            raise ValueError(f"{path}: no study:{name} block; put the two lines\n{begin}\n{end}\nwhere the answer "
                             "belongs, then rerun with --docs.")
        link = Path(os.path.relpath(Path(report_md).resolve(), path.resolve().parent)).as_posix()
        body = (render or answer_markdown)(report, link)
        m = _pattern(name).search(text)
        new = text[: m.start(2)] + body + text[m.end(2):]
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
