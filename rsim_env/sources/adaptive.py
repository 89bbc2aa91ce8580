"""The ``adaptive`` source: the atlas's tasks, where a per-task choice of plan beats the best single plan.

The atlas (``docs/atlas.md``) played every plan of two rounds on 40 problems of each task it kept, at the
difficulty its pilot chose. Over all of them, a per-task plan chosen on validation beat the best single plan
(``[3, 8]``) on the test problems with a 95 % interval above 0 (``mix_all`` of
``docs/atlas_results/atlas.json``): the one mix it found with headroom. This source is that mix, each task at
the atlas's setting, for ``rsim train`` / ``rsim eval`` / the benchmarks (``--data adaptive:train``).

**Splits by question text and by generator seed.** Each question belongs to one split by a hash of its text
(:func:`split_of`: 20 % ``val``, 20 % ``test``, 60 % ``train``), so no question is in two splits whatever the
sizes; and each split is drawn from its own generator seed: ``val`` 0, ``test`` 1,000,000 (used by nothing
else), ``train`` 2,000,000, ``replication`` 3,000,000 -- far apart because a reasoning-gym generator makes entry ``i`` of seed ``s`` from
``Random(s + i)``, so nearby seeds share almost every entry. Small tasks have few distinct questions
(``prime_factorization`` of 2..30 has 29), so their splits hold what the hash gives them (6 ``val`` and 5 ``test`` questions).

**And by task.** Tasks share questions (``"0 + 4 ="`` is both ``chain_sum`` and ``curriculum:add2_1d``; the hash
puts a text in the same split for both), so a text belongs to one task too: **the first task in the list order**
(:data:`TASKS`, or ``tasks``) whose draw for the split holds it keeps it; a later task skips it and takes its next
question. So no text is in two splits, nor in two tasks, and a problem graded on test was never seen on validation
under another task's name. Under the rule ``curriculum:mul_1d`` keeps 1 ``val`` question and no ``test`` one, and
``curriculum:add2_1d`` 7 and 3: at the atlas's settings ``products`` and ``chain_sum``, earlier in the list, ask them.
**A replication draw.** ``replication`` is a second test set: the test hash bucket of its own generator seed
(3,000,000 unless ``seed`` is given), less every text the ``test`` seed draws for any task (so it is disjoint by
text from every other split, the test split included). Where a task's draw runs short of ``per_task`` (small tasks:
the test seed's 400 entries ask almost every question there is), it is topped up from the same seed drawn further
(4x at a time, up to :data:`MAX_DRAW` entries): texts in the test hash bucket that no problem of the ``test`` split
(at the same problems a task) and no earlier replication problem asks. A task has at most as many replication
problems as the ``test`` split has of it (``curriculum:add2_1d`` 3: ``chain_sum`` asks its other test-bucket
texts), so the two splits weigh the tasks alike. A task whose test bucket holds no such text
(``prime_factorization``: the test split asks all 5 of its test-bucket questions) stays short; the study's report
names it. The first draw's problems come first, so a tree filled before the top-up keeps every problem.

Problems are interleaved round-robin over the tasks; ids are ``adaptive/SPLIT/ID``.

:data:`TASKS` is the atlas's list less the tasks the scorer sanity check refuses (:mod:`rsim_env.kinds.scorer_check`:
``game_of_life_halting``, whose scorer gives every non-empty answer full credit); a test checks it against the
committed atlas JSON.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Callable

from ..problem import Problem

__all__ = ["TASKS", "SEEDS", "SPLITS", "adaptive_problems", "split_of"]

TASKS: tuple[str, ...] = (
    "rg:base_conversion?min_base=2&max_base=10&max_value=15",
    "rg:basic_arithmetic?min_terms=2&max_terms=2&min_digits=1&max_digits=1&operators=[\"+\",\"-\"]",
    "rg:calendar_arithmetic",
    "rg:chain_sum?min_terms=2&max_terms=2&min_digits=1&max_digits=1",
    "rg:coin_flip?min_trials=1&max_trials=3",
    "rg:count_primes?min_n=1&max_n=30",
    "rg:course_schedule",
    "rg:decimal_chain_sum?min_terms=2&max_terms=2&min_digits=1&max_digits=1&min_decimal_places=1&max_decimal_places=1",
    "rg:fraction_simplification?max_value=20&max_factor=5&styles=[\"plain\"]",
    "rg:gcd?min_value=1&max_value=20",
    "rg:isomorphic_strings?min_string_length=2&max_string_length=3",
    "rg:lcm?min_value=1&max_value=10",
    "rg:leg_counting?min_animals=1&max_animals=1&max_instances=3",
    "rg:letter_counting?min_words=1&max_words=3",
    "rg:number_format",
    "rg:prime_factorization?min_value=2&max_value=30",
    "rg:products?min_terms=2&max_terms=2&min_digits=1&max_digits=1",
    "rg:ransom_note?max_note_length=3&max_magazine_length=6",
    "rg:self_reference",
    "rg:spell_backward?min_word_len=3&max_word_len=3",
    "rg:syllogism",
    "rg:word_sorting?min_words=3&max_words=3&min_word_length=3&max_word_length=5",
    "curriculum_task:add2_1d",
    "curriculum_task:add2_2d",
    "curriculum_task:add3_1d",
    "curriculum_task:arith2_1d",
    "curriculum_task:arith2_1d_mul",
    "curriculum_task:arith2_2d",
    "curriculum_task:mul_1d",
    "curriculum_task:mul_2d1d",
    "code_tasks",
)
"""The atlas's main-pass tasks whose scorer passes the sanity check, each as the setting it was played at (an
``rg:`` data spec or ``curriculum_task:NAME``), in the atlas's order."""

