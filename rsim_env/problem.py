"""The :class:`Problem` record: one question with its ground truth, as plain data.

A *problem source* is any object with ``__len__`` and ``__getitem__(i) -> Problem`` (a plain ``list`` of problems
works); on ``reset(seed=...)`` the environment picks an index with a generator seeded by ``seed`` (same seed, same
problem). The sources themselves live in :mod:`rsim_env.sources`. This module imports nothing of rSIM: it is the
bottom layer that every other one reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

ANSWER_TYPES = ("auto", "number", "expression", "choice", "bool", "list", "text")
"""Answer types understood by :func:`rsim_env.answers.check` (``auto`` guesses from the gold)."""


@dataclass(frozen=True)
class Problem:
    """One question with its ground truth.

    Attributes:
        id: Stable identifier, unique within its source (e.g. ``"gsm_symbolic/17"``).
        question: The question text shown to both agents.
        answer: Ground truth as the dataset writes it (``"72"``, ``"\\frac{1}{2}"``, ``"B"``).
        answer_type: One of :data:`ANSWER_TYPES`; tells the checker how to compare.
        source: Name of the dataset or generator the problem came from.
        choices: Multiple-choice options in letter order, empty when not multiple choice.
        metadata: Free-form JSON-serialisable extras (difficulty, reference solution, ...).
        kind: A registered kind (:data:`rsim_env.kinds.KINDS`: math, code); decides the answer-asking
            texts and how the episode is graded. A Problem is plain data: the kind is checked by
            :func:`rsim_env.kinds.validate`, which the loaders and :class:`~rsim_env.game.Episode` run.
        tests: Code problems: HumanEval-style source defining ``check(candidate)`` (see
            :func:`rsim_env.code.execute`); ``answer`` then holds a reference solution (or "").
        entry_point: Code problems: the function the program must define.
    """

    id: str
    question: str
    answer: str
    answer_type: str = "auto"
    source: str = "custom"
    choices: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    kind: str = "math"
    tests: str = ""
    entry_point: str = ""

    def __post_init__(self) -> None:
        for name in ("id", "question", "answer", "source"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Problem.{name} must be str, got {type(value).__name__} ({value!r:.60}).")
        if not self.question.strip():
            raise ValueError(f"Problem {self.id!r} has an empty question; every problem needs question text.")
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(
                f"Problem.answer_type={self.answer_type!r} is not one of {ANSWER_TYPES}; "
                "use 'auto' if unsure."
            )
        object.__setattr__(self, "choices", tuple(self.choices))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (inverse of ``Problem(**d)``)."""
        d = asdict(self)
        d["choices"] = list(self.choices)
        return d
