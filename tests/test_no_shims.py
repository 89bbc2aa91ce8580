"""The code states facts, not tracker history: no reference to a numbered issue, and no compatibility path for
versions that were never released (CHANGELOG.md records changes from here on). studies/ is held to the same
rules in studies/tests/test_study_hygiene.py."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def code_files(*folders: str) -> list[Path]:
    """The .py and .sh files under ``folders`` (relative to the repository root)."""
    return [p for d in folders for p in (ROOT / d).rglob("*") if p.suffix in (".py", ".sh") and p.is_file()]


CODE = code_files("agents", "algos", "rsim_env", "benchmarks", "tools", "tests")


def numbered_issues(files: list[Path]) -> list[str]:
    """``file:line`` of each line that names a numbered issue (this checker's own file aside)."""
    pattern = re.compile(r"\bissues? #?\d+", re.I)
    return [f"{p.relative_to(ROOT)}:{i}" for p in files for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if pattern.search(line) and p.name != "test_no_shims.py"]


def legacy_lines(files: list[Path]) -> list[str]:
    """``file:line`` of each line outside a tests folder that mentions a legacy code path."""
    pattern = re.compile(r"legacy|LEGACY", re.I)
    return [f"{p.relative_to(ROOT)}:{i}" for p in files if p.parts[-2] != "tests"
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


def test_no_numbered_issue_in_code():
    found = numbered_issues(CODE)
    assert found == [], f"say the fact instead of the issue number: {found}"


def test_no_legacy_code_paths():
    found = legacy_lines(CODE)
    assert found == [], found
