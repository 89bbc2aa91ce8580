"""studies/continual.py: the math -> code continual-training study writes its table, figure and examples."""

import pytest

from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")


def test_continual_benchmark_produces_the_table(tmp_path):
    from studies.continual import Config
    from studies.continual import main as continual

    extra = ("train.groups_per_step=1 train.grpo.group_size=2 train.skip_zero_std_groups=false "
             "train.progress=false")
    r = continual(Config(preset="", planner="tiny", reasoner="template:0.5", math_data="tiny", math_eval="", steps_math=1, steps_code=1,
                         train_size=4, eval_limit=3, max_steps=2, max_step_tokens=4, extra=extra, out=str(tmp_path)))
    assert [row["set"] for row in r["rows"]] == ["math", "code"]
    assert all(0 <= row[k]["accuracy"] <= 1 and row[k]["problems"] == 3 for row in r["rows"] for k in ("none", "A", "B"))
    assert "| code |" in r["table_md"] and (tmp_path / "continual.png").is_file()
    assert (tmp_path / "continual.json").is_file() and r["run_code"].endswith("run_code")


def test_continual_examples_are_the_reported_planners_episodes_with_their_plans():
    from studies.continual import examples

    rows = [{"mode": "none", "problem_id": "p/0", "correct": True, "strategies": []},
            {"mode": "trained", "problem_id": "p/1", "correct": False, "strategies": [3, 8], "shown_steps": ["a", "b"]},
            {"mode": "trained", "problem_id": "p/2", "correct": True, "strategies": [1, 8], "shown_steps": ["c", "d"],
             "question": "q2", "injected": ["", "lead "]}]
    ex = examples(rows)
    assert [e["problem_id"] for e in ex] == ["p/2", "p/1"]          # the trained mode only, correct first
    assert ex[0]["strategies"] == [1, 8] and ex[0]["shown_steps"] == ["c", "d"]
    assert ex[0]["question"] == "q2" and ex[0]["injected"] == ["", "lead "]
