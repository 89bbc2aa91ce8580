"""Labelled answer-checking cases: (category, response, gold, expected, answer_type).

Hand-written to look like real model output; ``expected`` is what a careful human grader says.
Shared by ``benchmarks/answer_check.py`` and the unit tests.
"""

from __future__ import annotations

B = "The reasoning goes step by step. Therefore the final answer is $\\boxed{%s}$."


def _b(x: str) -> str:
    return B % x


CASES: list[tuple[str, str, str, bool, str]] = []


def _add(category: str, rows: list[tuple], answer_type: str = "auto") -> None:
    for row in rows:
        resp, gold, exp = row[:3]
        CASES.append((category, resp, gold, exp, row[3] if len(row) > 3 else answer_type))


_add("integer", [(_b("72"), "72", True), (_b("72"), "27", False), (_b("-4"), "-4", True), (_b("0"), "0", True),
                 (_b("72.0"), "72", True), (_b("007"), "7", True), (_b("-61"), "61", False),
                 ("So she sold 72 clips.\nThe answer is 72.", "72", True), (_b("106475279601"), "106475279601", True),
                 (_b("106475279602"), "106475279601", False), ("We get 5 then 8.\n#### 8", "8", True)])
_add("decimal", [(_b("0.5"), "0.5", True), (_b("0.50"), "0.5", True), (_b(".5"), "0.5", True),
                 (_b("2.25"), "2.5", False), (_b("3.75"), "3.75", True), (_b("-0.125"), "-\\frac{1}{8}", True),
                 (_b("0.1"), "0.01", False), (_b("1.0"), "1", True)])
_add("thousands", [(_b("7,425,000"), "7425000", True), (_b("12{,}500"), "12500", True),
                   (_b("1,000"), "1000", True), (_b("7425000"), "7,425,000", True), (_b("1,234,567"), "1234568", False),
                   (_b("12\\,500"), "12500", True), (_b("100{,}000"), "1000000", False)])
_add("currency_units", [(_b("\\$18"), "18", True), (_b("18 \\text{ dollars}"), "18", True),
                        (_b("5\\text{ cm}"), "5", True), (_b("\\$5.00"), "5", True),
                        (_b("12 \\text{ meters}"), "13", False), ("The answer is $18.", "18", True),
                        (_b("15\\mbox{ mph}"), "15", True), (_b("20\\text{ apples}"), "20", True),
                        (_b("\\text{18}"), "18", True), ("The answer is 40 dollars.", "40", True)])
_add("percent", [(_b("50\\%"), "50", True), (_b("50\\%"), "0.5", True), (_b("25"), "25\\%", True),
                 (_b("50\\%"), "5", False), (_b("12.5\\%"), "12.5", True), ("The answer is 30%.", "30", True),
                 (_b("0.3"), "30\\%", True), (_b("40\\%"), "30\\%", False)])
_add("fraction", [(_b("\\frac{1}{2}"), "0.5", True), (_b("0.5"), "\\frac{1}{2}", True),
                  (_b("\\dfrac{3}{4}"), "\\frac{3}{4}", True), (_b("\\tfrac{3}{4}"), "0.75", True),
                  (_b("\\frac{2}{4}"), "\\frac{1}{2}", True), (_b("\\frac{1}{3}"), "0.33", True),
                  (_b("0.333"), "\\frac{1}{3}", True), (_b("0.3"), "\\frac{1}{3}", False),
                  (_b("\\frac12"), "\\frac{1}{2}", True), (_b("1/2"), "\\frac{1}{2}", True),
                  (_b("\\frac{1}{2}"), "\\frac{1}{3}", False), (_b("-\\frac{3}{2}"), "\\frac{-3}{2}", True),
                  (_b("\\frac{7}{3}"), "2\\frac{1}{3}", True), (_b("\\frac{9}{4}"), "\\frac{4}{9}", False)])
