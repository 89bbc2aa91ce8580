"""The end of ``rsim train``: a few lines saying what ran, where the results are and what to run next,
every next command one that parses; the numbers in ``RUN_DIR/summary.json``."""

import json
import shlex

import pytest

import algos.cli as cli
from algos.summary import SUMMARY_FILE


def parses(command: str) -> None:
    """Parse one ``rsim ...`` command line with the parser its subcommand uses (raises if it does not parse)."""
    from algos import evaluation, viewer

    argv = shlex.split(command.split("#")[0])
    assert argv[0] == "rsim", command
    parser = {"train": lambda a: cli.parse(["train", *a]), "eval": evaluation.parse, "view": viewer.parse}[argv[1]]
    parser(argv[2:])


@pytest.mark.parametrize("learner,trained", [("stackelberg", "--planner"), ("grpo", "--reasoner"),
                                             ("planner_only", "--planner")])
def test_train_ends_with_where_and_what_next(tmp_path, capsys, monkeypatch, learner, trained):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    run = tmp_path / "run"
    out = cli.main(["train", "--preset", "tiny", "--learner", learner, "--steps", "2", "--out", str(run)])
    text = capsys.readouterr().out
    assert text.startswith(f"rsim train: 2 steps of {learner}")
    for where in (str(run / "samples.jsonl"), str(run / "tensorboard"), out["checkpoint"], str(run / SUMMARY_FILE)):
        assert where in text
    assert "{" not in text  # no raw JSON dump on the console any more
    nxt = text.split("next:\n", 1)[1].splitlines()
    assert f"tensorboard --logdir {run}" in text
    rsim = [line.strip() for line in nxt if line.strip().startswith("rsim ")]
    assert [c.split()[1] for c in rsim] == ["view", "eval", "train"] and f"rsim eval {trained} {run}" in text
    # the frozen reasoner a planner-only run trained against is the one it is evaluated with
    assert (f"rsim eval --planner {run} --reasoner toy " in text) == (learner == "planner_only")
    for command in rsim:
        parses(command)
    saved = json.loads((run / SUMMARY_FILE).read_text())
    assert saved["steps"] == 2 and saved["output_dir"] == str(run) and "reasoner/reward" in saved["last"]
    assert "history" not in saved and "params" not in saved
    assert saved["replay"] is None and "replay " not in text  # the reasoner is not replayed


def test_a_replayed_reasoner_s_counts_are_in_the_summary(tmp_path, capsys, monkeypatch):
    """planner_only against replay:tiny: summary.json records the replay store's hits, misses, catch-up steps and
    mismatches of the run; an identical second run reads every step back, and the console says so."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    args = ["train", "--preset", "tiny", "--learner", "planner_only", "--reasoner", "replay:tiny", "--steps", "2",
            "--set", "reasoner.greedy=true"]
    runs = []
    for name in ("a", "b"):
        cli.main([*args, "--out", str(tmp_path / name)])
        runs.append((json.loads((tmp_path / name / SUMMARY_FILE).read_text())["replay"], capsys.readouterr().out))
    (first, _), (second, text) = runs
    assert set(first) >= {"hits", "misses", "catchup_steps", "catchup_mismatch"}
    assert first["misses"] > 0 and first["catchup_mismatch"] == 0
    assert second["misses"] == 0 and second["hits"] == first["hits"] + first["misses"]
    assert f"replay       {second['hits']} steps read back, 0 decoded" in text
