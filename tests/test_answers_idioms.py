"""Answer idioms the checker missed (engineering j, E-notation with a unit, clock times,
Unicode powers in a final statement), each labelled right and wrong (:mod:`rsim_env.answers.idioms`)."""

import pytest

from rsim_env.answers import check
from rsim_env.answers.idioms import clock, engineering_j, same_clock, split_glued_exponent

CASES = [  # (family, response, gold, answer_type, expected)
    ("j", "\\boxed{3+4j}", "3+4i", "auto", True),
    ("j", "\\boxed{3 + j4}", "3+4i", "auto", True),
    ("j", "\\boxed{4j+3}", "3+4i", "auto", True),
    ("j", "\\boxed{4j}", "4i", "auto", True),
    ("j", "The answer is 2 - 5j.", "2-5i", "auto", True),
    ("j", "\\boxed{3-4j}", "3+4i", "auto", False),
    ("j", "\\boxed{3+5j}", "3+4i", "auto", False),
    ("j", "\\boxed{3+4j}", "3+4", "auto", False),
    ("j", "\\boxed{3+4jx}", "3+4i", "auto", False),
    ("e_unit", "\\boxed{1.5E3m}", "1500 m", "auto", True),
    ("e_unit", "\\boxed{1.5E3 m}", "1.5 \\times 10^3 \\text{ m}", "auto", True),
    ("e_unit", "\\boxed{3E8 m/s}", "3 \\times 10^8 \\text{ m/s}", "auto", True),
    ("e_unit", "\\boxed{1.5E3 \\text{m}}", "1500 m", "auto", True),
    ("e_unit", "\\boxed{1500 \\text{m}}", "1500 m", "auto", True),
    ("e_unit", "The distance is 1.5E3 m.", "1500", "number", True),
    ("e_unit", "\\boxed{1.5E3 m}", "1.5 \\times 10^4 \\text{ m}", "auto", False),
    ("e_unit", "\\boxed{1.5E3 cm}", "1.5 \\times 10^3 \\text{ m}", "auto", False),
    ("e_unit", "\\boxed{1.5E3s}", "1500 m", "auto", False),
    ("e_unit", "\\boxed{1500 \\text{cm}}", "1500 m", "auto", False),
    ("e_unit", "The distance is 1.5E4 m.", "1500", "number", False),
    ("clock", "\\boxed{10:15}", "10{:}15", "auto", True),
    ("clock", "\\boxed{10{:}15}", "10:15", "auto", True),
    ("clock", "\\boxed{3 p.m.}", "3 PM", "auto", True),
    ("clock", "\\boxed{3:30 PM}", "3:30 p.m.", "auto", True),
    ("clock", "\\boxed{15:30}", "3:30 p.m.", "auto", True),
    ("clock", "\\boxed{3:30 pm}", "3:30", "auto", True),
    ("clock", "The answer is 3:30 p.m.", "3:30 PM", "auto", True),
    ("clock", "\\boxed{10:15}", "10{:}16", "auto", False),
    ("clock", "\\boxed{3:30 a.m.}", "3:30 PM", "auto", False),
    ("clock", "\\boxed{3:30}", "3:30 p.m.", "auto", False),
    ("clock", "\\boxed{4:30 PM}", "3:30 PM", "auto", False),
    ("superscript", "So the area is x².", "x^2", "auto", True),
    ("superscript", "The result is x³.", "x^3", "auto", True),
    ("superscript", "The simplified form is x² + 1.", "x^2+1", "auto", True),
    ("superscript", "The result is x².", "x^3", "auto", False),
    ("superscript", "The simplified form is x² + 2.", "x^2+1", "auto", False),
    ("superscript", "So the answer area is y².", "x^2", "auto", False),
]


@pytest.mark.parametrize("family,response,gold,answer_type,expected", CASES,
                         ids=[f"{c[0]}-{i}-{'right' if c[4] else 'wrong'}" for i, c in enumerate(CASES)])
def test_idiom_families(family, response, gold, answer_type, expected):
    result = check(response, gold, answer_type)
    assert result.correct is expected, result


def test_every_family_has_right_and_wrong_rows():
    for family in {c[0] for c in CASES}:
        assert {c[4] for c in CASES if c[0] == family} == {True, False}, family


@pytest.mark.parametrize("text,want", [
    ("10:15", (10, 15, 0, None)), ("10{:}15", (10, 15, 0, None)), ("3 p.m.", (3, 0, 0, "PM")),
    ("3:30 AM", (3, 30, 0, "AM")), ("12:05:09", (12, 5, 9, None)), ("$9{:}05$", (9, 5, 0, None)),
    ("3", None), ("3:2", None), ("25:00", None), ("13 PM", None), ("10:75", None), ("3:30 p.m. or 4", None),
], ids=repr)
def test_clock_reads_only_times_of_day(text, want):
    assert clock(text) == want


def test_the_idioms_leave_other_shapes_alone():
    assert same_clock("10:15", "42") is None and same_clock("7", "10:15") is None
    assert engineering_j("3+4j", "3+4") == "3+4j" and engineering_j("3+4j", "x+4i") == "3+4j"
    assert engineering_j("2j + x", "3+4i") == "2j + x"
    assert split_glued_exponent("1.5E3m") == "1.5E3 m" and split_glued_exponent("e^{x}") == "e^{x}"


# -- float golds of tolerance-graded sets (TheoremQA: within 4 % of the gold) ----------------------------
TOLERANCE = [  # (response, gold, rel_tol, expected)
    ("\\boxed{3.46}", "3.464", 0.04, True),
    ("The answer is 3.5.", "3.464", 0.04, True),
    ("\\boxed{0.00674}", "0.0067", 0.04, True),
    ("\\boxed{3.46}", "3.464", None, False),  # the strict rule without the set's tolerance: fewer decimals
    ("\\boxed{3.9}", "3.464", 0.04, False),  # 12.6 % off
    ("\\boxed{0.067}", "0.0067", 0.04, False),
    ("\\boxed{-3.46}", "3.464", 0.04, False),
    ("\\boxed{14.3}", "14", 0.04, False),  # an integer gold is no float: exact, as before
]


@pytest.mark.parametrize("response,gold,rel_tol,expected", TOLERANCE,
                         ids=[f"{i}-{'right' if c[3] else 'wrong'}" for i, c in enumerate(TOLERANCE)])
def test_a_float_gold_accepts_what_its_set_tolerates(response, gold, rel_tol, expected):
    assert check(response, gold, "number", rel_tol=rel_tol).correct is expected


def test_theoremqa_floats_carry_their_tolerance_into_the_math_kind():
    from pathlib import Path

    from rsim_env import kinds
    from rsim_env.sources.data import load_problems

    fixture = Path(__file__).parent / "fixtures" / "datasets" / "theoremqa.jsonl"
    problems = load_problems(str(fixture), kind="theoremqa")
    assert [p.metadata.get("rel_tol") for p in problems] == [None, None, None, None, 0.04]
    float_problem = problems[-1]
    assert kinds.get("math").grade(float_problem, ["So the probability is \\boxed{0.0068}."]).correct
    assert not kinds.get("math").grade(float_problem, ["So the probability is \\boxed{0.0075}."]).correct
    with pytest.raises(ValueError, match="rel_tol=1.5"):
        check("\\boxed{1}", "1.0", rel_tol=1.5)
