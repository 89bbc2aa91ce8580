"""The library's tests import nothing from studies/: a study's change never turns ``make test`` red.

Two checks: every import statement and every module name handed to an importer (``runpy``, ``importlib``,
``python -m``, an ``object:`` spec) in tests/ is read from the source, wherever it sits (module level, inside a
function); and tests/ is collected in a fresh interpreter in which importing ``studies`` raises, as a module-level
import anywhere on the collection path (a conftest, a helper, a package the tests import) would. The studies' own
tests live in studies/tests/ and run under ``make test-studies``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = sorted(p for p in (ROOT / "tests").rglob("*.py") if "__pycache__" not in p.parts and p.name != Path(__file__).name)
NOT_YET_MOVED: set[str] = set()
"""Test files that still import a study, left out of both checks until their studies' tests move to studies/tests/
(or go with their studies); empty is the goal, and an entry whose file no longer imports a study must go."""
MODULE_NAME = re.compile(r"^studies(\.\w+)+(:[\w.]+)?$")
"""A string that names a studies module as an importer takes it: ``studies.x``, ``studies.x:obj``."""


def studies_references(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: what`` for each import of ``studies`` in ``path`` and each string that names a studies module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.match(node.value):
            names = [node.value]
        else:
            continue
        found += [f"{path.relative_to(root)}:{node.lineno}: {n}" for n in names if n.split(".")[0].split(":")[0] == "studies"]
    return found


def test_no_test_file_imports_or_names_a_studies_module():
    found = [ref for path in TESTS for ref in studies_references(path)]
    new = [ref for ref in found if ref.split(":")[0] not in NOT_YET_MOVED]
    assert new == [], f"move these tests to studies/tests/ (they run under make test-studies): {new}"
    stale = sorted(NOT_YET_MOVED - {ref.split(":")[0] for ref in found})
    assert stale == [], f"these files import no study any more: remove them from NOT_YET_MOVED: {stale}"


def test_the_source_check_sees_lazy_imports_and_module_names(tmp_path):
    """The checker itself: an import inside a function, a ``from`` import and module names as strings are found;
    prose that mentions studies/ is not."""
    probe = tmp_path / "tests" / "test_probe.py"
    probe.parent.mkdir()
    probe.write_text('"""Checks studies/paper.py and the studies."""\nimport studies.paper\n\n\ndef test_x():\n'
                     '    from studies import paper\n    runpy.run_module("studies.calibrate")\n'
                     '    spec = "studies.paper:main"\n    note = "see studies.paper for why"\n')
    refs = sorted(studies_references(probe, root=tmp_path), key=lambda r: int(r.split(":")[1]))
    assert [r.split(": ", 1)[1] for r in refs] == ["studies.paper", "studies", "studies.calibrate", "studies.paper:main"]


BLOCKED_COLLECTION = r"""
import importlib.abc, json, sys
import pytest

attempts = []


class NoStudies(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "studies" or name.startswith("studies."):
            attempts.append(name)
            raise ImportError(f"tests/ must not import {name}: it belongs in studies/tests/")
        return None


sys.meta_path.insert(0, NoStudies())
rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests", *sys.argv[1:]])
print("\nRESULT " + json.dumps({"rc": int(rc), "attempts": attempts}))
"""


@pytest.mark.long
def test_tests_collect_with_studies_blocked():
    """Collecting tests/ in an interpreter where ``import studies`` raises: nothing tries, and collection succeeds."""
    ignore = [f"--ignore={f}" for f in sorted(NOT_YET_MOVED) if (ROOT / f).is_file()]
    proc = subprocess.run([sys.executable, "-c", BLOCKED_COLLECTION, *ignore], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["attempts"] == [], f"tests/ imported {result['attempts']}: move those tests to studies/tests/"
    assert result["rc"] == 0, proc.stdout[-3000:]
    assert re.search(r"^\d+ tests collected", proc.stdout, flags=re.M), proc.stdout[-2000:]
