"""Rule-based rewards from the paper: one small pure function per component, and a table of them.

Planner:  ``R_p = w_acc * R_acc + w_terminal * R_terminal + w_penalty * R_penalty``
Reasoner: ``R   = w_acc * R_acc + w_format * R_format + w_follow * R_follow``

:data:`COMPONENTS` is the single source of truth: each row names a component, the agents whose
reward includes it, and whether it needs the planner's plans. Both sums, the no-planner zeroing
and the logged components are computed from it. A new component is one function, one row, and
its weight field in :class:`RewardWeights` — all in this file.

Weights default to 1 (the paper). A weight of 0 keeps the component logged but out of the sum.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from .answers.extract import boxed_spans
from .strategies import TERMINATION
from .validation import check_finite


def r_acc(correct: bool) -> float:
    """1.0 if the extracted final answer equals the ground truth (see :mod:`rsim_env.answers`)."""
    return 1.0 if correct else 0.0


def r_format(final_step: str) -> float:
    """1.0 if the final step ends its answer in a closed, non-empty ``\\boxed{...}`` (or ``\\fbox``).

    ``\\boxed{}`` (empty or blank), an unclosed ``\\boxed{`` and a bare number score 0: the format
    reward is for stating an answer, not for writing the macro.
    """
    spans = boxed_spans(final_step[-20_000:])
    return 1.0 if spans and spans[-1][2].strip() else 0.0


def r_follow(planned: Sequence[int], detected: Sequence[set[int]], void: Sequence[bool] | None = None) -> float:
    """Share of the plan's non-termination steps whose detected strategies include the planned one.

    Rules (documented contract; issue 19's audit found each of these paid for nothing):

    * ``detected`` must come from the text the reasoner generated with echoes of injected text removed
      (:func:`rsim_env.echo.detect_generated`, as :class:`rsim_env.game.Episode` does): a step that
      repeats its instruction follows nothing.
    * Steps planned as **termination** are skipped (neither numerator nor denominator): giving the answer
      is what R_format (a closed, non-empty box; a program that parses) and R_acc pay for, and under the
      lead-in protocols the injected ``The final answer is \\boxed{`` makes closing the box all that
      "following" termination would take. So a one-step plan earns no follow, and a wrong one-step guess
      (R_format only) never out-earns an honest attempt that performs any of its steps.
    * A ``void`` step (vacuous or a self-repeat, :mod:`rsim_env.novelty`) follows nothing.

    Returns 0.0 when no step is planned as something other than termination.
    """
    if len(planned) != len(detected):
        raise ValueError(f"r_follow: {len(planned)} plans but {len(detected)} detected sets; pass one per step.")
    void = [False] * len(planned) if void is None else list(void)
    if len(void) != len(planned):
        raise ValueError(f"r_follow: {len(planned)} plans but {len(void)} void flags; pass one per step.")
    scored = [(p, d, v) for p, d, v in zip(planned, detected, void) if p != TERMINATION]
    if not scored:
        return 0.0
    return sum(p in d and not v for p, d, v in scored) / len(scored)


def r_terminal(planned: Sequence[int]) -> float:
    """+1.0 if the final plan is termination, else -1.0 (also -1.0 for no plans)."""
    return 1.0 if planned and planned[-1] == TERMINATION else -1.0


def r_penalty(planned: Sequence[int]) -> float:
    """Minus the share of the most frequent strategy among the plans (0.0 for no plans)."""
    if not planned:
        return 0.0
    return -Counter(planned).most_common(1)[0][1] / len(planned)


@dataclass(frozen=True)
class RewardWeights:
    """Weights of each reward component (1.0 = paper; 0.0 = logged only)."""

    acc: float = 1.0
    """Weight of R_acc (shared by both agents)."""
    format: float = 1.0
    """Weight of R_format (reasoner)."""
    follow: float = 1.0
    """Weight of R_follow (reasoner)."""
    terminal: float = 1.0
    """Weight of R_terminal (planner)."""
    penalty: float = 1.0
    """Weight of R_penalty (planner)."""

    def __post_init__(self) -> None:
        check_finite(self)
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"RewardWeights.{name}={value!r} must be a finite number (e.g. 1.0).")
        missing = {c.name for c in COMPONENTS} - set(asdict(self))
        if missing:  # internal invariant: every component has a weight
            raise AssertionError(f"RewardWeights lacks weights for components {sorted(missing)}.")


@dataclass(frozen=True)
class Facts:
    """What a finished episode offers the reward components."""

    correct: bool
    """Whether the extracted final answer equals the ground truth."""
    final_step: str
    """Text of the last step."""
    planned: Sequence[int] = ()
    """Planned strategy per step (empty without a planner)."""
    detected: Sequence[set[int]] = field(default_factory=tuple)
    """Detected strategies per step (empty without a planner)."""
    void: Sequence[bool] | None = None
    """Per step: vacuous or a self-repeat (:mod:`rsim_env.novelty`), so it follows nothing; None = none are."""


@dataclass(frozen=True)
class Component:
    """One row of :data:`COMPONENTS`."""

    name: str
    """Key in ``info["components"]`` and field of :class:`RewardWeights`."""
    fn: Callable[[Facts], float]
    """Unweighted value for one episode."""
    agents: tuple[str, ...]
    """Whose reward sums it ("planner", "reasoner")."""
    needs_plans: bool = False
    """Undefined without a planner: logged as 0 in no-planner mode."""


COMPONENTS: tuple[Component, ...] = (
    Component("acc", lambda f: r_acc(f.correct), ("planner", "reasoner")),
    Component("format", lambda f: r_format(f.final_step), ("reasoner",)),
    Component("follow", lambda f: r_follow(f.planned, f.detected, f.void), ("reasoner",), needs_plans=True),
    Component("terminal", lambda f: r_terminal(f.planned), ("planner",), needs_plans=True),
    Component("penalty", lambda f: r_penalty(f.planned), ("planner",), needs_plans=True),
)
"""Every reward component (see module docstring)."""


def components(facts: Facts, planner: bool = True) -> dict[str, float]:
    """Every component for one finished episode, unweighted (plan-based ones are 0 without a planner)."""
    return {c.name: (c.fn(facts) if planner or not c.needs_plans else 0.0) for c in COMPONENTS}


def reward(agent: str, c: dict[str, float], w: RewardWeights = RewardWeights()) -> float:
    """Weighted sum of ``agent``'s components (rows of :data:`COMPONENTS` that list it)."""
    return sum(getattr(w, comp.name) * c[comp.name] for comp in COMPONENTS if agent in comp.agents)


def planner_reward(c: dict[str, float], w: RewardWeights = RewardWeights()) -> float:
    """``R_p = R_acc + R_terminal + R_penalty`` (weighted)."""
    return reward("planner", c, w)


def reasoner_reward(c: dict[str, float], w: RewardWeights = RewardWeights()) -> float:
    """``R = R_acc + R_format + R_follow`` (weighted)."""
    return reward("reasoner", c, w)
