r"""A second batch of the four unseen-form families (issue 22 item 4), for a less self-graded score.

Written after the checker was fixed for :mod:`benchmarks.answer_cases_families`, by the same hand that
made the fixes (so it knows the mechanisms, which biases it toward them), but committed before any of
these cases was run through the checker: its first score is reported as measured, misses included.
Same tuple format, conventions and labelling rules as the first batch; new forms only (other units and
pairs, other Unicode symbols, other exponent spellings, other precisions, answers stated in a closing
sentence without "answer").
"""

from __future__ import annotations

CASES: list[tuple[str, str, str, bool, str]] = []


def _box(x: str) -> str:
    """A response ending in ``\\boxed{x}``."""
    return f"Putting the pieces together.\n\nSo the final answer is $\\boxed{{{x}}}$."


def _add(category: str, answer_type: str, rows: list[tuple]) -> None:
    """Append rows ``(response, gold, expected[, answer_type])`` under ``category``."""
    for row in rows:
        response, gold, expected = row[:3]
        CASES.append((category, response, gold, expected, row[3] if len(row) > 3 else answer_type))


_add("duration_2", "auto", [
    (_box("1\\text{ hour } 45\\text{ minutes}"), "105\\text{ minutes}", True),
    ("The answer is 1 hour 45 minutes.", "1.75\\text{ hours}", True),
    (_box("1.45\\text{ hours}"), "105\\text{ minutes}", False),
    (_box("200\\text{ s}"), "3\\text{ min } 20\\text{ s}", True),
    ("The answer is 3 minutes 20 seconds.", "200\\text{ seconds}", True),
    ("The answer is 3 minutes 2 seconds.", "200\\text{ seconds}", False),
    (_box("48\\text{ hours}"), "2\\text{ days}", True),
    (_box("24\\text{ hours}"), "2\\text{ days}", False),
    ("The answer is 90 min.", "1.5\\text{ hours}", True),
    ("The answer is 0.5 hours.", "30\\text{ min}", True),
    (_box("7\\text{ days}"), "1\\text{ week}", True),
    (_box("36\\text{ months}"), "3\\text{ years}", True),
    (_box("30\\text{ months}"), "3\\text{ years}", False),
])
_add("unit_conversion_2", "auto", [
    (_box("3500\\text{ grams}"), "3.5\\text{ kg}", True),
    (_box("350\\text{ grams}"), "3.5\\text{ kg}", False),
    ("The answer is 66 inches.", "5\\text{ ft } 6\\text{ in}", True),
    ("The answer is 5 feet 6 inches.", "66\\text{ inches}", True),
    ("The answer is 5 feet 8 inches.", "66\\text{ inches}", False),
    (_box("72\\text{ inches}"), "6\\text{ feet}", True),
    (_box("0.25\\text{ L}"), "250\\text{ mL}", True),
    (_box("2.5\\text{ L}"), "250\\text{ mL}", False),
    (_box("88\\text{ ft/s}"), "60\\text{ mph}", True),
    (_box("20\\text{ m/s}"), "72\\text{ km/h}", True),
    (_box("20\\text{ m/s}"), "20\\text{ km/h}", False),
    ("The total distance is 12 km.", "12000\\text{ m}", True),
    ("The total distance is 1.2 km.", "12000\\text{ m}", False),
    ("The volume is 1.5 L.", "1500\\text{ mL}", True),
    (_box("1000\\text{ cm}"), "1\\text{ m}", False),
])
_add("unicode_math_2", "auto", [
    ("The answer is √2/2.", "\\frac{\\sqrt{2}}{2}", True),
    ("The answer is 2√2.", "\\sqrt{8}", True),
    ("The answer is 2√3.", "\\sqrt{8}", False),
    ("The answer is x = ±√2.", "\\pm\\sqrt{2}", True),
    ("The answer is −½.", "-\\frac{1}{2}", True),
    ("The answer is ½.", "-\\frac{1}{2}", False),
    ("The answer is ¼.", "0.25", True),
    ("The answer is ⅕.", "0.25", False),
    ("The answer is 10⁻³.", "0.001", True),
    ("The answer is 10³.", "0.001", False),
    ("The answer is 1.2×10⁻³.", "0.0012", True),
    ("The answer is 1.2×10⁻².", "0.0012", False),
    ("The interval is [0, ∞).", "[0,\\infty)", True),
    ("The interval is (0, ∞).", "[0,\\infty)", False),
    ("The answer is √(x+1).", "\\sqrt{x+1}", True),
    ("The area is 24 cm².", "24", True),
    ("The area is 42 cm².", "24", False),
])
_add("sci_notation_2", "auto", [
    ("The answer is 6.63 × 10^-34.", "6.63e-34", True),
    ("The answer is 6.63E-34.", "6.63 \\times 10^{-34}", True),
    ("The answer is 6.63e-33.", "6.63 \\times 10^{-34}", False),
    (_box("1.60 \\cdot 10^{-19}"), "1.6e-19", True),
    (_box("2\\times10^{3}"), "2000", True),
    ("The answer is 2*10^3.", "200", False),
    ("The answer is 5.0 x 10^-3.", "0.005", True),
    ("The answer is 5.0 x 10^3.", "0.005", False),
    ("The answer is 1e3.", "1000", True),
    ("The answer is 1E-3.", "0.001", True),
    (_box("4.2 \\times 10^{+2}"), "420", True),
    (_box("4.2 \\times 10^{+2}"), "42", False),
])
_add("stated_precision_2", "auto", [
    (_box("0.7071"), "0.71", True),
    (_box("0.7"), "0.71", False),
    (_box("0.72"), "0.71", False),
    (_box("\\sqrt{3}"), "1.732", True),
    (_box("12.5663"), "12.57", True),
    (_box("12.56"), "12.57", False),
    (_box("0.1429"), "0.14", True),
    (_box("4.999"), "5.00", True),
    (_box("4.99"), "5.00", False),
    (_box("66.667\\%"), "66.67\\%", True),
    (_box("66.6\\%"), "66.67\\%", False),
    (_box("2.04"), "2.0", True),
    (_box("2.14"), "2.0", False),
    (_box("9.81"), "9.8", True),
    (_box("9.9"), "9.8", False),
])
