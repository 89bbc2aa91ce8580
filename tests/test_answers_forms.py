"""Answer forms, each with right and wrong variants (no false positives).

Each table pairs the forms that must be accepted with near misses that must be refused, so a
rule that is too loose fails here as surely as one that is too strict.
"""

import sys

import pytest

from rsim_env.answers import check, extract_answer
from rsim_env.answers.parser import MAX_DEPTH, parse_expression


def _cases(rows):
    return pytest.mark.parametrize("response,gold,expected", rows, ids=[f"{i}:{r[0][:40]}" for i, r in enumerate(rows)])


@_cases([
    ("<think>so it is 5</think><answer></answer>", "5", False),
    ("<answer></answer> The total is 5", "5", False),
    ("<answer>  </answer>", "5", False),
    ("We find 5. \\boxed{}", "5", False),
    ("<think>5</think><answer>5</answer>", "5", True),
])
def test_empty_answer_never_falls_back(response, gold, expected):
    result = check(response, gold)
    assert result.correct is expected, result
    if not expected:
        assert result.reason == "no_answer"


@_cases([
    ("\\boxed{5 km^2}", "5", True), ("\\boxed{5\\,\\mathrm{km}^2}", "5", True),
    ("\\boxed{3\\,\\mathrm{kg\\,m/s^2}}", "3", True), ("\\boxed{12 \\text{ cm}^2}", "12", True),
    ("\\boxed{4\\text{ cm}^{3}}", "4", True), ("\\boxed{9.8 m/s^2}", "9.8", True), ("\\boxed{9.8 m/s²}", "9.8", True),
    ("\\boxed{72 \\text{ clips}}", "72", True), ("The answer is 40 apples.", "40", True),
    ("\\boxed{10^2 m}", "10", False), ("\\boxed{10^2 \\text{ cm}}", "100", True),
    ("\\boxed{5 km^2}", "6", False), ("\\boxed{2x}", "2", False), ("\\boxed{3x^2}", "3", False),
    ("\\boxed{2\\pi \\text{ cm}}", "2\\pi", True), ("\\boxed{2 \\text{ cm}}", "2\\pi", False),
    ("\\boxed{5m}", "5", False), ("\\boxed{\\$5.40}", "5.40", True),
])
def test_units_with_powers_and_markup(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("\\boxed{\\emptyset}", "\\varnothing", True), ("\\boxed{\\{\\}}", "\\emptyset", True),
    ("\\boxed{\\varnothing}", "\\{\\}", True), ("\\boxed{∅}", "\\emptyset", True),
    ("\\boxed{\\text{empty set}}", "\\emptyset", True), ("\\boxed{\\left\\{ \\right\\}}", "\\emptyset", True),
    ("\\boxed{\\emptyset}", "\\{1\\}", False), ("\\boxed{\\{0\\}}", "\\emptyset", False),
    ("\\boxed{0}", "\\emptyset", False),
])
def test_empty_set_spellings(response, gold, expected):
    assert check(response, gold).correct is expected


_M = "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}"


