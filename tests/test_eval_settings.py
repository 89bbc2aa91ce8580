"""``rsim eval`` of a run plays under the env and reasoner settings saved with that run: ``EvalConfig``
composes ``EnvConfig`` and ``ReasonerConfig`` (as ``RunConfig`` does); explicit overrides win and are recorded."""

from __future__ import annotations

import json

import pytest

from algos.cli import main as rsim
from algos.evaluation import EvalConfig, main

RUN = ["train", "--learner", "planner_only", "--planner", "tiny", "--reasoner", "template:1.0", "--data", "tiny",
       "--steps", "1", "--set", "train.groups_per_step=1", "--set", "train.grpo.group_size=2",
       "--set", "data.size=4", "--set", "train.skip_zero_std_groups=false", "--set", "train.progress=false",
       # the non-default settings eval must replay: 2 rounds of 4 tokens, steps cut at 9 characters
       "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=4", "--set", "env.max_step_chars=9"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    rsim(RUN + ["--out", str(out)])
    return out


def _eval(run_dir, tmp_path, *extra):
    out = tmp_path / "ev"
    main(["--planner", str(run_dir), "--reasoner", "template:1.0", "--data", "tiny", "--limit", "3",
          "--modes", "trained", "--no-progress", "--no-plots", "--out", str(out), *extra])
    return json.loads((out / "results.json").read_text()), [json.loads(x) for x in open(out / "episodes.jsonl")]


def test_eval_of_a_run_scores_it_under_the_runs_settings(run_dir, tmp_path, capsys):
    res, rows = _eval(run_dir, tmp_path)
    cfg = res["config"]
    assert (cfg["env"]["max_steps"], cfg["env"]["max_step_chars"], cfg["reasoner"]["max_step_tokens"]) == (2, 9, 4)
    assert res["settings"]["from"].startswith(str(run_dir)) and res["settings"]["overrides"] == {}
    assert all(len(s) <= 9 for r in rows for s in r["steps"]) and all(r["rounds"] <= 2 for r in rows)
    # the template reasoner's boxed answer is cut at 9 characters, as in training: never graded correct
    assert res["modes"]["trained"]["accuracy"] == 0.0
    err = [line for line in capsys.readouterr().err.splitlines() if "settings" in line]
    assert len(err) == 1 and "saved with" in err[0] and "2 rounds x 4 tokens" in err[0]


def test_explicit_overrides_win_and_are_recorded(run_dir, tmp_path, capsys):
    res, rows = _eval(run_dir, tmp_path, "--set", "env.max_steps=1", "--set", "env.max_step_chars=2000")
    assert (res["config"]["env"]["max_steps"], res["config"]["env"]["max_step_chars"]) == (1, 2000)
    assert res["config"]["reasoner"]["max_step_tokens"] == 4  # not overridden: still the run's
    assert res["settings"]["overrides"] == {"env.max_steps": "1", "env.max_step_chars": "2000"}
    assert all(r["rounds"] == 1 for r in rows) and any(len(s) > 9 for r in rows for s in r["steps"])
    assert "overridden: env.max_steps=1, env.max_step_chars=2000" in capsys.readouterr().err


def test_the_reasoner_decodes_with_the_runs_token_cap(run_dir, tmp_path):
    res, rows = _eval(run_dir, tmp_path, "--reasoner", "tiny")
    assert res["config"]["reasoner"]["max_step_tokens"] == 4
    assert all(r["tokens"]["reasoner_written"] <= 4 * r["rounds"] for r in rows), [r["tokens"] for r in rows]


def test_no_run_means_the_defaults_and_from_run_off_ignores_the_run(run_dir, tmp_path):
    assert EvalConfig().env.max_steps == 8
    res, _ = _eval(run_dir, tmp_path, "--no-from-run")
    assert res["settings"]["from"] == "defaults" and res["config"]["env"]["max_step_chars"] == 2000


@pytest.mark.parametrize("item,match", [("model.dtype=bfloat16", "training setting"), ("env.nope=1", "unknown config key"),
                                        ("env.max_steps=zero", "env.max_steps"), ("novalue", "KEY=VALUE"),
                                        ("limit=3", "flags")],
                         ids=["train-only", "unknown", "bad-value", "no-equals", "top-level"])
def test_bad_overrides_are_named(item, match):
    from algos.evaluation import parse

    with pytest.raises(ValueError, match=match):
        parse(["--set", item])