_add("mixed_number", [(_b("2\\frac{1}{3}"), "\\frac{7}{3}", True), (_b("\\frac{7}{3}"), "\\frac{7}{3}", True),
                      (_b("2 1/3"), "7/3", True), (_b("-1\\frac{1}{2}"), "-1.5", True),
                      (_b("2\\frac{1}{3}"), "\\frac{2}{3}", False), (_b("2\\frac{4}{3}"), "\\frac{8}{3}", True)])
_add("sqrt", [(_b("2\\sqrt{2}"), "\\sqrt{8}", True), (_b("\\sqrt{2}"), "1.414", True),
              (_b("\\sqrt{3}"), "\\sqrt{2}", False), (_b("\\frac{\\sqrt{3}}{2}"), "\\frac{1}{2}\\sqrt{3}", True),
              (_b("\\sqrt[3]{8}"), "2", True), (_b("3\\sqrt{2}"), "\\sqrt{18}", True),
              (_b("\\sqrt{12}"), "2\\sqrt{3}", True), (_b("\\frac{1}{\\sqrt{2}}"), "\\frac{\\sqrt{2}}{2}", True),
              (_b("5\\sqrt{2}"), "5\\sqrt{3}", False), (_b("\\sqrt2"), "\\sqrt{2}", True)])
_add("pi_e", [(_b("2\\pi"), "2\\pi", True), (_b("\\pi"), "3.14", True), (_b("\\pi"), "3.15", False),
              (_b("6.28"), "2\\pi", True), (_b("\\frac{\\pi}{2}"), "\\frac{1}{2}\\pi", True),
              (_b("e^2"), "e^{2}", True), (_b("e"), "2.718", True), (_b("4\\pi"), "2\\pi", False),
              (_b("\\pi r^2"), "\\pi r^{2}", True)])
_add("scientific", [(_b("1.5e6"), "1500000", True), (_b("1.5\\times10^{6}"), "1500000", True),
                    (_b("1.5 \\times 10^6"), "1.5e6", True), (_b("2\\times10^{-3}"), "0.002", True),
                    (_b("1.5\\times10^{5}"), "1500000", False), (_b("3 \\cdot 10^{8}"), "300000000", True)])
_add("degrees", [(_b("90^\\circ"), "90", True), (_b("90°"), "90", True), (_b("45^{\\circ}"), "45", True),
                 (_b("30^\\circ"), "60", False), (_b("120 \\text{ degrees}"), "120", True)])
_add("unicode", [(_b("−5"), "-5", True), ("The answer is −12.", "-12", True), (_b("5"), "-5", False),
                 (_b("2×3"), "6", True), (_b("√2"), "\\sqrt{2}", True), (_b("2π"), "2\\pi", True)])
_add("set_tuple_list", [(_b("(3,-1)"), "(3,-1)", True), (_b("(-1,3)"), "(3,-1)", False),
                        (_b("\\{1,2,3\\}"), "\\{3,2,1\\}", True), (_b("1, 2"), "2, 1", True),
                        (_b("1, 2"), "1, 3", False), (_b("\\left(3, \\frac{\\pi}{2}\\right)"), "\\left( 3, \\frac{\\pi}{2} \\right)", True),
                        (_b("[1, 2, 3]"), "[1, 2, 3]", True, "list"), (_b("[3, 2, 1]"), "[1, 2, 3]", False, "list"),
                        (_b("1, 2, 3"), "[1, 2, 3]", True, "list"), (_b("\\{1,2\\}"), "\\{1,2,3\\}", False),
                        (_b("x=2, x=3"), "2, 3", True), (_b("x=2, x=4"), "2, 3", False), (_b("-2, 2"), "\\{-2, 2\\}", True),
                        (_b("(1,2,3)"), "(1,2,3)", True), (_b("(1,2,4)"), "(1,2,3)", False),
                        (_b("2, 3"), "3, 2", True), (_b("[0.5, 0.25]"), "[0.5, 0.25]", True, "list")])
