"""The typed episode record: written by the env's outcome, read back exactly, old rows still readable."""

import json

import pytest

import rsim_env
from agents.scripted.policies import FixedPlanner
from algos.viewer.load import load_dir
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
    with pytest.raises(ValueError, match="no .version., so it is not an rsim episode record"):
        EpisodeRecord.from_json({k: v for k, v in row.items() if k != "version"})
    with pytest.raises(ValueError, match=r"unknown keys \['bogus'\]"):
        EpisodeRecord.from_json({**row, "bogus": 1})
    with pytest.raises(ValueError, match="must be a JSON object"):
        read_row("[1, 2]")


def test_a_code_record_cannot_be_regraded_without_its_problem():
    rec = EpisodeRecord("c/1", "code", "Write f.", "", planner=False, injected=("",), steps=("x",), shown_steps=("x",))
    with pytest.raises(ValueError, match="tests"):
        score(rec)


UNVERSIONED = {"step": 3, "problem_id": "p/0", "answer": "42", "correct": True, "strategies": [1, 8],
               "steps": ["Split it: 6 * 5 = 30 and 6 * 2 = 12.", "\\boxed{42}"]}


def test_a_row_without_a_version_is_refused_by_the_viewer_naming_the_file(tmp_path):
    (tmp_path / "samples.jsonl").write_text(json.dumps(UNVERSIONED) + "\n")
    with pytest.raises(ValueError, match=r"samples.jsonl:1: this row has no 'version'"):
        load_dir(tmp_path)
