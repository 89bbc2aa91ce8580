"""algos.study score stage: every mode on a read-back table (plans chosen on train + val, the bandit on train, random
per seed, none and self-consistency from episodes), the scripted study scored end to end with its ledger entry and
reuse, plug-in transfer of another study's heads, and the committed adaptive study reproduced from the committed
trees, heads and features (no model, no decoding)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from algos.study import modes as m
from algos.study.types import Outcome, Table

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py

PLANS = [(8,), (1, 8), (3, 8)]


def table(split: str, rows: dict[str, tuple[str, dict[tuple[int, ...], bool]]]) -> Table:
    """A table from ``{problem: (task, {plan: correct})}``; reward = correct + 0.5, 10 tokens a step."""
    return Table(split, {p: t for p, (t, _) in rows.items()},
                 {p: {pl: Outcome(c, float(c) + 0.5, 10.0 * len(pl)) for pl, c in by.items()}
                  for p, (_, by) in rows.items()})


def solved_by(task: str, plan: tuple[int, ...], n: int, split: str, start: int = 0) -> dict:
    return {f"{split}/{task}/{i}": (task, {pl: pl == plan for pl in PLANS}) for i in range(start, start + n)}


TRAIN = table("train", {**solved_by("a", (1, 8), 6, "train"), **solved_by("b", (3, 8), 4, "train")})
VAL = table("val", {**solved_by("a", (1, 8), 2, "val"), **solved_by("b", (3, 8), 2, "val")})
TEST = table("test", {**solved_by("a", (1, 8), 3, "test"), **solved_by("b", (3, 8), 3, "test")})


def accuracy(result, seed=0):
    by = result.outcomes[seed]
    return sum(o.correct for o in by.values()) / len(by)


def test_plan_baselines_are_chosen_on_train_and_val_and_read_back_on_test():
    chosen = m.choose([TRAIN, VAL])
    assert chosen["best_single"] == (1, 8)  # task a has more selection problems
    assert chosen["per_task_best"] == {"a": (1, 8), "b": (3, 8)}
    assert accuracy(m.fixed_mode(TEST, chosen, "train+val")) == 0.5
    per_task = m.per_task_mode(TEST, chosen, "train+val")
    assert accuracy(per_task) == 1.0 and per_task.chosen_on == "train+val"
    assert per_task.plans[0]["test/b/0"] == (3, 8)


def test_ties_go_to_the_shortest_plan():
    flat = table("train", {f"p{i}": ("a", {pl: False for pl in PLANS}) for i in range(3)})
    assert m.choose([flat])["best_single"] == (8,)


def test_a_test_task_without_selection_problems_is_refused():
    with pytest.raises(ValueError, match=r"test tasks \['c'\]"):
        m.per_task_mode(table("test", solved_by("c", (8,), 2, "test")), m.choose([TRAIN]), "train")


def test_the_bandit_learns_each_tasks_plan_from_train_episodes():
    b = m.bandit_mode(TRAIN, TEST, episodes=400, seeds=[0, 1])
    assert b.info["episodes"] == 400 and b.chosen_on == "train episodes"
    assert all(accuracy(b, s) == 1.0 for s in (0, 1))
    few = m.thompson(TRAIN, 1, seed=0)
    assert sum(n for by in few["pulls"].values() for n in by.values()) == 1


def test_random_plays_one_plan_per_problem_per_seed_and_knows_its_expectation():
    r = m.random_mode(TEST, [0, 1, 2])
    assert sorted(r.outcomes) == [0, 1, 2]
    assert all(r.plans[s][p] in PLANS for s in r.plans for p in TEST.ids())
    assert r.info["expected_accuracy"] == pytest.approx(1 / 3)
    assert m.random_mode(TEST, [1]).plans[1] == r.plans[1]  # a seed's draw does not depend on the others


def test_trained_needs_a_plan_for_every_test_problem():
    plans = {0: {p: (1, 8) for p in TEST.ids()}}
    assert accuracy(m.trained_mode(TEST, plans)) == 0.5
    del plans[0]["test/a/0"]
    with pytest.raises(ValueError, match="no plan for 1 test problems"):
        m.trained_mode(TEST, plans)


def episode(pid, sample, extracted, correct, written=40):
    return {"problem_id": pid, "sample": sample, "extracted": extracted, "correct": correct,
            "tokens": {"reasoner_read": 10, "reasoner_written": written}}


def test_none_reads_sample_zero_and_earns_no_planner_reward():
    rows = [episode(p, s, "1", s == 0 and p.startswith("test/a")) for p in TEST.ids() for s in (1, 0)]
    none = m.episode_mode("none", TEST, rows, "x.jsonl")
    assert accuracy(none) == 0.5 and none.plans is None
    assert all(math.isnan(o.reward) for o in none.outcomes[0].values())
    with pytest.raises(ValueError, match="miss 6 of the 6 test problems"):
        m.episode_mode("none", TEST, [episode("other", 0, "1", True)], "x.jsonl")


@pytest.mark.parametrize("budget, k, acc", [(40.0, 1, 0.0), (120.0, 3, 1.0)], ids=["k1", "k3"])
def test_self_consistency_votes_over_k_samples_at_equal_tokens(budget, k, acc):
    # per problem: sample 0 wrong ("7"), samples 1 and 2 right ("5"): the majority of 3 is right, of 1 wrong
    rows = [episode(p, s, "7" if s == 0 else "5", s > 0) for p in TEST.ids() for s in range(3)]
    sc = m.sc_mode(TEST, rows, budget, "sc.jsonl")
    assert sc.info["k"] == k and accuracy(sc) == acc
    assert sc.outcomes[0]["test/a/0"].tokens == 40.0 * k
    with pytest.raises(ValueError, match="fewer than k=5"):
        m.sc_mode(TEST, rows, 200.0, "sc.jsonl")


def test_majority_vote_ignores_samples_without_an_answer_and_breaks_ties_by_order():
    assert m.majority_vote([episode("p", 0, None, False), episode("p", 1, "3", True)]) is True
    assert m.majority_vote([episode("p", 0, "3", True), episode("p", 1, "4", False)]) is True
    assert m.majority_vote([episode("p", 0, None, False)]) is False


# ------------------------------------------------------------------ the scripted study, end to end


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    from tests.study_helpers import study

    from algos.study.train import train

    tmp = tmp_path_factory.mktemp("study_score")
    cfg = study(tmp / "own")
    train(cfg)
    return tmp, cfg


def test_every_mode_is_scored_recorded_once_and_reused(scripted):
    from algos.study import ledger
    from algos.study.score import score

    tmp, cfg = scripted
    test, modes = score(cfg)
    assert set(modes) == {"trained", "best_fixed", "per_task", "bandit", "random"}  # no none / sc episodes here
    assert {test.tasks[p] for p in test.ids()} == {"add", "mul"}
    assert accuracy(modes["best_fixed"]) == pytest.approx(0.5) and accuracy(modes["per_task"]) == 1.0
    assert sorted(modes["trained"].outcomes) == [0, 1]
    assert all(accuracy(modes["trained"], s) == 1.0 for s in (0, 1))  # the families are told apart by the text
    saved = (Path(cfg.out) / "scores" / "test.json.gz").read_bytes()
    again_test, again = score(cfg)  # identical configuration: read back, no new ledger entry
    assert (Path(cfg.out) / "scores" / "test.json.gz").read_bytes() == saved
    assert again["trained"].plans == modes["trained"].plans and again_test.outcomes == test.outcomes
    from algos.study.score import primary_p

    found = ledger.find(json.loads(gzip.decompress(saved))["test_set"], ledger.study_folders(cfg))
    assert len(ledger.family(found)) == 1 and found.looks[0]["p_value"] == primary_p(test, modes) is not None


def test_none_and_self_consistency_come_from_the_studys_episodes(scripted):
    import gzip
    from dataclasses import replace

    from algos.study.score import score

    tmp, cfg = scripted
    test = score(cfg)[0]
    rows = [episode(p, s, "1", s == 0) for p in test.ids() for s in range(2)]
    folder = tmp / "with_episodes"
    with_episodes = replace(cfg, out=str(folder), tree_dir=str(Path(cfg.out) / "trees"),
                            heads_dir=str(Path(cfg.out) / "heads"))
    (folder / "episodes").mkdir(parents=True)
    for kind in ("none", "sc"):
        with gzip.open(folder / "episodes" / f"{kind}_test.jsonl.gz", "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    modes = score(with_episodes)[1]
    assert accuracy(modes["none"]) == 1.0 and modes["sc"].info["k"] == 1


def test_heads_from_another_study_are_scored_on_this_studys_test_tree(scripted):
    """Plug-in transfer: heads trained against one reasoner, scored against another on its own test tree beside its
    own baselines. The other reasoner solves each task under the other task's plan, so the transferred heads --
    which play the first reasoner's plans -- lose to this study's per-task policy."""
    from tests.study_helpers import study

    from algos.study.score import score

    tmp, own = scripted
    other = study(tmp / "other", reasoner="swapped_reasoner", heads_from=str(Path(own.out)))
    test, modes = score(other)
    trained = modes["trained"]
    assert trained.info["heads_from"] == str(Path(own.out))
    assert sorted(trained.outcomes) == [0, 1]
    want = {"add": (3, 8), "mul": (1, 8)}  # the first reasoner's plans, learned by its heads
    assert all(trained.plans[s][p] == want[test.tasks[p]] for s in (0, 1) for p in test.ids())
    assert all(accuracy(trained, s) == 0.0 for s in (0, 1)) and accuracy(modes["per_task"]) == 1.0


# ------------------------------------------------------------------ the committed adaptive study

COMMITTED = ROOT / "docs/study_results/adaptive"
SAMPLE_EVERY = 25
"""The read-back check replays every test problem and every 25th train and val problem from the trees."""


def _committed_config(tmp_path: Path, trees: Path):
    from algos.study.config import resolve

    return resolve("adaptive", {"out": str(tmp_path / "study"), "tree_dir": str(trees),
                                "heads_dir": str(ROOT / "docs/training_results/planners/tree_adaptive_40_std"),
                                "features_dir": str(COMMITTED / "features"),
                                "none_episodes": str(ROOT / "docs/training_results/eval_checks/none_test282_replay.episodes.jsonl.gz"),
                                "sc_episodes": str(ROOT / "docs/training_results/tree_sc_test.episodes.jsonl.gz")})


def _tree_copies(tmp_path: Path) -> Path:
    """A copy of the committed trees: the committed test tree's ledger records real scorings, not a test's."""
    import shutil

    trees = tmp_path / "trees"
    trees.mkdir()
    for split in ("train", "val", "test"):
        for suffix in (".tree.json.gz", ".tree.json"):
            shutil.copy(COMMITTED / "trees" / f"adaptive_{split}{suffix}", trees)
    return trees


@pytest.mark.long
def test_the_committed_tables_are_the_read_back_of_the_committed_trees(tmp_path):
    """The committed read-back tables (``scores/tables``, which the score stage reuses while its tree's fingerprint
    holds) are what the trees play back to: every plan of every test problem, and of every 25th train and val
    problem, replayed through the env from the tree (the full read-back of all 1,722 problems is the score stage's
    own 3 minutes)."""
    from algos.study import jsonfile
    from algos.study.ledger import tree_fingerprint
    from algos.study.splits import task_of
    from algos.study.tables import read_table, tree_problems
    from algos.study.types import table_from_json

    cfg = _committed_config(tmp_path, COMMITTED / "trees")  # read back only: nothing is scored, no copy needed
    for split in ("train", "val", "test"):
        data = jsonfile.read(COMMITTED / "scores" / "tables" / f"{split}.json.gz")
        assert data["tree"] == tree_fingerprint(COMMITTED / "trees" / f"adaptive_{split}.tree.json.gz")
        committed = table_from_json(data)
        tree, items = tree_problems(cfg, split)
        assert [p.id for p in items] == list(committed.tasks), f"{split}: the committed table's problems"
        sample = items if split == "test" else items[::SAMPLE_EVERY]
        fresh = read_table(tree, sample, split, task_of)
        assert len(fresh.ids()) == len(sample) >= 20
        assert {p: dict(by) for p, by in fresh.outcomes.items()} == \
            {p: dict(committed.outcomes[p]) for p in fresh.ids()}, f"{split}: the read-back differs from the table"


def test_the_committed_adaptive_study_reproduces_from_its_trees_heads_and_features(tmp_path):
    """``score`` on the committed trees and their committed read-back tables (checked against the trees above), the
    six committed heads and the committed test features (no backbone forward): trained 24.7 %, best fixed [3, 8]
    22.7 %, per-task 24.5 % on the 282 test problems, and each seed's plans equal to the plans the powered study
    recorded."""
    import shutil

    from algos.study.score import score

    cfg = _committed_config(tmp_path, _tree_copies(tmp_path))
    shutil.copytree(COMMITTED / "scores" / "tables", tmp_path / "study" / "scores" / "tables")
    test, modes = score(cfg)
    assert len(test.ids()) == 282
    n = {name: [sum(o.correct for o in by.values()) for by in r.outcomes.values()] for name, r in modes.items()}
    assert sum(n["trained"]) / 6 / 282 == pytest.approx(0.24704491725768318)
    assert n["trained"] == [72, 67, 69, 68, 69, 73]
    assert n["best_fixed"] == [64] and modes["best_fixed"].info["plan"] == [3, 8]
    assert n["per_task"] == [69]
    recorded = json.loads(gzip.decompress((ROOT / "docs/training_results/tree_learner_adaptive_40_std.json.gz")
                                          .read_bytes()))
    for run in recorded["runs"]:
        got = modes["trained"].plans[run["seed"]]
        assert {p: list(pl) for p, pl in got.items()} == run["plans"]["test"]
    assert set(modes) >= {"bandit", "random", "none", "sc"}
