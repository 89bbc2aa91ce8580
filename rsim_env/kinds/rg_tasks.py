"""Which reasoning-gym tasks the ``rg`` kind grades, and what a problem carries to re-create its entry.

Plain data and the standard library only, so that :mod:`rsim_env.sources.problems` (which builds the problems)
and :mod:`rsim_env.kinds.rgym` (which grades them) both import it without an import circle.

**Entries are made under one hash seed.** Some generators iterate over sets of strings
(``isomorphic_strings``, ``knight_swap``, ``list_functions``, ``polynomial_multiplication``,
``ransom_note``, ``word_ladder`` in reasoning-gym 0.1.25): the same seed gives other questions in every
Python process, whose string hashes are salted at random, so without care a problem set would differ between
runs (a resumed run would meet other questions under the same ids) and the ``rg`` scorer's worker, which re-creates
the entry, would refuse the problem. :func:`entries` makes every dataset as a process started with
``PYTHONHASHSEED=0`` makes it -- in this process when it was started so, else in the ``rg`` scorer's worker
processes, which are started so (:data:`HASH_SEED`) and kept warm, so a dataset costs one request.

**And each entry is made under seeded global random states.** A few generators draw from the unseeded global
``random`` module (``list_functions``) or ``numpy.random`` (``pool_matrix``) besides their own seeded ``Random``: under
one hash seed alone they would still give other questions in every process. :func:`make_entry` seeds both global states from
(dataset, seed, index) before the generator makes an entry and puts them back after; every route that makes or
re-creates an entry (this module, the ``rg`` scorer's worker) goes through it.
"""

from __future__ import annotations

import functools
import json
import random
import re
import sys
import zlib
from typing import Any

__all__ = ["REFUSED", "HASH_SEED", "entries", "make_entry", "is_number", "spec"]

HASH_SEED = "0"
"""``PYTHONHASHSEED`` under which every reasoning-gym entry is made and re-created."""
ENTRIES_TIMEOUT_S = 600.0
"""Longest a worker may take to make one chunk of a dataset."""
ENTRIES_CHUNK = 200
"""Entries per worker reply (a reply line is at most :data:`rsim_env.answers.sandbox.MAX_REPLY_BYTES`)."""

REFUSED = frozenset({"countdown", "puzzle24", "polynomial_multiplication", "simple_integration",
                     "intermediate_integration"})
"""Generators whose scorer runs ``sympy.parse_expr`` on the answer (see module docstring): refused."""
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def is_number(gold: str) -> bool:
    """True for a plain integer or decimal gold (``"42"``, ``"-3.5"``): the math checker's home ground."""
    return bool(_NUMBER.fullmatch(gold.strip()))


def spec(dataset: str, config: dict[str, Any], seed: int, size: int, index: int) -> dict[str, Any]:
    """``metadata["rg"]`` of a problem: what re-creates its entry, as plain JSON data.

    Raises:
        ValueError: ``config`` is not JSON data (the message names the option).
    """
    for key, value in config.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            raise ValueError(f"reasoning-gym option {key}={value!r} is not JSON data; a graded problem must "
                             "re-create its entry from a checkpoint (use numbers, strings, lists).") from None
    return {"dataset": dataset, "config": json.loads(json.dumps(config)), "seed": seed, "size": size, "index": index}


def make_entry(ds: Any, dataset: str, seed: int, index: int) -> dict[str, Any]:
    """``ds[index]`` with the global ``random`` and ``numpy.random`` states seeded from (dataset, seed, index)
    and restored afterwards (module docstring): the same entry whichever entries this process made before."""
    value = zlib.crc32(f"{dataset}|{seed}|{index}".encode())
    state = random.getstate()
    np = sys.modules.get("numpy")  # reasoning-gym imports numpy; a generator that needs it has it loaded
    np_state = np.random.get_state() if np is not None else None
    random.seed(value)
    if np is not None:
        np.random.seed(value)
    try:
        return ds[index]
    finally:
        random.setstate(state)
        if np is not None:
            np.random.set_state(np_state)


def _hash_seed_is_fixed() -> bool:
    """True when this interpreter was started with ``PYTHONHASHSEED=0`` (:data:`HASH_SEED`: string hashing not salted)."""
    return sys.flags.hash_randomization == 0


def entries(dataset: str, size: int, seed: int, config: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    """``(question, answer)`` of every entry of ``reasoning_gym.create_dataset(dataset, size, seed, **config)``,
    made under ``PYTHONHASHSEED=0`` (module docstring): the same in every process, run and machine.

    Raises:
        ValueError: the generator refused the options (its own message), or ``config`` is not JSON data.
        RuntimeError: the worker failed otherwise or took longer than :data:`ENTRIES_TIMEOUT_S` for a chunk.
    """
    config = spec(dataset, dict(config or {}), seed, size, 0)["config"]  # JSON data, checked
    return list(_entries(dataset, size, seed, json.dumps(config, sort_keys=True)))


@functools.lru_cache(maxsize=64)
def _entries(dataset: str, size: int, seed: int, config_json: str) -> tuple[tuple[str, str], ...]:
    config = json.loads(config_json)
    if _hash_seed_is_fixed():
        import reasoning_gym

        ds = reasoning_gym.create_dataset(dataset, size=size, seed=seed, **config)
        return tuple((str(e["question"]), str(e["answer"])) for e in (make_entry(ds, dataset, seed, i) for i in range(len(ds))))
    if not _MAKER:  # pragma: no cover - rsim_env.kinds.rgym sets it, and importing rsim_env always loads it
        raise RuntimeError("rsim_env.kinds.rgym is not loaded: import rsim_env first.")
    return _MAKER[0](dataset, size, seed, config)


_MAKER: list = []


def set_entries_maker(maker) -> None:
    """Name the function that makes entries in the ``rg`` scorer's workers (:func:`rsim_env.kinds.rgym.make_entries`).

    The workers' pool lives in :mod:`rsim_env.kinds.rgym`, which imports this module (as do :mod:`.scorer_check` and
    :mod:`rsim_env.sources.problems`): so it registers itself here when it loads, as :mod:`rsim_env.echo`'s references are.
    """
    _MAKER[:] = [maker]