_add("interval", [(_b("[2,5)"), "[2,5)", True), (_b("(2,5]"), "[2,5)", False), (_b("[2,5]"), "[2,5)", False),
                  (_b("(-\\infty, 3)"), "(-\\infty,3)", True), (_b("(-\\infty, 2] \\cup (3, \\infty)"),
                                                                      "(-\\infty,2]\\cup(3,\\infty)", True),
                  (_b("(3, \\infty)"), "(3,\\infty)", True), (_b("[3, \\infty)"), "(3,\\infty)", False),
                  (_b("(0,1)\\cup(2,3)"), "(2,3)\\cup(0,1)", True), (_b("(-∞, 0)"), "(-\\infty,0)", True)])
_add("equation", [(_b("x=3"), "3", True), (_b("3"), "x=3", True), (_b("x=4"), "3", False),
                  (_b("y=2x+1"), "y=1+2x", True), (_b("y = 2x + 3"), "y=2x+1", False),
                  (_b("k = \\frac{1}{2}"), "\\frac{1}{2}", True), (_b("2x+4y=8"), "x+2y=4", True)])
_add("inequality", [(_b("x > 3"), "(3,\\infty)", True), (_b("x \\ge 3"), "[3,\\infty)", True),
                    (_b("x<5"), "x < 5", True), (_b("x \\le 2"), "(-\\infty, 2]", True),
                    (_b("3 < x < 5"), "(3,5)", True), (_b("x > 3"), "[3,\\infty)", False),
                    (_b("x \\geq 1"), "x \\ge 1", True)])
_add("matrix", [(_b("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}"), "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", True),
                (_b("\\begin{pmatrix}1&2\\\\3&5\\end{pmatrix}"), "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", False),
                (_b("\\begin{bmatrix}\\frac{1}{2}\\\\0\\end{bmatrix}"), "\\begin{pmatrix}0.5\\\\0\\end{pmatrix}", True),
                (_b("\\begin{pmatrix}1&2\\end{pmatrix}"), "\\begin{pmatrix}1\\\\2\\end{pmatrix}", False)])
_add("symbolic", [(_b("(x+1)^2"), "x^2+2x+1", True), (_b("x^2+2x+1"), "(x+1)^2", True),
                  (_b("x^2+2x"), "(x+1)^2", False), (_b("2(a+b)"), "2a+2b", True),
                  (_b("\\frac{x^2-1}{x-1}"), "x+1", True), (_b("\\sin^2 x"), "1", False),
                  (_b("a^2-b^2"), "(a-b)(a+b)", True), (_b("3x"), "x3", True), (_b("\\frac{x}{2}"), "0.5x", True),
                  (_b("n(n+1)/2"), "\\frac{n^2+n}{2}", True), (_b("2^{n+1}"), "2\\cdot 2^n", True),
                  (_b("x^3"), "x^2", False)])
_add("boolean", [(_b("True"), "True", True, "bool"), (_b("False"), "True", False, "bool"),
                 ("The statement holds, so the answer is yes.", "True", True, "bool"),
                 (_b("\\text{True}"), "True", True, "bool"), (_b("No"), "False", True, "bool"),
                 ("Answer: False", "True", False, "bool")])
_add("exactness", [(_b("\\frac{1}{2^{99}}"), "\\frac{1}{2^{98}}", False), (_b("\\frac{1}{2^{99}}"), "2^{-99}", True),
                   (_b("10^{20}+1"), "10^{20}", False), (_b("\\frac{1}{3}"), "\\frac{333333}{1000000}", False),
                   (_b("1.0000001"), "1", False), (_b("2^{64}"), "18446744073709551616", True),
                   (_b("3^{40}"), "12157665459056928801", True), (_b("3^{40}"), "12157665459056928800", False)])
