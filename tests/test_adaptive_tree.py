"""studies.adaptive_tree on the tiny models: the fill grows a balanced tree an increment at a time (17 steps a problem
in the 9-plan game) and a rerun decodes nothing. Training and scoring on trees: tests/test_study_train.py and
tests/test_study_score.py."""

import json

import pytest

from studies import adaptive_tree


def _fill(tmp_path, split, per_task=2):
    return adaptive_tree.main(adaptive_tree.Config(
        split=split, per_task=per_task, increment=1, reasoner="tiny", planner="tiny", tasks=2, max_step_tokens=4,
        max_answer_tokens=6, out_dir=str(tmp_path / "tree")))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adaptive_tree")
    mp = pytest.MonkeyPatch()
    mp.setenv("RSIM_REPLAY_DIR", str(tmp / "replay"))
    try:
        infos = {s: _fill(tmp, s) for s in ("train", "val")}
        again = _fill(tmp, "train")
    finally:
        mp.undo()
    return tmp, infos, again


def test_fill_grows_a_balanced_tree_and_resumes(trees):
    tmp, infos, again = trees
    for split, info in infos.items():
        assert info["problems"] == 4 and info["steps"] == 4 * 17, info  # [8] and 8 x [s, 8]: 1 + 8 * 2 steps
        assert [r["per_task"] for r in info["increments"]] == [1, 2] and info["config"]["split"] == split
        assert all(r["replay"]["catchup_mismatch"] == 0 for r in info["increments"])
        assert info["meta"]["env"]["terminate_last_round"] is True and info["meta"]["env"]["max_steps"] == 2
    assert again["steps"] == 4 * 17 and len(again["increments"]) == 2  # nothing new was decoded
    on_disk = json.loads((tmp / "tree" / "adaptive_train.tree.json").read_text())
    assert on_disk["per_task"] == 2 and on_disk["config"]["split"] == "train"


def test_config_refuses_bad_values():
    with pytest.raises(ValueError, match="split"):
        adaptive_tree.Config(split="dev")
    with pytest.raises(ValueError, match="increment"):
        adaptive_tree.Config(increment=0)
