"""``check``: extract, normalise, then decide equivalence -- fast in-process, sympy in a worker.

Flow: :func:`.extract.extract` finds the final answer (an empty ``<answer></answer>`` or
``\\boxed{}`` is "no answer", never a cue to search the reasoning for numbers); a hedged answer
(``8 or 9``, ``(A) or (C)``) is refused; multiple-choice and boolean golds are compared as
letters/booleans; otherwise both sides are normalised (:mod:`.normalize`: Unicode math, units,
approximations, delimiters) and parsed by our own bounded parser (:mod:`.parser`, never
``sympify``). Answers whose physical units disagree (``5 m`` vs ``5 cm``) are wrong. If both
sides are plain numbers, exact rational arithmetic decides in-process in microseconds. Only when
that cannot decide (roots, pi, symbols, identities) does the sympy leaf run, in a killable worker
process (:mod:`.sandbox`) bounded by ``CheckConfig.timeout_s`` -- queue included, so a batch of
expression bombs cannot delay an ordinary check behind them.

Why not Math-Verify: it is the strongest public checker, but its parser goes through
``latex2sympy2_extended``/``sympify`` paths, its timeout is ``signal``-based (main thread only), and
it accepts hedged answers; see ``benchmarks/grading/answer_check.py`` for the side-by-side numbers.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..problem import ANSWER_TYPES
from .compare import equal
from .extract import choice_letter, extract
from .idioms import engineering_j, same_clock, within_rel_tol
from .normalize import is_hedged, normalize, normalize_with_unit
from .numeric import TooLarge, approx_equal, eval_fraction, literal_decimals
from .parser import MAX_CHARS, ParseError
from .sandbox import ProtocolError, WorkerFailure, default_pool
from .structure import BOOLS, parse_answer, split_top
from .units import conversion, units_conflict

_GOLD_LETTER = re.compile(r"^\(?([A-J])\)?$")
_WORDS = re.compile(r"[A-Za-z]{3,}(?: [A-Za-z]+){0,8}")
_PLAIN_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?|-?\\frac\{\d+\}\{\d+\}")
_NUMBER_LIKE = re.compile(r"[-+]?\s*\(?\s*[-+]?\d[\d,]*(?:\.\d+)?\s*\)?%?|[-+]?\d+\s*/\s*\d+|-?\\frac\{\d+\}\{\d+\}"
                          r"|[-+]?\d(?:\.\d+)?\s*\*\s*10\^\{?-?\d+\}?")
"""A number as a final answer: an integer or decimal (sign, brackets, percent), a fraction of two
integers, or scientific notation (``1.2 * 10^{3}``, as :func:`normalize` writes ``\\times``)."""
_ARITHMETIC = re.compile(r"\d\s*\)?\s*(?:[-+*/^]|\\cdot|\\div)\s*\(?\s*[-+]?\s*\d")
"""A binary operation between two numbers (``37 * 22``, ``-6 - -1``, ``2^3``)."""
WORKER_REASONS = ("ok", "unparsable", "too_large", "sympy_error", "worker_error")
"""Reasons a worker may reply with; anything else is a ``protocol_error``."""
REASONS = ("ok", "no_answer", "hedged", "unparsable", "too_large", "timeout", "sympy_error", "overloaded",
           "worker_crashed", "protocol_error", "worker_error", "unevaluated")
"""Every ``AnswerCheck.reason``, in a fixed order (the trainer logs a count of each per step)."""


@dataclass(frozen=True)
class CheckConfig:
    """Knobs of :func:`check`."""

    timeout_s: float = 3.0
    """Time bound for the sympy part of one check, waiting for a free worker included (the
    in-process fast path is microseconds; starting a new worker process is not charged)."""
    last_number_fallback: bool = True
    """Use the last number in the response when no explicit answer is found (GSM8K style)."""
    require_evaluated: bool = False
    """A plain-number gold needs a number, not an unevaluated computation (``37 * 22`` for 814 is then
    "unevaluated", not correct). Off here: as a test of mathematical equivalence ``2×3`` *is* 6. On in
    every reward (``EnvConfig.check``, ``rsim eval``, the TRL reward functions): a reasoner rewarded
    for the symbolic value learns to box the question's own expression (it did, in the efficacy
    study, in git at 42f3ab0). Equations are judged by their last side (``9 + 5 = 14`` answers 14)."""

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"CheckConfig.timeout_s={self.timeout_s!r}; it must be a positive number of seconds.")


@dataclass(frozen=True)
class AnswerCheck:
    """Result of :func:`check`.

    Attributes:
        correct: True only when the extracted answer is equivalent to the gold.
        extracted: The answer text found in the response (None when none was found).
        reason: One of :data:`REASONS`. Outcomes of the answer: ``"ok"`` (compared; see
            ``correct``), ``"no_answer"`` (nothing found, or an empty ``<answer>``/``\\boxed{}``),
            ``"hedged"`` (several candidate answers), ``"unparsable"``, ``"too_large"`` (a power,
            factorial or binomial past the size limit), ``"timeout"`` (this check's sympy work ran
            past ``timeout_s``), ``"sympy_error"`` (sympy raised on the value). Failures of the
            checker itself, never of the answer: ``"overloaded"`` (every worker stayed busy until
            this check's deadline), ``"worker_crashed"`` (the worker process died or did not
            start), ``"protocol_error"`` (garbled worker reply), ``"worker_error"`` (a bug raised
            inside the worker). ``"unevaluated"``: the gold is a number and the answer is a
            computation (``37 * 22``), see ``CheckConfig.require_evaluated``. All count as not correct; the trainer logs each per step as
            ``answers/reason/<reason>`` so checker failures are visible, not silent zeros.
        method: How the answer was found (``"boxed"``, ``"answer_tag"``, ``"answer_is"``,
            ``"choice"``, ``"last_statement"``, ``"last_number"``) or ``""``.
        elapsed: Wall time of the check in seconds.
    """

    correct: bool
    extracted: str | None
    reason: str
    method: str = ""
    elapsed: float = 0.0


def _fraction_leaf(p: tuple, g: tuple) -> bool | None:
    if p == g:
        return True
    a, b = eval_fraction(p), eval_fraction(g)
    if a is None or b is None:
        return None
    return approx_equal(a, literal_decimals(p), b, literal_decimals(g))


def _is_list(normalized: str) -> bool:
    """The gold lists several solutions or is a union of intervals, so "or" in an answer joins
    parts ("x = 2 or x = 3", "x < -1 or x > 0") instead of hedging between candidates."""
    return len(split_top(normalized, (",", ";", "\\cup"))) > 1


def _unevaluated(p: str, g: str) -> bool:
    """True when the gold is a plain number and the answer (its last side, for ``a = b = c``) is a
    computation between numbers rather than a number: ``\\boxed{37 * 22}`` restates the question
    ``37 * 22`` instead of answering it (an RL reasoner learned exactly that; see CheckConfig)."""
    if not _PLAIN_NUMBER.fullmatch(g):
        return False
    side = p.rsplit("=", 1)[-1].strip()
    return not _NUMBER_LIKE.fullmatch(side) and bool(_ARITHMETIC.search(side))


def _decide(pred: str, gold: str, answer_type: str, cfg: CheckConfig, rel_tol: float | None = None) -> tuple[bool, str]:
    """Return ``(correct, reason)`` for an extracted answer ``pred`` against ``gold``."""
    clock = same_clock(pred, gold)  # a time of day: 10{:}15, 3 p.m. (rsim_env.answers.idioms)
    if clock is not None:
        return clock, "ok"
    g, g_unit = normalize_with_unit(gold)
    gold_letter = _GOLD_LETTER.match(gold.strip()) or _GOLD_LETTER.match(g)
    if answer_type == "choice" or (answer_type == "auto" and gold_letter):
        letter = choice_letter(pred)
        want = gold_letter.group(1) if gold_letter else gold.strip().upper()
        return (letter is not None and letter == want), "ok" if letter else "unparsable"
    # a bare letter after the number is a unit when the gold is a number, or a number with a unit (1.5 * 10^3 m)
    p, p_unit = normalize_with_unit(pred, letters_are_units=bool(_PLAIN_NUMBER.fullmatch(g)) or (
        g_unit is not None and bool(_NUMBER_LIKE.fullmatch(g))))
    if p_unit is not None and g_unit is None:  # "1500 m" read as 1500 * m; the answer's unit says m is one
        g2, g2_unit = normalize_with_unit(gold, letters_are_units=True)
        if g2_unit is not None and _NUMBER_LIKE.fullmatch(g2):
            g, g_unit = g2, g2_unit
    factor = conversion(p_unit, g_unit)  # 1.5 h for 90 min: the answer's value in the gold's unit
    if factor is None and units_conflict(p_unit, g_unit):
        return False, "ok"
    if _WORDS.fullmatch(p) and _WORDS.fullmatch(g) and p.lower() == g.lower():
        return True, "ok"  # a word answer in another case: "Odd" is "odd"
    if _is_list(g):  # "x = 2 or x = 3" lists the solutions when the gold is a list of them
        p = p.replace(" or ", " \\cup " if "\\cup" in g else ", ")
    if cfg.require_evaluated and _unevaluated(p, g):
        return False, "unevaluated"
    p = engineering_j(p, g)  # 3+4j for 3+4i
    if factor is not None and factor != 1:
        p = f"({p})*({factor.numerator}/{factor.denominator})"
    if p == g or (answer_type == "text" and p.lower() == g.lower()):
        return True, "ok"
    if len(p) > MAX_CHARS or len(g) > MAX_CHARS:
        return False, "unparsable"
    if answer_type == "bool" or g.lower() in BOOLS:
        return BOOLS.get(p.lower().strip(".")) == BOOLS.get(g.lower().strip(".")) is not None, "ok"
    try:
        ps, gs = parse_answer(p), parse_answer(g)
        fast = equal(ps, gs, answer_type, _fraction_leaf)
    except TooLarge:
        return False, "too_large"
    except ParseError:
        return False, "unparsable"
    if fast is not None:
        return fast or bool(rel_tol and within_rel_tol(ps, gs, rel_tol)), "ok"
    try:
        reply = _valid_reply(default_pool().run({"pred": p, "gold": g, "type": answer_type}, cfg.timeout_s))
    except WorkerFailure as exc:
        return False, exc.reason
    return reply["correct"], reply["reason"]


def _valid_reply(reply: dict) -> dict:
    if not isinstance(reply.get("correct"), bool) or reply.get("reason") not in WORKER_REASONS:
        raise ProtocolError(f"unexpected worker reply {str(reply)[:120]}")
    return reply


def check(response: str, gold: str, answer_type: str = "auto", config: CheckConfig | None = None,
          rel_tol: float | None = None) -> AnswerCheck:
    """Check a whole model ``response`` against the dataset's ``gold`` answer.

    Safe on hostile input from any thread or process: nothing is evaluated as Python, sizes and
    nesting are bounded, and the sympy part is time-bounded in a killable worker.

    Args:
        response: Full response text (chain of thought included).
        gold: Ground truth as the dataset writes it (``"72"``, ``"\\frac{1}{2}"``, ``"B"``, ``"True"``).
        answer_type: One of :data:`rsim_env.problem.ANSWER_TYPES`.
        config: Timeout and extraction knobs; defaults to :class:`CheckConfig()`.
        rel_tol: The gold's own tolerance, for a decimal gold of a tolerance-graded set (TheoremQA: 0.04): a
            plain-number answer within ``rel_tol * |gold|`` is right (:func:`.idioms.within_rel_tol`).
            None (default): the strict rule of :mod:`.numeric`.

    Returns:
        An :class:`AnswerCheck`; ``correct`` is False for every reason other than ``"ok"``.

    Raises:
        TypeError: ``response`` or ``gold`` is not a str.
        ValueError: ``answer_type`` is unknown, or ``rel_tol`` is not in (0, 1).
    """
    if not isinstance(response, str) or not isinstance(gold, str):
        raise TypeError(f"check() needs str response and gold, got {type(response).__name__} and "
                        f"{type(gold).__name__}; convert with str() first.")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"answer_type={answer_type!r} is not one of {ANSWER_TYPES}; use 'auto' if unsure.")
    if rel_tol is not None and (isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not 0 < rel_tol < 1):
        raise ValueError(f"rel_tol={rel_tol!r}; give the gold's relative tolerance in (0, 1), e.g. 0.04, or None.")
    cfg = config or CheckConfig()
    t0 = time.perf_counter()
    found = extract(response, answer_type, cfg.last_number_fallback)
    if found is None:
        return AnswerCheck(False, None, "no_answer", "", time.perf_counter() - t0)
    if found.hedged or (is_hedged(found.text) and not is_hedged(gold) and not _is_list(normalize(gold))):
        return AnswerCheck(False, found.text, "hedged", found.method, time.perf_counter() - t0)
    correct, reason = _decide(found.text, gold.replace("\x00", ""), answer_type, cfg, rel_tol)
    return AnswerCheck(correct and reason == "ok", found.text, reason, found.method, time.perf_counter() - t0)


def reason_counts(infos) -> dict[str, int]:
    """Count ``info["reason"]`` over episode infos: one entry per :data:`REASONS` plus ``"other"``
    (a reason from another checker, or none), zeros included.

    The fixed keys let a distributed trainer sum the counts of all processes as one vector.
    """
    counts = dict.fromkeys((*REASONS, "other"), 0)
    for info in infos:
        reason = info.get("reason")
        counts[reason if reason in counts else "other"] += 1
    return counts


def extract_answer(response: str, answer_type: str = "auto", last_number_fallback: bool = True) -> str | None:
    """The final answer text in ``response`` (see :mod:`.extract`), or None."""
    found = extract(response, answer_type, last_number_fallback)
    return found.text if found else None