_add("approx_gold", [(_b("0.0067"), "0.0067", True, "number"), (_b("0.00667"), "0.0067", True, "number"),
                     (_b("0.0068"), "0.0067", False, "number"), (_b("2.54"), "2.5", True, "number"),
                     (_b("0.54"), "0.5", False, "number"), (_b("3.1416"), "3.14", True, "number"),
                     (_b("12.34"), "12.3", True, "number")])
_add("answer_tags", [("<think>It is \\boxed{3}</think><answer>4</answer>", "4", True),
                     ("<think>It is \\boxed{3}</think><answer>4</answer>", "3", False),
                     ("<think>maybe 5</think>\n<answer>\\boxed{6}</answer>", "6", True),
                     ("<answer> 42 </answer>", "42", True), ("<think>the answer is 7</think> The answer is 8.", "8", True),
                     ("<think>the answer is 7</think> The answer is 8.", "7", False),
                     ("<think>still going, the answer is 7", "7", False)])
_add("answer_is", [("Thus, the final answer is 42.", "42", True), ("The answer is: $\\frac{1}{2}$.", "0.5", True),
                   ("**Final Answer:** 17", "17", True), ("Answer: 3.5", "3.5", True),
                   ("The final answer is 1,250 dollars.", "1250", True), ("The answer is 12 because 3*4=12.", "12", True),
                   ("The answer is 13 because 3*4=12.", "12", False)])
_add("multiple_choice", [("The answer is (B).", "B", True, "choice"), ("Thus, B) is correct.\nB) 42", "B", True, "choice"),
                         ("**Answer: C**", "C", True, "choice"), (_b("\\text{(C)}"), "C", True, "choice"),
                         ("I pick option D.", "D", True, "choice"), ("The answer is (A).", "B", False, "choice"),
                         ("A good approach is to test each. The answer is C.", "A", False, "choice"),
                         ("A careful check shows the answer is (D)", "D", True, "choice"),
                         ("Answer: E", "E", True, "choice"), (_b("B"), "B", True, "choice"),
                         ("A student solving this would pick the answer is J", "J", True, "choice"),
                         ("A number of options look plausible, so answer: (G)", "A", False, "choice"),
                         ("The answer is (C)", "C", True), ("the correct option is (F).", "F", True, "choice"),
                         (_b("\\textbf{(A)}"), "A", True, "choice"), ("A is tempting, but the answer is (H).", "A", False, "choice")])
_add("last_number", [("She has 3 apples and buys 5 more, giving 8", "8", True),
                     ("First 12, then 20 and finally 24 cookies", "24", True),
                     ("First 12, then 20 and finally 24 cookies", "20", False),
                     ("The total is 1,200", "1200", True)], "number")
_add("hedged", [(_b("8 \\text{ or } 9"), "9", False), (_b("8 or 9"), "8", False),
                ("It is \\boxed{8} or \\boxed{9}.", "9", False), ("It is \\boxed{8} or \\boxed{9}.", "8", False),
                ("First I got \\boxed{8}. Wait, that is wrong; recomputing gives \\boxed{9}.", "8", False),
                ("First I got \\boxed{8}. Wait, that is wrong; recomputing gives \\boxed{9}.", "9", True),
                (_b("either 3 or 4"), "3", False), ("The answer is 8 or 9.", "9", False)])
_add("no_answer", [("I am not sure how to solve this.", "5", False), ("", "5", False),
                   ("\\boxed{}", "5", False)])
_add("nested_boxed", [(_b("\\frac{\\sqrt{3}}{4}"), "\\frac{\\sqrt3}{4}", True),
                      ("\\fbox{12}", "12", True), ("\\boxed{\\boxed{7}}", "7", True),
                      (_b("{(1,2)}"), "(1,2)", True), ("\\boxed 5", "5", True)])
_add("text", [(_b("\\text{Monday}"), "Monday", True, "text"), (_b("Tuesday"), "Monday", False, "text"),
              (_b("\\text{east}"), "East", True, "text")])
