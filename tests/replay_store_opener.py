"""The child of the many-openers test (tests/test_replay_store_faults.py): opens a new replay store at the same
instant as its siblings, round after round, and writes keys that interleave and overlap with theirs.

Standard library only, and it loads agents/replay/store.py by path, so a spawned child starts in a fraction
of a second and tests exactly that file (the test may point it at another copy, e.g. an older version).
"""

from __future__ import annotations

import importlib.util
import sys
import traceback


def load_store_module(path: str):
    spec = importlib.util.spec_from_file_location("replay_store_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def keys(index: int, n_keys: int) -> list[int]:
    """Key numbers child ``index`` writes: its own block plus the next child's first half (so every key but
    the first block's half has two writers)."""
    return list(range(index * n_keys, index * n_keys + n_keys + n_keys // 2))


def open_and_write(module_path: str, folder: str, index: int, rounds: int, n_keys: int, barrier, errors) -> None:
    """For each round: wait at the barrier, open the round's new store, write in small transactions, close."""
    store_type = load_store_module(module_path).StepStore
    for r in range(rounds):
        barrier.wait(timeout=300)
        try:
            store = store_type(f"{folder}/s{r}.sqlite", timeout_s=120, check_every=10**9)
            mine = keys(index, n_keys)
            for i in range(0, len(mine), 4):  # many small transactions, interleaving with the siblings'
                store.put_many([(f"k{j}", f"text {j}", j) for j in mine[i:i + 4]])
            store.close()
        except Exception:  # noqa: BLE001 - recorded for the parent, which fails the test with it
            errors.put(f"child {index}, round {r}: {traceback.format_exc(limit=3)}")
    sys.stdout.flush()
