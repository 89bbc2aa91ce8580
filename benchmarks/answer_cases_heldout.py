r"""Held-out labelled answer-checking cases: (category, response, gold, expected, answer_type).

Written for issue 11 item 11 by someone who had NOT read the checker (``rsim_env/answers/``), its
tests, its benchmark, or its own case table beyond the tuple format; none of these cases was run
through the checker before being committed. ``expected`` is what a careful human grader says when
shown the full response and the gold answer exactly as the dataset loader stores it.

How the forms were derived (sources, not this repository's examples):

* Gold formats per loader (``rsim_env/loaders.py`` and ``tests/fixtures/datasets/``): GSM8K gold is the
  text after ``####`` with commas removed (type ``number``); MATH gold is the last ``\boxed{}`` of the
  reference solution and MATH-500 gold is its ``answer`` field (type ``auto``), so golds are LaTeX
  (``\frac``, ``\sqrt``, ``\pi``, intervals, ``\{...\}`` sets, ``\left( ... \right)`` tuples, pmatrix,
  ``^\circ``, ``\text{(C)}``, ``y = ...`` equations, ``10110_2`` base subscripts); AIME 2024 gold is
  ``str(int)`` 0-999 (``number``); MMLU-Pro gold is a letter A-J (``choice``); TheoremQA's
  ``Answer_type`` integer/float -> ``number``, bool -> ``bool`` (gold ``True``/``False``), option ->
  ``choice`` (``(c)`` -> ``C``), ``list of integer``/``list of float`` -> ``list`` (gold ``[1, 2, 3]``).
* The datasets' official grading conventions: hendrycks MATH ``is_equiv``/``strip_string`` (drops
  ``\left``/``\right``, ``^\circ``, ``\$``, ``\%``, unit ``\text{}``; ``\dfrac``/``\tfrac`` = ``\frac``;
  ``\frac12``; ``.5`` = ``0.5``; short ``x =`` prefixes), Minerva/lm-eval-harness ("Final Answer: The
  final answer is $X$. I hope it is correct.", GSM8K ``#### 72`` and "The answer is 72."),
  Qwen2.5-Math / Math-Verify (sets and intervals compared as sets, matrices by entries, percent,
  ``\approx``, symbolic equivalence via sympy), MMLU-Pro's extraction regexes ("answer is (C)",
  "Answer: C"), TheoremQA's evaluator (floats compared with a small relative tolerance, lists
  element-wise in order, bool as True/False, options as letters).
* What small instruction-tuned models write: SmolLM2 outputs in ``docs/eval_results/*/episodes.jsonl``
  ("So, 43 / 1 = 43.", the same line repeated, truncated "4 x 10 =", "The final answer is 242 + 857
  = 1291.") and the usual R1-style ``<think>...</think><answer>...</answer>`` template.

Labels follow mathematical equivalence with the gold; a hedged answer (two candidates), a wrong final
answer after a correct intermediate one, and an empty final slot are wrong. Choices were made to
avoid cases a careful grader could not decide without the question.
"""

from __future__ import annotations

from fractions import Fraction

CASES: list[tuple[str, str, str, bool, str]] = []

_LEADS = (
    "Let's work through it step by step.",
    "First we simplify the expression, then we substitute the values.",
    "We set up the equation and solve it carefully.",
    "Using the given information, we compute each part in turn.",
)


def _box(x: str, i: int = 0) -> str:
    """A response ending in ``\\boxed{x}`` with one of a few realistic lead-ins."""
    return f"{_LEADS[i % len(_LEADS)]}\n\nTherefore, the final answer is $\\boxed{{{x}}}$."


def _add(category: str, answer_type: str, rows: list[tuple]) -> None:
    """Append rows ``(response, gold, expected[, answer_type])`` under ``category``."""
    for row in rows:
        response, gold, expected = row[:3]
        CASES.append((category, response, gold, expected, row[3] if len(row) > 3 else answer_type))


