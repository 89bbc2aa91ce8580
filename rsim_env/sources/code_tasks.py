"""Procedural function-writing tasks: the embedded, offline default for code training on CPU.

Each *family* draws its parameters from a seeded ``random.Random``, states the task in words, and
computes the expected outputs of random inputs with a trusted reference written here in Python
(the reference *source* shown as ``Problem.answer`` is a separate string, and a test checks that
it passes its own tests in the sandbox). Tests are HumanEval-style ``check(candidate)`` built from
input/output pairs. Deterministic for a seed; stdlib only.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from ..problem import Problem
from ..render import code_question
from ..code.result import pairs_to_check

Family = Callable[[random.Random], tuple[str, str, str, Callable[..., Any], list[tuple]]]
"""rng -> (entry point, task text, reference source, reference function, list of argument tuples)."""


def _ints(rng: random.Random, n: int = 8, lo: int = -20, hi: int = 20) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(rng.randint(0, n))]


def _words(rng: random.Random) -> str:
    vocab = ["apple", "level", "kayak", "tree", "sun", "noon", "data", "code", "racecar", "moon", "abc"]
    return " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 5)))


def sum_above(rng):
    k = rng.randint(-5, 10)
    src = f"def sum_above(nums):\n    return sum(x for x in nums if x > {k})\n"
    return ("sum_above", f"`sum_above(nums)` returns the sum of the integers in the list `nums` that are "
            f"greater than {k} (0 if there are none).", src, lambda nums: sum(x for x in nums if x > k),
            [(_ints(rng),) for _ in range(6)])


def count_chars(rng):
    chars = "".join(sorted(rng.sample("aeioust", 3)))
    src = f"def count_chars(s):\n    return sum(1 for c in s if c in {chars!r})\n"
    return ("count_chars", f"`count_chars(s)` returns how many characters of the string `s` are one of "
            f"{', '.join(repr(c) for c in chars)}.", src, lambda s: sum(1 for c in s if c in chars),
            [(_words(rng),) for _ in range(6)])


def scale_evens(rng):
    k = rng.randint(2, 5)
    src = f"def scale_evens(nums):\n    return [x * {k} for x in nums if x % 2 == 0]\n"
    return ("scale_evens", f"`scale_evens(nums)` returns a new list with each even integer of `nums` "
            f"multiplied by {k}, in the original order; odd integers are dropped.", src,
            lambda nums: [x * k for x in nums if x % 2 == 0], [(_ints(rng),) for _ in range(6)])


def fib_mod(rng):
    m = rng.choice([7, 10, 13, 100, 1000])
    src = (f"def fib_mod(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n"
           f"    return a % {m}\n")

    def ref(n):
        a, b = 0, 1
        for _ in range(n):
            a, b = b, a + b
        return a % m
    return ("fib_mod", f"`fib_mod(n)` returns the n-th Fibonacci number modulo {m}, where fib(0) = 0 and "
            "fib(1) = 1.", src, ref, [(rng.randint(0, 60),) for _ in range(6)])


def palindromes(rng):
    src = "def palindromes(text):\n    return [w for w in text.split() if w == w[::-1]]\n"
    return ("palindromes", "`palindromes(text)` returns the list of space-separated words of `text` that read "
            "the same backwards, in order (duplicates kept).", src,
            lambda text: [w for w in text.split() if w == w[::-1]], [(_words(rng),) for _ in range(6)])


def digit_sum(rng):
    base = rng.choice([10, 2, 8])
    src = (f"def digit_sum(n):\n    n = abs(n)\n    total = 0\n    while n:\n        total += n % {base}\n"
           f"        n //= {base}\n    return total\n")

    def ref(n):
        n, total = abs(n), 0
        while n:
            total, n = total + n % base, n // base
        return total
    return ("digit_sum", f"`digit_sum(n)` returns the sum of the digits of the integer `n` written in base "
            f"{base} (the sign is ignored).", src, ref, [(rng.randint(-10**6, 10**6),) for _ in range(6)])


def run_length(rng):
    src = ("def run_length(s):\n    out = []\n    for c in s:\n        if out and out[-1][0] == c:\n"
           "            out[-1] = (c, out[-1][1] + 1)\n        else:\n            out.append((c, 1))\n"
           "    return out\n")

    def ref(s):
        out = []
        for c in s:
            if out and out[-1][0] == c:
                out[-1] = (c, out[-1][1] + 1)
            else:
                out.append((c, 1))
        return out
    inputs = [("".join(rng.choice("aab") for _ in range(rng.randint(0, 9))),) for _ in range(6)]
    return ("run_length", "`run_length(s)` returns the run-length encoding of the string `s` as a list of "
            "(character, count) tuples, e.g. 'aab' -> [('a', 2), ('b', 1)].", src, ref, inputs)


def second_largest(rng):
    src = ("def second_largest(nums):\n    values = sorted(set(nums))\n"
           "    return values[-2] if len(values) >= 2 else None\n")

    def ref(nums):
        values = sorted(set(nums))
        return values[-2] if len(values) >= 2 else None
    return ("second_largest", "`second_largest(nums)` returns the second largest *distinct* value in the list "
            "`nums`, or None if there are fewer than two distinct values.", src, ref,
            [(_ints(rng, lo=-5, hi=5),) for _ in range(6)])


def clamp_all(rng):
    lo, hi = sorted(rng.sample(range(-10, 11), 2))
    src = f"def clamp_all(nums):\n    return [min(max(x, {lo}), {hi}) for x in nums]\n"
    return ("clamp_all", f"`clamp_all(nums)` returns the list `nums` with every value below {lo} replaced by "
            f"{lo} and every value above {hi} replaced by {hi}.", src,
            lambda nums: [min(max(x, lo), hi) for x in nums], [(_ints(rng),) for _ in range(6)])


def word_lengths(rng):
    src = "def word_lengths(text):\n    return {w: len(w) for w in text.split()}\n"
    return ("word_lengths", "`word_lengths(text)` returns a dict mapping each space-separated word of `text` "
            "to its length.", src, lambda text: {w: len(w) for w in text.split()},
            [(_words(rng),) for _ in range(6)])


def gcd_all(rng):
    src = ("def gcd_all(a, b):\n    a, b = abs(a), abs(b)\n    while b:\n        a, b = b, a % b\n"
           "    return a\n")

    def ref(a, b):
        a, b = abs(a), abs(b)
        while b:
            a, b = b, a % b
        return a
    return ("gcd_all", "`gcd_all(a, b)` returns the greatest common divisor of the integers `a` and `b` "
            "(non-negative; gcd(0, 0) = 0).", src, ref,
            [(rng.randint(-200, 200), rng.randint(0, 200)) for _ in range(6)])


def rotate(rng):
    k = rng.randint(1, 4)
    src = f"def rotate(items):\n    if not items:\n        return []\n    k = {k} % len(items)\n    return items[-k:] + items[:-k] if k else list(items)\n"

    def ref(items):
        if not items:
            return []
        j = k % len(items)
        return items[-j:] + items[:-j] if j else list(items)
    return ("rotate", f"`rotate(items)` returns the list `items` rotated right by {k} positions "
            "(the last element moves to the front, repeatedly).", src, ref, [(_ints(rng),) for _ in range(6)])


FAMILIES: dict[str, Family] = {f.__name__: f for f in (
    sum_above, count_chars, scale_evens, fib_mod, palindromes, digit_sum, run_length, second_largest,
    clamp_all, word_lengths, gcd_all, rotate)}
"""Every task family by name."""


def code_tasks(size: int = 200, seed: int = 0, families: tuple[str, ...] | None = None) -> list[Problem]:
    """``size`` procedural code problems, families interleaved round-robin, deterministic for ``seed``."""
    names = tuple(FAMILIES) if families is None else tuple(families)
    unknown = [n for n in names if n not in FAMILIES]
    if unknown or not names:
        raise ValueError(f"unknown code task families {unknown or names}; valid: {sorted(FAMILIES)}.")
    if size < 1:
        raise ValueError(f"size={size}; ask for at least one problem.")
    out = []
    for i in range(size):
        name = names[i % len(names)]
        rng = random.Random(f"{seed}/{i}")
        entry, text, src, ref, inputs = FAMILIES[name](rng)
        pairs = [(args, ref(*args)) for args in inputs]
        out.append(Problem(id=f"code_tasks/{name}/{i}", question=code_question(text, entry), answer=src,
                           source="code_tasks", kind="code", tests=pairs_to_check(pairs), entry_point=entry,
                           metadata={"family": name}))
    return out