@_cases([(f"\\boxed{{\\begin{{{env}}}1&2\\\\3&4\\end{{{env}}}}}", _M, True)
         for env in ("matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "smallmatrix", "pmatrix*")] + [
    ("\\boxed{\\left(\\begin{array}{cc}1&2\\\\3&4\\end{array}\\right)}", _M, True),
    ("\\boxed{\\begin{pmatrix}0.25&2\\end{pmatrix}}", "\\begin{pmatrix}\\frac14&2\\end{pmatrix}", True),
    ("\\boxed{\\begin{pmatrix}\\sqrt{8}\\\\1\\end{pmatrix}}", "\\begin{pmatrix}2\\sqrt{2}\\\\1\\end{pmatrix}", True),
    ("\\boxed{(1, 2, 3)}", "\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}", True),
    ("\\boxed{(1, 3, 2)}", "\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}", False),
    ("\\boxed{\\begin{bmatrix}1&2\\\\3&5\\end{bmatrix}}", _M, False),
    ("\\boxed{\\begin{bmatrix}1&3\\\\2&4\\end{bmatrix}}", _M, False),
    ("\\boxed{\\begin{pmatrix}0.26&2\\end{pmatrix}}", "\\begin{pmatrix}\\frac14&2\\end{pmatrix}", False),
])
def test_matrix_environments_compare_by_entries(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("\\boxed{\\sqrt{2} \\approx 1.414}", "\\sqrt{2}", True), ("\\boxed{\\frac{1}{3}\\approx 0.333}", "\\frac13", True),
    ("\\boxed{\\pi \\ (\\approx 3.14)}", "\\pi", True), ("\\boxed{x \\approx 1.41}", "1.41", True),
    ("\\boxed{\\sqrt{2} ≈ 1.414}", "\\sqrt{2}", True),
    ("\\boxed{\\sqrt{3} \\approx 1.414}", "\\sqrt{2}", False),  # the exact value decides, not the decimal
    ("\\boxed{\\frac{1}{3}\\approx 0.5}", "\\frac12", False),
])
def test_exact_value_before_approximation_decides(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("The answer is −5.", "-5", True), ("\\boxed{−5}", "5", False), ("\\boxed{３}", "3", True),
    ("\\boxed{٣}", "3", True), ("\\boxed{½}", "0.5", True), ("\\boxed{2½}", "\\frac52", True),
    ("\\boxed{x²}", "x^2", True), ("\\boxed{x²}", "2x", False), ("\\boxed{6.02×10²³}", "6.02\\times10^{23}", True),
    ("\\boxed{10⁻³}", "0.001", True), ("\\boxed{2·3}", "6", True), ("\\boxed{6÷4}", "1.5", True),
    ("\\boxed{x ≤ 3}", "(-\\infty, 3]", True), ("\\boxed{√3}", "\\sqrt3", True), ("\\boxed{∛8}", "2", True),
    ("\\boxed{√(x+1)}", "\\sqrt{x+1}", True), ("\\boxed{1\u202e2}", "12", False), ("\\boxed{π/2}", "\\frac{\\pi}{2}", True),
])
def test_unicode_digits_and_operators(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("\\boxed{1-\\cos^2 x}", "\\sin^2 x", True), ("\\boxed{\\sin 2x}", "2\\sin x\\cos x", True),
    ("\\boxed{\\sin^2 x + \\cos^2 x}", "1", True), ("\\boxed{\\tan x}", "\\frac{\\sin x}{\\cos x}", True),
    ("\\boxed{\\sin^{-1} x}", "\\arcsin x", True), ("\\boxed{\\log_2 8}", "3", True), ("\\boxed{\\ln(e^2)}", "2", True),
    ("\\boxed{1-\\cos^2 x}", "\\cos^2 x", False), ("\\boxed{\\sin 2x}", "2\\sin x", False),
    ("\\boxed{\\cos 2x}", "\\cos^2 x - \\sin^2 x", True), ("\\boxed{\\sin x \\cos x}", "\\frac{\\sin 2x}{2}", True),
    ("\\boxed{e^{i\\pi}}", "-1", True), ("\\boxed{(1+i)^2}", "2i", True), ("\\boxed{(1+i)^2}", "2", False),
])
def test_symbolic_equivalences(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("\\boxed{\\binom{5}{2}}", "10", True), ("\\boxed{\\dbinom{5}{2}}", "10", True), ("\\boxed{\\tbinom52}", "10", True),
    ("\\boxed{C(5,2)}", "10", True), ("\\boxed{C(5, 2)}", "\\binom{5}{2}", True), ("\\boxed{{5 \\choose 2}}", "10", True),
    ("\\boxed{\\binom{5}{2}}", "11", False), ("\\boxed{C(5,3)}", "5", False), ("\\boxed{\\binom{n}{2}}", "\\frac{n(n-1)}{2}", True),
    ("\\boxed{\\binom{100000}{3}}", "1", False), ("\\boxed{C(x+1)}", "Cx+C", True),
])
def test_binomials_evaluate(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("Splitting 3 pizzas among 8 friends, so each share is 3/8", "3/8", True),
    ("so each share is 3/8", "\\frac{3}{8}", True), ("so each share is 3 / 8", "0.375", True),
    ("each share is $\\frac{3}{8}$", "3/8", True), ("so each share is 3/8", "8", False),
    ("she pays 1,200 in total", "1200", True), ("the ratio is 2/3 and then 5", "5", True),
    ("#### 72", "72", True), ("Adding gives 70.\n#### 72", "70", False),
])
def test_final_value_without_anchor_word(response, gold, expected):
    assert check(response, gold, "auto").correct is expected


@pytest.mark.parametrize("depth", [13, 30, MAX_DEPTH - 2])
def test_deep_nesting_is_legitimate(depth):
    parens = "(" * depth + "1+1" + ")" * depth
    assert check(f"\\boxed{{{parens}}}", "2").correct
    assert not check(f"\\boxed{{{parens}}}", "3").correct
    half = depth // 2
    frac = "\\frac{1}{" * half + "2" + "}" * half
    value = "2" if half % 2 == 0 else "\\frac12"
    assert check(f"\\boxed{{{frac}}}", value).correct


