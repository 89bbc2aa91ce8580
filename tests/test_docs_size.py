"""The working tree is code, not results: the tracked ``docs/`` stays under 12 MB and no tracked file is over 1 MB but a
study's plan trees and its planner-feature cache (what ``rsim study --preset adaptive`` reads back instead of decoding
and running the backbone again). Superseded results live in git history (CHANGELOG names the commit)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS_LIMIT = 12_000_000
FILE_LIMIT = 1_000_000
ALLOWED_LARGE = (".tree.json.gz", "/features/default.safetensors")
"""The files allowed over :data:`FILE_LIMIT`: plan trees, and a study's feature cache."""


def _tracked(path: str = "") -> dict[str, int]:
    try:
        out = subprocess.run(["git", "ls-files", "-z", *([path] if path else [])], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout (an installed package has no tracked files)")
    names = [n for n in out.decode().split("\0") if n]
    return {n: (ROOT / n).stat().st_size for n in names if (ROOT / n).is_file()}


def test_tracked_docs_stay_under_12_mb():
    sizes = _tracked("docs")
    total = sum(sizes.values())
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:5]
    assert total <= DOCS_LIMIT, (f"tracked docs/ is {total / 1e6:.1f} MB (limit {DOCS_LIMIT / 1e6:.0f} MB); largest: "
                                 f"{top}. Keep results compact (gzip JSONL, summaries) and superseded ones in git history.")


def test_no_tracked_file_is_over_1_mb_but_plan_trees_and_the_feature_cache():
    big = {n: s for n, s in _tracked().items() if s > FILE_LIMIT and not n.endswith(ALLOWED_LARGE)}
    assert not big, f"tracked files over {FILE_LIMIT / 1e6:.0f} MB: {big}; store them compactly or leave them out."
