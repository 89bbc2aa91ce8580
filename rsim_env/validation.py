"""Checks shared by every config dataclass (here, at the bottom of the dependency chain, so that
``rsim_env``, ``agents`` and ``algos`` configs all use the same one)."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any


def check_finite(cfg: Any) -> None:
    """Raise ``ValueError`` naming the first float field of dataclass ``cfg`` that is NaN or inf.

    Floats inside tuple/list fields are checked too; nested dataclasses check themselves. Call it
    first in ``__post_init__``: an infinite ``kl_coef`` or learning rate would otherwise train
    (and checkpoint) NaN weights without a word.
    """
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        for x in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral) and not math.isfinite(x):
                default = "" if f.default is dataclasses.MISSING else f" (default {f.default!r})"
                raise ValueError(f"{type(cfg).__name__}.{f.name}={value!r} is not finite: "
                                 f"use a finite number{default}.")
