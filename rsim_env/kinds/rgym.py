"""The ``rg`` kind: a reasoning-gym task graded by its generator's own ``score_answer``.

For generators whose gold is not a number -- lists, words, strings, yes/no, expressions -- the math
checker is the wrong judge (it gives full credit to ``[3, 2, 1]`` for the sorted list ``[1, 2, 3]``: both
are the same set). This kind asks for the answer in ``\\boxed{}`` like math, and grades by the task's own rules:

* texts: "the final answer in the form the task asks for, inside ``\\boxed{}``"; the termination lead-in,
  stop rule and scripted final step are math's (:class:`~rsim_env.kinds.math.MathKind`);
* extraction (:func:`extract`): the last ``<answer>...</answer>``, else the last ``\\boxed{}``, else the
  rest of the line after the last "the answer is"; a whole-answer ``\\text{...}`` wrapper is dropped
  (``\\boxed{\\text{Yes}}`` answers ``Yes``); nothing is parsed here;
* bounds: an answer longer than :func:`answer_cap` is not scored (``"too_long"``); the scorer runs in a
  worker process (:mod:`rsim_env.kinds.rg_worker`) of the project's
  :class:`~rsim_env.answers.sandbox.WorkerPool`, killed past ``CheckConfig.timeout_s`` (``"timeout"``) and
  capped in memory -- no ``signal`` timeouts, so grading works from any thread;
* grade: ``correct`` only for a full score (``== 1.0``); the score itself, partial credit included, is
  ``Grade.fraction`` (``info["tests_fraction"]``); ``reason`` is ``"ok"`` when the scorer ran, else
  ``"no_answer"``, ``"too_long"``, ``"refused"``, ``"scorer_error"`` or a pool failure (``"timeout"``,
  ``"overloaded"``, ``"worker_crashed"``, ``"protocol_error"``, ``"worker_error"``);
* a problem carries what re-creates its entry: ``metadata["rg"] = {"dataset", "config", "seed", "size",
  "index"}`` (plain JSON; :func:`spec`). The worker re-creates the entry and checks its question.

Audit of the scorers (reasoning-gym 0.1.25; ``grep -rnE "eval\\(|exec\\(|parse_expr|sympify"`` over the
package, then the flagged ``score_answer`` methods read). No scorer outside these calls ``eval``, ``exec``
or sympy on the answer; the rest compare strings, split on commas, ``json.loads``, ``float``/``int``/
``complex``, regexes, or their own small parsers (``propositional_logic``: a recursive-descent parser
that raises ``RecursionError`` on deep brackets -- reported as ``"scorer_error"``):

==========================================================  ===============================================
generators                                                  how the scorer reads the answer; our choice
==========================================================  ===============================================
``binary_matrix``, ``n_queens``, ``spiral_matrix``,         Python ``eval(answer)`` on the partial-credit
``string_insertion`` (:data:`~.rg_worker.PYTHON_EVAL`)      path. Run in the worker only, and only when
                                                            ``eval`` can run no code
                                                            (:func:`~.rg_worker.literal_only`); else
                                                            ``"refused"`` (score 0: that path pays 0.1-0.5
                                                            at most, never full credit).
``countdown``, ``puzzle24``, ``polynomial_multiplication``,  ``sympy.parse_expr(answer)`` (``eval`` of a
``simple_integration``, ``intermediate_integration``         rewritten answer; unsafe on untrusted text).
(:data:`REFUSED`)                                           Refused: never graded by this kind; automatic
                                                            selection leaves them on the math kind.
``number_sorting``                                          ``json.loads`` of the answer; ``eval`` only of
                                                            the gold. Enabled.
==========================================================  ===============================================
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading
from typing import TYPE_CHECKING, Sequence

from .. import answers
from . import rg_tasks, scorer_check
from ..answers.extract import from_answer_is, last_answer_tag, boxed_spans
from ..answers.sandbox import ProtocolError, WorkerFailure, WorkerPool
from .base import Grade, Kind, KindTexts
from .math import MathKind
from .rg_tasks import HASH_SEED, REFUSED, is_number, spec  # noqa: F401  (re-exported: the kind's vocabulary)

if TYPE_CHECKING:
    from ..problem import Problem

__all__ = ["RG", "REFUSED", "MAX_ANSWER_CHARS", "answer_cap", "extract", "is_number", "score", "spec"]

MAX_ANSWER_CHARS = 4096
"""Answers longer than ``max(MAX_ANSWER_CHARS, 2 * len(gold))`` are not scored (``"too_long"``)."""
WORKER_ARGV = (sys.executable, "-m", "rsim_env.kinds.rg_worker")
POOL_SIZE_ENV = "RSIM_RG_WORKERS"
_REPLY_REASONS = ("ok", "refused", "scorer_error", "worker_error")
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm)\{([^{}]*)\}")

SYSTEM = (
    "You are a careful problem solver. Solve the task one step at a time. Before each step you get an "
    "instruction in parentheses; write only that one step, briefly, then a blank line. When told to "
    "conclude, give the final answer, exactly in the form the task asks for, as \\boxed{answer}."
)
STEPWISE_SYSTEM = (
    "You are a careful problem solver. Solve the task one short step at a time, following the instructions "
    "you are given. When asked for the final answer, put it inside \\boxed{}, exactly in the form the task asks for."
)
NO_PLANNER_SYSTEM = (
    "You are a careful problem solver. Solve the task step by step, then put the final answer inside "
    "\\boxed{}, exactly in the form the task asks for."
)


def answer_cap(gold: str) -> int:
    """Longest answer that is scored: :data:`MAX_ANSWER_CHARS`, or twice the gold when that is longer."""
    return max(MAX_ANSWER_CHARS, 2 * len(gold))


def extract(response: str) -> str | None:
    """The final answer: the last ``<answer>`` tag, else the last ``\\boxed{}``, else "the answer is ...".
    Linear time on the last :data:`rsim_env.answers.extract.MAX_SCAN` characters; nothing is parsed."""
    from ..answers.extract import MAX_SCAN

    text = response[-MAX_SCAN:].replace("\x00", "")
    inner = last_answer_tag(text)
    if inner is None:
        spans = boxed_spans(text)
        found = from_answer_is(text) if not spans else None
        inner = spans[-1][2] if spans else found.text if found else None
    if inner is None:
        return None
    wrapped = _TEXT_WRAP.fullmatch(inner.strip())  # \boxed{\text{Yes}}: the markup is not part of the answer
    return (wrapped.group(1) if wrapped else inner).strip()


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def _pool() -> WorkerPool:
    """The process-wide pool of scorer workers (``RSIM_RG_WORKERS``, default 4), closed at exit."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            raw = os.environ.get(POOL_SIZE_ENV, "4")
            if not raw.isdigit() or int(raw) < 1:
                raise ValueError(f"{POOL_SIZE_ENV}={raw!r}; set it to a positive number of worker processes.")
            _POOL = WorkerPool(max_workers=int(raw), argv=WORKER_ARGV, env={"PYTHONHASHSEED": HASH_SEED})
            atexit.register(_POOL.close)
        return _POOL