# --- GSM8K: integer gold (commas removed by the loader), responses with $, commas, units, ####.
_add("gsm8k_number", "number", [
    ("Janet has 16 - 3 - 4 = 9 eggs left. She sells them for 9 * $2 = $18.\n#### 18", "18", True),
    ("She sells 9 eggs at $2 each, so she makes $18 every day.", "18", True),
    ("The total cost is 1,080 dollars.\nThe answer is: $1,080", "1080", True),
    ("He pays 12 * 150 = 1800 in total.\nThe answer is 1,800.", "180", False),
    ("**Answer:** 42 apples", "42", True),
    ("The ticket costs $18.50 in total. The answer is $18.50.", "18.5", True),
    ("Each ticket is 18.5 dollars, so the answer is 18.5.", "18", False),
    ("Final Answer: The final answer is $70$. I hope it is correct.", "70", True),
    ("Final Answer: The final answer is $17$. I hope it is correct.", "70", False),
    ("It takes 2 hours and 30 minutes, so the answer is 2 hours and 30 minutes.", "2", False),
    ("She had 20 and gave away 8, so she has 20 - 8 = 12 left.\n#### 12", "12", True),
    ("She had 20 and gave away 8, so she has 20 - 8 = 12 left.\n#### 12", "8", False),
])

# --- AIME: integer 0-999, answer sheets write leading zeros.
_add("aime_integer", "number", [
    (_box("204", 1), "204", True),
    ("Thus the walk takes $\\boxed{204 \\text{ minutes}}$.", "204", True),
    (_box("033", 2), "33", True),
    (_box("330", 3), "33", False),
    ("So $m = 20$ and $n = 13$, which gives $m + n = \\boxed{33}$.", "33", True),
    ("So the probability is $\\boxed{\\frac{20}{13}}$.", "33", False),
    ("Hence $m + n = 20 + 13 = 33$.", "33", True),
    (_box("999", 1), "99", False),
])

# --- MMLU-Pro: letters A-J, "(C)", "C)", "answer is (C)".
_add("mmlu_letter", "choice", [
    ("Safe practices and jealousy match option C.\nThe answer is (C).", "C", True),
    ("Let's think step by step. ... the answer is (C) Safe practices, Wants, Jealousy, Trivial", "C", True),
    ("Answer: C", "C", True),
    ("C) Safe practices, Wants, Jealousy, Trivial", "C", True),
    ("The correct option is $\\boxed{\\text{(C)}}$.", "C", True),
    ("the answer is (c)", "C", True),
    ("Option C looks tempting, but it ignores fear appeals. The answer is (B).", "C", False),
    ("The answer is (D).", "C", False),
    ("The answer is (J).", "J", True),
    ("The answer is (I).", "J", False),
    ("I think the answer is (E).", "I", False),
    ("Checking each option, only (I) fits. The answer is (I).", "I", True),
    ("Between A and B, B accounts for the tax effect, so the answer is B.", "A", False),
])

