r"""Labelled answer cases for four families the checker was not tuned on (issue 22 item 4).

Written for issue 22 before any of them was run through the checker and before reading why the checker
misses such forms on unseen sets; committed alone, ahead of any checker change, so the history shows
which cases came first. Same tuple format as :mod:`benchmarks.answer_cases_heldout`:
``(category, response, gold, expected, answer_type)``; ``expected`` is what a careful human grader says
from the full response and the gold as the loader stores it. Families and the conventions they follow:

* ``duration`` / ``unit_conversion``: MATH golds carry units in ``\text{}`` (``90\text{ minutes}``,
  ``5\text{ cm}``) and the hendrycks ``is_equiv`` strips only the unit text, so a response in another
  unit of the same quantity is judged by its value in the gold's unit (how SciBench and TheoremQA
  graders convert before comparing). Exact SI/imperial/time factors only (no months-to-days). A bare
  converted number (``0.05`` for ``5 cm``) is wrong: without a unit it is read in the gold's unit.
* ``unicode_math``: what chat models print instead of LaTeX (``×``, ``·``, ``−``, ``∞``, ``∪``,
  ``π``, ``√``, ``∛``, superscripts, ``°``, ``∅``, vulgar fractions, the fraction slash, full-width
  brackets), graded as their LaTeX meaning.
* ``sci_notation``: the spellings of scientific notation seen in TheoremQA/SciBench golds and in model
  outputs (``3.0E6``, ``3e+06``, ``3 \cdot 10^{6}``, ``3 x 10^6``, ``3*10**6``, ``10^-3`` without braces,
  a mantissa not in ``[1, 10)``).
* ``stated_precision``: a decimal gold states the precision the problem asked for (MATH "to the nearest
  hundredth" golds, TheoremQA float golds); a response that rounds to the gold at the gold's written
  decimals (or significant figures, for a gold in scientific notation) is right, one that rounds to
  another value or is less precise than the gold is wrong; an integer gold is exact.
"""

from __future__ import annotations

CASES: list[tuple[str, str, str, bool, str]] = []


def _box(x: str) -> str:
    """A response ending in ``\\boxed{x}``."""
    return f"We compute each part in turn.\n\nTherefore, the final answer is $\\boxed{{{x}}}$."


def _add(category: str, answer_type: str, rows: list[tuple]) -> None:
    """Append rows ``(response, gold, expected[, answer_type])`` under ``category``."""
    for row in rows:
        response, gold, expected = row[:3]
        CASES.append((category, response, gold, expected, row[3] if len(row) > 3 else answer_type))


