"""Rule-based rewards from the paper: one small pure function per component, and a rubric of them.

Planner:  ``R_p = w_acc * R_acc + w_terminal * R_terminal + w_penalty * R_penalty``
Reasoner: ``R   = w_acc * R_acc + w_format * R_format + w_follow * R_follow``

A :class:`Component` is one weighted, named reward term: a function of the finished episode's
:class:`Facts`, the agents whose reward sums it, its weight. A :class:`Rubric` is the components an
episode is scored by (as the verifiers library's rubric: weighted named functions, weight 0 = logged
only). The paper's five are the rows of :data:`COMPONENTS`, weighted by :class:`RewardWeights`
(``--set env.weights.follow=0.5``); your own components are objects passed in, from your code, with
no edit here::

    from rsim_env import Component, EnvConfig, env

    brevity = Component("brevity", lambda f: float(len(f.final_step) < 400), agents=("reasoner",), weight=0.5)
    e = env(config=EnvConfig(components=(brevity,)))  # info["components"]["brevity"]; 0.5 of it in R

On the command line (where objects cannot go) a component is named by where it lives:
``rsim train --set env.components='["my_rewards:brevity"]'``. A component built with ``replaces=True``
takes the place of the paper's row of the same name (``Component("format", my_rule, ("reasoner",),
replaces=True)``) at its own weight.

Both sums, the no-planner zeroing and the logged components are computed from the rubric
(:func:`rubric`: the paper's rows at their configured weights, then the extra components), and nothing
changes a value after the rubric has run: an agent's reward is exactly its rubric's weighted sum. The
paper's ``format`` row (:func:`format_rule`) holds every format rule: a kind's own (code: a program that
parses), the echo rule (a copied ``\\boxed{answer}`` is no answer), then the boxed rule (:func:`r_format`).
"""

from __future__ import annotations

import importlib
import math
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Mapping, Sequence

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


def format_rule(facts: Facts) -> float:
    """The paper's ``format`` component: every format rule, in order.

    1. A kind with its own rule decides (``facts.kind_format``, the kind's ``Grade.format``: code scores 1.0
       when a program was extracted and parses).
    2. Otherwise a final step that mostly copies injected text (``facts.final_echo``) earns 0: a copied
       ``\\boxed{answer}`` is no answer format.
    3. Otherwise :func:`r_format` of the final step (a closed, non-empty ``\\boxed{...}``).
    """
    if facts.kind_format is not None:
        return float(facts.kind_format)
    if facts.final_echo:
        return 0.0
    return r_format(facts.final_step)


def r_follow(planned: Sequence[int], detected: Sequence[set[int]], void: Sequence[bool] | None = None) -> float:
    """Share of the plan's non-termination steps whose detected strategies include the planned one.

    Rules (documented contract; an audit of study episodes found each of these paid for nothing):

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
    kind_format: float | None = None
    """R_format by the problem kind's own rule (its ``Grade.format``; code: a program was extracted and
    parses); None = the kind leaves format to the boxed rule (math)."""
    final_echo: bool = False
    """The final step mostly copies injected text (:func:`rsim_env.echo.is_echo`)."""


AGENTS = ("planner", "reasoner")
"""Who a component's value can be paid to."""


@dataclass(frozen=True)
class Component:
    """One weighted, named reward term (a row of a :class:`Rubric`).

    Raises:
        ValueError: ``name`` is not an identifier, ``agents`` names someone other than ``planner`` /
            ``reasoner``, or ``weight`` is not a finite number.
        TypeError: ``fn`` is not callable.
    """

    name: str
    """Key in ``info["components"]`` (and, for the paper's rows, the field of :class:`RewardWeights`)."""
    fn: Callable[[Facts], float]
    """Unweighted value for one finished episode."""
    agents: tuple[str, ...]
    """Whose reward sums it (``"planner"``, ``"reasoner"``); ``()`` = logged only."""
    needs_plans: bool = False
    """Undefined without a planner: logged as 0 in no-planner mode."""
    weight: float = 1.0
    """Its weight in each listed agent's sum; 0 = logged only."""
    replaces: bool = False
    """True: in :func:`rubric` it takes the place of the paper's component of the same name (that row's
    position; its own agents, function and weight). False: a name the rubric has already is refused."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Component.name={self.name!r} must be an identifier (it is a metric and config key).")
        if not callable(self.fn):
            raise TypeError(f"Component {self.name!r}: fn={self.fn!r} must be callable as fn(facts) -> float.")
        agents = (self.agents,) if isinstance(self.agents, str) else tuple(self.agents)
        if not set(agents) <= set(AGENTS):
            raise ValueError(f"Component {self.name!r}: agents={self.agents!r}; use a subset of {AGENTS}.")
        object.__setattr__(self, "agents", agents)
        w = self.weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
            raise ValueError(f"Component {self.name!r}: weight={w!r} must be a finite number (0 = logged only).")
        if not isinstance(self.replaces, bool):
            raise TypeError(f"Component {self.name!r}: replaces={self.replaces!r} must be True or False.")


COMPONENTS: tuple[Component, ...] = (
    Component("acc", lambda f: r_acc(f.correct), ("planner", "reasoner")),
    Component("format", format_rule, ("reasoner",)),
    Component("follow", lambda f: r_follow(f.planned, f.detected, f.void), ("reasoner",), needs_plans=True),
    Component("terminal", lambda f: r_terminal(f.planned), ("planner",), needs_plans=True),
    Component("penalty", lambda f: r_penalty(f.planned), ("planner",), needs_plans=True),
)
"""The paper's components (weight 1 each; :func:`rubric` weights them by :class:`RewardWeights`)."""