# --- TheoremQA bool / option / float / list.
_add("theoremqa_bool", "bool", [
    ("The function is continuous on the interval, so the answer is True.", "True", True),
    ("Therefore the statement holds: $\\boxed{\\text{True}}$", "True", True),
    ("Yes. The sequence converges, so the answer is yes.", "True", True),
    ("The limit does not exist, so the statement is false. The answer is False.", "True", False),
    ("It is true that f is bounded, but it is not continuous at 0. The answer is False.", "True", False),
    ("$\\boxed{False}$", "False", True),
    ("No, the matrix is not invertible because its determinant is 0.", "False", True),
])
_add("theoremqa_option", "choice", [
    ("Only the lengths in (b) satisfy the Kraft inequality. The answer is (b).", "B", True),
    ("The answer is (c).", "B", False),
])
_add("theoremqa_float", "number", [
    ("The probability is about $\\boxed{0.0067}$.", "0.0067", True),
    ("P \\approx 0.00674, so the answer is 0.0067.", "0.0067", True),
    ("The answer is 0.67%.", "0.0067", True),
    (_box("0.067", 0), "0.0067", False),
    ("So y(2) = 3.4641.", "3.464", True),
    (_box("2\\sqrt{3}", 1), "3.464", True),
    (_box("3.9", 2), "3.464", False),
    ("The answer is $6.7 \\times 10^{-3}$.", "0.0067", True),
    ("The answer is $6.7 \\times 10^{-2}$.", "0.0067", False),
])
_add("theoremqa_list", "list", [
    ("The eigenvalues are 1, 2 and 3, so the answer is [1, 2, 3].", "[1, 2, 3]", True),
    ("The answer is [1.0, 2.0, 3.0].", "[1, 2, 3]", True),
    ("The answer is [1, 2, 4].", "[1, 2, 3]", False),
    ("The answer is [3, 2, 1].", "[1, 2, 3]", False),
    ("The answer is [1, 2].", "[1, 2, 3]", False),
    ("The answer is $[\\frac{1}{2}, -\\frac{1}{4}]$.", "[0.5, -0.25]", True),
    ("The answer is [0.5, 0.25].", "[0.5, -0.25]", False),
])

# --- MATH fractions, radicals, pi.
_add("math_fraction_radical", "auto", [
    (_box("\\dfrac{3}{4}", 0), "\\frac{3}{4}", True),
    (_box("0.75", 2), "\\frac{3}{4}", True),
    (_box("\\tfrac34", 3), "\\frac{3}{4}", True),
    (_box("\\frac{4}{3}", 0), "\\frac{3}{4}", False),
    (_box("\\frac{6}{8}", 1), "\\frac{3}{4}", True),
    (_box("\\sqrt{12}", 2), "2\\sqrt{3}", True),
    (_box("2\\sqrt3", 3), "2\\sqrt{3}", True),
    (_box("3\\sqrt{2}", 0), "2\\sqrt{3}", False),
    (_box("\\frac{1}{2}\\sqrt{3}", 1), "\\frac{\\sqrt{3}}{2}", True),
    (_box("\\frac{\\sqrt{2}}{2}", 2), "\\frac{\\sqrt{3}}{2}", False),
    (_box("4\\pi", 3), "4\\pi", True),
    (_box("2\\pi", 1), "4\\pi", False),
    (_box("4", 2), "4\\pi", False),
])

# --- Intervals, sets, tuples, solution lists.
_add("interval", "auto", [
    (_box("[2, 5)", 0), "[2,5)", True),
    (_box("\\left[2,5\\right)", 1), "[2,5)", True),
    (_box("[2,5]", 2), "[2,5)", False),
    (_box("(2,5)", 3), "[2,5)", False),
    (_box("(-\\infty,-2)\\cup(3,\\infty)", 0), "(-\\infty, -2) \\cup (3, \\infty)", True),
    (_box("(3,\\infty)\\cup(-\\infty,-2)", 1), "(-\\infty, -2) \\cup (3, \\infty)", True),
    (_box("(-\\infty,-2]\\cup[3,\\infty)", 2), "(-\\infty, -2) \\cup (3, \\infty)", False),
])
_add("set_tuple", "auto", [
    (_box("\\{2, -2\\}", 0), "\\{-2, 2\\}", True),
    (_box("-2, 2", 1), "\\{-2, 2\\}", True),
    (_box("\\{2\\}", 2), "\\{-2, 2\\}", False),
    (_box("(3, \\frac{\\pi}{2})", 3), "\\left( 3, \\frac{\\pi}{2} \\right)", True),
    (_box("\\left(\\frac{\\pi}{2}, 3\\right)", 1), "\\left( 3, \\frac{\\pi}{2} \\right)", False),
    (_box("(-3, \\frac{\\pi}{2})", 2), "\\left( 3, \\frac{\\pi}{2} \\right)", False),
    (_box("-3, 1", 3), "1, -3", True),
    ("The solutions are $x = 1$ and $x = -3$, so the answer is $\\boxed{x = 1, x = -3}$.", "1, -3", True),
    (_box("1", 0), "1, -3", False),
])
_add("empty_set", "auto", [
    (_box("\\varnothing", 0), "\\emptyset", True),
    (_box("\\{\\}", 1), "\\emptyset", True),
    (_box("\\emptyset", 2), "\\varnothing", True),
    (_box("\\{0\\}", 0), "\\emptyset", False),
    (_box("0", 1), "\\emptyset", False),
    (_box("\\{\\emptyset\\}", 2), "\\emptyset", False),
])

