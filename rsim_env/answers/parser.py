"""A small, bounded tokenizer and recursive-descent parser for math answers.

Why our own parser: ``sympify``/``parse_expr`` (and libraries built on them, such as
latex2sympy2_extended) evaluate Python, so a model that writes ``__import__('os').system(...)``
could run code in the grader. This parser only recognises numbers, single-letter symbols, a fixed
set of LaTeX commands and operators, and builds an inert tuple tree; nothing is ever evaluated.
Size (:data:`MAX_CHARS`, :data:`MAX_TOKENS`) and nesting (:data:`MAX_DEPTH`) are bounded, so
parsing is linear-time and cannot recurse without limit.

Node forms (tuples): ``("num", Fraction, decimals | None)`` (decimals is the count of digits after
the point for decimal literals, None for exact integers), ``("sym", name)``, ``("const", "pi"|"e"|
"i"|"oo")``, ``("add", a, b)``, ``("sub", a, b)``, ``("mul", a, b)``, ``("div", a, b)``,
``("neg", a)``, ``("pow", a, b)``, ``("root", a, n)``, ``("fn", name, a)``, ``("fact", a)``,
``("pct", a)``.
"""

from __future__ import annotations

import re
from fractions import Fraction

MAX_CHARS = 2000
MAX_TOKENS = 600
MAX_DEPTH = 60
"""Nesting levels of brackets, braces, ``\\frac``/``\\sqrt`` arguments and unary/power chains.

The parser is linear-time and the worst case at this depth checks in well under a second
(``benchmarks/grading/answer_check.py`` times each construct), so time is not the limit: recursion is.
A level costs up to ~11 Python frames (``\\sin(`` nesting needs ~670 frames at depth 60), and the
checker must run from any caller's stack under Python's default limit of 1000 frames;
``tests/test_answers_forms.py`` checks every construct at this depth from a caller 250 frames
deep. Should a deeper caller still hit the limit, the answer is refused as unparsable."""
FUNCTIONS = frozenset("sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh ln log exp".split())
CONSTANTS = {"pi": "pi", "e": "e", "i": "i", "oo": "oo", "infty": "oo"}


