"""Echo detection (rsim_env.echo): the documented definition, case by case."""

import pytest

from rsim_env import echo, render
from rsim_env.strategies import STRATEGIES, TERMINATION, detect, example

# Real steps of the embedded model under the pre-issue-10 `inline` protocol (from episodes since removed).
REAL_ECHOES = [
    "Step 2 (decomposition: Break the problem into smaller sub-problems.)",
    "Step 2 (termination: Conclude and state the final answer in \\boxed{}.)",
    "Step 3 (validation: Check the last result: substitute it back or recompute it.)",
    "Step 2 (deductive reasoning: Apply the given information to the given scenario to arrive at the final answer.)",
    "Step 2 (giving the final answer as your final answer.)",
]
REAL_CONTENT = [
    "To solve this problem, we need to first add the numbers in the parentheses, which is 5 + 8 - 5 + 2 * -3 = 21.",
    "The final answer is 443 * 40 = 16000 minutes.",
    "15 - 43 = -28",
]


@pytest.mark.parametrize("step", REAL_ECHOES)
def test_real_header_copies_are_echoes_and_leave_nothing_to_detect(step):
    assert echo.is_echo(step) and echo.echo_fraction(step) == 1.0
    assert echo.generated_content(step).strip(" ()") == ""
    assert detect(echo.generated_content(step)) == set()


@pytest.mark.parametrize("step", REAL_CONTENT)
def test_real_reasoning_is_not_an_echo(step):
    assert not echo.is_echo(step) and echo.echo_fraction(step) == 0.0
    assert echo.generated_content(step) == step


@pytest.mark.parametrize("text", render.INSTRUCTIONS + render.LEADS + tuple(s.prompt for s in STRATEGIES),
                         ids=lambda t: t[:24])
def test_every_injected_text_is_an_echo_of_itself(text):
    assert echo.is_echo(text)


@pytest.mark.parametrize(
    "step,expected",
    [
        ("Step 3: 3 + 4 = 7", False),          # a numbered step with content: 2 header words of 5
        ("validation: ok", True),              # strategy-name header + 1 word
        ("[summarization] 5 + 5 = 10", False),  # header 1 word, content 3 words
        ("Check your last result. 7 is right", True),  # copied clause 4 words of 7
        ("Next, 2 + 2 = 4.", False),           # 1 copied word ("next" is in a lead), 3 content words
        ("So the final answer is 25.", False),  # the reasoner's own number: never a copy
        ("to choose the final answer.", True),  # measured: a content-free continuation of a lead-in
        ("", False),
        ("   \n ", False),
    ],
    ids=["numbered", "name_header", "bracket_header", "copy_then_short", "short_copy", "own_number",
         "lead_continuation", "empty", "blank"],
)
def test_step_level_threshold(step, expected):
    assert echo.is_echo(step) is expected


def test_header_parentheses_are_echo_until_closed():
    step = "Step 2 (deductive reasoning: Apply the rule.) Then 3 + 4 = 7."
    assert echo.generated_content(step) == " Then 3 + 4 = 7."


def test_clauses_round_trip():
    step = "A: b (c). D; e!\nf [g] h?"
    assert "".join(echo.clauses(step)) == step


def test_custom_references_and_bounds():
    assert echo.is_copied("the cat sat on the mat", ["yesterday the cat sat on the mat again"])
    assert not echo.is_copied("the cat sat on the mat", ["a dog"])
    huge = "Step 1 (x)" + "7 " * 100_000
    assert echo.echo_fraction(huge) < 0.01  # only the first MAX_SCAN characters are read
    with pytest.raises(TypeError, match="str"):
        echo.is_echo(None)


@pytest.mark.parametrize("k", range(len(STRATEGIES)), ids=[s.name for s in STRATEGIES])
def test_scripted_templates_perform_without_echo(k):
    text = example(k, "42")
    assert not echo.is_echo(text)
    shows = detect(echo.generated_content(text))
    assert k in shows or (k == TERMINATION and "\\boxed{42}" in text)