# --- Matrices in every environment; entries compared numerically.
_M = "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}"
_V = "\\begin{pmatrix} \\frac{1}{4} \\\\ -1 \\end{pmatrix}"
_add("matrix_env", "auto", [
    (_box("\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}", 0), _M, True),
    (_box("\\left(\\begin{matrix} 1 & 2 \\\\ 3 & 4 \\end{matrix}\\right)", 2), _M, True),
    (_box("\\left(\\begin{array}{cc} 1 & 2 \\\\ 3 & 4 \\end{array}\\right)", 3), _M, True),
    (_box("\\begin{vmatrix} 1 & 2 \\\\ 3 & 4 \\end{vmatrix}", 0), _M, True),
    (_box("\\left(\\begin{smallmatrix} 1 & 2 \\\\ 3 & 4 \\end{smallmatrix}\\right)", 2), _M, True),
    (_box("\\begin{pmatrix} 1.0 & 2 \\\\ 3 & \\frac{8}{2} \\end{pmatrix}", 3), _M, True),
    (_box("\\begin{bmatrix} 1 & 3 \\\\ 2 & 4 \\end{bmatrix}", 0), _M, False),
    (_box("\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}", 1), _M, False),
    (_box("\\begin{pmatrix} 1 & 2 & 3 & 4 \\end{pmatrix}", 2), _M, False),
    (_box("\\begin{pmatrix} 0.25 \\\\ -1 \\end{pmatrix}", 3), _V, True),
    (_box("\\begin{bmatrix} \\dfrac{1}{4} \\\\ -1 \\end{bmatrix}", 0), _V, True),
    (_box("\\begin{pmatrix} 0.25 \\\\ 1 \\end{pmatrix}", 1), _V, False),
    (_box("\\begin{pmatrix} -1 \\\\ \\frac{1}{4} \\end{pmatrix}", 2), _V, False),
])

# --- Degrees, text answers, equations, base subscripts.
_add("degrees", "auto", [
    (_box("30", 0), "30^\\circ", True),
    ("The angle measures 30°. The answer is 30°.", "30^\\circ", True),
    (_box("60^\\circ", 2), "30^\\circ", False),
    (_box("45^\\circ", 3), "45", True),
])
_add("text_answer", "auto", [
    (_box("(C)", 0), "\\text{(C)}", True),
    (_box("C", 1), "\\text{(C)}", True),
    (_box("\\text{(D)}", 2), "\\text{(C)}", False),
    (_box("\\text{Monday}", 3), "\\text{Monday}", True),
    ("Counting forward 40 days from Wednesday, the answer is Monday.", "\\text{Monday}", True),
    (_box("\\text{Tuesday}", 0), "\\text{Monday}", False),
    (_box("\\text{Odd}", 1), "\\text{odd}", True),
    (_box("\\text{even}", 2), "\\text{odd}", False),
])
_add("equation", "auto", [
    (_box("y=2x+1", 0), "y = 2x + 1", True),
    (_box("y = 1 + 2x", 1), "y = 2x + 1", True),
    (_box("y = 2x - 1", 2), "y = 2x + 1", False),
    (_box("y = -0.5x + 3", 3), "y = -\\frac{1}{2}x + 3", True),
    (_box("y = 3 - \\frac{x}{2}", 0), "y = -\\frac{1}{2}x + 3", True),
    (_box("x = 3", 1), "3", True),
    (_box("x = 3", 2), "y = 3", False),
])
_add("base_subscript", "auto", [
    (_box("10110_2", 0), "10110_2", True),
    (_box("10110", 1), "10110_2", True),
    (_box("10110_{2}", 2), "10110_2", True),
    (_box("10111_2", 3), "10110_2", False),
])

