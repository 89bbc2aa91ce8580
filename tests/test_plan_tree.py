"""agents.replay.plan_tree: the tree holds every plan's steps once, plays the live replay route's episodes byte for byte,
refuses a step it lacks, resumes; rsim_env.grading.GradeCache grades as the kind does."""

from __future__ import annotations

import gzip
from dataclasses import asdict, replace
import json

import pytest
import torch

from agents.hf.loading import tiny_model
from agents.replay.plan_tree import (PlanTree, TreeMiss, TreeReasoner, env_differences, fill, game_plans, terminal_plans,
                                     waves)
from agents.reasoner import Reasoner, ReasonerConfig
from agents.replay.reasoner import ReplayReasoner, StepStore
from agents.scripted.policies import RandomPlanner
from algos.rollout import rollout
from rsim_env import Component, Problem
from rsim_env.game import EnvConfig
from rsim_env.grading import GradeCache, grade
from rsim_env.group import EnvGroup

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py

PROBLEMS = [Problem(id="a", question="What is 2+3?", answer="5"),
            Problem(id="b", question="What is 7*6?", answer="42"),
            Problem(id="c", question="What is 2+3?", answer="5", source="dup")]  # same question as "a"
ENV = EnvConfig(max_steps=2)


def replayed(store, seed: int = 0) -> ReplayReasoner:
    model, tok = tiny_model(seed=seed)
    inner = Reasoner(model, tok, ReasonerConfig(max_step_tokens=5, max_answer_tokens=7, greedy=True, seed=0))
    return ReplayReasoner(inner, StepStore(store))


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tree")
    reasoner = replayed(tmp / "s.sqlite")
    tree = fill(tmp / "t.json.gz", PROBLEMS, reasoner, ENV, max_copies=40)
    return tmp, tree, dict(reasoner.stats)


def test_plan_counts_and_waves():
    assert game_plans(1) == [(s,) for s in range(9)]
    assert len(game_plans(2)) == 73 and len(game_plans(3)) == 1 + 8 + 8 * 8 * 9
    assert terminal_plans(3) == [p for p in game_plans(3) if p[-1] == 8] and len(terminal_plans(2)) == 9
    pairs = [("q", p) for p in game_plans(2)]
    split = waves(pairs)
    assert [len(w) for w in split] == [9, 64]  # one plan per first strategy, then the rest reads round 0 back
    for w in split:  # no new prefix is decoded twice in one wave
        firsts = [pairs[i][1][:1] for i in w]
        assert len(w) == 64 or len(set(firsts)) == len(firsts)


def test_fill_decodes_each_distinct_step_once_and_resumes(filled, tmp_path):
    tmp, tree, stats = filled
    # 81 distinct steps per question (9 first steps + 8 x 9 second ones); "c" repeats "a"'s question
    assert len(tree.steps) == 2 * 81 and stats["misses"] == 2 * 81 and stats["catchup_mismatch"] == 0
    assert len(tree.nodes) == 3 * 81 and all(tree.has(p.id, plan) for p in PROBLEMS for plan in game_plans(2))
    again = replayed(tmp / "s.sqlite")
    same = fill(tmp / "t.json.gz", PROBLEMS, again, ENV)  # a rerun plays nothing
    assert again.stats["misses"] == again.stats["hits"] == 0 and same.steps == tree.steps
    # an interrupted fill (one problem done) resumes from the file and from the replay store
    part = fill(tmp_path / "p.json.gz", PROBLEMS[:1], replayed(tmp / "s.sqlite"), ENV)
    rest = replayed(tmp / "s.sqlite")
    whole = fill(tmp_path / "p.json.gz", PROBLEMS, rest, ENV)
    assert len(part.nodes) == 81 and whole.nodes == tree.nodes and rest.stats["misses"] == 0
    with gzip.open(tmp_path / "p.json.gz", "rt") as f:
        assert json.load(f)["format"] == 1


