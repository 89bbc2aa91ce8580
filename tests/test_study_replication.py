"""rsim study's replication and coverage on scripted tables (no model): which test tasks the replication split
covers, the test effect on exactly those tasks, "replicated" / "did not replicate" only of a significant original,
the test split's own short tasks, a captured share only for a gain whose interval is above 0; and the generator
seeds a study takes or refuses."""

from __future__ import annotations

import numpy as np
import pytest

from algos.study.config import resolve
from algos.study.report import build, coverage
from algos.study.types import ModeResult, Outcome, Table
from tests.study_helpers import ledger_of

PLANS = [(8,), (3, 8)]
FIXED, TRAINED = (8,), (3, 8)


def _split(split: str, counts: dict[str, int], rule) -> tuple[Table, dict[str, ModeResult]]:
    """A table of ``counts[task]`` problems a task; ``rule(task, i, plan)`` says whether the plan solves problem
    ``i``; the modes: ``best_fixed`` plays :data:`FIXED`, ``trained`` (two seeds) :data:`TRAINED`."""
    tasks, outcomes = {}, {}
    for task, n in counts.items():
        for i in range(n):
            pid = f"{split}-{task}-{i:02d}"
            tasks[pid] = task
            outcomes[pid] = {pl: Outcome(bool(rule(task, i, pl)), float(rule(task, i, pl)) + 0.5, 10.0) for pl in PLANS}
    table = Table(split, tasks, outcomes)
    ids = table.ids()
    modes = {name: ModeResult(name, {s: {p: outcomes[p][pl] for p in ids} for s in seeds},
                              {s: {p: pl for p in ids} for s in seeds}, on)
             for name, pl, seeds, on in (("best_fixed", FIXED, (0,), "train+val"), ("trained", TRAINED, (0, 1), "train"))}
    return table, modes


def _even(task, i, plan):  # both plans solve the same half: no difference
    return i % 2 == 0


def _gain(task, i, plan):  # the trained plan solves every problem, the fixed one a fifth
    return plan == TRAINED or i % 5 == 0


def _report(test_rule, rep_rule, rep_counts, test_counts=None, per_task=10):
    test_counts = test_counts or {"alpha": 10, "beta": 10, "gamma": 10}
    test = _split("test", test_counts, test_rule)
    rep = None if rep_rule is None else _split("replication", rep_counts, rep_rule)
    return build(*test, ledger=ledger_of(*test, rounds=500), replication=rep, meta={"config": {"test_per_task": per_task}}, rounds=500)


def test_coverage_names_the_short_and_missing_tasks():
    c = coverage({"a": 10, "b": 10, "c": 3}, {"a": 10, "b": 4, "x": 2}, per_task=10)
    assert c["test_short"] == {"c": 3}
    assert c["replication_short"] == {"b": [10, 4], "c": [3, 0]}
    assert c["replication_missing"] == ["c"] and c["replication_extra"] == ["x"]


def test_a_non_significant_original_is_not_said_to_replicate_or_not():
    r = _report(_even, _gain, {"alpha": 10, "beta": 10, "gamma": 10})
    assert r["headline"]["verdict"] == "no measurable difference"
    assert r["headline"]["replicated"] is None and r["replication"]["replicated"] is None
    text = r["headline"]["sentences"]["replication"]
    assert "Replicated" not in text and "did not replicate" not in text.lower() and "side by side" in text
    assert "replicate." not in r["headline"]["sentences"]["headline"]


@pytest.mark.parametrize("rep_rule, replicated", [(_gain, True), (_even, False)], ids=["same-gain", "no-gain"])
def test_a_significant_original_replicates_or_not(rep_rule, replicated):
    r = _report(_gain, rep_rule, {"alpha": 10, "beta": 10, "gamma": 10})
    assert r["headline"]["verdict"] == "above"
    assert r["replication"]["replicated"] is replicated and r["replication"]["original_significant"]
    text = r["headline"]["sentences"]["replication"]
    assert ("Replicated:" in text) is replicated and ("Did not replicate:" in text) is not replicated
    assert "covers every test task" in text


def test_a_short_replication_names_its_tasks_and_compares_on_the_covered_ones():
    def test_rule(task, i, plan):  # the gain is on gamma only: the covered tasks have none
        return (plan == TRAINED or i % 5 == 0) if task == "gamma" else i % 2 == 0

    r = _report(test_rule, _even, {"alpha": 10, "beta": 4})
    rep = r["replication"]
    assert rep["coverage"]["replication_short"] == {"beta": [10, 4], "gamma": [10, 0]}
    covered = rep["test_on_covered_tasks"]
    assert covered["tasks"] == 2 and covered["problems"] == 20 and covered["difference_pts"] == pytest.approx(0.0)
    assert r["headline"]["difference_pts"] == pytest.approx(100 * 8 / 30)
    text = r["headline"]["sentences"]["replication"]
    assert "beta 4 of 10" in text and "gamma 0 of 10" in text and "on the 2 tasks it covers" in text
    assert "+0.0 points" in text


def test_the_test_splits_own_short_tasks_are_stated():
    r = _report(_even, None, {}, test_counts={"alpha": 10, "beta": 3, "gamma": 5})
    assert r["coverage"]["test_short"] == {"beta": 3, "gamma": 5}
    assert "beta 3, gamma 5" in r["headline"]["sentences"]["coverage"]
    full = _report(_even, None, {})
    assert full["coverage"]["test_short"] == {} and "Every one" in full["headline"]["sentences"]["coverage"]


