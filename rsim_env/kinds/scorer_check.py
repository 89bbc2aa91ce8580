"""Scorer sanity check: a reasoning-gym task whose own ``score_answer`` gives full credit to a known-wrong
answer is refused, with the reason, wherever the task enters a catalogue or a data source.

Why: a task is only evidence if its grader tells right from wrong. reasoning-gym's ``game_of_life_halting``
scores ``bool(answer) == bool(entry["answer"])``, and ``bool("False")`` is true: every non-empty answer gets full
credit, so the atlas found it "solved" under every plan (198 answers "True" for gold "False" marked correct).
The check catches that by rule, not by the task's name.

**Rule** (:func:`failures`): for each of the first :data:`SAMPLES` entries of seed 0 at the task's setting, score
these known-wrong answers with the task's own ``score_answer`` on that entry:

* *another entry's gold*: the first other sampled gold that differs from this entry's (after ``strip``);
* *the opposite boolean*: when the gold is a boolean word (``True``/``False``, ``Yes``/``No``, any case),
  the other word in the gold's case;
* *the empty answer* ``""``.

Any full credit (``score == 1.0``) to one of them fails the task; the reason names the entry, its gold, the
wrong answer and its score. A scorer that raises on a wrong answer gives it no credit (the ``rg`` kind reports
that as ``"scorer_error"``, score 0). The answers are generator golds and fixed words, not model text, but a
scorer that would ``eval`` Python code (:data:`rsim_env.kinds.eval_guard.PYTHON_EVAL`) is still only handed
literals (:func:`rsim_env.kinds.eval_guard.literal_only`).

**Where it runs**: in the process when it was started with ``PYTHONHASHSEED=0`` (:data:`rsim_env.kinds.rg_tasks.HASH_SEED`),
else in the ``rg`` scorer's workers (started so): some generators iterate over sets of strings, so the sampled
entries -- and the verdict -- are the same in every process only under one hash seed. Verdicts are cached per
(task, options, seed, samples) for the process.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from .rg_tasks import _hash_seed_is_fixed, make_entry

__all__ = ["SAMPLES", "wrong_answers", "failures", "check", "require_sound", "set_worker_check"]

SAMPLES = 8
"""Entries per task the check scores wrong answers on (seed 0)."""
_BOOLEANS = {"true": "false", "false": "true", "yes": "no", "no": "yes"}


def _opposite(gold: str) -> str | None:
    """The other boolean word in the gold's case (``"False"`` -> ``"True"``, ``"yes"`` -> ``"no"``), else None."""
    word = gold.strip()
    other = _BOOLEANS.get(word.lower())
    if other is None:
        return None
    if word.isupper():
        return other.upper()
    return other.capitalize() if word[0].isupper() else other


def wrong_answers(golds: list[str], i: int) -> list[tuple[str, str]]:
    """``(what, answer)`` of the known-wrong answers for entry ``i`` whose gold is ``golds[i]`` (module docstring)."""
    gold = golds[i].strip()
    out = []
    other = next((g for j, g in enumerate(golds) if j != i and g.strip() != gold), None)
    if other is not None:
        out.append(("another entry's gold", other))
    flipped = _opposite(gold)
    if flipped is not None:
        out.append(("the opposite boolean", flipped))
    if gold:
        out.append(("the empty answer", ""))
    return out


def failures(entries: list[dict[str, Any]], score_answer: Callable[[str, dict[str, Any]], Any],
             allowed: Callable[[str], bool] = lambda answer: True) -> list[str]:
    """Why the scorer fails the rule on these entries (empty: it passes): one line per wrong answer given full
    credit. ``allowed(answer)`` false skips an answer (the guard of scorers that ``eval`` it)."""
    golds = [str(e["answer"]) for e in entries]
    out = []
    for i, entry in enumerate(entries):
        for what, answer in wrong_answers(golds, i):
            if not allowed(answer):
                continue
            try:
                value = float(score_answer(answer, entry))
            except Exception:  # noqa: BLE001 -- a scorer that raises on a wrong answer gives it no credit
                continue
            if value == 1.0:
                out.append(f"entry {i} (gold {golds[i]!r}): {what} {answer!r} scores {value}")
    return out


def dataset_failures(ds: Any, dataset: str, seed: int, samples: int) -> list[str]:
    """:func:`failures` on the first ``samples`` entries of a created dataset (what the process or worker runs)."""
    from .eval_guard import PYTHON_EVAL, literal_only

    entries = [make_entry(ds, dataset, seed, i) for i in range(min(samples, len(ds)))]
    return failures(entries, ds.score_answer, literal_only if dataset in PYTHON_EVAL else (lambda a: True))


def check(dataset: str, config: dict[str, Any] | None = None, seed: int = 0, samples: int = SAMPLES) -> str:
    """``""`` when the task's scorer passes the rule, else why it fails (the first failures, ``;``-joined).

    Raises:
        ValueError: the generator refused the options (its own message).
        RuntimeError: a worker failed otherwise.
    """
    return _check(dataset, json.dumps(dict(config or {}), sort_keys=True), seed, samples)


@functools.lru_cache(maxsize=256)
def _check(dataset: str, config_json: str, seed: int, samples: int) -> str:
    config = json.loads(config_json)
    if _hash_seed_is_fixed():
        import reasoning_gym

        ds = reasoning_gym.create_dataset(dataset, size=max(samples, 2), seed=seed, **config)
        found = dataset_failures(ds, dataset, seed, samples)
    else:
        if not _WORKER_CHECK:  # pragma: no cover - rsim_env.kinds.rgym sets it, and importing rsim_env always loads it
            raise RuntimeError("rsim_env.kinds.rgym is not loaded: import rsim_env first.")
        found = _WORKER_CHECK[0](dataset, config, seed, samples)
    if not found:
        return ""
    more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
    return (f"its score_answer gives full credit to {len(found)} known-wrong answers on {samples} entries: "
            + "; ".join(found[:3]) + more)


_WORKER_CHECK: list = []


def set_worker_check(check_in_workers) -> None:
    """Name the function that runs the check in the ``rg`` scorer's workers (:func:`rsim_env.kinds.rgym.check_scorer`).

    The workers' pool lives in :mod:`rsim_env.kinds.rgym`, which imports this module: it registers itself here when it
    loads, as it does with :func:`rsim_env.kinds.rg_tasks.set_entries_maker`, so that no import circle forms.
    """
    _WORKER_CHECK[:] = [check_in_workers]


def require_sound(dataset: str, config: dict[str, Any] | None = None) -> None:
    """Raise unless the task's scorer passes the rule (module docstring).

    Raises:
        ValueError: naming the task, what the scorer got wrong, and what to do.
    """
    why = check(dataset, config)
    if why:
        raise ValueError(f"reasoning-gym task {dataset!r} is refused: {why}. Its grades would not tell right from "
                         "wrong; leave it out, or fix its scorer (a kind with its own grading) and check it again "
                         "(rsim_env.kinds.scorer_check).")
