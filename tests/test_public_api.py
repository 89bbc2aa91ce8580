"""``__all__`` of each public package of rsim_env names what users import, and every name in it exists."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("rsim_env", "rsim_env.answers", "rsim_env.code", "rsim_env.kinds")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_name_in_all_exists_once(name):
    module = importlib.import_module(name)
    assert len(module.__all__) == len(set(module.__all__)), sorted(n for n in module.__all__ if module.__all__.count(n) > 1)
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


def imported_from_rsim_env(files: list[Path]) -> set[str]:
    """Every ``X`` of a ``from rsim_env import X`` line in ``files``."""
    imported = set()
    for f in files:
        for names in re.findall(r"^\s*from rsim_env import \(?([\w, ]+)", f.read_text(encoding="utf-8"), flags=re.M):
            imported.update(n.split(" as ")[0].strip() for n in names.split(",") if n.strip())
    return imported


def test_all_lists_every_name_the_docs_and_the_code_import_from_the_package():
    """``from rsim_env import X`` anywhere in the docs, the README or the code: X is in ``rsim_env.__all__`` (the
    studies are held to it in studies/tests/test_study_hygiene.py)."""
    import rsim_env

    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"),
             *(p for pkg in ("agents", "algos", "benchmarks", "tests", "tools") for p in (ROOT / pkg).rglob("*.py"))]
    imported = imported_from_rsim_env(files)
    assert imported and sorted(imported - set(rsim_env.__all__)) == []