def _at_depth(fn, frames):
    """Run ``fn`` with ``frames`` Python frames already on the stack (a deep caller)."""
    return fn() if frames <= 0 else _at_depth(fn, frames - 1)


@pytest.mark.parametrize("build", [
    lambda d: "(" * d + "1" + ")" * d,
    lambda d: "\\frac{1}{" * d + "2" + "}" * d,
    lambda d: "\\sqrt{" * d + "4" + "}" * d,
    lambda d: "2^{" * d + "1" + "}" * d,
    lambda d: "-" * d + "1",
    lambda d: "\\sin(" * d + "x" + ")" * d,
    lambda d: "[" * d + "1" + "]" * d,
], ids=["parens", "frac", "sqrt", "power", "unary", "sin", "brackets"])
def test_worst_case_depth_from_a_deep_stack(build):
    # At MAX_DEPTH every construct parses from a caller already 250 frames deep under the
    # default recursion limit; one level more is refused with a clear ParseError, never a crash.
    assert sys.getrecursionlimit() >= 1000
    text = build(MAX_DEPTH)
    _at_depth(lambda: parse_expression(text), 250)
    check(f"\\boxed{{{text}}}", "1")  # any outcome, but it returns
    with pytest.raises(ValueError, match="nest"):
        parse_expression(build(MAX_DEPTH + 1))


def test_extract_joins_several_boxed_solutions():
    assert extract_answer("x = \\boxed{2} and x = \\boxed{3}") == "2, 3"
    assert check("The roots are \\boxed{2} and \\boxed{3}.", "2, 3").correct
    assert not check("The roots are \\boxed{2} and \\boxed{3}.", "3").correct
    assert not check("It is \\boxed{2} or \\boxed{3}.", "2, 3").correct


# Conventions the held-out cases showed missing; these rows are our own, not copies of those cases.
@_cases([
    ("The answer is 4. Checking again: 2 + 3 = 5, so the answer is 5.", "5", True),
    ("The answer is 4. Checking again: 2 + 3 = 5, so the answer is 5.", "4", False),
    ("Answer: 9. Hmm, no. Answer: 10", "10", True),
    ("The answer to this question is 42.", "42", True),
])
def test_last_answer_anchor_wins_on_a_line(response, gold, expected):
    assert check(response, gold).correct is expected


@pytest.mark.parametrize("response,gold,expected", [
    ("The answer is (B) or (D).", "B", False), ("The answer is B and D.", "D", False),
    ("The answer is (B), not (D)... no: the answer is (B).", "B", True), ("The answer is (b).", "B", True),
    ("Answer: B", "B", True),
], ids=["or", "and", "restated", "lowercase", "plain"])
def test_choice_naming_two_letters_is_a_hedge(response, gold, expected):
    assert check(response, gold, "choice").correct is expected


@pytest.mark.parametrize("response,gold,expected", [
    ("Yes, since every Cauchy sequence converges in R.", "True", True),
    ("No. The series diverges by comparison with 1/n.", "False", True),
    ("No. The series diverges by comparison with 1/n.", "True", False),
    ("We compute 2 and 3.\n\nYes, it is continuous.", "True", True),
    ("The determinant is 0.", "False", False),
    ("No doubt the claim is true.", "False", False), ("**Yes**", "True", True),
], ids=["yes", "no", "no-vs-true", "last-paragraph", "number-is-not-a-bool", "no-doubt", "bold"])
def test_bool_answer_as_first_word(response, gold, expected):
    assert check(response, gold, "bool").correct is expected


@_cases([
    ("\\boxed{5\\text{ cm}}", "5\\text{ m}", False), ("\\boxed{5 \\text{ km}}", "5 \\text{ m}", False),
    ("\\boxed{5 centimeters}", "5\\text{ cm}", True), ("\\boxed{2 hrs}", "2\\text{ hours}", True),
    ("\\boxed{3 \\text{ cm}^2}", "3\\text{ square centimeters}", True), ("\\boxed{3 \\text{ cm}^2}", "3\\text{ cm}", False),
    ("\\boxed{12 \\text{ units}}", "12\\text{ square units}", True), ("\\boxed{20 apples}", "20", True),
])
def test_units_on_both_sides_must_agree(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("\\boxed{\\text{Even}}", "\\text{even}", True), ("\\boxed{\\text{even}}", "\\text{odd}", False),
    ("\\boxed{1\u2009000\u2009000}", "1000000", True), ("\\boxed{1\u00a0000}", "1000", True),
    ("\\boxed{1\u00a0000}", "1", False), ("\\boxed{\\sin 30^\\circ}", "\\frac12", True),
    ("\\boxed{\\tan(45°)}", "1", True), ("\\boxed{\\cos 60^\\circ}", "\\frac{\\sqrt3}{2}", False),
    ("\\boxed{30^\\circ}", "30", True),
    ("<answer>So she has 9 marbles left.</answer>", "9", True), ("<answer>So she has 9 marbles left.</answer>", "8", False),
    ("<answer>The answer is \\frac{2}{3}</answer>", "2/3", True),
    ("\\boxed{\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", True),
])
def test_words_spaces_degrees_and_tag_sentences(response, gold, expected):
    assert check(response, gold).correct is expected


