"""The sympy leaf test: builds sympy objects from parser nodes and decides equality.

Runs inside the worker process (:mod:`.sandbox`), where a hang or blow-up costs only a killed
worker. Objects are constructed directly (``Integer``, ``Rational``, ``Add``, ``Mul``, ``Pow``,
``Symbol``, ...) from the inert node tree; nothing is parsed by sympy, so nothing is evaluated
as Python. Integer powers and factorials are size-checked before sympy sees them.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from .numeric import MAX_FACTORIAL, TooLarge, approx_equal, check_binom, check_power, literal_decimals

_FUNCS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "cot": sp.cot, "sec": sp.sec, "csc": sp.csc,
    "arcsin": sp.asin, "arccos": sp.acos, "arctan": sp.atan, "sinh": sp.sinh, "cosh": sp.cosh,
    "tanh": sp.tanh, "ln": sp.log, "log": sp.log, "exp": sp.exp, "abs": sp.Abs,
}
_CONSTS = {"pi": sp.pi, "e": sp.E, "i": sp.I, "oo": sp.oo}
PRECISION = 60
_I = sp.Symbol("i")


def _bits(x: sp.Expr) -> int:
    if x.is_Rational:
        return max(int(abs(x.p)).bit_length(), int(x.q).bit_length())
    return 64  # irrational/symbolic base: treat as a machine-size number


def to_sympy(node: tuple) -> sp.Expr:
    """Build a sympy expression from a parser node, refusing oversized powers."""
    tag = node[0]
    if tag == "num":
        return sp.Rational(node[1].numerator, node[1].denominator)
    if tag == "sym":
        return sp.Symbol(node[1])
    if tag == "const":
        return _CONSTS[node[1]]
    if tag in ("add", "sub", "mul", "div"):
        a, b = to_sympy(node[1]), to_sympy(node[2])
        if tag == "add":
            return sp.Add(a, b)
        if tag == "sub":
            return sp.Add(a, sp.Mul(-1, b))
        return sp.Mul(a, b) if tag == "mul" else sp.Mul(a, sp.Pow(b, -1))
    if tag == "neg":
        return sp.Mul(-1, to_sympy(node[1]))
    if tag == "pct":
        return sp.Mul(to_sympy(node[1]), sp.Rational(1, 100))
    if tag == "pow":
        base, exp = to_sympy(node[1]), to_sympy(node[2])
        if exp.is_Integer:
            check_power(_bits(base), int(exp))
        elif exp.is_number and exp.is_real and abs(float(exp)) > 10_000:
            raise TooLarge(f"exponent {exp} is too large")
        return sp.Pow(base, exp)
    if tag == "root":
        return sp.root(to_sympy(node[1]), to_sympy(node[2]))
    if tag == "fn":
        return _FUNCS[node[1]](to_sympy(node[2]))
    if tag == "fact":
        n = to_sympy(node[1])
        if n.is_Integer and n > MAX_FACTORIAL:
            raise TooLarge(f"factorial of {n} is over the {MAX_FACTORIAL}! limit")
        return sp.factorial(n)
    if tag == "binom":
        n, k = to_sympy(node[1]), to_sympy(node[2])
        if n.is_Integer:
            check_binom(int(n))
        return sp.binomial(n, k)
    if tag == "log":
        return sp.log(to_sympy(node[1]), to_sympy(node[2]))
    if tag == "eqn":
        return sp.Add(to_sympy(node[1]), sp.Mul(-1, to_sympy(node[2])))
    raise ValueError(f"unknown node tag {tag!r}")


def _as_fraction(x: sp.Expr) -> Fraction | None:
    val = sp.N(x, PRECISION)
    if not val.is_real or not val.is_finite:
        return None
    return Fraction(str(val)) if not val.is_Integer else Fraction(int(val))


def _numeric_equal(p: sp.Expr, g: sp.Expr, pd: int | None, gd: int | None) -> bool:
    fp, fg = _as_fraction(p), _as_fraction(g)
    if fp is None or fg is None:
        return bool(sp.N(abs(p - g), PRECISION) <= sp.Float(10) ** (-PRECISION + 20))
    if pd is None and gd is None:
        # Both exact: equal only to PRECISION digits (no float rounding of 1/2^99 vs 1/2^98).
        scale = max(abs(fp), abs(fg), Fraction(1, 10**30))
        return abs(fp - fg) <= scale * Fraction(1, 10 ** (PRECISION - 15))
    return approx_equal(fp, pd, fg, gd)


_POINTS = (sp.Rational(3719, 10000), sp.Rational(12345, 10000), sp.Rational(7, 3))
"""Positive, unremarkable sample points (positive so roots and logs stay real)."""


def _differs_at_points(pe: sp.Expr, ge: sp.Expr) -> bool:
    """True when the two expressions take clearly different values at a sample point.

    Only ever disproves: equal values at the points prove nothing, and a point where either side
    is undefined or not finite is skipped. Symbols get different values (``x`` and ``y`` must not
    coincide), at 30 significant digits, with a relative tolerance far above rounding noise.
    """
    syms = sorted(pe.free_symbols | ge.free_symbols, key=str)
    for k, base in enumerate(_POINTS):
        point = {s: base + sp.Rational(j + k, 7) for j, s in enumerate(syms)}
        try:
            a, b = sp.N(pe.xreplace(point), 30), sp.N(ge.xreplace(point), 30)
            if not (a.is_number and b.is_number) or a.has(sp.nan, sp.zoo) or b.has(sp.nan, sp.zoo):
                continue
            if abs(a - b) > sp.Float("1e-12") * (1 + abs(a) + abs(b)):
                return True
        except (ArithmeticError, TypeError, ValueError):
            continue
    return False


def sympy_leaf(p: tuple, g: tuple) -> bool:
    """Equality of two expression nodes (``("eqn", l, r)`` pairs compare equations)."""
    if p[0] == "eqn" and g[0] == "eqn":
        dp, dg = to_sympy(p), to_sympy(g)
        if dp == 0 or dg == 0:
            return dp == dg
        ratio = sp.simplify(dp / dg)
        return bool(ratio.is_number and ratio != 0 and ratio.is_finite)
    pe, ge = to_sympy(p), to_sympy(g)
    if pe == ge:
        return True
    free = pe.free_symbols | ge.free_symbols
    if free and free <= {_I}:  # i is the only letter on both sides: the imaginary unit
        pe, ge = pe.subs(_I, sp.I), ge.subs(_I, sp.I)
    if pe.is_number and ge.is_number:
        return _numeric_equal(pe, ge, literal_decimals(p), literal_decimals(g))
    if _differs_at_points(pe, ge):
        return False  # cheap disproof first: simplify() on a non-identity can take the whole bound
    diff = sp.expand(pe - ge)
    if diff == 0:
        return True
    return sp.simplify(diff) == 0
