"""benchmarks/runtime/soak.py scaled down to seconds: every section runs, reports the documented keys, and the
served run survives its server being killed twice (the full soak is a benchmark, not a test)."""

import json
import shutil

import pytest

from benchmarks.runtime.soak import SoakConfig, main

ISOLATION = "bwrap" if shutil.which("bwrap") else "rlimits"


def test_soak_smoke_all_sections(tmp_path, capsys):
    out = tmp_path / "soak.json"
    # exec_timeout_s 3 s: every benign program must pass, next to hostile ones, with its bound counted from process
    # start; 1 s left a loaded 2-core machine about 5x the 0.2 s such a run takes
    r = main(SoakConfig(out=str(out), train_steps=4, sample_every=2, executions=12, hostile_every=1, check_every=6,
                        exec_timeout_s=3.0, isolation=ISOLATION, uid_base=62100, requests=24, batch_episodes=4,
                        down_s=0.3, backoff_s=0.05))
    saved = json.loads(out.read_text())
    t, s, v = saved["train"], saved["sandbox"], saved["served"]
    assert t["steps"] == 4 and t["step"] == [2, 4] and len(t["rss_mib"]) == len(t["fds"]) == len(t["children"]) == 2
    # flat, not zero: in a full test session other tests' answer-checker workers are children of this process too
    assert all(x > 0 for x in t["rss_mib"]) and len(set(t["children"])) == 1
    assert s["executions"] == 12 and s["hostile"] == 6 and s["hostile_passed"] == 0
    assert s["benign_passed"] == s["benign"] == 6, s
    assert s["leftovers"] == 0 and len(s["leftover_checks"]) == 2, s["leftover_checks"]
    assert set(s["hostile_verdicts"]) == {"fork-bomb", "infinite-loop", "memory-hog", "file-writes", "sockets", "daemon"}
    assert 0 < s["p50_s"] <= s["p99_s"] and len(s["quarters"]) == 4
    if ISOLATION == "bwrap":
        assert s["host_connections"] == 0
    assert v["requests"] == 24 and v["episodes"] == 12 and v["lost"] == 0
    assert v["restarts"] == 2 and v["retries"] > 0 and v["retry_log_lines"] == v["retries"]
    assert "retry 1/8" in v["retry_log_sample"][0]
    shown = capsys.readouterr().out
    assert main(SoakConfig(table=str(out)))["served"] == r["served"]
    assert capsys.readouterr().out.strip() == shown.strip()


def test_soak_refuses_hostile_programs_without_bubblewrap(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(ValueError, match="bubblewrap.*--isolation rlimits"):
        main(SoakConfig(sections="sandbox"))


@pytest.mark.parametrize("kw,field", [({"sections": "train,gpu"}, "sections"), ({"isolation": "none"}, "isolation"),
                                      ({"requests": 0}, "requests")])
def test_soak_config_errors_name_the_field(kw, field):
    with pytest.raises(ValueError, match=f"SoakConfig.{field}"):
        SoakConfig(**kw)


def test_soak_cli_is_built_from_the_config():
    from benchmarks.runtime.soak import parse

    cfg = parse(["--executions", "40", "--requests", "10", "--sections", "served", "--isolation", "rlimits"])
    assert (cfg.executions, cfg.requests, cfg.section_list, cfg.isolation) == (40, 10, ["served"], "rlimits")


def test_benchmarks_soak_table_is_the_saved_runs():
    """docs/benchmarks.md's soak table is generated from docs/soak_results/soak.json, never edited by hand."""
    import re
    from pathlib import Path

    from benchmarks.runtime.soak import table

    root = Path(__file__).resolve().parent.parent
    saved = json.loads((root / "docs/soak_results/soak.json").read_text())
    block = re.search(r"<!-- soak table: [^\n]*-->\n(.*?)\n<!-- /soak table -->", (root / "docs" / "benchmarks.md").read_text(), re.S)
    assert block and block.group(1) == table(saved)
    assert set(saved) >= {"train", "sandbox", "served"}
    assert {"rss_mib", "fds", "children"} <= set(saved["train"]) and len(saved["train"]["rss_mib"]) == 10
    assert {"executions", "leftovers", "p50_s", "p99_s"} <= set(saved["sandbox"])
    assert {"requests", "lost", "retries"} <= set(saved["served"])
