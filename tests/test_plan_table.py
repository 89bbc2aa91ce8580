"""benchmarks.plans.table: plan counts, the statistics on a known matrix, and a smoke run on the tiny model."""

from __future__ import annotations

import gzip
import json

import pytest

from benchmarks.plans import stats as plan_stats
from benchmarks.plans.table import Config, all_plans, main


def test_plan_counts_follow_the_nine_strategies():
    assert all_plans(1) == [(8,)]
    assert len(all_plans(2)) == 9 and len(all_plans(3)) == 73  # 8 non-terminal strategies before the final 8
    assert all(p[-1] == 8 and 8 not in p[:-1] for p in all_plans(3))


def test_statistics_find_headroom_when_tasks_need_different_plans():
    """Task x is solved only by [0, 8], task y only by [1, 8]: one fixed plan gets half, per task gets all."""
    plans = all_plans(2)
    ids = [f"{t}/{i}" for t in "xy" for i in range(20)]
    rows = [{"problem_id": i, "task": i[0], "plan": list(p), "correct": p == ((0, 8) if i[0] == "x" else (1, 8))}
            for i in ids for p in plans]
    res = plan_stats.summarise(rows, ids, plans, 0.5, 0, 2000, 0)
    assert res["per_task"]["test_accuracy"] == 1.0 and res["oracle"]["test_accuracy"] == 1.0
    assert res["best_fixed"]["plan"] in ([0, 8], [1, 8])
    assert 0.3 < res["headroom"]["per_task_minus_best_fixed"] < 0.7 and res["headroom"]["ci95"][0] > 0.2
    assert {t: v["plan"] for t, v in res["per_task"]["tasks"].items()} == {"x": [0, 8], "y": [1, 8]}
    assert set(res["problems"]["val"]).isdisjoint(res["problems"]["test"]) and len(res["problems"]["val"]) == 20
    assert res["heatmap"]["accuracy"][0] == [1.0, 0.0]  # first strategy 0: task x solved, y not


def test_smoke_on_the_tiny_model_resumes_from_the_cache(tmp_path):
    cfg = Config(reasoner="tiny", source="tiny", problems=4, max_rounds=2, batch=2, max_step_tokens=4,
                 max_answer_tokens=6, bootstrap=200, store=str(tmp_path / "s.sqlite"), out=str(tmp_path / "t.json"))
    first = main(cfg)
    data = json.loads((tmp_path / "t.json").read_text())
    for key in ("plans", "problems", "best_fixed", "per_task", "oracle", "headroom"):
        assert key in data
    assert len(data["plans"]) == 9 and data["replay"]["hits"] == 0
    assert data["replay"]["catch_up"] == "prefill" and data["replay"]["catchup_mismatch"] == 0
    assert set(data["best_fixed"]) >= {"plan", "val_accuracy", "test_accuracy"} and "ci95" in data["headroom"]
    with gzip.open(tmp_path / "t.episodes.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 4 * 9 and all(len(r["steps"]) == len(r["plan"]) for r in rows)
    assert (tmp_path / "t.png").stat().st_size > 0
    again = main(cfg)  # a rerun decodes nothing
    assert again["replay"]["misses"] == 0 and again["replay"]["hits"] == first["replay"]["misses"]
    assert again["plans"] == first["plans"]


def test_bad_config_names_the_field():
    with pytest.raises(ValueError, match="val_fraction"):
        Config(val_fraction=1.0)