def test_fill_refuses_another_reasoner_and_bad_plans(filled):
    tmp, _, _ = filled
    with pytest.raises(ValueError, match="another reasoner"):
        fill(tmp / "t.json.gz", PROBLEMS, replayed(tmp / "other.sqlite", seed=1), ENV)
    with pytest.raises(ValueError, match="another env config"):
        fill(tmp / "t.json.gz", PROBLEMS, replayed(tmp / "s.sqlite"), EnvConfig(max_steps=3), plans=[(8,)])
    with pytest.raises(ValueError, match=r"max_steps: 2 -> 3"):  # the error names the field that differs
        fill(tmp / "t.json.gz", PROBLEMS, replayed(tmp / "s.sqlite"), EnvConfig(max_steps=3), plans=[(8,)])
    with pytest.raises(ValueError, match="not a whole episode"):
        fill(tmp / "x.json.gz", PROBLEMS, replayed(tmp / "s.sqlite"), ENV, plans=[(8, 3)])
    with pytest.raises(TypeError, match="ReplayReasoner"):
        fill(tmp / "x.json.gz", PROBLEMS, replayed(tmp / "s.sqlite").inner, ENV)


def _play(reasoner, problems, seed, grader=None):
    torch.manual_seed(0)
    groups = [EnvGroup([p], 6, config=ENV, **({"grader": grader} if grader is not None else {})) for p in problems]
    out = rollout(groups, reasoner, RandomPlanner(seed=seed, p_terminate=0.3), seed=seed)
    return [(t["rewards"], t["info"]) for t in out.trajectories]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_route_plays_the_live_replay_routes_episodes(filled, seed):
    tmp, _, _ = filled
    tree = TreeReasoner(PlanTree.load(tmp / "t.json.gz"))
    cache = GradeCache()
    live = replayed(tmp / "s.sqlite")
    episodes = _play(tree, PROBLEMS, seed, cache)
    assert episodes == _play(live, PROBLEMS, seed)
    assert _play(tree, PROBLEMS, seed, cache) == episodes  # now every grade is read back
    assert tree.stats["misses"] == 0 and tree.stats["hits"] > 0 and cache.stats["hits"] >= len(episodes)
    assert tree.records()[0].replayed and tree.root == live.root


def test_a_missing_step_is_refused_with_the_fix(filled):
    tmp, _, _ = filled
    tree = TreeReasoner(PlanTree.load(tmp / "t.json.gz"))
    new = Problem(id="z", question="What is 9-4?", answer="5")
    with pytest.raises(TreeMiss, match=r"What is 9-4\?.*plan prefix \[8\].*Fill the tree"):
        rollout(EnvGroup([new], 2, config=ENV), tree, RandomPlanner(seed=0, p_terminate=1.0), seed=0)
    longer = EnvConfig(max_steps=3)  # the tree has no third round
    with pytest.raises(TreeMiss, match="round 2"):
        rollout(EnvGroup(PROBLEMS, 4, config=longer), tree, RandomPlanner(seed=0, p_terminate=0.0), seed=0)
    with pytest.raises(FileNotFoundError, match="fill one first"):
        PlanTree.load(tmp / "none.json.gz")


CASES = ["The final answer is \\boxed{5}.", "\\boxed{5.0}", "So 2+3 = 5.", "\\boxed{37 * 22}", "\\boxed{}",
         "\\boxed{" * 50, "the answer is five", "\\boxed{\\frac{10}{2}}", ""]


def test_grade_cache_equals_the_kind_and_skips_code():
    cache, small = GradeCache(), GradeCache(max_entries=4)
    problems = [Problem(id="a", question="q", answer="5"), Problem(id="b", question="q", answer="814"),
                Problem(id="m", question="q", answer="B", answer_type="choice", choices=("1", "5"))]
    for _ in range(2):
        for p in problems:
            for text in CASES:
                assert cache(p, ["step one", text]) == small(p, ["step one", text]) == grade(p, ["step one", text])
    assert cache.stats["hits"] == cache.stats["misses"] == len(cache) == 3 * len(CASES)
    assert len(small) == 4  # bounded
    code = Problem(id="c", question="write f", answer="", kind="code", tests="def check(f):\n    assert f() == 1\n",
                   entry_point="f")
    assert cache(code, ["no program here"]) == grade(code, ["no program here"]) and cache.stats["passed"] == 1
    with pytest.raises(ValueError, match="max_entries"):
        GradeCache(max_entries=0)


