import pytest

from rsim_env import rewards as R
from rsim_env.rewards import RewardWeights


@pytest.mark.parametrize(
    "planned,expected",
    [([8], 1.0), ([1, 3, 8], 1.0), ([1, 3], -1.0), ([], -1.0), ([8, 1], -1.0)],
    ids=["only_term", "ends_term", "no_term", "empty", "term_not_last"],
)
def test_r_terminal(planned, expected):
    assert R.r_terminal(planned) == expected


@pytest.mark.parametrize(
    "planned,expected",
    [([8], -1.0), ([1, 3, 8], -1 / 3), ([1, 1, 3, 8], -0.5), ([], 0.0)],
    ids=["single", "all_distinct", "half", "empty"],
)
def test_r_penalty(planned, expected):
    assert R.r_penalty(planned) == pytest.approx(expected)


def test_r_follow():
    assert R.r_follow([1, 3, 8], [{1}, {6}, {8, 3}]) == pytest.approx(1 / 2)  # the answer step is skipped
    assert R.r_follow([1, 3, 8], [{1}, {3}, {8}]) == 1.0 and R.r_follow([8], [{8}]) == 0.0
    assert R.r_follow([1, 3, 8], [{1}, {3}, {8}], [False, True, False]) == pytest.approx(1 / 2)  # a void step
    assert R.r_follow([], []) == 0.0
    with pytest.raises(ValueError, match="void flags"):
        R.r_follow([1], [{1}], [])
    with pytest.raises(ValueError, match="one per step"):
        R.r_follow([1], [])


@pytest.mark.parametrize("text,expected", [("\\boxed{3}", 1.0), ("\\fbox{3}", 1.0), ("3", 0.0)], ids=["boxed", "fbox", "none"])
def test_r_format(text, expected):
    assert R.r_format(text) == expected


def test_r_acc():
    assert R.r_acc(True) == 1.0 and R.r_acc(False) == 0.0


def test_composed_with_weights():
    c = {"acc": 1.0, "format": 1.0, "follow": 0.5, "terminal": 1.0, "penalty": -0.5}
    assert R.planner_reward(c) == pytest.approx(1.5)
    assert R.reasoner_reward(c) == pytest.approx(2.5)
    w = RewardWeights(penalty=0.0, follow=2.0)
    assert R.planner_reward(c, w) == pytest.approx(2.0)
    assert R.reasoner_reward(c, w) == pytest.approx(3.0)


def test_weights_validation():
    with pytest.raises(ValueError, match="finite number"):
        RewardWeights(acc=float("nan"))


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan"), True, "1"], ids=["inf", "-inf", "nan", "bool", "str"])
def test_weights_must_be_finite_numbers(bad):
    with pytest.raises(ValueError, match="finite number"):
        RewardWeights(follow=bad)


def test_sums_and_no_planner_zeroing_come_from_the_table():
    from rsim_env.rewards import COMPONENTS, Facts, components, reward

    facts = Facts(correct=True, final_step="\\boxed{1}", planned=[1, 8], detected=[{1}, {8}])
    c = components(facts)
    w = RewardWeights(acc=2.0, format=3.0, follow=5.0, terminal=7.0, penalty=11.0)
    for agent in ("planner", "reasoner"):
        want = sum(getattr(w, comp.name) * c[comp.name] for comp in COMPONENTS if agent in comp.agents)
        assert reward(agent, c, w) == want
    assert reward("reasoner", c, w) == 2 * 1 + 3 * 1 + 5 * 1.0 and reward("planner", c, w) == 2 + 7 - 11 * 0.5
    solo = components(Facts(correct=True, final_step="x"), planner=False)
    assert {k for k, v in solo.items() if v == 0.0} >= {comp.name for comp in COMPONENTS if comp.needs_plans}
