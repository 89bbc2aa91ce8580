"""The code states facts, not tracker history: no reference to a numbered issue, and no compatibility path for
versions that were never released (CHANGELOG.md records changes from here on)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = [p for d in ("agents", "algos", "rsim_env", "benchmarks", "studies", "tools", "tests") for p in (ROOT / d).rglob("*")
        if p.suffix in (".py", ".sh") and p.is_file()]


def test_no_numbered_issue_in_code():
    pattern = re.compile(r"\bissues? #?\d+", re.I)
    found = [f"{p.relative_to(ROOT)}:{i}" for p in CODE for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if pattern.search(line) and p.name != "test_no_shims.py"]
    assert found == [], f"say the fact instead of the issue number: {found}"


def test_no_legacy_code_paths():
    pattern = re.compile(r"legacy|LEGACY", re.I)
    found = [f"{p.relative_to(ROOT)}:{i}" for p in CODE if p.parts[-2] != "tests"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == [], found
