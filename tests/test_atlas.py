"""benchmarks.plans.atlas: catalogue and ladders, pilot, main pass, statistics, resume and --table-from, model-free.

The reasoner is a deterministic fake (``tests.test_atlas:fake_reasoner``) with known preferences: on
``curriculum:add2_1d`` plan ``[3, 8]`` is right on ~80 % of problems and every other plan on ~30 %; on
``curriculum:mul_1d`` the same with ``[4, 8]``; ``spell_backward`` is never right. So the pilot must drop
spell_backward, the two tasks must prefer different plans, and the mix must have headroom.
"""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from benchmarks.plans import atlas_stats
from benchmarks.plans.atlas import Config, main
from benchmarks.plans.atlas_tasks import LADDERS, catalogue

PREFERS = {"curriculum:add2_1d": 3, "curriculum:mul_1d": 4}


class FakeReasoner:
    """Right on the final step when the question's hash says so: 8 in 10 under the task's plan, 3 in 10 otherwise."""

    role = "reasoner"
    deterministic = True
    fingerprint = "atlas-fake-v1"

    def __init__(self, problems) -> None:
        self.oracle = {p.question: (p.answer, p.source) for p in problems}

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self.num_copies = num_copies

    def records(self) -> list[None]:
        return [None] * self.num_copies

    def act(self, copy_ids, observations) -> list[str]:
        out = []
        for o in observations:
            if o["strategy"] != 8:
                out.append("Let me think about it.")
                continue
            gold, source = self.oracle[o["question"]]
            h = int(hashlib.sha1(o["question"].encode()).hexdigest(), 16) % 10
            first = (o["strategies"] or (o["strategy"],))[0]  # the pending strategy is not in "strategies" yet
            right = source in PREFERS and (h < 3 or (first == PREFERS[source] and h < 8))
            out.append(f"The final answer is \\boxed{{{gold if right else 'nope'}}}.")
        return out


def fake_reasoner(ctx):
    return FakeReasoner(ctx.problems)


TASKS = ("curriculum:add2_1d", "curriculum:mul_1d", "spell_backward", "countdown", "tower_of_hanoi")


def _cfg(tmp_path, **kw) -> Config:
    return Config(reasoner="tests.test_atlas:fake_reasoner", tasks=TASKS, problems=40, pilot_problems=10, batch=10,
                  bootstrap=500, mix_size=2, store=str(tmp_path / "s.sqlite"), out=str(tmp_path / "a.json"), **kw)


