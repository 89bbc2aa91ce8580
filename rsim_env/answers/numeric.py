"""Exact rational evaluation (the in-process fast path) and the documented tolerance rule.

Plain numbers -- integers, decimals, fractions, percentages, scientific notation and integer
powers -- are evaluated with :class:`fractions.Fraction`, which is exact and needs no sympy, so
the common case (GSM8K-style integers) is decided in microseconds without the worker process.

Tolerance rule (:func:`approx_equal`), used only when one side is written as a decimal:

* Two exact values (no decimal literal on either side) must be exactly equal; there is no float
  rounding, so ``1/2^{99}`` is never equal to ``1/2^{98}``.
* Values within a relative ``1e-9`` are equal (float noise such as ``0.30000000000000004``).
* A decimal *gold* is an approximation the dataset author chose: a prediction matches when,
  rounded or truncated to the gold's decimal places, it equals the gold, and the gold has at
  least :data:`GOLD_MIN_SIG` significant digits (``3.14`` accepts ``\\pi``; ``0.5`` does not
  accept ``0.54``).
* A decimal *prediction* of an exact gold matches when the gold rounded or truncated to the
  prediction's decimal places equals it and the prediction has at least :data:`PRED_MIN_SIG`
  significant digits (``0.333`` for ``1/3`` passes; ``0.3`` does not).
* A decimal prediction *less precise* than a decimal gold never matches: the gold's decimals are
  the precision the problem stated (``2.71`` is not ``2.718``, though ``2.718`` truncates to it).
"""

from __future__ import annotations

import math
from fractions import Fraction

from .parser import ParseError

MAX_BITS = 20_000
"""Largest integer (in bits) a power may build; ``9^9^9^9`` is refused instead of computed."""
MAX_FACTORIAL = 500
GOLD_MIN_SIG = 2
PRED_MIN_SIG = 3
REL_NOISE = Fraction(1, 10**9)


class TooLarge(ParseError):
    """A power or factorial would build a number past :data:`MAX_BITS`."""


def check_power(base_bits: int, exponent: int) -> None:
    """Raise :class:`TooLarge` when ``base ** exponent`` would exceed :data:`MAX_BITS` bits."""
    if abs(exponent) > MAX_BITS or base_bits * abs(exponent) > MAX_BITS:
        raise TooLarge(f"power with exponent {exponent} would exceed {MAX_BITS} bits")


def check_binom(n: int) -> None:
    """Raise :class:`TooLarge` for ``binom(n, k)`` with ``n`` past :data:`MAX_BITS` (result ~n bits)."""
    if n > MAX_BITS:
        raise TooLarge(f"binomial coefficient with n={n} is over the {MAX_BITS} limit")


def eval_fraction(node: tuple) -> Fraction | None:
    """Exact value of a purely numeric node, or None when sympy is needed (roots, pi, symbols)."""
    tag = node[0]
    if tag == "num":
        return node[1]
    if tag in ("add", "sub", "mul", "div"):
        a, b = eval_fraction(node[1]), eval_fraction(node[2])
        if a is None or b is None:
            return None
        if tag == "div":
            return None if b == 0 else a / b
        return a + b if tag == "add" else a - b if tag == "sub" else a * b
    if tag == "neg":
        a = eval_fraction(node[1])
        return None if a is None else -a
    if tag == "pct":
        a = eval_fraction(node[1])
        return None if a is None else a / 100
    if tag == "pow":
        a, b = eval_fraction(node[1]), eval_fraction(node[2])
        if a is None or b is None or b.denominator != 1 or (a == 0 and b < 0):
            return None
        check_power(max(a.numerator.bit_length(), a.denominator.bit_length()), int(b))
        return a ** int(b)
    if tag == "binom":
        n, k = eval_fraction(node[1]), eval_fraction(node[2])
        if n is None or k is None or n.denominator != 1 or k.denominator != 1 or n < 0:
            return None
        check_binom(int(n))
        return Fraction(math.comb(int(n), int(k))) if k >= 0 else Fraction(0)
    if tag == "fact":
        a = eval_fraction(node[1])
        if a is None or a.denominator != 1 or a < 0:
            return None
        if a > MAX_FACTORIAL:
            raise TooLarge(f"factorial of {a} is over the {MAX_FACTORIAL}! limit")
        return Fraction(math.factorial(int(a)))
    return None


def literal_decimals(node: tuple) -> int | None:
    """Decimal places of a top-level decimal literal (``-0.25`` -> 2), None for exact values."""
    while node[0] == "neg":
        node = node[1]
    if node[0] == "mul" and node[2][0] == "pow" and node[1][0] == "num" and node[1][2] is not None:
        exp = eval_fraction(node[2][2])  # 1.5 * 10^6 written in LaTeX
        if node[2][1] == ("num", Fraction(10), None) and exp is not None and exp.denominator == 1:
            return node[1][2] - int(exp)
    return node[2] if node[0] == "num" else None


def _sig_digits(value: Fraction, decimals: int) -> int:
    scaled = abs(value) * Fraction(10) ** decimals
    return len(str(round(scaled))) if scaled >= 1 else 0


def _matches_at(exact: Fraction, approx: Fraction, decimals: int) -> bool:
    scale = Fraction(10) ** decimals
    sign = -1 if exact < 0 else 1
    mag = abs(exact) * scale
    rounded, truncated = math.floor(mag + Fraction(1, 2)), math.floor(mag)
    return any(Fraction(sign * r) / scale == approx for r in (rounded, truncated))


def approx_equal(pred: Fraction, pred_dec: int | None, gold: Fraction, gold_dec: int | None) -> bool:
    """Apply the module's tolerance rule to two exact rational values."""
    if pred == gold:
        return True
    if pred_dec is None and gold_dec is None:
        return False
    if abs(pred - gold) <= REL_NOISE * max(abs(pred), abs(gold)):
        return True
    if gold_dec is not None and (pred_dec is None or pred_dec > gold_dec):
        return _sig_digits(gold, gold_dec) >= GOLD_MIN_SIG and _matches_at(pred, gold, gold_dec)
    if pred_dec is not None and gold_dec is None:
        return _sig_digits(pred, pred_dec) >= PRED_MIN_SIG and _matches_at(gold, pred, pred_dec)
    return False