SEEDS = {"val": 0, "test": 1_000_000, "train": 2_000_000, "replication": 3_000_000}
SPLITS = tuple(SEEDS)
PER_TASK = 40
"""Problems per task in ``val`` and ``test`` when no limit is given; ``train`` takes 5x."""
DRAW = 400
"""Entries drawn per task and split, at least (the hash keeps ~20 % for val and test)."""
MAX_DRAW = 25_600
"""Entries a replication top-up draws per task, at most (a task still short there has no more test-bucket texts)."""


def split_of(question: str) -> str:
    """The split a question belongs to, by CRC-32 of its text: 0-1 ``val``, 2-3 ``test``, 4-9 ``train`` (mod 10)."""
    r = zlib.crc32(question.encode()) % 10
    return "val" if r < 2 else "test" if r < 4 else "train"


Loader = Callable[[str, int, int], list[Problem]]
"""``load(spec, limit, seed)``: :func:`rsim_env.sources.data.load_problems` (passed in: this module sits below it)."""


def _task(label: str, n: int, seed: int, load: Loader) -> list[Problem]:
    if label.startswith("curriculum_task:"):
        from .curriculum import curriculum_problems

        return curriculum_problems(n, "train", tasks=(label.partition(":")[2],), seed=seed)
    return load(label, n, seed)


def _columns(split: str, per_task: int, tasks: tuple[str, ...], load: Loader,
             seed: int | None = None) -> list[list[Problem]]:
    """Each task's problems of ``split``: its drawn questions in this split's hash bucket, none drawn for an earlier
    task (module docstring: a text belongs to one split of one task); the replication split topped up."""
    bucket = "test" if split == "replication" else split
    seed = SEEDS[split] if seed is None else seed
    cols, owned = [], set()
    if split == "replication":  # a second test draw: none of the texts the test seed draws, for any task
        for label in tasks:
            owned |= {p.question for p in _task(label, max(DRAW, 8 * per_task), SEEDS["test"], load)}
    for label in tasks:
        drawn = [p for p in _task(label, max(DRAW, 8 * per_task), seed, load) if split_of(p.question) == bucket]
        seen: set[str] = set()
        kept = []
        for p in drawn:
            if p.question not in seen and p.question not in owned:
                seen.add(p.question)
                kept.append(p)
        owned |= {p.question for p in drawn}
        cols.append(kept[:per_task])
    return _top_up(cols, per_task, tasks, load, seed) if split == "replication" else cols


def _top_up(cols: list[list[Problem]], per_task: int, tasks: tuple[str, ...], load: Loader,
            seed: int) -> list[list[Problem]]:
    """The replication columns, each short one topped up from ``seed`` drawn further (module docstring)."""
    test = _columns("test", per_task, tasks, load)
    taken = {p.question for c in test + cols for p in c}
    out = []
    for label, col, want in zip(tasks, cols, map(len, test)):
        col, n, distinct = list(col[:want]), max(DRAW, 8 * per_task), -1
        while len(col) < want and n < MAX_DRAW:
            n = min(4 * n, MAX_DRAW)
            drawn = _task(label, n, seed, load)
            for p in drawn:
                if len(col) < want and split_of(p.question) == "test" and p.question not in taken:
                    taken.add(p.question)
                    col.append(p)
            if len({p.question for p in drawn}) == distinct:  # 4x the entries ask nothing new: the task is exhausted
                break
            distinct = len({p.question for p in drawn})
        out.append(col)
    return out


def adaptive_problems(load: Loader, limit: int | None = None, split: str = "train",
                      tasks: tuple[str, ...] | None = None, seed: int | None = None) -> list[Problem]:
    """``limit`` problems of ``split`` (``train`` / ``val`` / ``test`` / ``replication``), round-robin over
    :data:`TASKS` (or ``tasks``); ``load`` reads a data spec (``load_problems("adaptive:test")`` passes it).
    ``seed``: the replication draw's generator seed (another replication draw; None: :data:`SEEDS`' 3,000,000).

    Raises:
        ValueError: unknown split, a limit below 1, no tasks, or a seed given for a split other than replication
            (or one of the other splits' seeds).
    """
    if seed is not None and (split != "replication" or seed in (SEEDS["val"], SEEDS["test"], SEEDS["train"])):
        raise ValueError(f"adaptive seed={seed!r} for split {split!r}: only the replication split takes a seed, and "
                         f"not one of the other splits' seeds {[SEEDS[s] for s in ('val', 'test', 'train')]}; the "
                         "other splits are drawn from their fixed seeds.")
    if split not in SEEDS:
        raise ValueError(f"adaptive split {split!r}; choose one of {SPLITS} (e.g. --data adaptive:test).")
    tasks = TASKS if tasks is None else tuple(tasks)
    if not tasks:
        raise ValueError("the adaptive source has no tasks: rsim_env.sources.adaptive.TASKS is empty (run the atlas first).")
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ValueError(f"limit={limit!r} must be >= 1.")
    per_task = -(-limit // len(tasks)) if limit else PER_TASK * (5 if split == "train" else 1)
    cols = _columns(split, per_task, tasks, load, seed)
    out = [dataclasses.replace(c[i], id=f"adaptive/{split}/{c[i].id}")
           for i in range(max(map(len, cols))) for c in cols if i < len(c)]
    return out[:limit] if limit else out