def score(problem: Problem, answer: str, timeout_s: float) -> tuple[float, str]:
    """``(score, reason)`` of ``answer`` by the problem's generator, in a worker, within ``timeout_s``.

    Raises:
        RuntimeError: The entry cannot be re-created, or not as the problem has it (another
            reasoning-gym version or config): the problem, not the answer, is wrong.
    """
    if len(answer) > answer_cap(problem.answer):
        return 0.0, "too_long"
    rg = problem.metadata["rg"]
    request = {**rg, "question": problem.question, "answer": answer}
    try:
        reply = _pool().run(request, timeout_s)
        if reply.get("reason") in ("bad_request", "entry_mismatch"):
            raise RuntimeError(f"problem {problem.id!r}: cannot re-create its reasoning-gym entry "
                               f"({reply['reason']}: {reply.get('detail')}); regenerate the problems.")
        value = reply.get("score")
        if reply.get("reason") not in _REPLY_REASONS or isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProtocolError(f"unexpected scorer reply {str(reply)[:120]}")
    except WorkerFailure as exc:
        return 0.0, exc.reason
    return float(value), reply["reason"]


def make_entries(dataset: str, size: int, seed: int, config: dict) -> tuple[tuple[str, str], ...]:
    """``(question, answer)`` of the dataset's entries, made by this kind's workers (started under
    ``PYTHONHASHSEED=0``): the route of :func:`rsim_env.kinds.rg_tasks.entries` in a process started without it."""
    out: list[tuple[str, str]] = []
    chunk = rg_tasks.ENTRIES_CHUNK
    while len(out) < size:
        req = {"op": "entries", "dataset": dataset, "config": config, "seed": seed, "size": size, "start": len(out),
               "stop": len(out) + chunk}
        try:
            reply = _pool().run(req, rg_tasks.ENTRIES_TIMEOUT_S)
        except ProtocolError as exc:
            if chunk > 1 and "longer than" in str(exc):  # long questions: fewer entries per reply line
                chunk //= 2
                continue
            raise RuntimeError(f"making reasoning-gym {dataset!r} failed in a worker: {exc}") from None
        except WorkerFailure as exc:
            raise RuntimeError(f"making reasoning-gym {dataset!r} (size {size}) failed in a worker: {exc.reason} "
                               f"({exc}); lower the size.") from None
        if reply.get("reason") != "ok":
            raise ValueError(f"reasoning-gym {dataset!r} with {config}: {reply.get('detail')}")
        if not reply["entries"]:
            break  # the dataset has fewer entries than asked
        out += [(str(q), str(a)) for q, a in reply["entries"]]
    return tuple(out)


