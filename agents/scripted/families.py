"""Task families whose scripted reasoner succeeds only under a family-specific plan (no torch import).

The contextual learning-sanity case (``studies/contextual_sanity.py``, ``tests/test_contextual.py``):
every :class:`Family` has its own question template and its own *required plan*. The
:class:`FamilyReasoner` writes the planned strategy's example step each round and, on termination,
boxes the right answer only if the strategies planned before termination equal the family's
(``plan[:-1]``); otherwise it boxes a wrong number. So no single plan solves more than one family,
and a planner scores above ``1 / len(families)`` only if its plan depends on the question.

Problem ids are ``"<family>/<seed>/<i>"``, so :func:`algos.metrics.task_of` reads the family back.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

from rsim_env.sources.problems import Problem
from rsim_env.strategies import STRATEGIES, TERMINATION, example, num_strategies

from .policies import TemplateReasoner

__all__ = ["Family", "DEFAULT_FAMILIES", "FAMILY_SETS", "FamilyReasoner", "family_problems", "families", "plan_names"]

_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


@dataclass(frozen=True)
class Family:
    """One task family: how its questions read and the only plan under which they are solved."""

    name: str
    """Family name (the problem-id prefix; no ``/``)."""
    template: str
    """Question text with ``{a}`` and ``{b}`` (e.g. ``"Add {a} and {b}."``)."""
    op: str
    """How the gold answer is computed from a and b: one of ``+``, ``-``, ``*``."""
    plan: tuple[int, ...]
    """Strategy indices of the only solving plan; must end with termination."""

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"Family.name={self.name!r} is invalid: use a non-empty name without '/'.")
        if "{a}" not in self.template or "{b}" not in self.template:
            raise ValueError(f"Family.template={self.template!r} must contain {{a}} and {{b}}.")
        if self.op not in _OPS:
            raise ValueError(f"Family.op={self.op!r} is invalid: choose one of {sorted(_OPS)}.")
        bad = [s for s in self.plan if not (isinstance(s, int) and 0 <= s < num_strategies())]
        if not self.plan or bad or self.plan[-1] != TERMINATION or TERMINATION in self.plan[:-1]:
            raise ValueError(f"Family.plan={self.plan!r} is invalid: strategy indices 0..{num_strategies() - 1} "
                             f"with termination ({TERMINATION}) last and only last.")


DEFAULT_FAMILIES: tuple[Family, ...] = (
    Family("add", "Add {a} and {b}.", "+", (3, TERMINATION)),  # validation, termination
    Family("mul", "Multiply {a} by {b}.", "*", (1, 5, TERMINATION)),  # decomposition, prioritization, termination
)
"""Two families with different solving plans (``[3, 8]`` and ``[1, 5, 8]``)."""


FAMILY_SETS: dict[str, tuple[Family, ...]] = {
    "default": DEFAULT_FAMILIES,
    # both plans two rounds long: equally hard to find by chance (1/81), so a failure is about conditioning
    "two_step": (Family("add", "Add {a} and {b}.", "+", (3, TERMINATION)),
                 Family("mul", "Multiply {a} by {b}.", "*", (1, TERMINATION))),
    "three": DEFAULT_FAMILIES + (Family("sub", "Subtract {b} from {a}.", "-", (6, TERMINATION)),),
}
"""Named family sets (``studies.contextual_sanity --families NAME``)."""


def families(name: str) -> tuple[Family, ...]:
    """The family set ``name`` of :data:`FAMILY_SETS`."""
    if name not in FAMILY_SETS:
        raise ValueError(f"unknown family set {name!r}; choose one of {sorted(FAMILY_SETS)}.")
    return FAMILY_SETS[name]


def plan_names(plan: Sequence[int]) -> list[str]:
    """Strategy names of ``plan``."""
    return [STRATEGIES[s].name for s in plan]


def family_problems(families: Sequence[Family], n: int, seed: int) -> list[Problem]:
    """``n`` problems drawn round-robin over ``families`` (ids ``"<family>/<seed>/<i>"``), operands in 2..99."""
    if n < 1:
        raise ValueError(f"family_problems needs n >= 1, got {n}.")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        fam = families[i % len(families)]
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        out.append(Problem(id=f"{fam.name}/{seed}/{i}", question=fam.template.format(a=a, b=b),
                           answer=str(_OPS[fam.op](a, b)), source="families"))
    return out


class FamilyReasoner(TemplateReasoner):
    """Templated steps; the boxed answer is right only after the problem's family plan (see module docstring).

    Args:
        problems: every problem it may be asked (its question identifies the family and the answer).
        families: the families those problems come from.
    """

    def __init__(self, problems: Sequence[Problem], families: Sequence[Family] = DEFAULT_FAMILIES) -> None:
        super().__init__()
        by_name = {f.name: f for f in families}
        self.known: dict[str, tuple[Family, str]] = {}
        self.add(problems, by_name)

    def add(self, problems: Sequence[Problem], families: dict[str, Family]) -> None:
        """Register more problems (``families``: name -> :class:`Family`)."""
        for p in problems:
            name = p.id.split("/")[0]
            if name not in families:
                raise ValueError(f"problem {p.id!r} names family {name!r}, not one of {sorted(families)}.")
            self.known[p.question] = (families[name], p.answer)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        out = []
        for obs in observations:
            s = int(obs["strategy"])
            if s != TERMINATION:
                out.append(example(s))
                continue
            if obs["question"] not in self.known:
                raise ValueError(f"FamilyReasoner was not given the problem {obs['question']!r}; pass it in problems.")
            fam, gold = self.known[obs["question"]]
            answer = gold if tuple(int(x) for x in obs["strategies"]) == fam.plan[:-1] else f"{gold}1"
            if str(obs.get("injected", "")).endswith("\\boxed{"):  # the protocol's lead-in opened the box
                out.append(answer + "}.")
            else:
                out.append(example(TERMINATION, answer))
        return out
