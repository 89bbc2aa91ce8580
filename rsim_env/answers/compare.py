"""Structural equivalence of two parsed answers (see :mod:`.structure`), generic over a leaf test.

The same rules run twice: in-process with the exact-rational leaf test of :mod:`.numeric`
(returns None when it cannot decide, e.g. for ``\\sqrt{2}``), and, only then, in the worker
process with the sympy leaf test of :mod:`.symbolic`. Order rules:

* ``\\{...\\}`` sets and bare comma lists (``1, 2``: MATH's way of listing solutions) are
  unordered, unless ``answer_type == "list"``; bracketed tuples/lists are ordered;
* two-element ``(a, b)``/``[a, b)`` must have the same brackets (an interval's openness matters);
* an inequality in one variable equals the matching interval (``x > 3`` == ``(3, \\infty)``);
* ``x = 3`` equals ``3`` (a solved-for variable), and a percentage ``50\\%`` equals ``50`` or ``0.5``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Optional

Leaf = Callable[[tuple, tuple], Optional[bool]]
"""Leaf test: True/False, or None when undecidable by this backend."""

MAX_ITEMS = 64
_OO = ("const", "oo")
_NEG_OO = ("neg", ("const", "oo"))


def _all(results) -> Optional[bool]:
    """Three-valued AND: False wins, then None (undecided), then True."""
    undecided = False
    for r in results:
        if r is False:
            return False
        undecided |= r is None
    return None if undecided else True


def _any(results) -> Optional[bool]:
    undecided = False
    for r in results:
        if r is True:
            return True
        undecided |= r is None
    return None if undecided else False


def _pct_variants(node: tuple) -> list[tuple]:
    if node[0] == "pct":
        return [node[1], ("div", node[1], ("num", Fraction(100), None))]
    return [node]


def expr_equal(p: tuple, g: tuple, leaf: Leaf) -> Optional[bool]:
    """Leaf comparison with percent handling (``50\\%`` vs ``50`` or ``0.5``)."""
    if p[0] != "pct" and g[0] != "pct":
        return leaf(p, g)
    return _any(leaf(a, b) for a in _pct_variants(p) for b in _pct_variants(g))


def _rel_to_interval(s: tuple) -> tuple | None:
    """``x > 3`` -> ``("brack", "(", ")", (3, oo))``; None if not a one-variable range."""
    nodes, ops = s[1], s[2]
    if any(o in ("!=", "=") for o in ops):
        return None
    if len(nodes) == 2:
        (a, b), op = nodes, ops[0]
        if a[0] == "sym":
            _var, bound, op = a, b, {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[op]
        elif b[0] == "sym":
            _var, bound = b, a
        else:
            return None
        # now the relation reads: bound op var
        if op in ("<", "<="):
            return ("brack", "(" if op == "<" else "[", ")", (("expr", bound), ("expr", _OO)))
        return ("brack", "(", ")" if op == ">" else "]", (("expr", _NEG_OO), ("expr", bound)))
    if len(nodes) == 3 and nodes[1][0] == "sym" and all(o in ("<", "<=") for o in ops):
        lo, hi = nodes[0], nodes[2]
        return ("brack", "(" if ops[0] == "<" else "[", ")" if ops[1] == "<" else "]", (("expr", lo), ("expr", hi)))
    return None


def _unordered(ps: tuple, gs: tuple, answer_type: str, leaf: Leaf) -> Optional[bool]:
    if len(ps) != len(gs):
        return False
    if len(gs) > MAX_ITEMS:
        return False
    used, undecided = set(), False
    for g in gs:
        hit = None
        for j, p in enumerate(ps):
            if j in used:
                continue
            r = equal(p, g, answer_type, leaf)
            if r:
                hit = j
                break
            undecided |= r is None
        if hit is None:
            return None if undecided else False
        used.add(hit)
    return True


def _ordered(ps: tuple, gs: tuple, answer_type: str, leaf: Leaf) -> Optional[bool]:
    if len(ps) != len(gs) or len(gs) > MAX_ITEMS:
        return False
    return _all(equal(p, g, answer_type, leaf) for p, g in zip(ps, gs))


def _has_symbol(node: tuple) -> bool:
    if node[0] == "sym":
        return True
    return any(isinstance(c, tuple) and _has_symbol(c) for c in node[1:])


def _names_value(lhs: tuple) -> bool:
    """``x = 3`` and ``f(x) = 3`` name the answer; so does a worked value ``2 \\cdot 36 = 72``."""
    return lhs[0] == "sym" or not _has_symbol(lhs)


def _base_equal(p: tuple, g: tuple) -> bool:
    """Numerals in a base compare digit by digit; a bare integer counts as written in that base."""
    if p[0] == g[0] == "base":
        return p[1:] == g[1:]
    base, other = (p, g) if p[0] == "base" else (g, p)
    if other[0] != "expr" or other[1][0] != "num" or other[1][2] is not None or other[1][1] < 0:
        return False
    return str(other[1][1]) == base[1]


def _vector(s: tuple) -> tuple | None:
    """The entries of a one-row or one-column matrix, or of a bracketed tuple."""
    if s[0] == "matrix":
        rows = s[1]
        if len(rows) == 1:
            return rows[0]
        return tuple(r[0] for r in rows) if all(len(r) == 1 for r in rows) else None
    if s[0] == "brack" and s[1] + s[2] in ("()", "[]", "<>") and all(i[0] == "expr" for i in s[3]):
        return tuple(i[1] for i in s[3])
    return None


def _matrix_equal(p: tuple, g: tuple, leaf: Leaf) -> Optional[bool]:
    if p[0] == g[0] == "matrix":
        if len(p[1]) != len(g[1]) or any(len(a) != len(b) for a, b in zip(p[1], g[1])):
            return False
        return _all(expr_equal(a, b, leaf) for ra, rb in zip(p[1], g[1]) for a, b in zip(ra, rb))
    pv, gv = _vector(p), _vector(g)  # (1, 2, 3) for a column vector: same entries, same order
    if pv is None or gv is None or len(pv) != len(gv) or len(gv) > MAX_ITEMS:
        return False
    return _all(expr_equal(a, b, leaf) for a, b in zip(pv, gv))


def equal(p: tuple, g: tuple, answer_type: str, leaf: Leaf) -> Optional[bool]:
    """Is prediction structure ``p`` equivalent to gold structure ``g``? (None = undecided)."""
    pt, gt = p[0], g[0]
    if pt == "rel" and gt != "rel":
        p = _rel_to_interval(p) or p
        pt = p[0]
    if gt == "rel" and pt != "rel":
        g = _rel_to_interval(g) or g
        gt = g[0]
    if gt == "bool" or pt == "bool":
        return pt == gt and p[1] == g[1]
    if gt == "text" or pt == "text":
        return pt == gt and p[1].lower() == g[1].lower()
    if pt == "expr" and gt == "expr":
        return expr_equal(p[1], g[1], leaf)
    if pt == "eq" and gt == "expr":
        return expr_equal(p[2], g[1], leaf) if _names_value(p[1]) else False
    if gt == "eq" and pt == "expr":
        return expr_equal(p[1], g[2], leaf) if g[1][0] == "sym" else False
    if "base" in (pt, gt):
        return _base_equal(p, g)
    if pt == "eq" and gt == "eq":
        return _any([_all([leaf(p[1], g[1]), leaf(p[2], g[2])]), leaf(("eqn", p[1], p[2]), ("eqn", g[1], g[2]))])
    if pt == "rel" and gt == "rel":
        pi, gi = _rel_to_interval(p), _rel_to_interval(g)
        if pi and gi:
            return equal(pi, gi, answer_type, leaf)
        return p[2] == g[2] and _all(leaf(a, b) for a, b in zip(p[1], g[1])) if len(p[1]) == len(g[1]) else False
    if pt == "matrix" or gt == "matrix":
        return _matrix_equal(p, g, leaf)
    if pt == "brack" and gt == "brack":
        same = (p[1], p[2]) == (g[1], g[2])
        lists = len(g[3]) != 2 and {p[1] + p[2], g[1] + g[2]} <= {"()", "[]"}
        return _ordered(p[3], g[3], answer_type, leaf) if same or lists else False
    if (pt == "set") != (gt == "set") and len((p if pt == "set" else g)[1]) == 1 and {pt, gt} & {"expr", "eq"}:
        one = p if pt == "set" else g  # {2} and 2: a one-element solution set
        return equal(one[1][0], g, answer_type, leaf) if one is p else equal(p, one[1][0], answer_type, leaf)
    if {pt, gt} <= {"seq", "set"}:
        if answer_type == "list" and pt == gt == "seq":
            return _ordered(p[1], g[1], answer_type, leaf)
        return _unordered(p[1], g[1], answer_type, leaf)
    if {pt, gt} == {"seq", "brack"}:
        seq, br = (p, g) if pt == "seq" else (g, p)
        if len(br[3]) == 2 and br[1] + br[2] != "()":
            return False  # an interval is not a list of two numbers
        items = br[3]
        return _ordered(p[1] if pt == "seq" else p[3], g[3] if gt == "brack" else g[1], answer_type, leaf) \
            if len(items) == 2 else _unordered(seq[1], items, answer_type, leaf)
    if pt == "union" and gt == "union":
        return _unordered(p[1], g[1], answer_type, leaf)
    return False