def _outcomes(tmp_path) -> list[dict]:
    with gzip.open(tmp_path / "a.outcomes.jsonl.gz", "rt") as f:
        return [r for r in map(json.loads, f) if r["row"] == "outcome"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("atlas")
    first = main(_cfg(tmp))
    return tmp, first


def test_json_schema_and_findings(run):
    tmp, res = run
    data = json.loads((tmp / "a.json").read_text())
    assert {"tasks", "heterogeneity", "mix", "left_out", "pilot", "wall_seconds", "config", "decoder"} <= set(data)
    assert set(data["mix"]) >= {"tasks", "best_fixed", "per_task", "headroom"}
    assert data["decoder"]["spec"] == "tests.test_atlas:fake_reasoner" and data["decoder"]["fingerprint"]
    by = {t["task"]: t for t in data["tasks"]}
    assert set(by) == {"curriculum:add2_1d", "curriculum:mul_1d"}
    for t in by.values():
        assert {"task", "n", "accuracy", "best_plan", "best_val", "best_test", "wilson95", "gap_val", "majority_gold"} <= set(t)
        assert len(t["accuracy"]) == 9 and t["n"] == 40 and t["n_val"] + t["n_test"] == 40
        assert all(lo <= t["accuracy"][p] <= hi for p, (lo, hi) in t["wilson95"].items())
    assert by["curriculum:add2_1d"]["best_plan"] == [3, 8] and by["curriculum:mul_1d"]["best_plan"] == [4, 8]
    assert data["heterogeneity"]["surviving"] == 1
    assert (tmp / "a.png").stat().st_size > 0
    rows = _outcomes(tmp)
    assert {"task", "problem_id", "split", "plan", "correct", "extracted", "steps"} <= set(rows[0])


def test_pilot_drops_an_always_zero_task_and_left_out_has_reasons(run):
    _, res = run
    dropped = {d["task"]: d["reason"] for d in res["pilot"]["dropped"]}
    assert "spell_backward" in dropped and "0 solved" in dropped["spell_backward"]
    left = {d["task"]: d["reason"] for d in res["left_out"]}
    assert "refused" in left["countdown"] and "gold up to" in left["tower_of_hanoi"]


def test_mix_headroom_interval_contains_its_point(run):
    _, res = run
    h = res["mix"]["headroom"]
    assert sorted(res["mix"]["tasks"]) == ["curriculum:add2_1d", "curriculum:mul_1d"]
    assert h["ci95"][0] <= h["point"] <= h["ci95"][1] and h["point"] > 0


def test_mix_all_takes_every_task_and_power_is_stated(run):
    _, res = run
    m, het = res["mix_all"], res["heterogeneity"]
    assert sorted(m["tasks"]) == sorted(t["task"] for t in res["tasks"]) and len(m["selection"]) == 1
    assert m["n_test"] == sum(t["n_test"] for t in res["tasks"])
    assert m["headroom"]["ci95"][0] <= m["headroom"]["point"] <= m["headroom"]["ci95"][1]
    k = het["min_wins_to_survive"]  # a surviving pair's own plans must have won at least k problems each, no losses
    assert 0.5 ** k < het["level"] <= 0.5 ** (k - 1)
    for p in het["pairs"]:
        if p["survives"]:
            assert p["on_a"]["a_plan_only"] >= k and p["on_b"]["b_plan_only"] >= k


def test_rerun_decodes_nothing_and_table_from_reproduces(run, tmp_path):
    tmp, first = run
    n_rows = len(_outcomes(tmp))
    again = main(_cfg(tmp))
    assert again["replay"]["misses"] == 0 and len(_outcomes(tmp)) == n_rows
    # the scripted fake writes no tokens: its catch-up decodes again; a rerun that plays nothing builds no reasoner
    assert first["replay"]["catch_up"] == "decode" and again["replay"]["catch_up"] is None
    assert first["replay"]["catchup_mismatch"] == 0
    assert all(set(r["replay"]) >= {"hits", "misses", "catchup_steps", "catchup_mismatch"} for r in again["runs"])
    rebuilt = main(Config(table_from=str(tmp / "a.outcomes.jsonl.gz"), out=str(tmp_path / "b.json")))
    for k in ("tasks", "heterogeneity", "mix", "mix_all", "left_out", "pilot"):
        assert rebuilt[k] == first[k], k
    assert len(rebuilt["runs"]) == 2 and rebuilt["wall_seconds"] == round(sum(r["wall_seconds"] for r in rebuilt["runs"]), 1)
    assert (tmp_path / "b.png").stat().st_size > 0


def test_a_task_that_fails_mid_run_is_dropped_with_its_reason_and_retried_on_rerun(tmp_path, monkeypatch):
    """One task's failure (here: its grader raises) must not end an hours-long run: the task is dropped with the
    error as its reason, the others go on, and a rerun tries it again."""
    from benchmarks.plans import atlas
    from benchmarks.plans import table as plan_table

    real = plan_table.play_table

    def failing(cfg, problems, plans, reasoner):
        if any(p.source == "curriculum:mul_1d" for p in problems):
            raise RuntimeError("problem 'mul_1d/0': cannot re-create its entry")
        return real(cfg, problems, plans, reasoner)

    monkeypatch.setattr(atlas.plan_table, "play_table", failing)
    res = main(_cfg(tmp_path))
    dropped = {d["task"]: d["reason"] for d in res["pilot"]["dropped"]}
    assert "failed during play: RuntimeError" in dropped["curriculum:mul_1d"]
    assert [t["task"] for t in res["tasks"]] == ["curriculum:add2_1d"]
    monkeypatch.setattr(atlas.plan_table, "play_table", real)
    again = main(_cfg(tmp_path))
    assert {t["task"] for t in again["tasks"]} == {"curriculum:add2_1d", "curriculum:mul_1d"}


def test_ladder_entries_are_valid_generator_options():
    import reasoning_gym

    for gen, ladder in LADDERS.items():
        for opts in ladder:
            assert len(list(reasoning_gym.create_dataset(gen, size=2, seed=0, **opts))) == 2, (gen, opts)


def test_catalogue_rule_and_unknown_task():
    tasks, left = catalogue(("chain_sum", "countdown", "rubiks_cube"))
    assert [t.name for t in tasks] == ["chain_sum"] and tasks[0].ladder[0].startswith("rg:chain_sum?")
    reasons = {d["task"]: d["reason"] for d in left}  # every left-out generator, whatever was named
    assert "no single gold" in reasons["rubiks_cube"] and "refused" in reasons["countdown"] and len(reasons) > 10
    with pytest.raises(ValueError, match="not in the catalogue"):
        catalogue(("no_such_task",))


def test_pilot_walk():
    assert atlas_stats.pilot_step([], 3, 0.2, 0.8) == ("play", 0)
    assert atlas_stats.pilot_step([0.9], 3, 0.2, 0.8) == ("play", 1)
    assert atlas_stats.pilot_step([0.9, 0.5], 3, 0.2, 0.8)[1][0] == 1
    assert atlas_stats.pilot_step([0.95, 0.1], 3, 0.2, 0.8)[1][0] == 1  # 0.1 is nearer 50 % than 0.95
    assert atlas_stats.pilot_step([0.0], 3, 0.2, 0.8)[0] == "drop"


@pytest.mark.parametrize("field,value", [("band_low", 0.9), ("problems", 0), ("pilot_plans", ((3,),)),
                                         ("val_fraction", 1.0), ("out", ""), ("pilot_problems", 50)], ids=str)
def test_bad_config_names_the_field(field, value):
    with pytest.raises(ValueError, match=field.split("_")[0]):
        Config(**{field: value})


def test_a_close_runner_up_extends_the_task_to_three_rounds(tmp_path):
    cfg = Config(reasoner="tests.test_atlas:fake_reasoner", tasks=("curriculum:add2_1d",), problems=10, batch=10,
                 bootstrap=200, close=1.0, store=str(tmp_path / "s.sqlite"), out=str(tmp_path / "a.json"))
    (task,) = main(cfg)["tasks"]
    assert task["close"] and task["rounds"] == 3 and len(task["accuracy"]) == 73
    assert task["best_plan"][0] == 3  # the fake is right under any plan that starts with 3


def test_a_cut_outcomes_tail_is_dropped_and_later_rows_stay_readable(tmp_path):
    from benchmarks.plans.atlas import Outcomes, read_rows

    path = tmp_path / "a.outcomes.jsonl.gz"
    row = {"row": "outcome", "task": "t", "setting": "s", "problem_id": "p0", "plan": [8], "correct": True}
    Outcomes(path).append([row])
    with path.open("ab") as f:  # a crash in the middle of the next append
        f.write(gzip.compress(b'{"row": "outcome", "task": "t"}\n')[:15])
    out = Outcomes(path)
    assert out.rows == [row]
    out.append([{**row, "problem_id": "p1"}])
    assert [r["problem_id"] for r in read_rows(path)] == ["p0", "p1"]


@pytest.mark.parametrize("name, min_tasks", [("atlas", 20), ("atlas_action", 20), ("atlas_l3", 2)])
def test_committed_atlas_matches_its_outcomes_and_the_docs(tmp_path, name, min_tasks):
    """docs/atlas_results/{atlas,atlas_action,atlas_l3}.json (the default protocol; the action texts on the same
    tasks; L = 3 on two close tasks) are --table-from of the committed outcomes; docs/atlas.md copies each main-pass
    table (accuracy in % per plan, best plan's validation -> test) and across-task table (mixes, heterogeneity)."""
    import re
    from pathlib import Path

    from benchmarks.plans.atlas import docs_mix_table

    root = Path(__file__).resolve().parent.parent
    outcomes = root / f"docs/atlas_results/{name}.outcomes.jsonl.gz"
    if not outcomes.is_file():
        pytest.skip("no committed atlas outcomes")
    res = main(Config(table_from=str(outcomes), out=str(tmp_path / "p.json"), bootstrap=10000))
    committed = json.loads((root / f"docs/atlas_results/{name}.json").read_text())
    for k in ("tasks", "mix", "mix_all", "heterogeneity", "pilot"):
        assert json.loads(json.dumps(res[k])) == committed[k], k
    doc = (root / "docs/atlas.md").read_text()
    plans = ["8", "0,8", "1,8", "2,8", "3,8", "4,8", "5,8", "6,8", "7,8"]
    assert len(committed["tasks"]) >= min_tasks
    for t in committed["tasks"]:
        cells = " | ".join(f"{100 * t['accuracy'][p]:.1f}".removesuffix(".0") for p in plans)
        best = ", ".join(map(str, t["best_plan"]))
        row = (f"| {t['task']} | {cells} | `[{best}]` {100 * t['best_val']:.1f} → {100 * t['best_test']:.1f} |")
        row = re.sub(r"(\d+)\.0\b", r"\1", row)
        assert row in doc, f"docs/atlas.md lacks {row!r}"
    for line in docs_mix_table(committed).splitlines():
        assert line in doc, f"docs/atlas.md lacks {line!r}"
    h = committed["mix_all"]["headroom"]  # the reading's claim, with its interval
    assert h["ci95"][0] <= h["point"] <= h["ci95"][1]