# --- Units with exponents, \mathrm and \text.
_add("units_latex", "auto", [
    (_box("12\\text{ km}^2", 0), "12", True),
    (_box("12 \\mathrm{km^2}", 1), "12", True),
    (_box("12\\,\\mathrm{kg\\,m/s^2}", 2), "12", True),
    (_box("12 \\mathrm{~cm}^{2}", 0), "12", True),
    (_box("120 \\text{ km}^2", 1), "12", False),
    (_box("1.2 \\mathrm{~m}^{3}", 2), "12", False),
    (_box("5", 3), "5\\text{ cm}", True),
    (_box("5\\text{ m}", 0), "5\\text{ cm}", False),
])

# --- Exact value followed by an approximation.
_add("approx", "auto", [
    (_box("\\sqrt{2} \\approx 1.414", 0), "\\sqrt{2}", True),
    (_box("\\frac{22}{7} \\approx 3.14", 1), "\\frac{22}{7}", True),
    (_box("\\frac{22}{7} \\approx 3.14", 2), "\\pi", False),
    (_box("\\sqrt{8} \\approx 2.83", 3), "2\\sqrt{2}", True),
    (_box("\\sqrt{2} \\approx 2.83", 0), "2\\sqrt{2}", False),
    ("The answer is $\\sqrt{2} \\approx 1.414$.", "1.414", True),
])

# --- Unicode minus, vulgar fractions, full-width digits, superscripts, operators.
_add("unicode", "auto", [
    ("The answer is \u22125.", "-5", True),
    ("The answer is \u22125.", "5", False),
    ("The answer is \u22120.5.", "0.5", False),
    ("The answer is \u00bd.", "\\frac{1}{2}", True),
    ("The answer is \u00be.", "\\frac{3}{4}", True),
    ("The answer is \u00be.", "\\frac{1}{4}", False),
    ("The answer is \uff11\uff12.", "12", True),
    ("The answer is \u221a2.", "\\sqrt{2}", True),
    ("The answer is 2\u221a3.", "2\\sqrt{3}", True),
    ("The answer is 3\u221a2.", "2\\sqrt{3}", False),
    ("The answer is \u03c0/2.", "\\frac{\\pi}{2}", True),
    ("The answer is 2\u2075 = 32.", "32", True),
    ("The answer is 10\u2076.", "1000000", True),
    ("The answer is 1\u202f000\u202f000.", "1000000", True),
])

# --- Symbolic identities (trig, algebra) the grader must prove.
_add("trig_identity", "auto", [
    (_box("1-\\cos^2 x", 0), "\\sin^2 x", True),
    (_box("\\frac{1-\\cos 2x}{2}", 2), "\\sin^2 x", True),
    (_box("\\cos^2 x", 3), "\\sin^2 x", False),
    (_box("1+\\cos^2 x", 0), "\\sin^2 x", False),
    (_box("\\frac{\\sin x}{\\cos x}", 1), "\\tan x", True),
    (_box("\\cot x", 2), "\\tan x", False),
    (_box("\\sin 2x", 3), "2\\sin x\\cos x", True),
    (_box("(x-1)(x+1)", 0), "x^2 - 1", True),
    (_box("(x-1)^2", 1), "x^2 - 1", False),
    (_box("\\arctan 1", 2), "\\frac{\\pi}{4}", True),
    (_box("\\cos 60^\\circ", 3), "\\frac{1}{2}", True),
    (_box("\\sec^2 x - \\tan^2 x", 0), "1", True),
])

