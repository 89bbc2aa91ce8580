"""``rsim eval --out DIR`` survives a crash: finished batches are journaled as they finish, a rerun of
the same command resumes and writes the same results.json as an uninterrupted run; other settings
are refused in one line.

Scripted agents (random planner, a template reasoner right with probability 0.5, sampled k=2) make
every batch depend on its seeds, so a resume that replayed or reseeded wrongly would show.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import algos.evaluation  # noqa: F401
from algos.evaluation import EvalConfig, main
from algos.evaluation.journal import NAME

run_mod = sys.modules["algos.evaluation.run"]  # the module (the package re-exports a function named run)

ARGS = dict(set=(("model.reasoner", "template:0.5"), ("data.source", "tiny"), ("data.size", "7")), batch=2, k=2, modes=("none", "random", "fixed:1,8"),
            progress=False, plots=False)
WALL = {"wall_s", "planner_s", "reasoner_s", "wall_s_per_problem", "wall_vs_none", "load_s", "total_s", "threads"}
"""Wall-clock fields: they measure this run's machine time, so two runs never agree on them (left out on purpose);
and the thread count, which each process chooses from the machine's load (algos/threads.py; speed only)."""


def _strip(x):
    if isinstance(x, dict):
        return {k: _strip(v) for k, v in x.items() if k not in WALL | {"files", "table_md", "out"}}
    if isinstance(x, list):
        return [_strip(v) for v in x]
    return x


def _results(out: Path) -> dict:
    return _strip(json.loads((out / "results.json").read_text()))


def _table_without_time(out: Path) -> list[str]:
    return [line.rsplit("|", 2)[0] for line in (out / "table.md").read_text().splitlines()]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "whole"
    main(EvalConfig(**ARGS, out=str(out)))
    return out


def _crash_after(monkeypatch, n: int) -> list[int]:
    """Make the n+1-th batch played raise (as a crash would); returns the list of batches played."""
    real, played = run_mod._play_batch, []

    def play(*a, **k):
        if len(played) == n:
            raise KeyboardInterrupt("simulated crash")
        played.append(1)
        return real(*a, **k)

    monkeypatch.setattr(run_mod, "_play_batch", play)
    return played


def test_a_rerun_resumes_and_writes_the_same_results(uninterrupted, tmp_path, monkeypatch):
    out = tmp_path / "ev"
    with monkeypatch.context() as m:
        _crash_after(m, 5)  # 3 modes x 4 batches: dies in the middle of the second mode
        with pytest.raises(KeyboardInterrupt):
            main(EvalConfig(**ARGS, out=str(out)))
    assert not (out / "results.json").exists()
    assert len((out / NAME).read_text().splitlines()) == 1 + 5  # header + the 5 finished batches, durable
    played = _crash_after(monkeypatch, 10 ** 6)  # count what the rerun plays
    main(EvalConfig(**ARGS, out=str(out)))
    assert len(played) == 12 - 5  # only the unfinished batches
    assert _results(out) == _results(uninterrupted)
    assert _table_without_time(out) == _table_without_time(uninterrupted)
    assert (out / "episodes.jsonl").read_text() == (uninterrupted / "episodes.jsonl").read_text()


def test_a_torn_last_line_is_played_again(uninterrupted, tmp_path, monkeypatch):
    out = tmp_path / "ev"
    with monkeypatch.context() as m:
        _crash_after(m, 3)
        with pytest.raises(KeyboardInterrupt):
            main(EvalConfig(**ARGS, out=str(out)))
    with open(out / NAME, "a") as fh:
        fh.write('{"mode": "random", "batch": 0, "rows": [{"probl')  # killed in the middle of a write
    played = _crash_after(monkeypatch, 10 ** 6)
    main(EvalConfig(**ARGS, out=str(out)))
    assert len(played) == 12 - 3
    assert _results(out) == _results(uninterrupted)


def test_a_complete_evaluation_rerun_plays_nothing(uninterrupted, tmp_path, monkeypatch):
    played = _crash_after(monkeypatch, 10 ** 6)
    main(EvalConfig(**ARGS, out=str(uninterrupted)))
    assert played == []


@pytest.mark.parametrize("change,named", [({"set": ARGS["set"] + (("data.size", "6"),)}, "problem_ids"),
                                          ({"set": ARGS["set"] + (("env.max_steps", "3"),)}, "env.max_steps"),
                                          ({"modes": ("none",)}, "modes")], ids=["limit", "rounds", "modes"])
def test_other_settings_are_refused_in_one_line(tmp_path, monkeypatch, capsys, change, named):
    from algos import cli, console

    out = tmp_path / "ev"
    with monkeypatch.context() as m:
        _crash_after(m, 2)
        with pytest.raises(KeyboardInterrupt):
            main(EvalConfig(**ARGS, out=str(out)))
    with pytest.raises(ValueError, match=f"other settings.*{named}"):
        main(EvalConfig(**{**ARGS, **change}, out=str(out)))
    argv = ["eval", "--reasoner", "template:0.5", "--data", "tiny", "--limit", "3", "--out", str(out), "--no-progress"]
    capsys.readouterr()  # what the runs above printed (on a busy machine, the thread notice of the first) is theirs
    assert console.run(cli._run, argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rerun the same command" in err[0] and "--no-resume" in err[0]
    main(EvalConfig(**{**ARGS, **change}, out=str(out), resume=False))  # --no-resume starts over
    assert json.loads((out / "results.json").read_text())["config"]["data"]["size"] == (6 if "problem_ids" == named else 7)


KILL_AFTER = (4, 16)
"""Batches journaled (of 24: 12 per mode) when each run is SIGKILLed: in the first mode, then in the second mode
of the resumed run. Fixed points, so every run kills at the same places; at least 8 batches stay unplayed after
each, so a fast machine cannot finish before the kill, and a slow one only takes longer to get there."""


def _run_until_killed(cmd, env, journal: Path, batches: int) -> None:
    """Start ``cmd`` and SIGKILL it once ``batches`` batches are journaled (a moment inside a batched rollout)."""
    import signal
    import subprocess
    import time

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # only bounds a hang: a loaded 2-core machine takes seconds
    while time.monotonic() < deadline and proc.poll() is None:
        if journal.exists() and len(journal.read_bytes().splitlines()) > batches:  # the header + the batches
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before the kill: {proc.stderr.read().decode()[-500:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()


@pytest.mark.long
def test_killed_twice_then_rerun_the_same_command(tmp_path):
    """The real thing: ``rsim eval`` in a subprocess, SIGKILLed once some batches are journaled, rerun with the
    same command line and SIGKILLed again later (a resumed run dies too), rerun to the end: the same results as
    an uninterrupted run."""
    import os
    import subprocess

    argv = ["--reasoner", "tiny", "--data", "tiny", "--limit", "24", "--batch", "2", "--k", "2",
            "--modes", "none,random", "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=6", "--no-progress", "--no-plots",
            "--threads", "1"]  # the same count in this process and in the child, whatever the machine's load
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    main(argv + ["--out", str(whole)])
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "algos.cli", "eval", *argv, "--out", str(killed)]
    for batches in KILL_AFTER:
        _run_until_killed(cmd, env, killed / NAME, batches)
        assert not (killed / "results.json").exists()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "finished batches kept" in done.stderr
    assert _results(killed) == _results(whole)
    assert (killed / "episodes.jsonl").read_text() == (whole / "episodes.jsonl").read_text()
