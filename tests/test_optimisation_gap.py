"""algos.optimisation_gap on a hand-made outcome table (rewards worked out in the comments)."""

from __future__ import annotations

import gzip
import json

import pytest

from algos.optimisation_gap import optimisation_gap, outcome_table, planner_reward_of, read_rows
from rsim_env import RewardWeights

# problem -> plan -> correct. Planner reward = acc + terminal (+1: every plan terminates) + penalty:
# [8]: acc + 1 - 1 = acc;  [3, 8] and [1, 8]: acc + 1 - 1/2 = acc + 0.5
OUTCOMES = {
    "add/0": {(8,): False, (3, 8): True, (1, 8): False},
    "add/1": {(8,): False, (3, 8): True, (1, 8): False},
    "mul/0": {(8,): False, (3, 8): False, (1, 8): True},
    "mul/1": {(8,): True, (3, 8): False, (1, 8): False},
}
ROWS = [{"problem_id": p, "task": p.split("/")[0], "plan": list(plan), "correct": c}
        for p, by in OUTCOMES.items() for plan, c in by.items()]


def _row(pid, plan, correct):
    return {"problem_id": pid, "plan": plan, "correct": correct}


# the trained planner's own episodes: add/1 sampled twice, mul/1 played a plan that never terminates
TRAINED = [_row("add/0", [3, 8], True), _row("add/1", [8], False), _row("add/1", [3, 8], True),
           _row("mul/0", [1, 8], True), _row("mul/1", [3, 3], False)]


def test_planner_reward_of_is_the_papers_sum():
    assert planner_reward_of([3, 8], True) == 1.5 and planner_reward_of([8], False) == 0.0
    assert planner_reward_of([3, 3], False) == -2.0  # acc 0, never terminated -1, one strategy throughout -1
    assert planner_reward_of([3, 8], True, RewardWeights(terminal=0.0)) == 0.5


def test_best_single_per_task_best_and_trained_on_a_hand_made_table():
    g = optimisation_gap(ROWS, TRAINED)
    # mean rewards over the 4 problems: [8] 0.25, [3, 8] (1.5 + 1.5 + 0.5 + 0.5) / 4 = 1.0, [1, 8] 0.75
    assert g["best_single"] == {"plan": [3, 8], "reward": 1.0, "accuracy": 0.5}
    # add: [3, 8] (1.5); mul: [1, 8] (1.5 + 0.5) / 2 = 1.0 beats [8] and [3, 8] (0.5) -> (1.5 * 3 + 0.5) / 4
    assert g["per_task_best"] == {"plans": {"add": [3, 8], "mul": [1, 8]}, "reward": 1.25, "accuracy": 0.75}
    # per problem: add/0 (1, 1.5), add/1 (0.5, 0.75), mul/0 (1, 1.5), mul/1 (0, -2)
    assert g["trained"] == {"reward": pytest.approx(1.75 / 4), "accuracy": pytest.approx(2.5 / 4)}
    assert g["ratio"] == pytest.approx(1.75 / 4 / 1.25) and g["problems"] == 4 and g["trained_problems"] == 4


def test_plans_are_chosen_on_select_and_scored_on_rows():
    select = [r for r in ROWS if r["problem_id"] in ("add/0", "mul/0")]
    g = optimisation_gap(ROWS, TRAINED, select=select)
    # on the two selection problems [3, 8] and [1, 8] tie at 2.0; ties go to the smaller plan, [1, 8], which
    # scores (0.5 + 0.5 + 1.5 + 0.5) / 4 on all four
    assert g["best_single"]["plan"] == [1, 8] and g["best_single"]["reward"] == 0.75
    assert g["per_task_best"]["plans"] == {"add": [3, 8], "mul": [1, 8]}


def test_a_given_reward_is_used_instead_of_the_papers():
    rows = [dict(r, reward=1.0 if r["correct"] else 0.0) for r in ROWS]
    assert optimisation_gap(rows, TRAINED)["per_task_best"]["reward"] == 0.75  # accuracy now


def test_read_rows_reads_a_plan_tables_gzipped_episodes(tmp_path):
    path = tmp_path / "t.episodes.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(json.dumps(r) + "\n" for r in ROWS)
    assert read_rows(path) == ROWS
    with pytest.raises(ValueError, match="no such file"):
        read_rows(tmp_path / "missing.jsonl")


@pytest.mark.parametrize("rows, trained, match", [
    ([], TRAINED, "no rows"),
    ([{"problem_id": "a/0", "plan": [8]}], TRAINED, r"lacks \['correct'\]"),
    (ROWS + [dict(ROWS[0], task="mul")], TRAINED, "one task"),
    (ROWS, TRAINED + [_row("sub/0", [8], True)], "not in the table"),
    ([r for r in ROWS if r["plan"] != [1, 8] or r["problem_id"] != "mul/1"], TRAINED, r"'mul/1' lacks plans \[\[1, 8\]\]"),
], ids=["empty", "missing-key", "two-tasks", "outside", "unfilled"])
def test_bad_tables_raise_naming_the_problem(rows, trained, match):
    with pytest.raises(ValueError, match=match):
        optimisation_gap(rows, trained)


def test_plans_chosen_on_another_plan_set_are_refused():
    select = [r for r in ROWS if r["plan"] != [8]] + [dict(r, plan=[5, 8]) for r in ROWS if r["plan"] == [8]]
    with pytest.raises(ValueError, match="not in the table"):
        optimisation_gap([r for r in ROWS if r["plan"] != [3, 8]], TRAINED[3:4], select=select)


def test_outcome_table_averages_repeated_cells():
    table, tasks = outcome_table([_row("a/0", [8], True), _row("a/0", [8], False)])
    assert table == {"a/0": {(8,): (0.5, 0.5)}} and tasks == {"a/0": "a"}
