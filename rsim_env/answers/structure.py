"""Top-level answer structure: booleans, choices, lists, sets, tuples, intervals, matrices,
equations and inequalities around the expressions that :mod:`.parser` reads.

``parse_answer`` returns a tagged tuple:

* ``("expr", node)``; ``("eq", lhs, rhs)``; ``("rel", (node, ...), (op, ...))`` for ``a < x <= b``;
* ``("bool", bool)``; ``("text", str)``;
* ``("seq", items)`` a bare comma list ``1, 2`` (unordered: MATH writes solution sets this way);
* ``("brack", open, close, items)`` a bracketed list/tuple/interval (``(1,2)``, ``[2,5)``);
* ``("set", items)`` for ``\\{...\\}``; ``("union", items)`` for ``A \\cup B``;
* ``("matrix", rows)`` for ``pmatrix``/``bmatrix``/... environments.
"""

from __future__ import annotations

import re

from .parser import MAX_DEPTH, ParseError, parse_expression

BOOLS = {"true": True, "yes": True, "correct": True, "t": True, "false": False, "no": False,
         "incorrect": False, "f": False}
_MATRIX = re.compile(
    r"^[(\[]?\s*\\begin\{((?:[pbvBV]|small)?matrix\*?|array)\}(?:\[[a-z]\])?(?:\{[lcr| ]*\})?(.*)\\end\{\1\}\s*[)\]]?$",
    re.S)
"""Every matrix environment (``matrix``, ``pmatrix``, ``bmatrix``, ``vmatrix``, ``Bmatrix``,
``Vmatrix``, ``smallmatrix``, starred forms, ``array`` with a column spec, optionally wrapped in
``(...)``/``[...]``): compared by entries, so the delimiters do not matter."""
_BASE = re.compile(r"^([0-9A-Za-z]{1,64})_\{?\(?(\d{1,2})\)?\}?$")
"""A numeral with its base as a subscript (``10001_2``, ``4210_{5}``): MATH's number-theory answers."""
_MEMBER = re.compile(r"^[A-Za-z](?:_\{?\w{1,4}\}?)?\s*\\in\s*")
_FUNC_LHS = re.compile(r"^\s*[A-Za-z](?:_\{?\w{1,4}\}?)?'*(?:\([^()=]{1,40}\))?\s*$")
"""Left sides that name the answer: ``x``, ``a_1``, ``f(x)``, ``p'(2)``."""
_WORD = re.compile(r"^[A-Za-z]+(?:['  ][A-Za-z]+){0,8}$")
_RELOPS = ("<=", ">=", "!=", "<", ">", "=")


