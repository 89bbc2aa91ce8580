"""The studies' answers in README.md and docs/results.md are their committed reports', figure for figure.

Each page's ``study:adaptive`` block must be exactly what :func:`algos.study.docs_block.answer_markdown` writes from
the committed report JSON (``rsim study --preset adaptive --stage report --replicate --docs`` regenerates both); a page without
the block is skipped. The arms study's ``study:arms`` block in docs/results.md is likewise its committed arms report's.
The sync itself is checked on scratch pages with a scripted report.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from algos.study.docs_block import ARMS_PAGES, PAGES, REPORT, answer_markdown, arms_markdown, block, markers, sync

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "rsim study --preset adaptive --stage report --replicate --docs"


def _figures(text: str) -> list[str]:
    return re.findall(r"[-+−]?\d+(?:\.\d+)?", text)


@pytest.mark.parametrize("page", PAGES)
def test_committed_block_is_the_reports(page):
    path = ROOT / page
    text = path.read_text() if path.is_file() else ""
    got = block(text)
    if got is None:
        pytest.skip(f"{page} carries no study:adaptive block")
    report_json = ROOT / REPORT
    assert report_json.is_file(), f"{page} has the study:adaptive block but {REPORT} is missing: run `{REGENERATE}`."
    report = json.loads(report_json.read_text())
    link = Path(os.path.relpath((ROOT / REPORT).with_name("report.md"), path.parent)).as_posix()  # as sync() links
    want = answer_markdown(report, link)
    for a, b in zip(_figures(got), _figures(want)):
        assert a == b, f"{page}: the block says {a} where the report gives {b}; run `{REGENERATE}`."
    assert got == want, f"{page}: the study:adaptive block differs from the report's; run `{REGENERATE}`."


ARMS_REPORT = "docs/study_results/arms/arms/report/report.json"
ARMS_REGENERATE = "rsim study --preset arms --docs --stage report"


@pytest.mark.parametrize("page", ARMS_PAGES)
def test_committed_arms_block_is_the_arms_reports(page):
    """docs/results.md's ``study:arms`` block (the answer to "does training with a planner beat training alone?") is
    what :func:`~algos.study.docs_block.arms_markdown` writes from the committed arms report; skipped until the
    committed run has written both."""
    path = ROOT / page
    got = block(path.read_text(), "arms") if path.is_file() else None
    if got is None:
        pytest.skip(f"{page} carries no study:arms block")
    report_json = ROOT / ARMS_REPORT
    assert report_json.is_file(), f"{page} has the study:arms block but {ARMS_REPORT} is missing: run `{ARMS_REGENERATE}`."
    link = Path(os.path.relpath(report_json.with_name("report.md"), path.parent)).as_posix()
    want = arms_markdown(json.loads(report_json.read_text()), link)
    assert got == want, f"{page}: the study:arms block differs from the arms report's; run `{ARMS_REGENERATE}`."


def test_committed_arms_report_rebuilds_from_committed_looks(monkeypatch):
    """The committed arms report is what its committed looks, run records and ledger give (no checkpoint is
    committed: the records keep their weights' digests); skipped until the committed run has written it. A new look at
    the test set changes the headline's correction, and this fails until the report is regenerated."""
    from algos.study.arms.stages import rebuild
    from algos.study.config import DOCS_OUT, resolve

    report_json = ROOT / ARMS_REPORT
    if not report_json.is_file():
        pytest.skip(f"no committed arms report at {ARMS_REPORT}")
    monkeypatch.chdir(ROOT)  # the looks name the committed runs by their paths in the repository
    got = json.loads(json.dumps(rebuild(resolve("arms", {"out": DOCS_OUT["arms"]})), default=float))
    assert got == json.loads(report_json.read_text()), f"{ARMS_REPORT} is stale; run `{ARMS_REGENERATE}`."


def _scripted_report() -> dict:
    from tests.test_study_report import _report

    return _report("b", reads_text=False, ledger=2)


def test_sync_writes_each_block_once_and_links_from_the_page(tmp_path):
    report = _scripted_report()
    begin, end = markers("adaptive")
    (tmp_path / "docs").mkdir()
    pages = [tmp_path / "README.md", tmp_path / "docs" / "results.md"]
    for p in pages:
        p.write_text(f"# title\n\nbefore\n\n{begin}\nstale +9.9 points\n{end}\n\nafter\n")
    report_md = tmp_path / "docs" / "study_results" / "adaptive" / "report" / "report.md"
    assert sync(pages, report, report_md) == pages
    assert sync(pages, report, report_md) == []  # idempotent: nothing changes the second time
    readme, results = (p.read_text() for p in pages)
    assert "stale" not in readme and readme.startswith("# title\n\nbefore\n\n") and readme.endswith(f"{end}\n\nafter\n")
    assert block(readme) == answer_markdown(report, "docs/study_results/adaptive/report/report.md")
    assert block(results) == answer_markdown(report, "study_results/adaptive/report/report.md")
    h = report["headline"]
    lo, hi = h["ci95_pts"]
    assert f"{h['difference_pts']:+.1f} points (95 % CI {lo:+.1f}, {hi:+.1f})" in block(readme).splitlines()[0]
    assert "looked at 2 times" in block(readme) and "share one test set" in block(readme)


def test_sync_names_a_page_without_the_block(tmp_path):
    page = tmp_path / "README.md"
    page.write_text("# no block here\n")
    with pytest.raises(ValueError, match="README.md: no study:adaptive block"):
        sync([page], _scripted_report(), tmp_path / "report.md")


def test_study_page_costs_are_the_committed_trees():
    """docs/study.md's fill-cost table: each row recomputed from the committed trees' info JSON."""
    page = (ROOT / "docs" / "study.md").read_text()
    totals = [0, 0, 0.0, 0.0]
    for split in ("train", "val", "test"):
        inc = json.loads((ROOT / "docs/study_results/adaptive/trees" / f"adaptive_{split}.tree.json").read_text())["increments"]
        row = [inc[-1]["problems"], inc[-1]["steps"], sum(i["cpu_s"] for i in inc), sum(i["wall_s"] for i in inc)]
        totals = [a + b for a, b in zip(totals, row)]
        want = f"| {row[0]:,} | {row[1]:,} | {row[2] / 60:.1f} | {row[3] / 60:.1f} | {row[1] / row[2]:.2f} |"
        assert f"| {split} (" in page and want in page, f"docs/study.md: the {split} row should end {want}"
    want = f"| all three | {totals[0]:,} | {totals[1]:,} | {totals[2] / 60:.1f} | {totals[3] / 60:.1f} | " \
           f"{totals[1] / totals[2]:.2f} |"
    assert want in page, f"docs/study.md: the total row should be {want}"
    for rounds, steps in ((2, 17), (3, 145), (4, 1169)):
        assert (2 * 8 ** rounds - 9) // 7 == steps and f"{steps:,}" in page
