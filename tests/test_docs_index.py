"""docs/index.md links every page and every results folder under docs/; every relative link in the README
and the docs points at a file that exists; neither refers the reader to a tracker's numbered issues."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _targets(page: Path) -> set[str]:
    return {t for t in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in t and not t.startswith("#")}


def test_index_links_every_page_and_results_folder():
    linked = {(DOCS / t.split("#")[0]).resolve() for t in _targets(DOCS / "index.md")}
    entries = [p for p in DOCS.iterdir() if p.name != "index.md" and (p.suffix in (".md", ".json") or p.is_dir())]
    missing = sorted(p.name for p in entries if p.resolve() not in linked)
    assert not missing, f"docs/index.md does not link: {missing}"
    assert "docs/index.md" in _targets(ROOT / "README.md")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve(page):
    broken = [t for t in _targets(page) if not (page.parent / t.split("#")[0]).exists()]
    assert not broken, f"{page.relative_to(ROOT)} links to missing files: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_no_numbered_issue_references(page):
    """The reader has no access to the tracker: say what was done, not which ticket asked for it."""
    hits = [line for line in page.read_text(encoding="utf-8").splitlines() if re.search(r"\bissue \d", line, re.I)]
    assert not hits, f"{page.relative_to(ROOT)}: {hits}"
