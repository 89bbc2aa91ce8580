"""rsim_env.sources.adaptive: the atlas's mix as a named source (splits by generator seed, disjoint by question)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsim_env.sources.adaptive import TASKS
from rsim_env.sources.adaptive import adaptive_problems as _adaptive
from rsim_env.sources.data import load_problems


def adaptive_problems(limit, split, tasks):
    return _adaptive(lambda spec, n, seed: load_problems(spec, n, seed=seed), limit, split, tasks)

SMALL = ("rg:chain_sum?min_terms=2&max_terms=2&min_digits=1&max_digits=1", "curriculum_task:mul_1d",
         "rg:prime_factorization")


def test_splits_are_disjoint_by_question_and_interleaved():
    val, test, train = (adaptive_problems(12, s, SMALL) for s in ("val", "test", "train"))
    q = {s: {p.question for p in ps} for s, ps in (("val", val), ("test", test), ("train", train))}
    assert not q["val"] & q["test"] and not q["train"] & (q["val"] | q["test"])
    assert len(val) == 12 and [p.source for p in val[:3]] == ["reasoning_gym:chain_sum", "curriculum:mul_1d",
                                                                "reasoning_gym:prime_factorization"]
    assert all(p.id.startswith("adaptive/val/") for p in val) and len({p.id for p in train}) == len(train)


def test_each_split_is_its_hash_bucket_from_its_own_far_seed():
    """A question's split is a function of its text; the seeds are far apart (reasoning-gym's entry i of seed s is
    Random(s + i), so seeds 0 and 1 would share all but one entry)."""
    from rsim_env.sources.adaptive import SEEDS, split_of

    for s in ("val", "test", "train"):
        assert all(split_of(p.question) == s for p in adaptive_problems(9, s, SMALL))
    assert min(abs(a - b) for a in SEEDS.values() for b in SEEDS.values() if a != b) >= 10 ** 6
    small = adaptive_problems(None, "test", ("rg:prime_factorization?min_value=2&max_value=30",))
    assert 0 < len(small) < 40  # a 29-question task: the test split holds what the hash gives it


def test_a_text_belongs_to_one_split_of_one_task():
    """Within and across tasks: chain_sum and curriculum add2_1d share questions ("0 + 4 ="), which the first task in
    the list keeps; over every task of TASKS and all three splits no text is in two (split, task) cells."""
    from rsim_env.sources.adaptive import SEEDS, split_of

    pair = (SMALL[0], "curriculum_task:add2_1d")
    drawn = [{p.question for p in load_problems(pair[0], 400, seed=SEEDS["test"]) if split_of(p.question) == "test"},
             {p.question for p in _task_problems(pair[1]) if split_of(p.question) == "test"}]
    shared = drawn[0] & drawn[1]
    assert shared, "the two tasks no longer share a test question: pick another pair to exercise the rule"
    ps = adaptive_problems(None, "test", pair)
    by_task = {src: {p.question for p in ps if p.source == src} for src in {p.source for p in ps}}
    assert by_task["reasoning_gym:chain_sum"] == set(sorted(drawn[0], key=_order(pair[0]))[:40])  # first: unchanged
    assert not shared & by_task["curriculum:add2_1d"] and by_task["curriculum:add2_1d"] == drawn[1] - drawn[0]
    owner: dict[str, tuple[str, str]] = {}
    for split in ("val", "test", "train"):
        for p in adaptive_problems(4 * len(TASKS), split, TASKS):
            cell = (split, p.source)
            assert owner.setdefault(p.question, cell) == cell, f"{p.question!r} is in {owner[p.question]} and {cell}"


def _order(label):
    from rsim_env.sources.adaptive import SEEDS

    first = {}
    for i, p in enumerate(load_problems(label, 400, seed=SEEDS["test"])):
        first.setdefault(p.question, i)
    return first.__getitem__


def _task_problems(label):
    from rsim_env.sources.adaptive import SEEDS
    from rsim_env.sources.curriculum import curriculum_problems

    return curriculum_problems(400, "train", tasks=(label.partition(":")[2],), seed=SEEDS["test"])


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="choose one of"):
        adaptive_problems(2, "heldout", SMALL)
    with pytest.raises(ValueError, match=">= 1"):
        adaptive_problems(0, "val", SMALL)
    with pytest.raises(ValueError, match="no tasks"):
        adaptive_problems(2, "val", ())


def test_tasks_are_the_committed_atlas_main_pass():
    """TASKS is the atlas's mix_all (every main-pass task at its setting), the mix whose headroom excluded 0, less the
    reasoning-gym tasks whose scorer fails the sanity check (checked here, not named)."""
    from rsim_env.sources.data import _option
    from rsim_env.kinds.scorer_check import check

    def sound(setting: str) -> bool:
        if not setting.startswith("rg:"):
            return True
        name, _, query = setting[3:].partition("?")
        return check(name, {k: _option(v) for k, _, v in (i.partition("=") for i in query.split("&") if i)}) == ""

    atlas = json.loads((Path(__file__).resolve().parent.parent / "docs/atlas_results/atlas.json").read_text())
    kept = [t["setting"] for t in atlas["tasks"] if sound(t["setting"])]
    assert list(TASKS) == kept and len(kept) == len(atlas["tasks"]) - 1  # game_of_life_halting: refused
    assert sorted(atlas["mix_all"]["tasks"]) == sorted(t["task"] for t in atlas["tasks"])
    assert atlas["mix_all"]["headroom"]["ci95"][0] > 0


def test_named_spec_loads_through_the_factory():
    ps = load_problems("adaptive:test", 2 * len(TASKS))
    full = load_problems("adaptive:test")
    per_task = {t: sum(p.source == t for p in full) for t in {p.source for p in full}}
    assert {p.id.split("/")[1] for p in ps} == {"test"} and len(ps) == sum(min(2, n) for n in per_task.values())
    # curriculum:mul_1d asks the questions products asks at the atlas's setting: it keeps none of test's
    assert "curriculum:mul_1d" not in per_task and len(per_task) == len(TASKS) - 1
