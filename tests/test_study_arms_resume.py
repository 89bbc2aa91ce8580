"""An arm's run resumes exactly: a tiny ``rsim`` run killed during step 2 and started again plays the same problems,
records the same steps and ends with the same adapter as one run straight to step 2."""

from __future__ import annotations

import json

import pytest


def _final(out):
    from agents.runs import find_checkpoint
    from safetensors.numpy import load_file

    ck = find_checkpoint(out / "arms" / "rsim" / "seed_0")
    return {f.name: load_file(f) for f in sorted(ck.glob("model.*.safetensors"))}


def _record(out):
    return json.loads((out / "arms" / "rsim" / "seed_0" / "arm.json").read_text())


def test_an_interrupted_arm_run_resumes_to_the_same_problems_and_weights(tmp_path, monkeypatch):
    from algos.study.arms.train import train
    from algos.study.config import resolve
    from algos.trainer import Trainer

    cfg = {"arms": "rsim", "arm.seeds": 1, "arm.steps": 2}
    step = Trainer.train_step

    def dies_at_step_2(self):
        if self.step == 1:
            raise KeyboardInterrupt("killed")
        return step(self)

    monkeypatch.setattr(Trainer, "train_step", dies_at_step_2)
    with pytest.raises(KeyboardInterrupt):
        train(resolve("tiny", {"out": str(tmp_path / "a"), **cfg}))
    stopped = _record(tmp_path / "a")
    assert not stopped["complete"] and stopped["totals"]["steps"] == 1
    monkeypatch.setattr(Trainer, "train_step", step)
    resumed = train(resolve("tiny", {"out": str(tmp_path / "a"), **cfg}))
    straight = train(resolve("tiny", {"out": str(tmp_path / "b"), **cfg}))
    assert not resumed["runs"][0]["reused"] and not straight["runs"][0]["reused"]
    a, b = _record(tmp_path / "a"), _record(tmp_path / "b")
    assert [r["step"] for r in a["rows"]] == [1, 2] and a["totals"]["problems"] == b["totals"]["problems"]
    assert a["totals"]["episodes"] == b["totals"]["episodes"] == 8
    assert a["totals"]["reasoner_tokens_trained"] == b["totals"]["reasoner_tokens_trained"] > 0  # it did learn
    fa, fb = _final(tmp_path / "a"), _final(tmp_path / "b")
    assert fa.keys() == fb.keys() and fa
    for name in fa:
        for key in fa[name]:
            assert fa[name][key] == pytest.approx(fb[name][key], abs=1e-6), (name, key)
    again = train(resolve("tiny", {"out": str(tmp_path / "a"), **cfg}))
    assert again["runs"][0]["reused"]
    with pytest.raises(ValueError, match="other arm settings .*steps=2.*now steps=3"):  # not continued silently
        train(resolve("tiny", {"out": str(tmp_path / "a"), **cfg, "arm.steps": 3}))


def test_a_finished_run_is_scored_as_it_ends_and_its_looks_outlive_its_checkpoints(tmp_path, monkeypatch, capsys):
    """The train stage decodes each run's looks as soon as it ends, so a finished run's checkpoints can go (a study's
    committed folder keeps records and looks, not weights): its looks are read back by the digest its record wrote,
    the score stage records them, the report reads them; a finished run whose weights went before its looks were
    kept is trained again; the report refuses an arm whose scoring is not a look in the ledger."""
    import shutil

    from algos import cli
    from algos.study.arms import score as arms_score
    from algos.study.arms import stages as arms_stages
    from algos.study.config import resolve

    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    out = tmp_path / "study"
    argv = ["study", "--preset", "tiny", "--out", str(out), "--threads", "1", "--arms", "grpo", "--set", "arm.seeds=2"]
    cli.main(argv + ["--stage", "fill"])
    first = cli.main(argv + ["--stage", "train"])
    assert [r["reused"] for r in first["arms"]["train"]["runs"]] == [False, False]
    kept = {p.name for p in (out / "arms" / "scores" / "test").glob("*.jsonl.gz")}
    assert kept == {"grpo_s0.jsonl.gz", "grpo_s1.jsonl.gz"}  # decoded by the train stage, run by run
    cfg = resolve("tiny", {"out": str(out), "arms": "grpo", "arm.seeds": 2})
    digest = {s: arms_score.weights_digest([str(out / "arms" / "grpo" / f"seed_{s}")]) for s in (0, 1)}
    for s in (0, 1):
        rec = json.loads((out / "arms" / "grpo" / f"seed_{s}" / "arm.json").read_text())
        assert len(rec["weights"]) == 64
        shutil.rmtree(out / "arms" / "grpo" / f"seed_{s}" / "checkpoints")
        assert arms_score.weights_digest([str(out / "arms" / "grpo" / f"seed_{s}")]) == digest[s]
    assert arms_score.run_scored(cfg, "grpo", 0) and arms_score.run_scored(cfg, "grpo", 1)
    with pytest.raises(ValueError, match="arm\\(s\\) grpo is not a look in the split's ledger; run rsim study"):
        arms_stages.report(cfg)  # decoded, never counted: refused
    cli.main(argv + ["--stage", "score"])
    rep = cli.main(argv + ["--stage", "report"])["arms"]["report"]["report"]
    assert rep["arms"]["grpo"]["seeds"] == 2
    # a clone's view: records and looks, no weights; the report rebuilt from them is the one written
    written = json.loads((out / "arms" / "report" / "report.json").read_text())
    assert json.loads(json.dumps(arms_stages.rebuild(cfg), default=float)) == written
    # seed 1's look lost with its weights: it can never be scored, so the train stage trains it again
    (out / "arms" / "scores" / "test" / "grpo_s1.jsonl.gz").unlink()
    capsys.readouterr()
    again = cli.main(argv + ["--stage", "train"])
    assert [r["reused"] for r in again["arms"]["train"]["runs"]] == [True, False]
    assert "grpo seed 1: its record is finished but its weights are gone" in capsys.readouterr().err
    assert (out / "arms" / "scores" / "test" / "grpo_s1.jsonl.gz").is_file()


def test_the_train_stage_checks_the_sandbox_before_any_run(tmp_path, monkeypatch):
    """Code problems run model-written programs: a sandbox that cannot start stops the stage before any run trains
    (not after its first step), on the train problems and, when each run is scored as it ends, the held-out ones."""
    import algos.preflight
    from algos import cli
    from algos.study.arms.score import split_problems
    from algos.study.arms.stages import ScoreAsTrained
    from algos.study.arms.train import train, train_problems
    from algos.study.config import resolve

    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    out = tmp_path / "study"
    cli.main(["study", "--preset", "tiny", "--out", str(out), "--threads", "1", "--stage", "fill"])
    cfg = resolve("tiny", {"out": str(out), "arms": "grpo", "arm.seeds": 1})
    asked = []

    def unavailable(problems, log=True):
        asked.append([p.id for p in problems])
        raise RuntimeError("no bubblewrap")

    monkeypatch.setattr(algos.preflight, "check_sandbox", unavailable)
    with pytest.raises(RuntimeError, match="no bubblewrap"):
        train(cfg, scorer=ScoreAsTrained(cfg))
    assert asked == [[p.id for p in train_problems(cfg)] + [p.id for p in split_problems(cfg, "test")]]
    assert not (out / "arms").exists()
