"""The one scoring function: :func:`score` turns an episode's texts into its reward components.

The env (:meth:`rsim_env.game.Episode.outcome`), the TRL bridge (:mod:`rsim_env.integrations.trl_rewards`, which replays
a completion as an episode) and the viewer (:mod:`algos.viewer.load`, for files that lack a component)
all call it, so the same texts get the same numbers everywhere (``tests/test_trl_rewards.py`` checks it
for every protocol and kind). What it reads from an :class:`~rsim_env.record.EpisodeRecord`: the problem
fields (kind, question, answer) and per step the planned strategy, the injected text, the generated
text and the step as shown. Everything else -- detection, echo, novelty, the grade -- is computed here:

* detection: the kind's rule (:meth:`rsim_env.kinds.Kind.detect`: echo-aware for prose);
* echo: :func:`rsim_env.echo.is_echo` of each generated step;
* novelty: :func:`rsim_env.novelty.assess` (vacuous and self-repeating steps follow nothing);
* grade: the kind grades its :meth:`~rsim_env.kinds.Kind.graded_steps` against the problem, under
  :data:`DEFAULT_CHECK` unless told otherwise (fallback off, ``require_evaluated`` on);
* components: the rubric's (:class:`rsim_env.rewards.Rubric`, default the paper's), computed from
  :class:`rsim_env.rewards.Facts` and never changed afterwards. The facts carry what the format rules need
  (the kind's own rule, ``Grade.format``, and whether the final step is an echo); the paper's ``format``
  component applies them (:func:`rsim_env.rewards.format_rule`), so a rubric that reweights or replaces
  ``format`` is obeyed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from . import answers, echo, kinds, novelty, rewards
from .kinds import Grade
from .strategies import TERMINATION

if TYPE_CHECKING:
    from .problem import Problem
    from .record import EpisodeRecord

__all__ = ["Components", "DEFAULT_CHECK", "score"]

DEFAULT_CHECK = answers.CheckConfig(last_number_fallback=False, require_evaluated=True)
"""The env's answer check (``EnvConfig.check``'s default): an answer must be stated, and evaluated."""


@dataclass(frozen=True)
class Components:
    """What :func:`score` finds in one finished episode."""

    values: dict[str, float]
    """Every unweighted reward component of the rubric it was scored by, in the rubric's order."""
    grade: Grade
    """The final answer's grade (correct, extracted answer, reason, tests fraction)."""
    detected: tuple[tuple[int, ...], ...]
    """Per step: strategies the generated text shows (sorted)."""
    echo: tuple[bool, ...]
    """Per step: the generated text mostly copies injected text."""
    vacuous: tuple[bool, ...]
    """Per step: adds no content unit to its context."""
    self_repeat: tuple[bool, ...]
    """Per step: mostly repeats the episode's earlier steps."""

    def rewards(self, rubric: rewards.Rubric = rewards.PAPER, planner: bool = True) -> dict[str, float]:
        """Each agent's weighted reward under ``rubric`` (the one it was scored by; the planner earns 0 without a planner)."""
        return {"planner": rubric.reward("planner", self.values) if planner else 0.0,
                "reasoner": rubric.reward("reasoner", self.values)}


def score(record: EpisodeRecord, problem: Problem | None = None, check: answers.CheckConfig | None = None,
          grade: Grade | None = None, grader: Callable[..., Grade] | None = None,
          rubric: rewards.Rubric = rewards.PAPER) -> Components:
    """Reward components of ``record``'s texts (see module docstring).

    Args:
        record: The episode; only its problem fields and per-step texts and plans are read.
        problem: What to grade against (code needs its tests); default :meth:`EpisodeRecord.problem`.
        check: Answer-check settings of math answers; default :data:`DEFAULT_CHECK`.
        grade: A grade already known (a saved file's stored outcome), used instead of grading again.
        grader: Called as ``grader(problem, graded_steps, check)`` instead of the kind's ``grade`` (e.g. a
            :class:`rsim_env.grading.GradeCache`); it must return what the kind's grade would.
        rubric: The components to compute (default: the paper's; an env's is ``EnvConfig.rubric``).

    Raises:
        ValueError: The record's steps are inconsistent, or ``problem`` is needed and cannot be rebuilt
            (a code record carries no tests: pass the problem).
    """
    kind = kinds.get(record.kind)
    steps, shown, injected = list(record.steps), list(record.shown_steps), list(record.injected)
    if not len(steps) == len(shown) == len(injected):
        raise ValueError(f"record {record.problem_id!r}: {len(steps)} steps, {len(shown)} shown, {len(injected)} "
                         "injected texts; a record needs one of each per step.")
    if record.planner and len(record.strategies) != len(steps):
        raise ValueError(f"record {record.problem_id!r}: {len(record.strategies)} strategies for {len(steps)} steps.")
    planned = list(record.strategies) if record.planner else [TERMINATION] * len(steps)
    detected = [kind.detect(z, s, i) for z, s, i in zip(steps, shown, injected)]
    echoes = [echo.is_echo(z) for z in steps]
    # The kind says which text is graded (math: the steps as shown, a lead-in such as "The final answer is
    # \\boxed{" belongs to the answer; code: the last step preceded by its lead-in only when that opened the
    # fenced block -- as its sandbox prefetch does, EnvGroup and ``Episode.finishes_with``).
    graded = kind.graded_steps(steps, shown, injected)
    if grade is None:
        grade = (grader if grader is not None else kind.grade)(problem if problem is not None else record.problem(), graded,
                                       check or DEFAULT_CHECK)
    fresh = novelty.assess(record.question, steps, planned, detected, shown, injected, kind.name)
    facts = rewards.Facts(bool(grade.correct), graded[-1] if graded else "", planned if record.planner else [],
                          detected if record.planner else [], fresh.void if record.planner else None,
                          kind_format=grade.format, final_echo=bool(echoes and echoes[-1]))
    values = rubric.values(facts, planner=record.planner)  # plan-based ones are 0 without plans
    return Components(values, grade, tuple(tuple(sorted(d)) for d in detected), tuple(echoes), fresh.vacuous,
                      fresh.self_repeat)