# --- Binomial coefficients in every spelling.
_add("binomial", "auto", [
    (_box("\\binom{5}{2}", 0), "10", True),
    (_box("\\dbinom{5}{2}", 1), "10", True),
    (_box("\\tbinom{5}{3}", 2), "10", True),
    ("There are C(5,2) = 10 ways, so the answer is C(5, 2).", "10", True),
    (_box("{5 \\choose 2}", 3), "10", True),
    (_box("\\binom{6}{2}", 0), "10", False),
    (_box("120", 1), "\\dbinom{10}{3}", True),
    (_box("\\binom{10}{4}", 2), "\\dbinom{10}{3}", False),
    (_box("\\frac{\\binom{4}{2}}{\\binom{8}{2}}", 3), "\\frac{3}{14}", True),
    ("The number of committees is C(6, 3) = 20.", "15", False),
])

# --- Final value without an anchor word (last-number fallback).
_add("no_anchor", "auto", [
    ("Each person gets 3 of the 8 slices, so each share is 3/8.", "\\frac{3}{8}", True),
    ("So, 43 / 1 = 43.", "43", True),
    ("She has 40 marbles and gives away 12, which leaves 40 - 12 = 28 marbles.", "28", True),
    ("She had 12 marbles and found 16 more, so 12 + 16 = 28 marbles.", "12", False),
    ("Therefore she needs 4.5 hours to finish.", "4.5", True),
    ("Since Craig has 8 bills, he bought 4 puzzles for $10 each, which means he bought 4 x 10 =", "40", False),
])

# --- R1 template: empty <answer> must not fall back to numbers in <think>.
_add("answer_tag", "auto", [
    ("<think>3 + 4 = 7</think>\n<answer></answer>", "7", False),
    ("<think>The total is 7.</think>\n<answer> </answer>", "7", False),
    ("<think>3 + 4 = 7</think>\n<answer>7</answer>", "7", True),
    ("<think>3 + 4 = 7</think>\n<answer>\\boxed{7}</answer>", "7", True),
    ("<think>count them</think>\n<answer>The total is 7 apples.</answer>", "7", True),
    ("<think>maybe 7? no, 3 + 5 = 8</think>\n<answer>8</answer>", "7", False),
])


# --- Nesting deeper than 12 levels (continued fractions, parentheses).
def _cf(depth: int) -> str:
    return "1" if depth == 0 else f"\\frac{{1}}{{1+{_cf(depth - 1)}}}"


def _cf_value(depth: int) -> Fraction:
    return Fraction(1) if depth == 0 else 1 / (1 + _cf_value(depth - 1))


def _frac(q: Fraction) -> str:
    return f"\\frac{{{q.numerator}}}{{{q.denominator}}}"


_add("deep_nesting", "auto", [
    (_box(_cf(13), 0), _frac(_cf_value(13)), True),
    (_box(_cf(13), 1), _frac(_cf_value(12)), False),
    (_box(_cf(16), 2), _frac(_cf_value(16)), True),
    (_box("(" * 15 + "3" + ")" * 15, 3), "3", True),
    (_box("(1+" * 15 + "1" + ")" * 15, 0), "16", True),
    (_box("(1+" * 15 + "1" + ")" * 15, 1), "15", False),
    (_box("\\left(" * 14 + "-2" + "\\right)" * 14, 2), "-2", True),
])

