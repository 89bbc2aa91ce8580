"""Rollouts over EnvGroups with LLM and scripted agents, uneven episode lengths."""

from __future__ import annotations

import pytest
import torch

from agents.hf.loading import tiny_model
from agents.planners.llm import Planner, PlannerConfig
from agents.reasoner import Reasoner, ReasonerConfig
from agents.scripted.policies import FixedPlanner, RandomPlanner, TemplateReasoner
from algos.rollout import rollout
from rsim_env import Problem
from rsim_env.group import EnvGroup
from rsim_env.render import STEP_DELIMITER

PROBLEMS = [Problem(id="a", question="What is 2+3?", answer="5"),
            Problem(id="b", question="What is 7*6?", answer="42")]


@pytest.fixture(autouse=True, scope="module")
def _rollout_tests_single_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def llm_reasoner(**cfg) -> Reasoner:
    model, tok = tiny_model(seed=0)
    return Reasoner(model, tok, ReasonerConfig(**{"max_step_tokens": 8, "seed": 0, **cfg}))


def llm_planner() -> Planner:
    backbone, tok = tiny_model("backbone", seed=1)
    return Planner(backbone, tok, PlannerConfig(seed=0, head_init_std=0.5))


def check_reasoner_records(reasoner: Reasoner, trajectories: list[dict]) -> None:
    tok = reasoner.tokenizer
    for tr in trajectories:
        rec, steps = tr["reasoner"], tr["info"]["steps"]
        assert len(rec.step_spans) == len(steps) == tr["info"]["num_rounds"]
        plans = tr["info"]["strategies"]
        for (s, e), step, plan in zip(rec.step_spans, steps, plans):  # the env got exactly the decoded tokens
            text = tok.decode([t for t in rec.input_ids[s:e] if t != tok.eos_token_id]).lstrip()
            # a termination step (and the single no-planner turn) is not cut at the delimiter
            assert (text if plan == 8 else text.split(STEP_DELIMITER)[0]).strip() == step
    recs = [tr["reasoner"] for tr in trajectories]
    with torch.no_grad():
        scored = reasoner.score(recs)
    old = torch.zeros_like(scored.logp)
    for i, rec in enumerate(recs):
        old[i, : len(rec.logprobs)] = torch.tensor(rec.logprobs)
    assert scored.mask.sum() > 0
    torch.testing.assert_close(scored.logp, old * scored.mask, atol=1e-4, rtol=0)


def check_planner_records(planner: Planner, trajectories: list[dict]) -> None:
    for tr in trajectories:
        assert tr["planner"].actions == tr["info"]["strategies"]
    recs = [tr["planner"] for tr in trajectories]
    with torch.no_grad():
        logp, valid = planner.trajectory_logprobs(recs)
    for r, rec in enumerate(recs):
        n = len(rec.actions)
        assert valid[r].sum().item() == n
        assert logp[r, :n].tolist() == pytest.approx(rec.logprobs, abs=1e-5)


def test_random_planner_with_llm_reasoner_over_uneven_episodes():
    reasoner = llm_reasoner()
    groups = [EnvGroup(PROBLEMS, 3, max_steps=5), EnvGroup(PROBLEMS[:1], 2, max_steps=4)]
    out = rollout(groups, reasoner, RandomPlanner(seed=0, p_terminate=0.4), seed=1)
    assert len(out.trajectories) == 8 and [t["copy_id"] for t in out.trajectories] == list(range(8))
    lengths = {t["info"]["num_rounds"] for t in out.trajectories}
    assert len(lengths) > 1, "the test needs episodes of different lengths"
    assert [t["problem_index"] for t in out.trajectories] == [0, 0, 0, 1, 1, 1, 0, 0]
    assert out.stats["calls"]["reasoner"] == out.stats["rounds"] == max(lengths)  # one call per round
    check_reasoner_records(reasoner, out.trajectories)


def test_llm_planner_with_template_reasoner():
    planner = llm_planner()
    out = rollout(EnvGroup(PROBLEMS, 4, max_steps=4), TemplateReasoner(oracle={"What is 2+3?": "5"}), planner, seed=0)
    assert out.stats["calls"]["planner"] == out.stats["rounds"]
    check_planner_records(planner, out.trajectories)
    for tr in out.trajectories:
        assert set(tr["rewards"]) == {"planner", "reasoner"}


def test_both_llm_agents_and_same_seed_same_rollout():
    runs = []
    for _ in range(2):
        planner, reasoner = llm_planner(), llm_reasoner()
        out = rollout(EnvGroup(PROBLEMS, 2, max_steps=3), reasoner, planner, seed=7)
        check_planner_records(planner, out.trajectories)
        check_reasoner_records(reasoner, out.trajectories)
        runs.append([(t["info"]["strategies"], t["info"]["steps"]) for t in out.trajectories])
    assert runs[0] == runs[1]


def test_fixed_planner_lengths_and_no_planner_mode():
    reasoner = llm_reasoner()
    out = rollout(EnvGroup(PROBLEMS, 2, max_steps=6), reasoner, FixedPlanner([1, 3]), seed=0)
    assert all(t["info"]["num_rounds"] == 3 for t in out.trajectories)  # 1, 3, then termination
    solo = llm_reasoner(max_answer_tokens=12)
    out = rollout(EnvGroup(PROBLEMS, 2, max_steps=6, planner=False), solo, None, seed=0)
    for tr in out.trajectories:
        assert tr["info"]["num_rounds"] == 1 and sum(tr["reasoner"].gen_mask) == 12
        assert tr["planner"] is None


def test_rollout_argument_errors():
    with pytest.raises(TypeError, match="EnvGroup"):
        rollout([], TemplateReasoner(), RandomPlanner())
    with pytest.raises(ValueError, match="role"):
        rollout(EnvGroup(PROBLEMS, 2), RandomPlanner(), RandomPlanner())
    with pytest.raises(ValueError, match="planner=None"):
        rollout(EnvGroup(PROBLEMS, 2), TemplateReasoner(), None)


@pytest.mark.slow
def test_embedded_default_plays_real_episodes():
    planner = Planner.from_spec("default", PlannerConfig(seed=0))
    reasoner = Reasoner.from_spec("default", ReasonerConfig(max_step_tokens=24, seed=0, temperature=0.7))
    out = rollout(EnvGroup(PROBLEMS, 2, max_steps=3), reasoner, planner, seed=0)
    assert len(out.trajectories) == 4
    check_planner_records(planner, out.trajectories)
    check_reasoner_records(reasoner, out.trajectories)
    for tr in out.trajectories:
        assert 1 <= tr["info"]["num_rounds"] <= 3 and all(isinstance(s, str) for s in tr["info"]["steps"])
