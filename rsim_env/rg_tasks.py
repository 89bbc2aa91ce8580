"""Which reasoning-gym tasks the ``rg`` kind grades, and what a problem carries to re-create its entry.

Plain data and the standard library only, so that :mod:`rsim_env.problems` (which builds the problems)
and :mod:`rsim_env.kinds.rgym` (which grades them) both import it without an import circle.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["REFUSED", "is_number", "spec"]

REFUSED = frozenset({"countdown", "puzzle24", "polynomial_multiplication", "simple_integration",
                     "intermediate_integration"})
"""Generators whose scorer runs ``sympy.parse_expr`` on the answer (see module docstring): refused."""
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def is_number(gold: str) -> bool:
    """True for a plain integer or decimal gold (``"42"``, ``"-3.5"``): the math checker's home ground."""
    return bool(_NUMBER.fullmatch(gold.strip()))


def spec(dataset: str, config: dict[str, Any], seed: int, size: int, index: int) -> dict[str, Any]:
    """``metadata["rg"]`` of a problem: what re-creates its entry, as plain JSON data.

    Raises:
        ValueError: ``config`` is not JSON data (the message names the option).
    """
    for key, value in config.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ValueError(f"reasoning-gym option {key}={value!r} is not JSON data; a graded problem must "
                             "re-create its entry from a checkpoint (use numbers, strings, lists).") from None
    return {"dataset": dataset, "config": json.loads(json.dumps(config)), "seed": seed, "size": size, "index": index}