rg_tasks.set_entries_maker(make_entries)


def check_scorer(dataset: str, config: dict, seed: int, samples: int) -> list[str]:
    """The scorer sanity check's failures (:func:`rsim_env.kinds.scorer_check.check`), computed in this kind's workers
    (started under ``PYTHONHASHSEED=0``): the route of a process started without it."""
    req = {"op": "scorer_check", "dataset": dataset, "config": config, "seed": seed, "samples": samples}
    try:
        reply = _pool().run(req, rg_tasks.ENTRIES_TIMEOUT_S)
    except (ProtocolError, WorkerFailure) as exc:
        raise RuntimeError(f"checking the scorer of reasoning-gym {dataset!r} failed in a worker: {exc}") from None
    if reply.get("reason") != "ok":
        raise ValueError(f"reasoning-gym {dataset!r} with {config}: {reply.get('detail')}")
    return [str(f) for f in reply["failures"]]


scorer_check.set_worker_check(check_scorer)


class ReasoningGymKind(MathKind):
    """See module docstring."""

    name = "rg"
    texts = KindTexts(SYSTEM, STEPWISE_SYSTEM, NO_PLANNER_SYSTEM,
                      "Give the final answer: put it inside \\boxed{}, exactly in the form the task asks for.",
                      MathKind.texts.termination_lead, MathKind.texts.termination_prompt)

    def validate(self, problem: Problem) -> None:
        rg = problem.metadata.get("rg")
        want = {"dataset": str, "config": dict, "seed": int, "size": int, "index": int}
        if not isinstance(rg, dict) or any(not isinstance(rg.get(k), t) or isinstance(rg.get(k), bool)
                                           for k, t in want.items()):
            raise ValueError(f"rg problem {problem.id!r} needs metadata['rg'] = {{'dataset': str, 'config': dict, "
                             f"'seed': int, 'size': int, 'index': int}} (rsim_env.kinds.rgym.spec), got {rg!r:.200}.")
        if rg["dataset"] in REFUSED:
            raise ValueError(f"rg problem {problem.id!r}: the {rg['dataset']!r} scorer runs sympy.parse_expr on "
                             "the answer, which is unsafe on model text; grade it with kind='math'.")

    def grade(self, problem: Problem, steps: Sequence[str], check: answers.CheckConfig | None = None) -> Grade:
        """Score the extracted answer with the generator's ``score_answer`` (``check``: only its ``timeout_s``)."""
        found = extract("\n\n".join(steps))
        if not found:
            return Grade(False, None, None, "no_answer", None)
        value, reason = score(problem, found, (check or answers.CheckConfig()).timeout_s)
        shown = found if reason != "too_long" else found[:200] + "..."  # info keeps a bounded prefix
        if reason != "ok":
            return Grade(False, None, shown, reason, None)
        return Grade(value == 1.0, None, shown, reason, value)

    def content_units(self, text: str) -> frozenset[str]:
        """Normalised words (numbers included): a list or a word is content, not only numbers."""
        return Kind.content_units(self, text)

    def wrong_answer(self, gold: str) -> str:
        """The gold with its characters reversed (a wrong order), or with ``x`` appended if that is the same."""
        flipped = gold[::-1]
        return flipped if flipped != gold else f"{gold}x"


RG = ReasoningGymKind()
