"""Reasoning-gym entries do not depend on Python's string-hash salt (rsim_env.kinds.rg_tasks.entries).

Some generators iterate over sets of strings, so the same seed used to give other questions in every process:
problem sets were not reproducible across runs, and the rg scorer's worker (which re-creates the entry) refused
the problem mid-run. These tests start processes under different hash salts and compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rsim_env.problem import Problem
from rsim_env.kinds.rg_tasks import entries

SALTED = "isomorphic_strings"  # its questions move with the salt when made in-process (checked below)
_PROBE = ("import json, sys; from rsim_env.kinds.rg_tasks import entries; "
          "print(json.dumps(entries(sys.argv[1], 6, 0)))")
_RAW = ("import json, sys, reasoning_gym; "
        "print(json.dumps([str(e['question']) for e in reasoning_gym.create_dataset(sys.argv[1], size=6, seed=0)]))")


def _run(code: str, salt: str, *args: str) -> object:
    env = {**os.environ, "PYTHONHASHSEED": salt}
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=300,
                         check=True)
    return json.loads(out.stdout)


def test_the_generator_itself_moves_with_the_salt():
    """The premise: made in-process, the salted generator's questions differ between two salts."""
    assert _run(_RAW, "1", SALTED) != _run(_RAW, "2", SALTED)


def test_global_random_generators_move_even_under_one_hash_seed():
    """The premise of make_entry: list_functions draws from the unseeded global ``random``."""
    assert _run(_RAW, "0", "list_functions") != _run(_RAW, "0", "list_functions")


@pytest.mark.parametrize("dataset", [SALTED, "ransom_note", "list_functions", "pool_matrix"])
def test_entries_are_the_same_under_any_salt(dataset):
    a, b, c = (_run(_PROBE, salt, dataset) for salt in ("1", "2", "0"))
    assert a == b == c
    assert [list(x) for x in entries(dataset, 6, 0)] == a  # and in this process too


def test_rg_problem_of_a_salted_generator_grades_in_the_worker():
    """The worker re-creates the entry and checks its question: it must meet the same question."""
    from rsim_env.kinds import rgym
    from rsim_env.kinds.rg_tasks import spec

    (q, gold), = entries(SALTED, 1, 3)
    p = Problem(id=f"{SALTED}/0", question=q, answer=gold, answer_type="text", source=f"reasoning_gym:{SALTED}",
                kind="rg", metadata={"rg": spec(SALTED, {}, 3, 1, 0)})
    assert rgym.score(p, gold, 30.0) == (1.0, "ok")
    assert rgym.score(p, "maybe", 30.0)[0] < 1.0


def test_global_random_entry_grades_in_the_worker_out_of_order():
    """The worker re-creates one entry (index 3) without making 0-2 first: each entry is seeded on its own."""
    from rsim_env.kinds import rgym
    from rsim_env.kinds.rg_tasks import spec

    q, gold = entries("list_functions", 4, 0)[3]
    p = Problem(id="list_functions/3", question=q, answer=gold, answer_type="text",
                source="reasoning_gym:list_functions", kind="rg", metadata={"rg": spec("list_functions", {}, 0, 4, 3)})
    assert rgym.score(p, gold, 30.0) == (1.0, "ok")


def test_generator_errors_are_named():
    with pytest.raises((ValueError, TypeError)):
        entries("chain_sum", 2, 0, {"no_such_option": 1})


def test_long_questions_come_back_in_smaller_replies():
    """rectangle_count's questions run to ~7,000 characters: 200 of them exceed one worker reply line
    (MAX_REPLY_BYTES), so the worker route halves its chunk; the entries are still all there, in order."""
    code = ("import hashlib, json, sys; from rsim_env.kinds.rg_tasks import entries; e = entries('rectangle_count', 200, 0); "
            "print(json.dumps([len(e), hashlib.md5(json.dumps(e).encode()).hexdigest()]))")
    salted, seeded = _run(code, "1"), _run(code, "0")
    assert salted == seeded and salted[0] == 200