def test_warmed_features_are_the_planners_own_and_equal_uncached_logits(filled):
    """warm_planner computes every tree context's feature once; training rollouts on the tree then never run the
    backbone, and their log-probs equal a planner that caches nothing."""
    from agents.replay.plan_tree import warm_planner
    from agents.planners.llm import Planner, PlannerConfig

    tmp, _, _ = filled
    tree = PlanTree.load(tmp / "t.json.gz")

    def planner(cache: int) -> Planner:
        model, tok = tiny_model("backbone", seed=0)
        return Planner(model, tok, PlannerConfig(head_only=True, feature_cache=cache, seed=0))

    warm, cold = planner(100_000), planner(0)
    assert warm_planner(warm, tree, PROBLEMS) == len({(p.question, s) for p in PROBLEMS for s in range(8)}) + 2
    computed = warm.feature_stats["misses"]
    out = rollout([EnvGroup([p], 8, config=ENV) for p in PROBLEMS], TreeReasoner(tree), warm, seed=3)
    records = [t["planner"] for t in out.trajectories]
    assert warm.feature_stats["misses"] == computed and warm.feature_stats["hits"] > 0  # no forward in the rollout
    with torch.no_grad():
        assert torch.allclose(warm.trajectory_logprobs(records)[0], cold.trajectory_logprobs(records)[0], atol=1e-6)
    assert warm.feature_stats["misses"] == computed and cold.feature_stats["misses"] > 0
    with pytest.raises(ValueError, match="head-only"):
        warm_planner(Planner(*tiny_model("backbone", seed=0), PlannerConfig()), tree, PROBLEMS)


def test_benchmark_smoke_on_the_tiny_models(tmp_path):
    from benchmarks.plans.tree import Config, main

    cfg = Config(reasoner="tiny", planner="tiny", source="tiny", problems=3, max_step_tokens=4, max_answer_tokens=6,
                 group_size=2, groups_per_step=2, replay_steps=1, tree_steps=3, store=str(tmp_path / "store"),
                 out=str(tmp_path / "b.json"))
    res = main(cfg)
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["same_episodes"] == {"head_only": 4, "lora": 4} == res["same_episodes"]
    assert data["fill"]["steps"] <= 3 * 81 and data["fill"]["plans"] == 73
    head = data["rows"]["head_only/tree"]
    assert head["episodes"] == 12 and head["reasoner_stats"]["misses"] == 0 and head["feature_cache"]["misses"] == 0
    assert head["features"]["contexts"] > 0 and data["rows"]["lora/tree"]["feature_cache"] is None
    assert data["rows"]["head_only/replay"]["reasoner"] == "ReplayReasoner" and head["reasoner"] == "TreeReasoner"
    assert (tmp_path / "b.tree.json.gz").exists()
    again = main(cfg)  # the tree file is read back: nothing decoded
    assert again["fill"]["replay"]["misses"] == 0 and again["same_episodes"] == res["same_episodes"]
    with pytest.raises(ValueError, match="planners"):
        Config(planners=("full",))


def test_a_field_added_to_the_env_after_the_fill_matches_at_its_default():
    """A tree's JSON written before EnvConfig grew a field (``components``) still matches an env that holds that
    field's default; the same env with the field set to something else does not."""
    stored = json.loads(json.dumps(asdict(ENV), default=str))
    del stored["components"]
    assert env_differences(stored, ENV) == []
    brevity = Component("brevity", lambda facts: 0.0, ("reasoner",), weight=0.5)
    (differ,) = env_differences(stored, replace(ENV, components=(brevity,)))
    assert differ.startswith("components: '(absent)' -> [")
    assert env_differences({**stored, "max_steps": 3}, ENV) == ["max_steps: 3 -> 2"]
