"""studies/engine_study.py at the toy scale: both arms per seed, one evaluator, seed-level tests, resume."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.plans import seedstats
from studies.engine_study import Config, main, parse_arms


def test_toy_study_trains_both_arms_evaluates_alike_and_resumes(tmp_path):
    out = tmp_path / "r.json"
    cfg = Config(preset="tiny", arms="a=toy,b=toy", seeds=(0, 1), steps=1, eval_limit=8, eval_base="toy",
                 output_dir=str(tmp_path / "runs"), out=str(out))
    res = main(cfg)
    saved = json.loads(out.read_text())
    assert set(saved["runs"]) == {"a_s0", "b_s0", "a_s1", "b_s1"}
    assert saved["arms"] == {"a": "toy", "b": "toy"}
    assert set(saved["per_seed"]) == {"0", "1"} and "mcnemar" in saved["per_seed"]["0"]
    assert saved["wall_ratio"] > 0 and saved["rollout_ratio"] > 0
    rows = seedstats.read_outcomes(tmp_path / "r_outcomes.jsonl.gz")
    assert len(rows) == 2 * 2 * 8 and {r["mode"] for r in rows} == {"a", "b"}
    # every row says what the trained planner played (the first committed study's rows did not)
    assert all(isinstance(r["plan"], list) and r["plan"] and r["task"] for r in rows)
    # the reward curves are the trainer's per-agent metrics, finite (a plain "reward" key does not exist: NaN)
    for run in saved["runs"].values():
        assert "reward" not in run and set(run["curve"]) >= {"planner/reward", "reasoner/reward"}
        assert all(len(v) == run["steps"] and all(math.isfinite(x) for x in v) for v in run["curve"].values())
    # the table is regenerated from the committed outcomes, identically
    assert main(Config(table_from=str(tmp_path / "r_outcomes.jsonl.gz")))["table_md"] in res["table_md"]
    # same arms, same seed, same toy: the two arms' trained models play identically
    assert saved["seed_report"]["per_seed"]["a"] == saved["seed_report"]["per_seed"]["b"]
    # every episode is on disk to be read
    assert (tmp_path / "runs" / "episodes" / "b_s1.jsonl").is_file()
    # a rerun resumes from the cache: nothing retrained
    again = main(cfg)
    assert again["runs"] == saved["runs"]
    with pytest.raises(ValueError, match="another configuration"):
        main(Config(preset="tiny", arms="a=toy,b=toy", seeds=(0, 1), steps=2, eval_limit=8, eval_base="toy",
                    output_dir=str(tmp_path / "runs")))


@pytest.mark.parametrize("text", ["torch=default", "a=x,a=y", "a=,b=y", "a=x,b=y,c=z", "ab"])
def test_bad_arms_are_refused(text):
    with pytest.raises(ValueError, match="NAME=REASONER_SPEC"):
        parse_arms(text)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="learner"):
        Config(learner="ppo")
    with pytest.raises(ValueError, match="preset"):
        Config(preset="paper")


def test_committed_study_json_has_no_nan():
    """JSON has no NaN: the first committed study's reward curves were all NaN (a metric name the trainer never
    logs) and were removed; a strict parser must read the file."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "lean_results" / "engine_study_2026-12-01.json"

    def refuse(name):
        raise ValueError(f"{path.name} holds {name}")

    saved = json.loads(path.read_text(), parse_constant=refuse)
    assert all("reward" not in run for run in saved["runs"].values())
