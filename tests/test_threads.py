"""Thread count and OpenMP wait policy of a run (algos/threads.py): jobs sharing a machine stay fast."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from algos.threads import auto_threads, cgroup_cpu_limit, physical_cores, resolve_threads, wait_policy_env

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("environ,added", [
    ({}, {"OMP_WAIT_POLICY": "PASSIVE"}),
    ({"OMP_WAIT_POLICY": "ACTIVE"}, {}),
    ({"GOMP_SPINCOUNT": "300000"}, {}),
    ({"KMP_BLOCKTIME": "200"}, {}),
], ids=["unset->passive", "user-policy-kept", "user-spincount-kept", "intel-blocktime-kept"])
def test_wait_policy_env(environ, added):
    assert wait_policy_env(environ) == added


def test_a_llamacpp_run_spins_briefly_instead_of_sleeping():
    """llama.cpp ends every graph node with an OpenMP barrier in torch's libgomp: no spin made its decode 2.6x slower."""
    argv = ["rsim", "train", "--preset", "demo", "--reasoner", "llamacpp:default"]
    assert wait_policy_env({}, argv) == {"GOMP_SPINCOUNT": "1000"}
    assert wait_policy_env({}, ["rsim", "train", "--set", "model.reasoner=llamacpp:default#n_ctx=1024"]) == {
        "GOMP_SPINCOUNT": "1000"}
    assert wait_policy_env({"OMP_WAIT_POLICY": "PASSIVE"}, argv) == {}  # the user's choice is kept
    assert wait_policy_env({}, ["rsim", "train", "--preset", "demo"]) == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize("cores,cpus,host,load,threads", [
    (2, 2, 2, 0.1, 2),     # quiet laptop: every core
    (2, 2, 2, 0.9, 2),     # background load (a browser, an editor) takes no core
    (2, 2, 2, 1.3, 1),     # a single-threaded job elsewhere
    (2, 2, 2, 2.0, 1),     # another 2-thread job: one thread, never zero
    (2, 2, 2, 12.0, 1),    # a crowded machine
    (8, 16, 16, 0.0, 8),   # hyper-threads: physical cores only
    (8, 8, 8, 3.0, 5),
    (2, 2, 64, 8.0, 2),    # a 2-CPU container on a 64-CPU host: its share of the host's load is small
], ids=["quiet", "background", "one-thread-job", "one-job", "crowded", "ht", "busy-8", "container"])
def test_auto_threads(cores, cpus, host, load, threads):
    assert auto_threads(cores, cpus, host, load) == threads


def test_resolve_threads_order():
    """--threads wins over OMP_NUM_THREADS, which wins over the automatic count."""
    assert resolve_threads(3, {"OMP_NUM_THREADS": "1"}) == (3, "--threads")
    assert resolve_threads(0, {"OMP_NUM_THREADS": "4"}) == (4, "OMP_NUM_THREADS")
    n, why = resolve_threads(0, {"OMP_NUM_THREADS": "lots"}, load1=1000.0)  # unparsable: ignored
    assert n == 1 and why.startswith("auto") and "load 1000.0" in why
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="threads="):
            resolve_threads(bad, {})


