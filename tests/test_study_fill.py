"""algos.study splits and fill: texts in one split and one task, the replication draw disjoint from every split, the
cost computed from the game (17 steps a problem for two rounds, 145 for three), a balanced fill that resumes and
decodes nothing twice, and the committed adaptive trees needing no decoding at all."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path

import pytest

from algos.study import fill, splits
from algos.study.config import StudyConfig, game, resolve
from algos.study.paths import StudyPaths
from algos.study.tables import plans_of
from rsim_env import Problem

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


@pytest.mark.parametrize("rounds, terminal, steps, plans", [(2, True, 17, 9), (3, True, 145, 73), (2, False, 81, 73)],
                         ids=["two-rounds", "three-rounds", "two-rounds-any-end"])
def test_steps_a_problem_follow_from_the_game(rounds, terminal, steps, plans):
    cfg = StudyConfig(rounds=rounds, terminate_last_round=terminal)
    assert len(plans_of(game(cfg))) == plans
    assert fill.steps_per_problem(plans_of(game(cfg))) == steps


def test_splits_are_disjoint_by_text_and_by_task():
    cfg = resolve("tiny")
    got = {s: splits.problems(cfg, s) for s in ("train", "val", "test", "replication")}
    for s, items in got.items():
        tasks = splits.by_task(items)
        assert sorted(tasks) == ["reasoning_gym:chain_sum", "reasoning_gym:products"], s
        assert all(len(v) == cfg.per_task(s) for v in tasks.values()), (s, {t: len(v) for t, v in tasks.items()})
        assert len({p.id for p in items}) == len(items)
    texts = {s: {p.question for p in items} for s, items in got.items()}
    for a, b in itertools.combinations(texts, 2):
        assert not texts[a] & texts[b], (a, b)
    owner: dict[str, str] = {}
    for items in got.values():
        for p in items:
            assert owner.setdefault(p.question, splits.task_of(p)) == splits.task_of(p)


def test_first_per_task_is_a_balanced_prefix():
    items = splits.problems(resolve("tiny"), "train")
    two = splits.first_per_task(items, 2)
    assert [len(v) for v in splits.by_task(two).values()] == [2, 2]
    assert all(p in items for p in two)


@pytest.mark.parametrize("problem, task", [
    (Problem(id="adaptive/test/gcd/3", question="q", answer="1", source="reasoning_gym:gcd"), "gcd"),
    (Problem(id="x/1", question="q", answer="1", source="reasoning_gym:lcm"), "reasoning_gym:lcm"),
    (Problem(id="x/1", question="q", answer="1", source="s", metadata={"task": "mine"}), "mine"),
], ids=["adaptive-id", "source", "metadata"])
def test_task_of(problem, task):
    assert splits.task_of(problem) == task


def test_a_file_labels_tasks_by_its_column_and_has_no_replication(tmp_path):
    rows = [{"question": f"What is {i} + {j}?", "answer": str(i + j), "task": "add" if j % 2 else "sum"}
            for i in range(20) for j in range(6)]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = StudyConfig(data=str(path), train_per_task=5, val_per_task=3, test_per_task=3)
    test = splits.problems(cfg, "test")
    assert {splits.task_of(p) for p in test} == {"add", "sum"} and len(test) == 6
    with pytest.raises(ValueError, match="no second draw"):
        splits.problems(cfg, "replication")


def test_an_empty_split_is_refused(tmp_path):
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"question": "What is 1 + 1?", "answer": "2", "task": "a"}) + "\n")
    bucket = __import__("rsim_env.sources.adaptive", fromlist=["split_of"]).split_of("What is 1 + 1?")
    other = next(s for s in ("train", "val", "test") if s != bucket)
    with pytest.raises(ValueError, match=f"no {other} problem"):
        splits.problems(StudyConfig(data=str(path)), other)


@pytest.fixture(scope="module")
def tiny_fill(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study_fill")
    mp = pytest.MonkeyPatch()
    mp.setenv("RSIM_REPLAY_DIR", str(tmp / "replay"))
    try:
        small = resolve("tiny", {"out": str(tmp / "study"), "train_per_task": 1, "fill_splits": "train"})
        first = fill.run(small)  # no rate known: a warm-up rollout measures it
        cfg = resolve("tiny", {"out": str(tmp / "study")})
        before = fill.cost(cfg, ["train", "val", "test"])
        second = fill.run(cfg)
        again = fill.run(cfg)
    finally:
        mp.undo()
    return cfg, first, before, second, again


def test_fill_prints_its_cost_then_fills_resumes_and_decodes_nothing_twice(tiny_fill):
    cfg, first, before, second, again = tiny_fill
    assert first["cost"]["to_decode"] == 2 * 17 and first["decoded"] == 2 * 17 and first["warmup"]["steps"] > 0
    # the second run knows the rate from the first one's info JSON, and decodes only what the first did not
    rows = before["splits"]
    assert rows["train"] == {"problems": 6, "steps_per_problem": 17, "steps_in_tree": 34, "to_decode": 4 * 17}
    assert rows["val"]["to_decode"] == rows["test"]["to_decode"] == 4 * 17
    assert before["rate"] and before["eta_s"] == pytest.approx(before["to_decode"] / before["rate"])
    assert second["decoded"] == before["to_decode"] and "warmup" not in second
    assert again["decoded"] == 0 and again["cost"]["to_decode"] == 0 and "load_s" not in again  # no model loaded
    info = json.loads(StudyPaths.of(cfg).info("train").read_text())
    assert info["problems"] == 6 and info["steps"] == 6 * 17 and info["per_task"] == 3
    assert all(r["replay"]["catchup_mismatch"] == 0 for r in info["increments"])
    assert [r["per_task"] for r in info["increments"]][-1] == 3


def test_the_cost_table_names_steps_and_time(tiny_fill):
    cfg = tiny_fill[0]
    buf = io.StringIO()
    fill.print_cost({**fill.cost(cfg, ["test"]), "to_decode": 170, "rate": 2.0, "eta_s": 85.0}, file=buf)
    assert "| test | 4 | 17 | 68 | 0 |" in buf.getvalue() and "170 steps to decode, about 85 s at 2.00 steps/s" in \
        buf.getvalue()


def test_a_tree_filled_with_another_reasoner_is_refused(tiny_fill):
    cfg = tiny_fill[0]
    path = StudyPaths.of(cfg).info("val")
    text = path.read_text()
    try:
        info = json.loads(text)
        info["config"]["max_step_tokens"] = 99
        path.write_text(json.dumps(info))
        with pytest.raises(ValueError, match="max_step_tokens: 99"):
            fill.cost(cfg, ["val"])
    finally:
        path.write_text(text)


def test_a_served_reasoner_is_decoded_with_concurrent_requests():
    cfg = StudyConfig(reasoner="openai:m@http://127.0.0.1:1/v1", max_copies=32)
    assert fill.reasoner_spec(cfg) == "replay:openai:m@http://127.0.0.1:1/v1#max_concurrency=32"
    own = StudyConfig(reasoner="openai:m@http://h/v1#max_concurrency=4")
    assert fill.reasoner_spec(own).endswith("#max_concurrency=4")
    assert fill.reasoner_spec(StudyConfig(reasoner="replay:default")) == "replay:default"


def test_the_committed_adaptive_trees_need_no_decoding():
    """``rsim study --preset adaptive --stage fill`` decodes nothing: the committed test tree holds every plan of every
    problem the split rule gives (282 problems, as its header says), and its header's rate is the cost's."""
    cfg = resolve("adaptive")
    header = json.loads((ROOT / "docs/study_results/adaptive/trees/adaptive_test.tree.json").read_text())
    c = fill.cost(cfg, ["test"])
    assert c["splits"]["test"]["problems"] == header["problems"] == 282
    assert c["splits"]["test"]["to_decode"] == 0 and c["to_decode"] == 0
    assert header["config"]["reasoner"] == cfg.reasoner and header["meta"]["env"]["max_steps"] == cfg.rounds
    assert c["rate"] == pytest.approx(fill.measured_rate(header))


def test_fill_overhead_benchmark_decodes_the_same_steps_by_both_routes(tmp_path):
    from benchmarks.runtime import fill_overhead

    r = fill_overhead.main(fill_overhead.Config(reasoner="tiny", max_step_tokens=4, max_answer_tokens=6, per_task=1,
                                                out=str(tmp_path / "o.json")))
    raw, filled = r["rows"]
    assert r["problems"] == 2 and filled["steps"] == raw["steps"] == 2 * 17
    assert filled["tokens"] == raw["tokens"] > 0  # a greedy reasoner writes the same steps by both routes
    assert filled["replay"]["misses"] == 2 * 17 and filled["replay"]["catchup_mismatch"] == 0
    assert json.loads((tmp_path / "o.json").read_text())["overhead"] == pytest.approx(r["overhead"])
