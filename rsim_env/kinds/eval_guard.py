"""The guard of reasoning-gym scorers that call Python ``eval`` on an answer: :data:`PYTHON_EVAL` names them,
:func:`literal_only` says whether an answer is safe to hand them.

Standard library only, and below both users: the ``rg`` worker (:mod:`rsim_env.kinds.rg_worker`) grades behind it,
and the scorer sanity check (:mod:`rsim_env.kinds.scorer_check`) hands those scorers only answers it allows.
"""

from __future__ import annotations

import ast

__all__ = ["PYTHON_EVAL", "literal_only"]

PYTHON_EVAL = frozenset({"binary_matrix", "n_queens", "spiral_matrix", "string_insertion"})
"""Generators whose ``score_answer`` calls Python ``eval`` on the answer (reasoning-gym 0.1.25: only on the
partial-credit path, after an exact-match test). The ``rg`` worker grades them behind :func:`literal_only`."""
_LITERAL_NODES = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Load)


def literal_only(answer: str) -> bool:
    """True when Python ``eval`` of ``answer`` can run no code: the text either does not compile as an
    expression (``eval`` raises ``SyntaxError`` before running anything) or is a plain literal (numbers,
    strings, lists/tuples/sets/dicts of them, a sign on a number). Checked on every form a scorer hands
    to ``eval`` (as given, stripped; ``eval`` itself drops leading spaces and tabs)."""
    for text in {answer, answer.strip(), answer.lstrip(" \t")}:
        try:
            tree = ast.parse(text, mode="eval")
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue  # eval fails on it the same way, before running anything
        for node in ast.walk(tree):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) \
                    and isinstance(node.operand, ast.Constant):
                continue
            if isinstance(node, (ast.USub, ast.UAdd)) or isinstance(node, _LITERAL_NODES):
                continue
            return False
    return True