def test_physical_cores_and_cgroup(tmp_path):
    for cpu, siblings in ((0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")):
        d = tmp_path / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(siblings + "\n")
    assert physical_cores([0, 1, 2, 3], tmp_path) == 2
    assert physical_cores([0, 1, 2, 3, 4], tmp_path) == 5  # cpu4 unknown: count logical CPUs
    f = tmp_path / "cpu.max"
    assert cgroup_cpu_limit(f) is None
    f.write_text("max 100000\n")
    assert cgroup_cpu_limit(f) is None
    f.write_text("150000 100000\n")
    assert cgroup_cpu_limit(f) == 1.5


def _spincount(extra_env: dict[str, str]) -> str:
    """libgomp's spin count in a fresh `rsim` process, as libgomp itself reports it when it loads."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    env.update(PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OMP_DISPLAY_ENV="VERBOSE", **extra_env)
    p = subprocess.run([sys.executable, "-m", "algos.cli", "train", "--preset", "tiny", "--print-config"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if "GOMP_SPINCOUNT" in ln]
    if not lines:
        pytest.skip("torch's OpenMP runtime is not libgomp here (no OMP_DISPLAY_ENV report)")
    return lines[0].split("=", 1)[1].strip().strip("'")


def test_rsim_entry_makes_idle_threads_sleep_before_torch_loads():
    """The wait policy reaches libgomp (it is read once, at load): no spinning; a user's own choice is kept."""
    assert _spincount({}) == "0"
    assert _spincount({"GOMP_SPINCOUNT": "300000"}) == "300000"


@pytest.fixture
def torch_threads():
    import torch

    n = torch.get_num_threads()
    yield torch
    torch.set_num_threads(n)


def test_train_threads_flag_is_used_and_recorded_and_chosen_again_on_resume(tmp_path, torch_threads):
    from algos.cli import main, parse

    run = tmp_path / "run"
    out = main(["train", "--preset", "tiny", "--steps", "1", "--threads", "1", "--out", str(run),
                "--set", "train.progress=false"])
    assert out["threads"] == 1 and torch_threads.get_num_threads() == 1
    saved = json.loads(next(run.glob("checkpoints/step_*/config.json")).read_text())
    assert saved["threads"] == 1
    assert parse(["train", "--resume", str(run), "--steps", "2"])[1].threads == 0  # not the saved count
    out = main(["train", "--resume", str(run), "--steps", "2", "--threads", "2", "--set", "train.progress=false"])
    assert out["steps"] == 2 and out["threads"] == 2 and torch_threads.get_num_threads() == 2
    with pytest.raises(ValueError, match="threads"):
        parse(["train", "--preset", "tiny", "--threads", "-1"])


def test_eval_threads_flag_is_used_and_recorded(torch_threads):
    from algos.evaluation import main

    res = main(["--reasoner", "template", "--data", "rg:basic_arithmetic", "--limit", "2", "--batch", "2",
                "--modes", "none", "--set", "env.max_steps=2", "--no-progress", "--threads", "1"])
    assert res["config"]["threads"] == 1 and torch_threads.get_num_threads() == 1
    with pytest.raises(ValueError, match="EvalConfig.threads"):
        main(["--reasoner", "template", "--threads", "-2"])


def test_concurrency_per_step_counts_only_overlapping_steps():
    from benchmarks.runtime.concurrency import per_step

    rec = {"loop_start": 100.0, "step_times": [5.0, 1.0, 2.0, 4.0]}  # steps end at 105, 106, 108, 112
    assert per_step(rec, warmup=1) == (7.0 / 3, 0)
    assert per_step(rec, warmup=1, window=(105.0, 108.5)) == (1.5, 2)  # the step ending at 112 ran alone
    assert per_step(rec, warmup=0, window=(200.0, 300.0)) == (3.0, 0)  # no overlap: every step, flagged 0


@pytest.mark.long
def test_concurrency_benchmark_smoke_on_tiny_preset(tmp_path):
    """benchmarks/runtime/concurrency.py end to end on the tiny preset: both settings, each run's threads and wait recorded."""
    from benchmarks.runtime.concurrency import Config, main

    out = tmp_path / "c.json"
    main(Config(preset="tiny", steps=1, warmup=0, settle_s=0, output_dir=str(tmp_path / "runs"), out=str(out)))
    res = json.loads(out.read_text())
    new, old = res["settings"]["default"], res["settings"]["old"]
    assert new["wait"] == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": None}
    assert old["wait"] == {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "300000"}
    assert old["threads_alone"] == 2 and old["threads_concurrent"] == [2, 2]
    assert all(n >= 1 for n in [new["threads_alone"], *new["threads_concurrent"]])
    assert res["concurrent_slowdown"] == max(res["concurrent_slowdown_each"]) > 0
    assert len(res["concurrent_slowdown_each"]) == 2 and res["concurrent_slowdown_old"] > 0
    with pytest.raises(ValueError, match="settings"):
        Config(settings="default,fast")


def test_lowered_count_is_said_once_the_run_works_not_before(monkeypatch, capsys):
    """A run refused for bad input says why in one line whatever the machine's load (the CI failure of stop 23):
    the notice of a count lowered for load waits for :func:`announce`, which the runs call once their first
    training step or evaluation batch has been played."""
    pytest.importorskip("torch")
    from algos import threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_machine_threads", lambda: (1, "auto: 2 physical cores, 1-minute load 1.5 from other jobs"))
    import torch

    before = torch.get_num_threads()
    try:
        assert threads.use_threads(0) == 1
        assert capsys.readouterr().err == ""
        threads.announce()
        err = capsys.readouterr().err.splitlines()
        assert err == ["rsim: 1 CPU thread (auto: 2 physical cores, 1-minute load 1.5 from other jobs); --threads N to choose"]
        threads.announce()
        assert capsys.readouterr().err == ""  # once
    finally:
        torch.set_num_threads(before)


def test_busy_machine_refusals_stay_one_line(monkeypatch, capsys, tmp_path):
    """`rsim eval` of a run that does not exist, on a machine that looks busy: one line on stderr."""
    pytest.importorskip("torch")
    from algos import cli, console, threads

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_machine_threads", lambda: (1, "auto: 2 physical cores, 1-minute load 1.5 from other jobs"))
    import torch

    before = torch.get_num_threads()
    try:
        argv = ["eval", "--planner", str(tmp_path / "nope"), "--modes", "trained", "--reasoner", "template:0.5",
                "--data", "tiny", "--limit", "1", "--no-progress", "--no-plots"]
        assert console.run(cli._run, argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "CPU thread" not in err[0], err
    finally:
        torch.set_num_threads(before)
