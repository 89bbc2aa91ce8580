"""Task families whose scripted reasoner succeeds only under a family-specific plan (no torch import).

Every :class:`Family` has its own question template and its own *required plan*. The
:class:`FamilyReasoner` writes the planned strategy's example step each round and, on termination,
boxes the right answer only if the strategies planned before termination equal the family's
(``plan[:-1]``); otherwise it boxes a wrong number. So no single plan solves more than one family,
and a planner scores above ``1 / len(families)`` only if its plan depends on the question.

:data:`DEFAULT_FAMILIES` with :class:`FamilyReasoner` is the default game of the Gymnasium planner view
(``rsim/Planner-v0``). :func:`family_split` gives it training and held-out problems disjoint by question
text, and :func:`family_game` builds the same game in the AEC API::

    env, reasoner = family_game("heldout", max_steps=4)   # rsim_env.env over the held-out problems

Problem ids are ``"<family>/<draw>/<i>"``, so :func:`algos.metrics.task_of` reads the family back.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Sequence

from pettingzoo import AECEnv

from rsim_env.env import env as aec_env
from rsim_env.problem import Problem
from rsim_env.strategies import STRATEGIES, TERMINATION, example, num_strategies

from .policies import TemplateReasoner

__all__ = ["Family", "DEFAULT_FAMILIES", "FAMILY_SETS", "FamilyReasoner", "family_problems", "family_split",
           "family_game", "families", "plan_names", "SPLITS"]

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


def _draw(fam: Family, rng: random.Random, draw: str, i: int) -> Problem:
    """One problem of ``fam`` with operands in 2..99 from ``rng`` (id ``"<family>/<draw>/<i>"``)."""
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return Problem(id=f"{fam.name}/{draw}/{i}", question=fam.template.format(a=a, b=b),
                   answer=str(_OPS[fam.op](a, b)), source="families")


def family_problems(families: Sequence[Family], n: int, seed: int) -> list[Problem]:
    """``n`` problems drawn round-robin over ``families`` (ids ``"<family>/<seed>/<i>"``), operands in 2..99.

    Draws with different seeds may share question texts; :func:`family_split` gives disjoint ones.
    """
    if n < 1:
        raise ValueError(f"family_problems needs n >= 1, got {n}.")
    rng = random.Random(seed)
    return [_draw(families[i % len(families)], rng, str(seed), i) for i in range(n)]


SPLITS = ("train", "heldout")
"""The splits :func:`family_split` returns, in order (the names :func:`family_game` takes)."""


def family_split(families: Sequence[Family] = DEFAULT_FAMILIES, n_train: int = 64, n_heldout: int = 64,
                 seed: int = 0) -> tuple[list[Problem], list[Problem]]:
    """Training and held-out problems of ``families``, disjoint by question text.

    The training problems are ``family_problems(families, n_train, seed)`` (with the defaults: the 64 problems
    of the Gymnasium view's default game). The held-out problems are drawn round-robin from their own generator
    (ids ``"<family>/heldout<seed>/<i>"``), skipping every text already drawn, so no held-out question is a
    training question or repeats another held-out one.

    Raises:
        ValueError: ``n_heldout < 1``, or more held-out problems asked for than a family has unused texts.
    """
    if n_heldout < 1:
        raise ValueError(f"family_split needs n_heldout >= 1, got {n_heldout}.")
    train = family_problems(families, n_train, seed)
    seen = {p.question for p in train}
    rng, heldout, tries = random.Random(f"heldout/{seed}"), [], 0
    while len(heldout) < n_heldout:
        tries += 1
        if tries > 100 * (n_heldout + n_train):  # 98 x 98 operand pairs a family: only a huge n gets here
            raise ValueError(f"family_split could not draw {n_heldout} held-out problems unseen in {n_train} training "
                             "problems; ask for fewer (each family has 9,604 distinct questions).")
        p = _draw(families[len(heldout) % len(families)], rng, f"heldout{seed}", len(heldout))
        if p.question not in seen:
            seen.add(p.question)
            heldout.append(p)
    return train, heldout


def family_game(split: str = "train", families: Sequence[Family] = DEFAULT_FAMILIES,
                **env_kwargs: Any) -> tuple[AECEnv, "FamilyReasoner"]:
    """The family game in the AEC API: ``rsim_env.env`` over one split of :func:`family_split` and its reasoner.

    Args:
        split: ``"train"`` or ``"heldout"`` (:data:`SPLITS`).
        families: The families (default: :data:`DEFAULT_FAMILIES`, the Gymnasium view's default game).
        **env_kwargs: Passed to :func:`rsim_env.env` (``max_steps=4``, ``render_mode="ansi"``, ...).

    Returns:
        ``(env, reasoner)``: drive the planner yourself and let ``reasoner.act`` write the reasoner's steps.
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not a family split; choose one of {SPLITS}.")
    problems = family_split(families)[SPLITS.index(split)]
    return aec_env(problems=problems, **env_kwargs), FamilyReasoner(problems, families)


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