@_cases([
    ("So the answer is $\\$72$.", "72", True), ("The answer is \\( \\frac{3}{4} \\).", "0.75", True),
    ("Thus the answer is \\[ x = 5 \\]", "5", True), ("The answer is \\(\\frac{3}{4}\\)", "\\frac35", False),
    ("\\boxed{0.\\overline{3}}", "\\frac13", True), ("\\boxed{0.1\\overline{6}}", "\\frac16", True),
    ("\\boxed{0.\\overline{3}}", "0.3", False), ("\\boxed{1.\\overline{27}}", "\\frac{14}{11}", True),
    ("\\boxed{5}\\text{ and }\\boxed{6}", "5, 6", True), ("\\boxed{2}", "\\{2\\}", True),
    ("\\boxed{\\{2\\}}", "2", True), ("\\boxed{2}", "\\{2, 3\\}", False), ("\\boxed{\\{3\\}}", "2", False),
])
def test_math_delimiters_repeating_decimals_and_singletons(response, gold, expected):
    assert check(response, gold).correct is expected


@pytest.mark.parametrize("response,gold,answer_type,expected", [
    ("The answer is five.", "5", "auto", True), ("The answer is five.", "4", "auto", False),
    ("So there are twenty apples in total, and the answer is twenty", "20", "number", True),
    ("Checking both directions, the claim is true.", "True", "bool", True),
    ("Checking both directions, the claim is not true.", "True", "bool", False),
    ("Checking both directions, the claim is not true.", "False", "bool", False),  # no extraction: ambiguous
    ("It is true for n=1 but false for n=2.", "False", "bool", False),
], ids=["five", "five-vs-4", "twenty", "true-sentence", "negated", "negated-false", "both-words"])
def test_number_words_and_truth_sentences(response, gold, answer_type, expected):
    assert check(response, gold, answer_type).correct is expected


@_cases([
    ("\\boxed{x \\le -1 \\text{ or } x \\ge 0}", "(-\\infty,-1]\\cup[0,\\infty)", True),
    ("\\boxed{x < -1 \\text{ or } x \\ge 0}", "(-\\infty,-1]\\cup[0,\\infty)", False),
    ("\\boxed{x \\le -1 \\text{ or } x \\ge 0}", "[0,\\infty)", False),
    ("\\boxed{x = 2 \\text{ or } x = 3}", "2, 3", True), ("\\boxed{x = 2 \\text{ or } x = 3}", "3", False),
])
def test_or_joins_parts_when_the_gold_has_parts(response, gold, expected):
    assert check(response, gold).correct is expected


@pytest.mark.parametrize("answer,gold,evaluated", [
    ("37 * 22", "814", False), ("2^3", "8", False), ("3 \\times 4", "12", False), ("-6 - -1", "-5", False),
    ("14 = 9 + 5", "14", False), ("7 \\cdot 6", "42", False),
    ("24 \\div 2", "12", True),  # a quotient of two integers is a fraction, which is a number
    ("9 + 5 = 14", "14", True), ("x = 12", "12", True), ("24/2", "12", True), ("\\frac{24}{2}", "12", True),
    ("1.2 \\times 10^{3}", "1200", True), ("(814)", "814", True), ("- 3", "-3", True), ("(-3)", "-3", True),
    ("1,000", "1000", True), ("\\$12", "12", True), ("12.5%", "12.5%", True),
    ("\\sqrt{12}", "2\\sqrt{3}", True), ("3 - 5", "3 - 5", True),  # a non-numeric gold is compared as before
])
def test_require_evaluated_refuses_a_computation_for_a_number(answer, gold, evaluated):
    from rsim_env.answers import CheckConfig, check

    strict = check(f"\\boxed{{{answer}}}", gold, "auto", CheckConfig(require_evaluated=True))
    assert strict.correct is evaluated and (strict.reason == "ok") is evaluated
    if not evaluated:
        assert strict.reason == "unevaluated"
        assert check(f"\\boxed{{{answer}}}", gold).correct  # equivalence alone (the default) accepts it
