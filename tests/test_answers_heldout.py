"""The held-out answer cases (written without reading the checker): zero false positives.

Accuracy on this table is reported, not asserted (``python -m benchmarks.grading.answer_check``): the
table exists to find what the checker misses, and a miss is a false negative to fix in general,
never by special-casing a row. A false positive -- a wrong answer scored correct -- is the one
outcome that must never happen, so every row labelled wrong must be refused.
"""

import pytest

from benchmarks.grading.answer_check import FAMILIES, FAMILIES2
from benchmarks.grading.answer_check import HELDOUT as CASES
from rsim_env.answers import check

WRONG = [c for c in CASES if not c[3]]


@pytest.mark.parametrize("category,response,gold,expected,answer_type", WRONG,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(WRONG)])
def test_no_false_positive_on_heldout(category, response, gold, expected, answer_type):
    result = check(response, gold, answer_type)
    assert result.correct is False, result


def test_heldout_table_has_both_labels():
    assert len(WRONG) >= 20 and len(CASES) - len(WRONG) >= 100


FAMILY_WRONG = [c for c in FAMILIES + FAMILIES2 if not c[3]]


@pytest.mark.parametrize("category,response,gold,expected,answer_type", FAMILY_WRONG,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(FAMILY_WRONG)])
def test_no_false_positive_on_unseen_families(category, response, gold, expected, answer_type):
    """benchmarks/grading/answer_cases/families*.jsonl (batch 1 written before the checker fixes): near misses stay wrong."""
    result = check(response, gold, answer_type)
    assert result.correct is False, result
