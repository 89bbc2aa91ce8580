import numpy as np
import pytest

from agents.scripted.policies import FixedPlanner, RandomPlanner, TemplateReasoner
from rsim_env import EnvGroup, Problem

PROBS = [Problem(id=f"p{i}", question=f"What is {i} + {i}?", answer=str(2 * i), source="t") for i in range(3)]
ORACLE = {p.question: p.answer for p in PROBS}


class PerCopyPlanner(FixedPlanner):
    """Copy c terminates at round c % 5: uneven episode lengths inside one group."""

    def __init__(self):
        super().__init__([])

    def act(self, ids, observations):
        return [8 if obs["round"] >= c % 5 else 1 for c, obs in zip(ids, observations)]


def run(group, planner, reasoner, seed=0):
    group.reset(seed=seed)
    planner.reset(len(group))
    reasoner.reset(len(group))
    calls = 0
    while not group.done:
        agent, ids, obs = group.observe()
        group.step((planner if agent == "planner" else reasoner).act(ids, obs))
        calls += 1
    return group.results(), calls


def test_group_of_8_uneven_lengths():
    g = EnvGroup(PROBS[1], group_size=8, max_steps=6)
    res, calls = run(g, PerCopyPlanner(), TemplateReasoner(ORACLE))
    assert [r["info"]["num_rounds"] for r in res] == [c % 5 + 1 for c in range(8)]
    assert all(r["info"]["correct"] for r in res)
    assert calls == 2 * 5  # one batched call per agent per round, longest copy has 5 rounds
    assert all(r["problem_index"] == 0 for r in res)


def test_several_groups_in_one_call():
    g = EnvGroup(PROBS, group_size=4, max_steps=4)
    res, _ = run(g, RandomPlanner(seed=0, p_terminate=0.4), TemplateReasoner(ORACLE))
    assert len(res) == 12
    assert [r["problem_index"] for r in res] == [0] * 4 + [1] * 4 + [2] * 4
    for r in res:
        assert r["info"]["answer"] == PROBS[r["problem_index"]].answer
        assert set(r["rewards"]) == {"planner", "reasoner"}


def test_observe_batches_only_live_copies():
    g = EnvGroup(PROBS[0], group_size=3)
    g.reset(seed=0)
    agent, ids, _ = g.observe()
    assert agent == "planner" and ids == [0, 1, 2]
    g.step([8, 1, 8])
    g.step(["\\boxed{0}"] * 3)
    agent, ids, obs = g.observe()
    assert agent == "planner" and ids == [1] and obs[0]["round"] == 1


def test_bad_batch_changes_nothing():
    g = EnvGroup(PROBS[0], group_size=3)
    g.reset(seed=0)
    with pytest.raises(ValueError, match="copy 2"):
        g.step([1, 2, 99])
    with pytest.raises(ValueError, match="one per copy"):
        g.step([1, 2])
    agent, ids, obs = g.observe()
    assert agent == "planner" and all(o["round"] == 0 for o in obs)
    g.step([np.int64(1), np.int32(2), 3])


def test_deterministic_for_seed():
    a, _ = run(EnvGroup(PROBS, 2), RandomPlanner(seed=5), TemplateReasoner(ORACLE, p_correct=0.5, seed=1))
    b, _ = run(EnvGroup(PROBS, 2), RandomPlanner(seed=5), TemplateReasoner(ORACLE, p_correct=0.5, seed=1))
    assert a == b


def test_group_errors():
    with pytest.raises(ValueError, match="group_size"):
        EnvGroup(PROBS, 0)
    g = EnvGroup(PROBS, 2)
    with pytest.raises(RuntimeError, match="reset"):
        g.observe()


def test_reset_with_new_problems_reuses_copies():
    g = EnvGroup(PROBS[:2], 2)
    run(g, FixedPlanner([8]), TemplateReasoner(ORACLE))
    g.reset(seed=1, problems=PROBS[1:])
    _, _, obs = g.observe()
    assert [o["question"] for o in obs] == [PROBS[1].question] * 2 + [PROBS[2].question] * 2
    with pytest.raises(ValueError, match="one per group"):
        g.reset(problems=PROBS)


def test_step_after_every_copy_is_done_is_a_clear_error():
    g = EnvGroup(PROBS[:1], 2)
    run(g, RandomPlanner(seed=0), TemplateReasoner(ORACLE))
    assert g.done
    for call in (lambda: g.step([]), lambda: g.validate([])):
        with pytest.raises(RuntimeError, match="all 2 copies are finished; call results"):
            call()
    with pytest.raises(RuntimeError, match="reset"):
        EnvGroup(PROBS[:1], 2).step([])


def test_a_plan_the_last_round_rule_forbids_is_refused_before_any_copy_moves():
    g = EnvGroup(PROBS[0], group_size=2, max_steps=1, terminate_last_round=True)
    g.reset(seed=0)
    with pytest.raises(ValueError, match="copy 1: planner action 3 is not allowed by its action_mask"):
        g.step([8, 3])
    agent, ids, obs = g.observe()
    assert agent == "planner" and ids == [0, 1] and all(o["round"] == 0 for o in obs)
    g.step([8, 8])
