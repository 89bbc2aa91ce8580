"""docs/environment.md's reward terms: the plateau table is the one the env computes, and says what the rules say."""

from __future__ import annotations

import pytest

from rsim_env import rewards
from tools import reward_plateaus as rp


@pytest.fixture(scope="module")
def played():
    return rp.rows()


def test_the_plateau_table_in_the_docs_is_the_one_the_env_computes(played):
    text = rp.DOC.read_text(encoding="utf-8")
    assert rp.current(text) == rp.table(played), "run: python -m tools.reward_plateaus --write"
    assert rp.main([]) == 0


def test_the_rows_are_the_rules_of_rsim_env_rewards(played):
    """Each played row's planner reward is R_acc + R_terminal + R_penalty of its plan, by the pure functions."""
    for r in played:
        plan = r["plan"]
        assert r["strategies"] == plan and r["terminated"] == (plan[-1] == 8)
        want = rewards.r_acc(r["correct"]) + rewards.r_terminal(plan) + rewards.r_penalty(plan)
        assert r["rewards"]["planner"] == pytest.approx(want), r
        assert r["rewards"]["reasoner"] == pytest.approx(sum(r["components"][k] for k in ("acc", "format", "follow")))


@pytest.mark.parametrize("plan,family,planner", [
    ([8], "add", 0.0), ([0, 8], "add", 0.5), ([0, 2, 4, 8], "add", 0.75), ([3, 8], "add", 1.5),
    ([1, 5, 8], "mul", 2 - 1 / 3), ([6, 6, 6, 6], "add", -2.0),
], ids=["terminate-at-once", "one-wrong", "four-distinct-wrong", "right-two-round", "right-three-round", "stuck"])
def test_the_plateaus_named_in_the_prose(plan, family, planner):
    assert rp.play(plan, family)["rewards"]["planner"] == pytest.approx(planner)


def test_every_wrong_two_round_plan_earns_the_same(played):
    """The flat plateau the prose names: any ``[x, 8]`` that does not solve earns 0.5."""
    got = {x: rp.play((x, 8), "add")["rewards"]["planner"] for x in range(8) if x != 3}
    assert set(got.values()) == {0.5}, got


def test_the_doc_defines_every_term_of_the_paper():
    section = rp.DOC.read_text(encoding="utf-8").split("## Rewards", 1)[1].split("\n## ", 1)[0]
    for c in rewards.COMPONENTS:
        assert f"| `{c.name}` |" in section, c.name
    for term in ("R_acc", "R_format", "R_follow", "R_terminal", "R_penalty"):
        assert f"| {term} |" in section, term


def test_a_stale_or_missing_table_is_reported(tmp_path, monkeypatch, capsys):
    doc = tmp_path / "environment.md"
    doc.write_text(f"x\n{rp.BEGIN}\n| old |\n{rp.END}\n", encoding="utf-8")
    monkeypatch.setattr(rp, "DOC", doc)
    assert rp.main([]) == 1 and "out of date" in capsys.readouterr().out
    assert rp.main(["--write"]) == 0 and rp.main([]) == 0
    doc.write_text("no markers", encoding="utf-8")
    with pytest.raises(ValueError, match="markers"):
        rp.main([])
