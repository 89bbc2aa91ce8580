"""The per-task policy's ties: the plans tied on the selection tables (the first is the one the policy plays), and
the exact range of its test accuracy over every tie-break (a sum of per-task extremes), checked against brute force
over every combination of tie-breaks on a scripted table; the report states the rule and the range."""

from __future__ import annotations

import itertools

import pytest

from algos.study.breakdown import TIE_RULE, tie_range, tied_plans
from algos.study.modes import choose, fixed_mode, per_task_mode
from algos.study.report import build
from algos.study.types import ModeResult, Outcome, Table
from tests.study_helpers import ledger_of
from algos.study.view import View

PLANS = [(8,), (0, 8), (3, 8)]


def _table(split: str, rows: dict[str, list[list[int]]]) -> Table:
    """``rows[task]``: per problem, one 0/1 per plan of :data:`PLANS` (correct, and a reward of correct + 0.5)."""
    tasks, outcomes = {}, {}
    for task, problems in rows.items():
        for i, cells in enumerate(problems):
            pid = f"{split}-{task}-{i}"
            tasks[pid] = task
            outcomes[pid] = {pl: Outcome(bool(c), c + 0.5, 10.0) for pl, c in zip(PLANS, cells)}
    return Table(split, tasks, outcomes)


# selection: task a ties (8,) with (0, 8); task b has one best plan (3, 8); task c ties all three
TRAIN = _table("train", {"a": [[1, 0, 0], [0, 1, 0]], "b": [[0, 0, 1]], "c": [[1, 1, 1]]})
VAL = _table("val", {"a": [[0, 0, 0]], "b": [[0, 1, 1]], "c": [[0, 0, 0]]})
TEST = _table("test", {"a": [[1, 1, 0], [0, 1, 0], [0, 1, 1]], "b": [[1, 0, 1], [0, 0, 0]],
                       "c": [[0, 1, 1], [0, 0, 1]], "d": [[1, 1, 1]]})
# task d has test problems but ties on nothing: give it selection problems with one best plan
TRAIN_D = _table("train", {"a": [[1, 0, 0], [0, 1, 0]], "b": [[0, 0, 1]], "c": [[1, 1, 1]], "d": [[1, 0, 0]]})


def test_tied_plans_lists_every_tie_in_the_tie_break_order():
    tied = tied_plans([TRAIN_D, VAL])
    assert tied == {"a": [[8], [0, 8]], "b": [[3, 8]], "c": [[8], [0, 8], [3, 8]], "d": [[8]]}
    chosen = choose([TRAIN_D, VAL])["per_task_best"]
    assert {t: list(pl) for t, pl in chosen.items()} == {t: plans[0] for t, plans in tied.items()}


def test_the_range_is_the_brute_force_range_over_every_tie_break():
    tied = tied_plans([TRAIN_D, VAL])
    view = View.of(TEST, {"best_fixed": fixed_mode(TEST, choose([TRAIN_D, VAL]), "train+val")})
    got = tie_range(view, tied)
    accs = []
    for combo in itertools.product(*(tied[t] for t in sorted(tied))):
        plan_of = dict(zip(sorted(tied), combo))
        accs.append(100 * sum(TEST.outcomes[p][tuple(plan_of[TEST.tasks[p]])].correct for p in TEST.ids())
                    / len(TEST.ids()))
    assert got["accuracy_range_pct"] == pytest.approx([min(accs), max(accs)])
    assert got["accuracy_range_pct"] == pytest.approx([100 * 3 / 8, 100 * 7 / 8])  # a 1..3, b 1, c 0..2, d 1
    assert got["tied_tasks"] == 2 and got["tied_tasks_on_test"] == 2 and got["rule"] == TIE_RULE
    assert got["by_task"]["a"] == {"plans": [[8], [0, 8]], "test_correct": [1, 3], "problems": 3}


def test_the_report_states_the_rule_and_the_range_beside_the_value():
    chosen = choose([TRAIN_D, VAL])
    pt = per_task_mode(TEST, chosen, "train+val", tied=tied_plans([TRAIN_D, VAL]))
    bf = fixed_mode(TEST, chosen, "train+val")
    trained = ModeResult("trained", {0: dict(pt.outcomes[0])}, {0: dict(pt.plans[0])}, "train")
    r = build(TEST, {"trained": trained, "best_fixed": bf, "per_task": pt},
              ledger=ledger_of(TEST, {"trained": trained, "best_fixed": bf}), replication=None,
              meta={}, rounds=200)
    ties = r["ceilings"]["per_task_policy"]["ties"]
    assert ties["accuracy_range_pct"] == pytest.approx([37.5, 87.5])
    text = r["headline"]["sentences"]["ceiling"]
    assert "2 tasks tie" in text and "37.5–87.5 %" in text and "shortest plan" in text
    assert f"{r['ceilings']['per_task_policy']['accuracy_pct']:.1f} %" in text


def test_scores_without_recorded_ties_say_so():
    chosen = choose([TRAIN_D, VAL])
    pt = per_task_mode(TEST, chosen, "train+val")
    bf = fixed_mode(TEST, chosen, "train+val")
    trained = ModeResult("trained", {0: dict(bf.outcomes[0])}, {0: dict(bf.plans[0])}, "train")
    r = build(TEST, {"trained": trained, "best_fixed": bf, "per_task": pt},
              ledger=ledger_of(TEST, {"trained": trained, "best_fixed": bf}), replication=None,
              meta={}, rounds=200)
    assert r["ceilings"]["per_task_policy"]["ties"] is None
    assert "rescore" in r["headline"]["sentences"]["ceiling"]
