"""studies/paper.py: the paper's table from an rSIM run, with base, +rSIM and plug-in rows and what is missing."""

import json


def test_paper_benchmark_rows_and_missing(tmp_path, capsys):
    """With only an rSIM run, the table has base, +rSIM and plug-in rows and says +GRPO is missing."""
    from algos.cli import main as rsim
    from studies.paper import PaperConfig, main as paper

    run = tmp_path / "rsim"
    rsim(["train", "--preset", "tiny", "--steps", "2", "--out", str(run), "--set", "train.save_every=1"])
    doc = paper(PaperConfig(reasoner="template", rsim=str(run), other_reasoner="template:0.5",
                            source="rg:basic_arithmetic", limit=4, batch=4, max_steps=4, out=str(tmp_path / "p")))
    systems = [r["system"] for r in doc["rows"]]
    assert systems == ["base", "+rSIM", "+planner (plug-in)", "other base", "other +planner (plug-in)"]
    assert [m["system"] for m in doc["missing"]] == ["+GRPO"] and "--learner grpo" in doc["missing"][0]["make"]
    assert doc["rows"][0]["accuracy"] == 1.0  # oracle template reasoner, plain CoT
    assert doc["rows"][1]["reasoner_info"]["kind"] == "checkpoint" and doc["rows"][1]["planner_info"]["step"] == 2
    saved = json.loads((tmp_path / "p" / "paper.json").read_text())
    assert saved["table_md"] == doc["table_md"] and "| +rSIM |" in capsys.readouterr().out
