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


@pytest.mark.parametrize("text", (*render.INSTRUCTIONS, *render.LEADS, *(s.prompt for s in STRATEGIES)),
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


# -- novelty (rsim_env.novelty): what counts as new content, what as a repeat -------------------------------------

from rsim_env import novelty  # noqa: E402


@pytest.mark.parametrize("text,units", [
    ("6 * 7 = 42.", {"6", "7", "42", "6*7=42"}),
    ("So 1,000.50 \\times 2 = 2001", {"1000.5", "2", "2001", "1000.5*2=2001"}),
    ("x = 70 + 26", {"70", "26", "x=70+26"}),
    ("(5 + 8) ÷ 2", {"5", "8", "2", "5+8/2"}),
    ("Split it: part 1 is the tens, part 2 the units.", set()),  # labels are not content
    ("Here is my plan:\n1. add\n2. check", set()),
    ("Let me think carefully about this step.", set()),
], ids=["equation", "latex_commas", "variable", "division_sign", "part_labels", "list_markers", "words_only"])
def test_math_content_units(text, units):
    assert novelty.math_units(text) == units


@pytest.mark.parametrize("step,vacuous", [
    ("The most important step now is to compute the final answer to the given arithmetic problem.", True),
    ("The most important step now is to compute the result of 59 * 20.", True),  # the question's expression
    ("So 59 * 20 = 1180.", False),
    ("59 * 2 = 118, then times 10.", False),
    ("Step 2 (validation: Check the last result.)", True),  # an echo: nothing generated at all
], ids=["announcement", "restates_question", "computes", "partial_product", "echo"])
def test_vacuous_means_no_number_or_expression_the_context_lacks(step, vacuous):
    assert novelty.is_vacuous(step, ["What is 59 * 20?"]) is vacuous


def test_earlier_steps_and_injected_texts_are_context():
    assert novelty.is_vacuous("So 59 * 20 = 1180.", ["What is 59 * 20?", "59 * 20 = 1180"])
    assert novelty.is_vacuous("Step 2: ok", ["Q"])  # "Step 2" is a label; "ok" no content
    assert not novelty.is_vacuous("we loop over the items", ["Write f."], kind="code")  # code: new words count
    assert novelty.is_vacuous("Let me think carefully about this step.", ["Write f."], kind="code")


def test_self_repeat_is_the_echo_rule_against_earlier_steps():
    earlier = ["Verify: 42 / 7 = 6, so 6 * 7 = 42 holds."]
    assert novelty.is_self_repeat("So, verifying again: 42 / 7 = 6, so 6 * 7 = 42 holds.", earlier)
    assert not novelty.is_self_repeat("Verify: 42 / 6 = 7 as well.", earlier)  # a new number: its own work
    assert not novelty.is_self_repeat("Verify: 42 / 7 = 6, so 6 * 7 = 42 holds.", [])


def test_an_answer_step_is_never_flagged():
    steps = ["6 * 7 = 42.", "6 * 7 = 42. So \\boxed{42}."]
    fresh = novelty.assess("What is 6 * 7?", steps, [6, TERMINATION], [{6}, {6, TERMINATION}])
    assert fresh.vacuous == (False, False) and fresh.self_repeat == (False, False)
    # the same text planned as another strategy is a repeat with nothing new
    fresh = novelty.assess("What is 6 * 7?", steps, [6, 3], [{6}, {6, TERMINATION}])
    assert fresh.vacuous == (False, True) and fresh.self_repeat == (False, True) and fresh.void == (False, True)
    with pytest.raises(ValueError, match="one of each per step"):
        novelty.assess("q", steps, [6], [{6}, {6}])
