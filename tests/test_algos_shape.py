"""What a reader of algos/ can count on: short functions, no attribute forwarding, no capability probes
(optional capabilities are named protocols in algos/protocols.py; required ones are checked once)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "algos").rglob("*.py"))
MAX_LINES = 50


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_functions_are_short_and_nothing_is_probed(path):
    long, probes = [], []
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > MAX_LINES:
                long.append(f"{node.name}: {lines} lines")
            if node.name == "__getattr__":
                probes.append(f"line {node.lineno}: def __getattr__")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            named = len(node.args) == 3 and isinstance(node.args[1], ast.Constant)
            if node.func.id == "hasattr" or (node.func.id == "getattr" and named):
                probes.append(f"line {node.lineno}: {ast.unparse(node)}")
    assert long == [], f"functions over {MAX_LINES} lines: split them into steps"
    assert probes == [], "capability probes: name the capability as a protocol (algos/protocols.py) or check it once"


def test_the_check_sees_probes_and_long_functions(tmp_path):
    """The checker itself, on a file with one of each."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    bad = tmp_path / "bad.py"
    bad.write_text(f"def f(a):\n{body}\n    return getattr(a, 'lora', None) or hasattr(a, 'x')\n")
    with pytest.raises(AssertionError, match="over 50 lines"):
        test_functions_are_short_and_nothing_is_probed(bad)
    bad.write_text("def f(a):\n    return getattr(a, 'lora', None)\n")
    with pytest.raises(AssertionError, match="capability probes"):
        test_functions_are_short_and_nothing_is_probed(bad)
