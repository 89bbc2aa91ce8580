import pytest

from rsim_env import STRATEGIES, detect
from rsim_env.strategies import CONTINUATION, TERMINATION, by_name

NAMES = ["self-reflection", "decomposition", "deliberative thinking", "validation", "summarization",
         "prioritization", "continuation", "sub-planning", "termination"]


def test_table_order_and_fields():
    assert [s.name for s in STRATEGIES] == NAMES
    assert [s.index for s in STRATEGIES] == list(range(9))
    assert all(s.prompt and s.patterns for s in STRATEGIES)
    assert TERMINATION == 8 and CONTINUATION == 6


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Wait, that is wrong. Let me reconsider.", 0),
        ("Break the problem down into two sub-problems.", 1),
        ("Let me think carefully about the units.", 2),
        ("CHECK: 3 * 4 = 12, verified.", 3),
        ("In summary, we know x = 4.", 4),
        ("The most important quantity is the total.", 5),
        ("Next, multiply by 3.", 6),
        ("Plan: first find x, then find y.", 7),
        ("So the final answer is \\boxed{12}.", 8),
    ],
    ids=NAMES,
)
def test_detect_each_strategy(text, expected):
    assert expected in detect(text)


@pytest.mark.parametrize(
    "text,expected",
    [("", set()), ("   ", set()), ("12 + 5 = 17.", {6}), ("paycheck of 5 dollars", {6})],
    ids=["empty", "blank", "plain_is_continuation", "word_boundary"],
)
def test_detect_edge_cases(text, expected):
    assert detect(text) == expected


def test_detect_is_case_insensitive_and_multi():
    assert {0, 3, 8} <= detect("WAIT. Let me VERIFY: the answer is \\boxed{3}")


def test_detect_bounded_on_huge_input():
    assert detect("x" * 5_000_000 + " wait") == {6}  # only the first 20k chars are scanned


def test_detect_rejects_non_str():
    with pytest.raises(TypeError, match="str"):
        detect(None)


def test_by_name():
    assert by_name("Validation").index == 3
    with pytest.raises(KeyError, match="valid names"):
        by_name("guessing")


def test_every_strategy_has_an_example_step_that_shows_it():
    """Scripted agents write these; a new row without one fails at import (see strategies.EXAMPLES)."""
    from rsim_env.strategies import EXAMPLES, example

    assert set(EXAMPLES) == {s.name for s in STRATEGIES}
    for s in STRATEGIES:
        assert s.index in detect(example(s.index, "42")), s.name
    assert "\\boxed{42}" in example(TERMINATION, "42")


def test_named_indices_come_from_the_table():
    from rsim_env.strategies import CONTINUATION

    assert STRATEGIES[TERMINATION].name == "termination" and STRATEGIES[CONTINUATION].name == "continuation"
