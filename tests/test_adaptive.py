"""rsim_env.adaptive: the atlas's mix as a named source (splits by generator seed, disjoint by question)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsim_env.adaptive import TASKS, adaptive_problems
from rsim_env.data import load_problems

SMALL = ("rg:chain_sum?min_terms=2&max_terms=2&min_digits=1&max_digits=1", "curriculum_task:mul_1d",
         "rg:prime_factorization")


def test_splits_are_disjoint_by_question_and_interleaved():
    val, test, train = (adaptive_problems(12, s, SMALL) for s in ("val", "test", "train"))
    q = {s: {p.question for p in ps} for s, ps in (("val", val), ("test", test), ("train", train))}
    assert not q["val"] & q["test"] and not q["train"] & (q["val"] | q["test"])
    assert len(val) == 12 and [p.source for p in val[:3]] == ["reasoning_gym:chain_sum", "curriculum:mul_1d",
                                                                "reasoning_gym:prime_factorization"]
    assert all(p.id.startswith("adaptive/val/") for p in val) and len({p.id for p in train}) == len(train)


def test_val_is_the_atlas_problems():
    """val is seed 0 at the atlas's setting: the same questions the atlas played (first of each task)."""
    from benchmarks.atlas_tasks import AtlasTask

    val = adaptive_problems(3, "val", SMALL)
    atlas = AtlasTask("chain_sum", "rg", (SMALL[0],)).load(0, 1, 0)
    assert val[0].question == atlas[0].question and val[0].answer == atlas[0].answer


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="choose one of"):
        adaptive_problems(2, "heldout", SMALL)
    with pytest.raises(ValueError, match=">= 1"):
        adaptive_problems(0, "val", SMALL)
    with pytest.raises(ValueError, match="no tasks"):
        adaptive_problems(2, "val", ())


def test_tasks_are_the_committed_atlas_main_pass():
    """TASKS is the atlas's mix_all (every main-pass task at its setting), the mix whose headroom excluded 0."""
    atlas = json.loads((Path(__file__).resolve().parent.parent / "docs/atlas_results/atlas.json").read_text())
    assert list(TASKS) == [t["setting"] for t in atlas["tasks"]]
    assert sorted(atlas["mix_all"]["tasks"]) == sorted(t["task"] for t in atlas["tasks"])
    assert atlas["mix_all"]["headroom"]["ci95"][0] > 0


def test_named_spec_loads_through_the_factory():
    ps = load_problems("adaptive:test", 2 * len(TASKS))
    assert {p.id.split("/")[1] for p in ps} == {"test"} and len(ps) == 2 * len(TASKS)