@dataclass(frozen=True)
class Rubric:
    """The components an episode is scored by, in order (names unique).

    Raises:
        TypeError: an entry is not a :class:`Component`.
        ValueError: two components share a name.
    """

    components: tuple[Component, ...] = COMPONENTS
    """Every component: each is logged; each listed agent's reward is the weighted sum of its own."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", tuple(self.components))
        for c in self.components:
            if not isinstance(c, Component):
                raise TypeError(f"Rubric components must be rsim_env.rewards.Component objects, got {c!r}.")
        names = [c.name for c in self.components]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"Rubric: components {dup} appear twice; give each component its own name (or, to "
                             "replace one of the paper's, build yours with Component(..., replaces=True)).")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.components)

    def values(self, facts: Facts, planner: bool = True) -> dict[str, float]:
        """Every component for one finished episode, unweighted (plan-based ones are 0 without a planner).

        A component's exception propagates: a crashing reward is a bug to see, never a silent 0.
        """
        return {c.name: (float(c.fn(facts)) if planner or not c.needs_plans else 0.0) for c in self.components}

    def reward(self, agent: str, values: Mapping[str, float]) -> float:
        """Weighted sum of ``agent``'s components (those listing it) in ``values``."""
        return sum(c.weight * values[c.name] for c in self.components if agent in c.agents)

    def terms(self, agent: str) -> tuple[Component, ...]:
        """The components ``agent``'s reward sums."""
        return tuple(c for c in self.components if agent in c.agents)


def load_component(spec: str) -> tuple[Component, ...]:
    """The component(s) a ``"package.module:name"`` spec names: a :class:`Component`, or a sequence of them.

    Raises:
        ValueError: ``spec`` is not ``module:name``, the module or name is missing, or it is no Component.
    """
    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"reward component spec {spec!r} must be 'package.module:name' (a Component in that module).")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"reward component spec {spec!r}: {e}. Is the module on sys.path (run from its directory, "
                         "or pip install its package)?") from e
    found = (found,) if isinstance(found, Component) else tuple(found) if isinstance(found, (tuple, list)) else (found,)
    bad = [c for c in found if not isinstance(c, Component)]
    if bad:
        raise ValueError(f"reward component spec {spec!r} names {bad[0]!r}, not an rsim_env.rewards.Component.")
    return found


def rubric(weights: RewardWeights | None = None, extra: Sequence[Component | str] = ()) -> Rubric:
    """The paper's components at ``weights`` (default: the paper's, all 1), then ``extra`` at their own weights.

    ``extra`` holds :class:`Component` objects or ``"package.module:name"`` specs (:func:`load_component`).
    One built with ``replaces=True`` takes the place of the paper's row of its name, at its own weight.

    Raises:
        ValueError: A replacing component names no paper component, two replace the same one, or the
            replaced row's weight in ``weights`` is not 1 (two weights for one term: set it on the component).
    """
    w = weights or RewardWeights()
    mine = tuple(c for x in extra for c in (load_component(x) if isinstance(x, str) else (x,)))
    paper = {c.name: replace(c, weight=getattr(w, c.name)) for c in COMPONENTS}
    swaps: dict[str, Component] = {}
    for c in mine:
        if not isinstance(c, Component) or not c.replaces:
            continue  # Rubric refuses a non-Component, naming it
        if c.name not in paper:
            raise ValueError(f"Component {c.name!r} has replaces=True but the paper has no component of that name "
                             f"({sorted(paper)}); drop replaces=True to add it as a new component.")
        if c.name in swaps:
            raise ValueError(f"two components replace the paper's {c.name!r}; keep one.")
        if getattr(w, c.name) != 1.0:
            raise ValueError(f"RewardWeights.{c.name}={getattr(w, c.name)!r} weights the paper's {c.name!r}, which "
                             f"component {c.name!r} (replaces=True) replaces at its own weight {c.weight!r}; set the "
                             f"weight on the component and leave weights.{c.name} at 1.0.")
        swaps[c.name] = c
    rows = tuple(swaps.get(name, row) for name, row in paper.items())
    return Rubric(rows + tuple(c for c in mine if not (isinstance(c, Component) and c.replaces)))


def components(facts: Facts, planner: bool = True, rubric: Rubric | None = None) -> dict[str, float]:
    """Every component of ``rubric`` (default: the paper's) for one finished episode, unweighted."""
    return (rubric or PAPER).values(facts, planner)


def reward(agent: str, c: Mapping[str, float], w: RewardWeights = RewardWeights()) -> float:
    """Weighted sum of ``agent``'s paper components in ``c`` under the weights ``w``."""
    return rubric(w).reward(agent, c)


def planner_reward(c: Mapping[str, float], w: RewardWeights = RewardWeights()) -> float:
    """``R_p = R_acc + R_terminal + R_penalty`` (weighted)."""
    return reward("planner", c, w)


def reasoner_reward(c: Mapping[str, float], w: RewardWeights = RewardWeights()) -> float:
    """``R = R_acc + R_format + R_follow`` (weighted)."""
    return reward("reasoner", c, w)


PAPER = rubric()
"""The paper's rubric: the five components of :data:`COMPONENTS`, weight 1 each."""