def test_no_captured_share_of_a_ceiling_for_a_loss():
    def lose(task, i, plan):  # the fixed plan solves 6 of 10, the trained one 5 of them: a loss, headroom elsewhere
        return i < 6 if plan == FIXED else i < 5

    r = _report(lose, None, {})
    assert r["headline"]["difference_pts"] < 0
    for key in ("per_task_on_test", "oracle"):
        assert r["ceilings"][key]["captured"] is None
    assert "% of it" not in r["headline"]["sentences"]["ceiling"]


def test_a_gain_with_its_interval_above_0_gets_its_share():
    def rule(task, i, plan):  # trained beats fixed; some problems neither solves
        return i < 8 if plan == TRAINED else i < 2

    r = _report(rule, None, {})
    assert r["headline"]["ci95_pts"][0] > 0
    assert r["ceilings"]["oracle"]["captured"] == pytest.approx(100.0)
    assert "100 % of it" in r["headline"]["sentences"]["ceiling"]


def test_no_self_praise_in_the_report_text():
    r = _report(_even, _even, {"alpha": 10})
    from algos.study.report_md import markdown

    assert "cannot say more" not in markdown(r)


@pytest.mark.parametrize("overrides, match", [
    ({"data": "adaptive", "data_seed": 5}, "data_seed=5 is invalid for data 'adaptive'"),
    ({"data": "adaptive", "replication_seed": 1_000_000}, "seed of another split"),
    ({"data": "problems.jsonl", "data_seed": 5}, "a file is not drawn"),
    ({"data": "problems.jsonl", "replication_seed": 7}, "a file is not drawn"),
    ({"test_data": "rg:gcd"}, "test_data"),
], ids=["adaptive-data-seed", "adaptive-replication-seed", "file-data-seed", "file-replication-seed", "not-a-file"])
def test_seeds_a_source_cannot_use_are_refused(overrides, match):
    with pytest.raises(ValueError, match=match):
        resolve(None, overrides)


def test_the_adaptive_replication_seed_is_used():
    from rsim_env.sources.adaptive import adaptive_problems
    from rsim_env.sources.data import load_problems

    tasks = ("rg:gcd?min_value=1&max_value=20",)

    def load(spec, n, seed):
        return load_problems(spec, n, seed=seed)

    a = adaptive_problems(load, 5, "replication", tasks=tasks)
    b = adaptive_problems(load, 5, "replication", tasks=tasks, seed=4_000_000)
    assert [p.question for p in a] != [p.question for p in b]
    assert not {p.question for p in a + b} & {p.question for p in adaptive_problems(load, 40, "test", tasks=tasks)}
    with pytest.raises(ValueError, match="only the replication split takes a seed"):
        adaptive_problems(load, 5, "test", tasks=tasks, seed=4_000_000)
    assert np.all([p.id.startswith("adaptive/replication/") for p in b])


def test_another_replication_draw_has_its_own_tree(tmp_path):
    """Another draw's tree is its own (problem ids do not name the seed); its ledger is its own because its problems
    are others (the ledger is keyed by the questions' content)."""
    from algos.study.paths import StudyPaths

    cfg = StudyPaths.of(resolve("tiny", {"out": str(tmp_path)}))
    other = StudyPaths.of(resolve("tiny", {"out": str(tmp_path), "replication_seed": 4_000_000}))
    assert cfg.tree("replication").name == "study_replication.tree.json.gz"
    assert other.tree("replication").name == "study_replication_s4000000.tree.json.gz"
    assert other.tree("test") == cfg.tree("test")


def _vocab_load(vocab: dict[str, int]):
    """A generator per task with ``vocab[task]`` distinct questions (entry ``i`` of seed ``s`` from ``s + i``, as a
    reasoning-gym generator)."""
    from rsim_env.problem import Problem

    def load(spec: str, n: int, seed: int) -> list:
        return [Problem(id=f"{spec}/{i}", question=f"{spec} question {(seed + i) * 7919 % vocab[spec]}", answer="0")
                for i in range(n)]
    return load


def test_the_adaptive_replication_is_topped_up_to_the_tests_count_or_stays_short_when_exhausted():
    from rsim_env.sources.adaptive import adaptive_problems, split_of

    vocab = {"big": 1_000_000, "small": 60, "tiny": 12}
    load, tasks = _vocab_load(vocab), tuple(vocab)
    test = adaptive_problems(load, 4 * len(tasks), "test", tasks=tasks)
    rep = adaptive_problems(load, 4 * len(tasks), "replication", tasks=tasks)

    def texts(items, task):
        return [p.question for p in items if p.question.startswith(task + " ")]

    for task in tasks:
        t, r = texts(test, task), texts(rep, task)
        assert all(split_of(q) == "test" for q in r) and not set(r) & set(t) and len(set(r)) == len(r)
        if vocab[task] < 1000:  # every question of the task is known: as many as the test has, or all there are
            bucket = {f"{task} question {k}" for k in range(vocab[task]) if split_of(f"{task} question {k}") == "test"}
            assert len(r) == min(len(t), len(bucket - set(t))), task
    assert len(texts(rep, "big")) == 4 and len(texts(rep, "small")) == len(texts(test, "small"))
    assert len(texts(rep, "tiny")) < len(texts(test, "tiny"))  # exhausted: it stays short
    # the first draw's problems come first (a tree filled before the top-up keeps them): "big" never needed one
    assert all(int(p.id.rsplit("/", 1)[1]) < 400 for p in rep if p.question.startswith("big "))
