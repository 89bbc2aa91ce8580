"""docs/trainers.md and the packaging of its two routes: the core install needs neither TRL nor verifiers."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="Python >= 3.11 reads pyproject.toml with the stdlib")
ROOT = Path(__file__).resolve().parent.parent


def _names(reqs):
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}


def test_the_core_install_needs_neither_trl_nor_verifiers():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not _names(project["dependencies"]) & {"trl", "verifiers"}
    assert "trl" in _names(project["optional-dependencies"]["trl"])
    assert not any("verifiers" in _names(reqs) for reqs in project["optional-dependencies"].values())
    package = tomllib.loads((ROOT / "integrations" / "verifiers_rsim" / "pyproject.toml").read_text())["project"]
    assert _names(package["dependencies"]) == {"rsim", "verifiers", "uv"}  # verifiers with its own dependencies
    installs = [line for line in (ROOT / "Makefile").read_text().splitlines() if "verifiers" in line and "pip" in line]
    assert installs and not any("--no-deps" in line for line in installs)
    assert not list((ROOT / "integrations" / "verifiers_rsim").glob("requirements*.txt"))


def test_the_page_shows_the_demo_table_the_demo_prints():
    from agents.hf.trl_demo import table

    doc = (ROOT / "docs" / "trainers.md").read_text()
    header = table([])
    assert header in doc
    rows = [line for line in doc.splitlines() if line.startswith(("| injected |", "| plain |"))]
    assert len(rows) == 2
    for command in ("python -m agents.hf.trl_demo", "rollout_func=injection", "vf-eval verifiers-rsim"):
        assert command in doc