class ParseError(ValueError):
    """The text is not an expression this parser understands (or breaks a size limit)."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+\.?\d*(?:[eE][+-]?\d+(?![\w]))?|\.\d+(?:[eE][+-]?\d+(?![\w]))?)"
    r"|(?P<cmd>\\[A-Za-z]+|\\[{}|])|(?P<name>oo|[A-Za-z])|(?P<op><=|>=|!=|[-+*/^()\[\]{}|_=<>!%,]))"
)


def tokenize(s: str) -> list[tuple[str, str]]:
    """Split ``s`` into ``(kind, text)`` tokens; raise :class:`ParseError` on anything unknown."""
    if len(s) > MAX_CHARS:
        raise ParseError(f"answer is {len(s)} chars, over the {MAX_CHARS} limit")
    out, pos = [], 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise ParseError(f"unexpected character {s[pos]!r} at {pos}")
        tok_type = m.lastgroup
        out.append((tok_type, m.group(tok_type)))
        pos = m.end()
        if len(out) > MAX_TOKENS:
            raise ParseError(f"more than {MAX_TOKENS} tokens")
    return out


def number_node(text: str) -> tuple:
    """``("num", Fraction, decimals)`` for a literal such as ``12``, ``0.50`` or ``1.5e6``."""
    mant, _, exp = text.lower().partition("e")
    value = Fraction(mant)
    if exp:
        if abs(int(exp)) > 400:
            raise ParseError(f"exponent {exp} in {text!r} is out of range")
        value *= Fraction(10) ** int(exp)
    decimals = len(mant.split(".")[1]) - (int(exp) if exp else 0) if "." in mant else None
    return ("num", value, decimals)


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]]):
        self.toks, self.i, self.depth = tokens, 0, 0

    def peek(self, k: int = 0) -> tuple[str, str] | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, text: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (text is not None and tok[1] != text):
            raise ParseError(f"expected {text or 'more input'}, got {tok[1] if tok else 'end'}")
        self.i += 1
        return tok

    def at(self, *texts: str) -> bool:
        tok = self.peek()
        return tok is not None and tok[1] in texts

    def nested(self, fn):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError(f"nesting deeper than {MAX_DEPTH}")
        try:
            return fn()
        finally:
            self.depth -= 1

    # expr := term (('+'|'-') term)*
    def expr(self) -> tuple:
        node = self.term()
        while self.at("+", "-"):
            op = self.take()[1]
            node = ("add" if op == "+" else "sub", node, self.term())
        return node

    # term := unary (('*'|'/'|implicit) unary)*
    def term(self) -> tuple:
        node = self.unary()
        while True:
            if self.at("*", "/"):
                op = self.take()[1]
                node = ("mul" if op == "*" else "div", node, self.unary())
            elif self._starts_atom():
                node = ("mul", node, self.power())
            else:
                return node

    def _starts_atom(self) -> bool:
        tok = self.peek()
        if tok is None:
            return False
        tok_type, text = tok
        return tok_type in ("num", "name") or text in ("(", "{") or (tok_type == "cmd" and text not in ("\\}", "\\cup", "\\|"))

    def unary(self) -> tuple:
        if self.at("-", "+"):
            sign = self.take()[1]
            inner = self.nested(self.unary)
            return ("neg", inner) if sign == "-" else inner
        return self.power()

    # power := postfix ('^' unary)?   (right-associative)
    def power(self) -> tuple:
        base = self.postfix()
        if self.at("^"):
            self.take()
            return ("pow", base, self.braced() if self.at("{") else self.nested(self.unary))
        return base

    def postfix(self) -> tuple:
        node = self.atom()
        while self.at("!", "%"):
            node = ("fact", node) if self.take()[1] == "!" else ("pct", node)
        return node

    def group(self, close: str) -> tuple:
        node = self.nested(self.expr)
        self.take(close)
        return node

    def braced(self) -> tuple:
        """A ``{...}`` argument, or a single token argument as in ``\\frac12`` / ``\\sqrt2``."""
        if self.at("{", "("):
            return self.group("}" if self.take()[1] == "{" else ")")
        tok_type, text = self.take()
        if tok_type == "num":
            if len(text) > 1 and text.isdigit():  # \frac12 means \frac{1}{2}
                self.toks.insert(self.i, ("num", text[1:]))
                return number_node(text[0])
            return number_node(text)
        if tok_type == "name":
            return CONST_OR_SYM(text)
        raise ParseError(f"bad argument {text!r}")

    def atom(self) -> tuple:
        tok_type, text = self.take()
        if tok_type == "num":
            return number_node(text)
        if tok_type == "name":
            if text == "C" and self.at("("):
                binom = self._choose_call()
                if binom is not None:
                    return binom
            node = CONST_OR_SYM(text)
            if self.at("_"):
                self.take()
                sub = self.take()[1] if not self.at("{") else self._raw_group()
                node = ("sym", f"{text}_{sub}")
            return node
        if text in ("(", "{", "["):
            return self.group({"(": ")", "{": "}", "[": "]"}[text])
        if text == "|":
            return ("fn", "abs", self.group("|"))
        if tok_type == "cmd":
            return self.command(text[1:])
        raise ParseError(f"unexpected {text!r}")

    def _choose_call(self) -> tuple | None:
        """``C(n, k)`` (a binomial coefficient); None (position restored) when it is not one."""
        start = self.i
        self.take("(")
        n = self.nested(self.expr)
        if not self.at(","):
            self.i = start
            return None
        self.take(",")
        k = self.group(")")
        return ("binom", n, k)

    def _raw_group(self) -> str:
        self.take("{")
        parts = []
        while not self.at("}"):
            parts.append(self.take()[1])
        self.take("}")
        return "".join(parts)

    def command(self, name: str) -> tuple:
        if name == "frac":
            num = self.braced()
            return ("div", num, self.braced())
        if name == "sqrt":
            n = ("num", Fraction(2), None)
            if self.at("["):
                self.take()
                n = self.group("]")
            return ("root", self.braced(), n)
        if name in CONSTANTS:
            return ("const", CONSTANTS[name])
        if name == "binom":
            n = self.braced()
            return ("binom", n, self.braced())
        if name in FUNCTIONS:
            return self.function(name)
        if len(name) > 1 and name.isalpha() and name in GREEK:
            return ("sym", name)
        raise ParseError(f"unsupported command \\{name}")


    def function(self, name: str) -> tuple:
        """``\\sin x``, ``\\sin 2x`` (= sin(2x)), ``\\sin^2 x``, ``\\sin^{-1} x``, ``\\log_2 8``, ``\\ln(x)``."""
        power = base = None
        if self.at("_") and name == "log":
            self.take()
            base = self.braced()
        if self.at("^"):
            self.take()
            power = self.braced()
        if self.at("_") and name == "log" and base is None:
            self.take()
            base = self.braced()
        if power == ("neg", ("num", Fraction(1), None)) and name in _INVERSE:
            name, power = _INVERSE[name], None
        if self.at("(", "{", "["):
            arg = self.atom()
        else:  # without brackets the argument is the following product: \sin 2x = sin(2x)
            arg = self.power()
            while self._starts_atom() and not self._at_function():
                arg = ("mul", arg, self.power())
        node = ("log", arg, base) if base is not None else ("fn", name, arg)
        return ("pow", node, power) if power is not None else node

    def _at_function(self) -> bool:
        tok = self.peek()
        return tok is not None and tok[0] == "cmd" and tok[1][1:] in FUNCTIONS


_INVERSE = {"sin": "arcsin", "cos": "arccos", "tan": "arctan"}
GREEK = frozenset("alpha beta gamma delta epsilon varepsilon theta vartheta lambda mu nu xi rho sigma tau phi varphi "
                  "chi psi omega".split())


def CONST_OR_SYM(text: str) -> tuple:  # noqa: N802 - reads like a node constructor
    """``e``/``oo`` are constants (``i`` stays a symbol unless the caller says complex)."""
    return ("const", CONSTANTS[text]) if text in ("e", "oo") else ("sym", text)


def parse_expression(s: str) -> tuple:
    """Parse one expression (no top-level commas/relations) into a node tree.

    Raises:
        ParseError: Unknown syntax, trailing input, or a size/nesting limit was exceeded.
    """
    p = _Parser(tokenize(s))
    if not p.toks:
        raise ParseError("empty expression")
    try:
        node = p.expr()
    except RecursionError:  # safety net: MAX_DEPTH keeps this from happening on a normal stack
        raise ParseError("expression nested too deeply for the caller's stack") from None
    if p.peek() is not None:
        raise ParseError(f"unexpected {p.peek()[1]!r} after expression")
    return node
