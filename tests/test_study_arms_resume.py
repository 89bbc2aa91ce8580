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
