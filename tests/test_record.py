"""The typed episode record: written by the env's outcome, read back exactly, old rows still readable."""

import json

import pytest

import rsim_env
from agents.scripted.policies import FixedPlanner
from algos.viewer import ViewConfig, main
from algos.viewer.load import NO_QUESTION, load_dir
from rsim_env import Problem
from rsim_env.record import RECORD_VERSION, EpisodeRecord, from_outcome, read_row
from rsim_env.scoring import score

MATH = Problem("m/1", "What is 6 * 7?", "42", "number")
LEAD = "The final answer is \\boxed{"


def _episode(plan=(1, 8), protocol="chat+lead"):
    env = rsim_env.env(protocol=protocol, max_steps=len(plan))
    env.reset(options={"problem": MATH})
    planner = FixedPlanner(list(plan))
    planner.reset(1)
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
        elif agent == "planner":
            env.step(planner.act([0], [obs])[0])
        else:
            env.step("42}." if obs["injected"].endswith("{") else "Split it: 6 * 5 = 30 and 6 * 2 = 12.")
    return info, env.rewards


def test_record_round_trips_and_carries_question_and_injected_text():
    info, rewards = _episode()
    rec = from_outcome({"info": info, "rewards": rewards}, mode="fixed:1,8", sample=0)
    assert rec.version == RECORD_VERSION and rec.question == MATH.question and rec.strategies == (1, 8)
    assert rec.injected[-1] == LEAD and rec.steps[-1] == "42}." and rec.shown_steps[-1] == LEAD + "42}."
    assert rec.correct and rec.components == info["components"] and rec.rewards == rewards
    back = EpisodeRecord.from_json(rec.to_json())
    assert back == rec and read_row(json.loads(rec.to_json())) == rec
    assert score(back).values == info["components"]  # the record alone is enough to score a math episode again


def test_unknown_or_missing_version_and_unknown_keys_are_refused():
    row = json.loads(from_outcome({"info": _episode()[0], "rewards": {}}).to_json())
    with pytest.raises(ValueError, match=r"version 99 is not supported; this rsim reads version 1"):
        EpisodeRecord.from_json({**row, "version": 99})
    with pytest.raises(ValueError, match="no 'version'.*read_row"):
        EpisodeRecord.from_json({k: v for k, v in row.items() if k != "version"})
    with pytest.raises(ValueError, match=r"unknown keys \['bogus'\]"):
        EpisodeRecord.from_json({**row, "bogus": 1})
    with pytest.raises(ValueError, match="must be a JSON object"):
        read_row("[1, 2]")


def test_a_code_record_cannot_be_regraded_without_its_problem():
    rec = EpisodeRecord("c/1", "code", "Write f.", "", planner=False, injected=("",), steps=("x",), shown_steps=("x",))
    with pytest.raises(ValueError, match="tests"):
        score(rec)


OLD_SAMPLE = {"step": 3, "problem_id": "p/0", "answer": "42", "extracted": "42", "correct": True, "strategies": [1, 8],
              "steps": ["Split it: 6 * 5 = 30 and 6 * 2 = 12.", "\\boxed{42}"], "rewards": {"planner": 1.0, "reasoner": 3.0},
              "components": {"acc": 1.0, "format": 1.0, "follow": 1.0, "terminal": 1.0, "penalty": -0.5}}
OLD_EVAL = {"mode": "fixed:1,8", "problem_id": "p/0", "sample": 0, "answer": "42", "extracted": "42", "correct": True,
            "reason": "ok", "format": 1.0, "rounds": 2, "terminated": True, "truncated": False, "injected": [1, 8],
            "detected": [[1], [8]], "steps": ["Split it: 6 * 5 = 30 and 6 * 2 = 12.", "42}."],
            "shown_steps": ["Split it: 6 * 5 = 30 and 6 * 2 = 12.", LEAD + "42}."], "tokens": {"reasoner_written": 9}}


@pytest.mark.parametrize("name,row", [("samples.jsonl", OLD_SAMPLE), ("episodes.jsonl", OLD_EVAL)], ids=["run", "eval"])
def test_files_written_before_the_record_still_load_in_the_viewer(tmp_path, name, row):
    (tmp_path / name).write_text(json.dumps(row) + "\n")
    data = load_dir(tmp_path)
    r = data.groups[0].rollouts[0]
    assert data.groups[0].question == "" and r.steps == row["steps"] and r.planned == [1, 8] and r.correct
    assert r.components["follow"] == 1.0  # stored (run) or recomputed by the env's scoring (eval: no follow column)
    if name == "episodes.jsonl":
        assert r.injected == ["", LEAD] and r.detected == [[1], [8]] and not r.detected_computed
        assert r.extra["tokens reasoner written"] == 9
    else:
        assert r.injected == ["", ""] and r.detected_computed and 1 in r.detected[0]
    html = (tmp_path / "v.html")
    main(ViewConfig(str(tmp_path), str(html)))
    assert "question not recorded" in html.read_text() and NO_QUESTION.startswith("(question not recorded")