_add("duration", "auto", [
    (_box("1.5\\text{ hours}"), "90\\text{ minutes}", True),
    ("The trip takes 1 hour and 30 minutes.", "90\\text{ minutes}", True),
    (_box("1\\text{ hour } 30\\text{ minutes}"), "90\\text{ minutes}", True),
    (_box("90\\text{ min}"), "90\\text{ minutes}", True),
    (_box("1.5\\text{ minutes}"), "90\\text{ minutes}", False),
    ("The trip takes 1 hour and 20 minutes.", "90\\text{ minutes}", False),
    (_box("90\\text{ seconds}"), "90\\text{ minutes}", False),
    (_box("150\\text{ minutes}"), "2.5\\text{ hours}", True),
    ("So the answer is 2 hours 30 minutes.", "2.5\\text{ hours}", True),
    ("So the answer is 2 hours 50 minutes.", "2.5\\text{ hours}", False),
    (_box("72\\text{ hours}"), "3\\text{ days}", True),
    (_box("3\\text{ hours}"), "3\\text{ days}", False),
    ("The answer is 14 days.", "2\\text{ weeks}", True),
    ("The answer is 14 weeks.", "2\\text{ weeks}", False),
    (_box("0.75\\text{ minutes}"), "45\\text{ seconds}", True),
    (_box("0.45\\text{ minutes}"), "45\\text{ seconds}", False),
    (_box("12\\text{ months}"), "1\\text{ year}", True),
])
_add("unit_conversion", "auto", [
    (_box("0.05\\text{ m}"), "5\\text{ cm}", True),
    (_box("50\\text{ mm}"), "5\\text{ cm}", True),
    (_box("0.5\\text{ m}"), "5\\text{ cm}", False),
    (_box("0.05"), "5\\text{ cm}", False),
    ("The answer is 2000 m.", "2\\text{ km}", True),
    ("The answer is 200 m.", "2\\text{ km}", False),
    (_box("3000\\text{ g}"), "3\\text{ kg}", True),
    (_box("300\\text{ g}"), "3\\text{ kg}", False),
    (_box("1500\\text{ mL}"), "1.5\\text{ L}", True),
    (_box("150\\text{ mL}"), "1.5\\text{ L}", False),
    (_box("1\\text{ foot}"), "12\\text{ inches}", True),
    (_box("1\\text{ yard}"), "12\\text{ inches}", False),
    (_box("2\\text{ yards}"), "6\\text{ feet}", True),
    (_box("0.01\\text{ m}^2"), "100\\text{ cm}^2", True),
    (_box("1\\text{ m}^2"), "100\\text{ cm}^2", False),
    (_box("10\\text{ m/s}"), "36\\text{ km/h}", True),
    (_box("36\\text{ m/s}"), "36\\text{ km/h}", False),
])
_add("unicode_math", "auto", [
    ("The answer is 3×10⁵.", "300000", True),
    ("The answer is 3×10⁴.", "300000", False),
    ("So the expansion is $\\boxed{x² + 2x + 1}$.", "x^2+2x+1", True),
    ("The answer is x³ + 1.", "x^2 + 1", False),
    ("The answer is (−∞, 2].", "(-\\infty, 2]", True),
    ("The answer is (−∞, 2).", "(-\\infty, 2]", False),
    ("The solution set is (−∞, −1) ∪ (3, ∞).", "(-\\infty,-1)\\cup(3,\\infty)", True),
    ("The solution set is (−∞, −1) ∪ (2, ∞).", "(-\\infty,-1)\\cup(3,\\infty)", False),
    ("The angle is 45°.", "45^\\circ", True),
    ("The angle is 135°.", "45^\\circ", False),
    ("The answer is 2π.", "2\\pi", True),
    ("The answer is −2π.", "2\\pi", False),
    ("The answer is π²/6.", "\\frac{\\pi^2}{6}", True),
    ("The answer is π/6.", "\\frac{\\pi^2}{6}", False),
    ("The answer is ⅓.", "\\frac{1}{3}", True),
    ("The answer is ⅔.", "\\frac{1}{3}", False),
    ("The answer is √3⁄2.", "\\frac{\\sqrt{3}}{2}", True),
    ("The answer is ∅.", "\\emptyset", True),
    ("The answer is ∞.", "\\infty", True),
    ("The answer is −∞.", "\\infty", False),
    ("The answer is 1.5·10⁻³.", "0.0015", True),
    ("The answer is 1.5·10³.", "0.0015", False),
    ("The answer is 12 ÷ 4 = 3.", "3", True),
    ("So $\\boxed{−\\frac{1}{2}}$.", "-\\frac{1}{2}", True),
    ("The answer is ∛2.", "\\sqrt[3]{2}", True),
    ("The answer is ∛3.", "\\sqrt[3]{2}", False),
    ("The point is （3，4）.", "(3,4)", True),
    ("The answer is ±2.", "2", False),
    ("The answer is x ∈ [2, 5].", "[2,5]", True),
])
_add("sci_notation", "auto", [
    ("The answer is 3.0E6.", "3000000", True),
    ("The answer is 3e+06.", "3000000", True),
    (_box("3 \\cdot 10^{6}"), "3000000", True),
    (_box("3 \\cdot 10^{5}"), "3000000", False),
    ("The answer is 3 x 10^6.", "3000000", True),
    ("The answer is 3*10**6.", "3000000", True),
    ("The answer is 3*10**5.", "3000000", False),
    ("The answer is 1.5 × 10^-3.", "0.0015", True),
    ("The answer is 1.5 × 10^3.", "0.0015", False),
    (_box("1.2 \\times 10^{-4} \\text{ m}"), "1.2 \\times 10^{-4}", True),
    (_box("6.02 \\cdot 10^{23}"), "6.02 \\times 10^{23}", True),
    ("The answer is 6.02e22.", "6.02 \\times 10^{23}", False),
    (_box("1.8 \\times 10^{-5}"), "1.8e-05", True),
    (_box("1.8 \\times 10^{5}"), "1.8e-05", False),
    ("The speed is $3 \\times 10^8$ m/s.", "3.0e8", True),
    (_box("10^{6}"), "1000000", True),
    (_box("10^{-6}"), "1000000", False),
    ("The answer is 2.5x10^3.", "2500", True),
    (_box("2.5 \\times 10^{3}"), "25000", False),
    ("The answer is 30e5.", "3000000", True),
    (_box("0.3 \\times 10^{7}"), "3000000", True),
    (_box("-4.5 \\times 10^{-2}"), "-0.045", True),
    (_box("-4.5 \\times 10^{-2}"), "0.045", False),
    (_box("3.1 \\times 10^{6}"), "3000000", False),
])
_add("stated_precision", "auto", [
    (_box("3.4641"), "3.46", True),
    (_box("3.47"), "3.46", False),
    (_box("3.5"), "3.46", False),
    ("The answer is 0.3333.", "0.33", True, "number"),
    ("The answer is 0.34.", "0.33", False, "number"),
    ("The answer is 0.3.", "0.33", False, "number"),
    (_box("1.4142"), "1.41", True),
    (_box("1.42"), "1.41", False),
    (_box("-0.6667"), "-0.67", True),
    (_box("-0.6667"), "0.67", False),
    (_box("2.71828"), "2.718", True),
    (_box("2.71"), "2.718", False),
    ("The answer is 1234.5678.", "1234.57", True, "number"),
    ("The answer is 1234.56.", "1234.57", False, "number"),
    ("The answer is 0.0523.", "0.052", True, "number"),
    ("The answer is 0.0532.", "0.052", False, "number"),
    ("The answer is 6.022e23.", "6.02 \\times 10^{23}", True),
    ("The answer is 6.03e23.", "6.02 \\times 10^{23}", False),
    ("The answer is $\\pi \\approx 3.1416$.", "3.14", True),
    (_box("3.1"), "3.14", False),
    (_box("3.4"), "3", False),
    (_box("2.99"), "3", False),
    (_box("3.496"), "3.50", True),
    (_box("3.51"), "3.50", False),
    (_box("33.333\\%"), "33.33\\%", True),
    (_box("33.43\\%"), "33.33\\%", False),
])