# --- Percent vs decimal, thousands separators, sign, scientific notation.
_add("percent", "auto", [
    (_box("25\\%", 0), "25", True),
    (_box("25", 1), "25\\%", True),
    (_box("25\\%", 2), "0.25", True),
    (_box("12.5", 3), "12.5\\%", True),
    (_box("125\\%", 0), "12.5\\%", False),
    ("So 20% of the students walk to school. The answer is 20%.", "20", True),
    (_box("2.5\\%", 1), "25", False),
])
_add("thousands", "auto", [
    (_box("1,000,000", 0), "1000000", True),
    (_box("1{,}000{,}000", 1), "1000000", True),
    (_box("1\\,000\\,000", 2), "1000000", True),
    (_box("100,000", 3), "1000000", False),
    ("The answer is 1,234.00.", "1234", True),
    (_box("3,4", 0), "34", False),
    (_box("34", 1), "3, 4", False),
])
_add("sign", "auto", [
    (_box("2", 1), "-2", False),
    (_box("- 2", 2), "-2", True),
    (_box("+2", 3), "2", True),
    (_box("-(-2)", 0), "2", True),
    (_box("\\pm 2", 1), "2", False),
    (_box("\\frac{-1}{3}", 2), "-\\frac{1}{3}", True),
    (_box("\\frac{1}{-3}", 3), "-\\frac{1}{3}", True),
    (_box("-\\frac{-1}{3}", 0), "-\\frac{1}{3}", False),
])
_add("scientific", "auto", [
    (_box("3 \\times 10^6", 0), "3000000", True),
    ("The answer is 3e6.", "3000000", True),
    (_box("3 \\times 10^5", 2), "3000000", False),
    (_box("1.2 \\times 10^{-4}", 3), "0.00012", True),
    ("The answer is 1.2e-4.", "0.00012", True),
    (_box("1.2 \\times 10^{4}", 0), "0.00012", False),
    ("The answer is 6.02e23.", "6.02 \\times 10^{23}", True),
])

# --- Hedged answers and restated answers whose last statement differs.
_add("hedged", "auto", [
    ("The answer is 8 or 9.", "8", False),
    (_box("8 \\text{ or } 9", 0), "8", False),
    ("It could be 8, but it might also be 9; I am not sure.", "8", False),
    ("Either $\\boxed{8}$ or $\\boxed{9}$.", "9", False),
    ("The answer is either (A) or (C).", "C", False, "choice"),
])
_add("restated", "auto", [
    ("The answer is 12. Wait, let me recheck: 3 * 5 = 15. The answer is 15.", "12", False),
    ("The answer is 12. Wait, let me recheck: 3 * 5 = 15. The answer is 15.", "15", True),
    ("First guess: $\\boxed{12}$. Correcting the arithmetic, the answer is $\\boxed{15}$.", "15", True),
    ("First guess: $\\boxed{12}$. Correcting the arithmetic, the answer is $\\boxed{15}$.", "12", False),
    ("So, the answer is 7.\n\nThe answer is 7.\n\nThe answer is 7.", "7", True),
])

# --- False-positive traps: the gold appears, but the final answer is different.
_add("fp_trap_reasoning", "auto", [
    ("Natalia sold 48 clips in April and 24 in May, 72 in total. The answer is 72.", "48", False),
    ("The answer is not 72; it is 70.", "72", False),
    ("72 is wrong because we double counted. $\\boxed{70}$", "72", False),
    ("We first found 5 + 0 = 5. The answer is $\\boxed{}$.", "5", False),
    ("The final answer is 242 + 857 = 1291.", "242", False),
])
_add("fp_trap_substring", "auto", [
    (_box("172", 0), "72", False),
    (_box("7.2", 1), "72", False),
    (_box("72^2", 2), "72", False),
    (_box("\\frac{1}{72}", 3), "72", False),
    (_box("-72", 0), "72", False),
    (_box("72\\sqrt{2}", 1), "72", False),
    (_box("\\frac{3}{4}\\pi", 2), "\\frac{3}{4}", False),
    (_box("5!", 3), "5", False),
    (_box("4!", 0), "24", True),
    (_box("3x", 1), "3", False),
    (_box("y = 3x", 2), "3", False),
    ("The answer is (C) and (D).", "C", False, "choice"),
])
