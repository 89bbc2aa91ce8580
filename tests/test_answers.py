"""Table-driven tests of the answer checker over every category (cases shared with the benchmark)."""

import pytest

from benchmarks.grading.answer_check import CASES
from rsim_env.answers import AnswerCheck, CheckConfig, check, extract_answer


@pytest.mark.parametrize("category,response,gold,expected,answer_type", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_labelled_case(category, response, gold, expected, answer_type):
    result = check(response, gold, answer_type)
    assert isinstance(result, AnswerCheck)
    assert result.correct is expected, result


@pytest.mark.parametrize("response,expected", [
    ("so \\boxed{\\frac{a}{\\sqrt{b}}} done", "\\frac{a}{\\sqrt{b}}"),
    ("\\boxed{1} then \\boxed{2}", "2"),
    ("<think>\\boxed{1}</think><answer>3</answer>", "3"),
    ("The final answer is 42.", "42"),
    ("no numbers here", None),
    ("costs 5 then 7", "7"),
], ids=["nested", "last-boxed", "answer-tag", "answer-is", "none", "last-number"])
def test_extract_answer(response, expected):
    assert extract_answer(response) == expected


def test_last_number_fallback_can_be_disabled():
    cfg = CheckConfig(last_number_fallback=False)
    assert check("costs 5 then 7", "7", config=cfg).reason == "no_answer"
    assert check("costs 5 then 7", "7").correct


@pytest.mark.parametrize("response,reason", [
    ("nothing", "no_answer"), ("\\boxed{8 or 9}", "hedged"), ("\\boxed{@@}", "unparsable"),
    ("\\boxed{9^9^9^9}", "too_large"), ("\\boxed{72}", "ok"),
], ids=["no-answer", "hedged", "unparsable", "too-large", "ok"])
def test_reasons(response, reason):
    assert check(response, "72").reason == reason


def test_bad_arguments_name_the_problem():
    with pytest.raises(ValueError, match="answer_type"):
        check("\\boxed{1}", "1", "numbr")
    with pytest.raises(TypeError, match="str"):
        check("\\boxed{1}", 1)
    with pytest.raises(ValueError, match="timeout_s"):
        CheckConfig(timeout_s=0)


def test_reasoning_gym_golds_round_trip():
    from rsim_env.sources.problems import default_source

    problems = default_source(size=500)
    wrong = [p.id for p in problems if not check(f"\\boxed{{{p.answer}}}", p.answer, p.answer_type).correct]
    assert wrong == []
