"""``rsim study`` end to end against a real OpenAI-compatible server: llama.cpp's, on the embedded model (slow).

The route researchers with GPUs take (``--reasoner openai:MODEL@URL`` to vLLM), checked here on CPU with llama.cpp's
own server on loopback: two reasoning-gym tasks, a few problems a split, the whole command -- fill the train / val /
test trees through the server, train two head-only planner seeds (tiny planner), score every mode on the test tree,
write the report -- then the same command again, which must decode nothing and add no ledger entry. Short steps
(16 tokens, 32 for the answer) and one problem a task a split keep it to about a minute: llama.cpp's server answers one request at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TASKS = "rg:chain_sum+products"
SIZES = {"train": 1, "val": 1, "test": 1}  # 6 problems, 102 steps: each split filled, scored and resumed
STEPS_A_PROBLEM = 17  # two rounds whose last only terminates: [8] and [s, 8] for the 8 other strategies


def _argv(spec: str, out: Path) -> list[str]:
    return ["--reasoner", spec, "--data", TASKS, "--out", str(out),
            "--train-per-task", str(SIZES["train"]), "--val-per-task", str(SIZES["val"]),
            "--test-per-task", str(SIZES["test"]), "--rounds", "2",
            "--max-step-tokens", "16", "--max-answer-tokens", "32", "--max-copies", "4",
            "--planner", "tiny", "--seeds", "2", "--steps", "3", "--set", "learner.groups_per_step=2",
            "--set", "learner.group_size=4", "--set", "learner.eval_every=1", "--threads", "1"]


def test_rsim_study_through_llama_cpp_server(tmp_path, monkeypatch):
    from agents.llamacpp.server import LlamaServer
    from tests.test_llama_server import _real_config  # the embedded model on the real server, or skip with why
    from algos.study.cli import main as study
    from algos.study.cli import parse
    from algos.study.paths import StudyPaths

    out = tmp_path / "study"
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))  # a fresh replay store: every step is decoded
    with LlamaServer(_real_config(tmp_path)) as server:
        spec = f"openai:default@{server.url}"
        cfg, _ = parse(_argv(spec, out))
        before = server.served("/v1/completions")
        first = study(_argv(spec, out))
        decoded = server.served("/v1/completions") - before

        # fill: three trees through the server, each problem's whole game (17 steps), every step a request answered
        steps = 0
        for split, per_task in SIZES.items():
            tree = StudyPaths.of(cfg).tree(split)
            assert tree.is_file(), f"no {split} tree at {tree}"
            info = json.loads(StudyPaths.of(cfg).info(split).read_text())
            assert info["problems"] == 2 * per_task and info["steps"] == STEPS_A_PROBLEM * info["problems"]
            assert all(i["replay"]["catchup_mismatch"] == 0 for i in info["increments"])
            steps += info["steps"]
        assert decoded >= steps, f"{steps} tree steps but the server answered {decoded} completions"

        # train: one head per seed; score + report: every mode on the test tree, one ledger entry
        assert sorted(p.name for p in (out / "heads").iterdir() if p.is_dir()) == ["seed_0", "seed_1"]
        report = json.loads((out / "report" / "report.json").read_text())
        assert {p.name for p in (out / "report").iterdir()} >= {"report.json", "report.md", "modes.png", "tasks.png",
                                                                 "seeds.png"}
        assert report["meta"]["reasoner"] == spec and report["meta"]["problems"] == 2 * SIZES["test"]
        assert report["meta"]["tasks"] == 2
        assert {"trained", "best_fixed", "per_task", "random"} <= set(report["modes"])
        h = report["headline"]
        lo, hi = h["ci95_pts"]
        assert lo <= h["difference_pts"] <= hi and h["seeds"]["seeds"] == 2
        assert report["ledger"]["configurations_scored"] == 1 and first["report"]["ledger_count"] == 1
        assert h["sentences"]["headline"] in (out / "report" / "report.md").read_text()

        # the same command again: every stage resumes, nothing is decoded, the ledger does not grow
        before = server.served("/v1/completions")
        again = study(_argv(spec, out))
        assert server.served("/v1/completions") == before
        assert again["report"]["ledger_count"] == 1
        assert json.loads((out / "report" / "report.json").read_text())["headline"] == h
