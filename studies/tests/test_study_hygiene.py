"""The library's source rules, on the studies: no numbered issue or legacy path (tests/test_no_shims.py), only the
public names of ``rsim_env`` imported from the package (tests/test_public_api.py), no copy of the strategy count
(tests/test_extend_outside.py)."""

import rsim_env
from tests.test_extend_outside import strategy_count_copies
from tests.test_no_shims import code_files, legacy_lines, numbered_issues
from tests.test_public_api import ROOT, imported_from_rsim_env

STUDIES = code_files("studies")


def test_no_numbered_issue_in_the_studies():
    found = numbered_issues(STUDIES)
    assert found == [], f"say the fact instead of the issue number: {found}"


def test_no_legacy_code_paths_in_the_studies():
    assert legacy_lines(STUDIES) == []


def test_the_studies_import_only_public_names_from_rsim_env():
    imported = imported_from_rsim_env(sorted((ROOT / "studies").rglob("*.py")))
    assert sorted(imported - set(rsim_env.__all__)) == []


def test_no_copy_of_the_strategy_count_in_the_studies():
    assert strategy_count_copies("studies") == []