def split_top(s: str, seps: tuple[str, ...]) -> list[str]:
    """Split ``s`` at any of ``seps`` that sits outside (), [], {} and ``\\{ \\}``."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and s[i + 1:i + 2] in ("{", "}"):
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            for sep in seps:
                if s.startswith(sep, i):
                    parts.append(s[start:i])
                    start = i + len(sep)
                    i = start - 1
                    break
        i += 1
    parts.append(s[start:])
    return parts


def _balanced_wrap(s: str, open_: str, close: str) -> bool:
    """True when ``s`` is ``open_ ... close`` with the outer pair enclosing everything."""
    if not (s.startswith(open_) and s.endswith(close)) or len(s) < len(open_) + len(close):
        return False
    inner = s[len(open_):len(s) - len(close)]
    depth = 0
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _relation(s: str) -> tuple:
    parts, ops, i, start = [], [], 0, 0
    depth = 0
    while i < len(s):
        ch = s[i]
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0:
            op = next((o for o in _RELOPS if s.startswith(o, i)), None)
            if op:
                parts.append(s[start:i])
                ops.append(op)
                i += len(op)
                start = i
                continue
        i += 1
    parts.append(s[start:])
    if not ops:
        ratio = split_top(s, (":",))
        if len(ratio) == 2 and all(r.strip() for r in ratio):  # 3:4 is the ratio 3/4
            return ("expr", ("div", parse_expression(ratio[0]), parse_expression(ratio[1])))
        return ("expr", parse_expression(s))
    if ops == ["="] * len(ops) and _FUNC_LHS.match(parts[0]):  # f(x) = 2x + 1: f(x) names the answer
        return ("eq", ("sym", "".join(parts[0].split())), parse_expression(parts[-1]))
    nodes = tuple(parse_expression(p) for p in parts)
    if ops == ["="] * len(ops):
        return ("eq", nodes[0], nodes[-1]) if len(nodes) == 2 else ("eq", nodes[-2], nodes[-1])
    return ("rel", nodes, tuple(ops))


_MATH_WORDS = frozenset("sqrt frac pi sin cos tan cot sec csc log ln exp infty oo".split())


def _is_math_word(s: str) -> bool:
    """``pi r``, ``sqrt``, or a short lowercase product like ``abc``: math, not a word answer."""
    words = s.replace("'", " ").split()
    if max(len(w) for w in words) < 3 or all(w.lower() in _MATH_WORDS or len(w) == 1 for w in words):
        return True
    return len(words) == 1 and s.islower() and len(s) <= 3


def parse_answer(s: str, depth: int = 0) -> tuple:
    """Parse a normalised answer string into a tagged structure (see module docstring).

    Raises:
        ParseError: The text (or one of its elements) cannot be parsed.
    """
    if depth > MAX_DEPTH // 4:
        raise ParseError("structure nested too deeply")
    s = s.strip()
    if not s:
        raise ParseError("empty answer")
    if s.lower().strip(".") in BOOLS:
        return ("bool", BOOLS[s.lower().strip(".")])
    m = _MATRIX.match(s)
    if m:
        rows = [r for r in split_top(m.group(2), ("\\\\",)) if r.strip()]
        return ("matrix", tuple(tuple(parse_expression(c) for c in split_top(r, ("&",))) for r in rows))
    m = _BASE.match(s)
    if m and int(m.group(2)) >= 2 and all(int(c, 36) < int(m.group(2)) for c in m.group(1)):
        return ("base", m.group(1).upper().lstrip("0") or "0", int(m.group(2)))
    member = _MEMBER.match(s)
    if member:  # x \in [2, 5): the set is the answer
        return parse_answer(s[member.end():], depth + 1)
    if _WORD.match(s) and not _is_math_word(s):
        return ("text", " ".join(s.lower().split()))
    if "\\cup" in s:
        parts = split_top(s, ("\\cup",))
        if len(parts) > 1:
            return ("union", tuple(parse_answer(p, depth + 1) for p in parts))
    if _balanced_wrap(s, "\\{", "\\}"):
        inner = s[2:-2]
        return ("set", tuple(parse_answer(p, depth + 1) for p in split_top(inner, (",", ";")) if p.strip()))
    if _balanced_wrap(s, "{", "}"):
        return parse_answer(s[1:-1], depth + 1)
    items = split_top(s, (",", ";", " and "))
    if len(items) > 1:
        return ("seq", tuple(parse_answer(p, depth + 1) for p in items if p.strip()))
    pm = split_top(s, ("\\pm", "\\mp"))
    if len(pm) == 2:  # 1 \pm \sqrt{2}: the two solutions
        return ("seq", (parse_answer(f"{pm[0]}+({pm[1]})", depth + 1), parse_answer(f"{pm[0]}-({pm[1]})", depth + 1)))
    for o in "([{":
        for c in ")]}":
            if o + c in ("{}", "{]", "{)", "(}", "[}"):
                continue
            if _balanced_wrap(s, o, c):
                inner = split_top(s[1:-1], (",",))
                if len(inner) > 1:
                    return ("brack", o, c, tuple(parse_answer(p, depth + 1) for p in inner))
    return _relation(s)
