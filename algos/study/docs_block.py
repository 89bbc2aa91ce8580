"""The current answer of a study, copied into README.md and docs/results.md as a generated, marker-delimited block.

A page carries the block between two markers (``name`` is the preset, e.g. ``adaptive``)::

    <!-- study:adaptive begin (generated: rsim study --preset adaptive --stage report --docs) -->
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
from typing import Any, Mapping, Sequence

__all__ = ["answer_markdown", "sync", "block", "markers", "PAGES", "REPORT"]

PAGES = ("README.md", "docs/results.md")
"""The pages that carry the adaptive study's block (relative to the repository root)."""
REPORT = "docs/study_results/adaptive/report/report.json"
"""Where the adaptive study's committed report lives (relative to the repository root)."""


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of study ``name``'s block."""
    return (f"<!-- study:{name} begin (generated: rsim study --preset {name} --stage report --docs) -->",
            f"<!-- study:{name} end -->")


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


def sync(paths: Sequence[str | Path], report: Mapping[str, Any], report_md: str | Path,
         name: str = "adaptive") -> list[Path]:
    """Rewrite ``name``'s block in each page from ``report``; return the pages whose text changed.

    Args:
        paths: The pages (each must carry both markers).
        report: The report dict.
        report_md: The full report's markdown file (the block links to it, relative to each page).
        name: The study's block name.
    """
    changed = []
    for path in map(Path, paths):
        text = path.read_text()
        if block(text, name) is None:
            begin, end = markers(name)
            raise ValueError(f"{path}: no study:{name} block; put the two lines\n{begin}\n{end}\nwhere the answer "
                             "belongs, then rerun with --docs.")
        link = Path(os.path.relpath(Path(report_md).resolve(), path.resolve().parent)).as_posix()
        body = answer_markdown(report, link)
        m = _pattern(name).search(text)
        new = text[: m.start(2)] + body + text[m.end(2):]
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
