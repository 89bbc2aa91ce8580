"""docs/api.md lists the public imports: every import line in its code blocks works, and every public package it
names is in the layout."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
LINES = [line for block in re.findall(r"```python\n(.*?)```", PAGE, re.S) for line in block.strip().splitlines()]


def test_the_page_lists_imports_of_every_public_package():
    tops = {re.match(r"from (\w+)", line).group(1) for line in LINES}
    assert tops == {"rsim_env", "agents", "algos"}, tops


@pytest.mark.parametrize("line", LINES)
def test_each_listed_import_works(line):
    m = re.fullmatch(r"from ([\w.]+) import (.+)", line)
    assert m, f"docs/api.md: {line!r} is not a 'from MODULE import NAMES' line"
    module = importlib.import_module(m.group(1))
    for name in (n.split(" as ")[0].strip() for n in m.group(2).split(",")):
        assert hasattr(module, name), f"docs/api.md: {m.group(1)} has no {name!r}"


def test_the_changelog_is_linked_and_exists():
    assert "(../CHANGELOG.md)" in PAGE and (ROOT / "CHANGELOG.md").is_file()
