"""Problem kinds: one :class:`Kind` object per kind, in a registry.

A kind is everything that depends on what a problem asks for: the texts that ask for the answer
(:class:`KindTexts`), how a step's strategies are detected, which text of the final step is graded,
how it is graded (:class:`Grade`), and the stop rule agents apply while generating. The rest of the
code asks the problem's kind (``kinds.get(problem.kind)``) and never tests its name.

Built in: ``math`` (:mod:`rsim_env.kinds.math`), ``code`` (:mod:`rsim_env.kinds.code`) and ``rg``
(:mod:`rsim_env.kinds.rgym`: reasoning-gym tasks graded by their own scorers; its machinery beside it:
:mod:`.rg_tasks` makes and re-creates the entries, :mod:`.scorer_check` refuses a scorer that accepts a wrong
answer, :mod:`.eval_guard` and :mod:`.rg_worker` run the scorers safely). A new kind
is one module that subclasses :class:`Kind` (importing it from :mod:`rsim_env.kinds.base`, not from this
package, so that no import circle forms) and calls :func:`register` (or, for the length of a ``with``
block, :func:`registered`); tests/test_kinds.py plays a toy kind defined in a test module.
:func:`validate` is the kind check of a :class:`~rsim_env.problem.Problem` (plain data itself).
"""

from .base import KINDS, Grade, Kind, KindTexts, get, names, register, registered, validate
from . import code as _code, math as _math, rgym as _rgym  # after .base: they subclass its Kind

__all__ = ["Grade", "Kind", "KindTexts", "KINDS", "get", "names", "register", "registered", "validate"]

register(_math.MATH)
register(_code.CODE)
register(_rgym.RG)
