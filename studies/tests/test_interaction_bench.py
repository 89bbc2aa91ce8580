"""studies.interaction and studies.calibrate, model-free (scripted reasoners)."""

import json

from studies import calibrate, interaction
from rsim_env import render


def test_interaction_json_has_the_documented_fields(tmp_path):
    out = tmp_path / "i.json"
    r = interaction.main(interaction.Config(reasoner="template:0.5", limit=6, decodings=("greedy",),
                                            modes=("none", "fixed:3", "fixed:1,3,8", "random"), out=str(out)))
    saved = json.loads(out.read_text())
    assert set(saved["modes"]) == {"none", "fixed:3", "fixed:1,3,8", "random"}
    for f in saved["modes"].values():
        assert {"n", "accuracy", "echo_rate", "empty_answer_rate", "follow_rate"} <= set(f) and f["n"] == 6
        assert f["echo_rate"] == 0.0 and f["follow_rate"] == 1.0  # the scripted steps perform, never copy
    assert len(saved["episodes"]) == 24
    again = interaction.recompute(saved)
    assert again["modes"]["fixed:3"]["follow_rate"] == r["modes"]["fixed:3"]["follow_rate"]


def test_echoing_rows_score_as_echoes():
    row = {"steps": [render.injection(0, 1).strip(), "Step 2 (termination: Conclude and state the final answer in "
                     "\\boxed{}.)"], "injected": [1, 8], "correct": False, "final_text": ""}
    f = interaction.mode_figures([row])
    assert f["echo_rate"] == 1.0 and f["follow_rate"] == 0.0 and f["follow_raw_rate"] == 1.0
    assert f["empty_answer_rate"] == 1.0


def test_calibrate_band_figures(tmp_path):
    r = calibrate.main(calibrate.Config(reasoner="template:0.5", tasks=("add2_1d", "mul_1d"), problems=3,
                                        group_size=4, settings=((1.0, 1.0),), modes=("none",),
                                        out=str(tmp_path / "c.json")))
    assert [x["task"] for x in r["rows"]] == ["add2_1d", "mul_1d"]
    for x in r["rows"]:
        assert x["samples"] == 12 and x["groups"] == 3 and 0 <= x["pass1"] <= 1
        assert x["frac_groups_with_variance"] + x["frac_all_right"] + x["frac_all_wrong"] == 1.0
