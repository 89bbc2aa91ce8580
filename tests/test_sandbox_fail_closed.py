"""The code sandbox fails closed: ``isolation="auto"`` without a working bubblewrap refuses to run
model-written code (one line: the fix and the opt-in); the ``RSIM_SANDBOX=rlimits`` opt-in runs, is
recorded in results and logs, and still cuts the network where the kernel allows.

Bubblewrap is made unavailable by a ``PATH`` without ``bwrap`` (and a fresh detection cache).
"""

import json
import os
import shutil
import socket
import sys

import pytest

from rsim_env.code import Executor, SandboxConfig, SandboxUnavailable, isolation

execute_mod = sys.modules["rsim_env.code.execute"]  # the module (the package re-exports a function of that name)

ADD = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """This process as on a machine without bubblewrap: PATH holds no bwrap, nothing detected yet."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv(isolation.OPT_IN_ENV, raising=False)
    monkeypatch.setattr(isolation, "_detected", {})
    monkeypatch.setattr(execute_mod, "_DEFAULT", None)
    assert shutil.which("bwrap") is None
    return monkeypatch


def test_auto_without_bubblewrap_refuses_in_one_line(no_bwrap):
    with pytest.raises(SandboxUnavailable) as e:
        Executor(SandboxConfig(max_parallel=1))
    msg = str(e.value)
    assert "\n" not in msg and "apt-get install bubblewrap" in msg and "RSIM_SANDBOX=rlimits" in msg
    with pytest.raises(SandboxUnavailable):  # the process-wide executor too (what env grading uses)
        execute_mod.default_executor()


def test_bwrap_requested_without_it_refuses(no_bwrap):
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        Executor(SandboxConfig(isolation="bwrap", max_parallel=1))


def test_env_opt_in_runs_rlimits_and_a_bad_value_is_refused(no_bwrap):
    no_bwrap.setenv(isolation.OPT_IN_ENV, "rlimits")
    ex = Executor(SandboxConfig(max_parallel=1))
    try:
        assert ex.mode == "rlimits" and ex.describe()["asked"] == "rlimits"
        assert ex.execute("def solution(a, b):\n    return a + b\n", ADD, timeout_s=5).isolation == "rlimits"
    finally:
        ex.close()
    no_bwrap.setenv(isolation.OPT_IN_ENV, "bwrap")  # the stronger request wins over a config's rlimits
    with pytest.raises(SandboxUnavailable):
        Executor(SandboxConfig(isolation="rlimits", max_parallel=1))
    no_bwrap.setenv(isolation.OPT_IN_ENV, "off")
    with pytest.raises(ValueError, match="RSIM_SANDBOX='off'"):
        Executor(SandboxConfig(max_parallel=1))


def test_opt_in_mode_cannot_reach_a_listener_on_the_host():
    """As root, rlimits mode runs each program in a new network namespace: 127.0.0.1 is not the host's."""
    if not isolation.is_root():
        pytest.skip("needs root (the sandbox's network namespace is made as root, then privileges are dropped)")
    ex = Executor(SandboxConfig(isolation="rlimits", max_parallel=1))
    try:
        if not ex.netns:
            pytest.skip("this kernel refuses unshare(CLONE_NEWNET) here")
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            port = server.getsockname()[1]
            prog = (f"import socket\ndef solution():\n    try:\n        socket.create_connection(('127.0.0.1', {port}), "
                    "timeout=1)\n        return 'connected'\n    except OSError as e:\n        return type(e).__name__\n")
            r = ex.execute(prog, "def check(candidate):\n    assert candidate() == 'connected'\n", timeout_s=5)
            server.settimeout(0.2)
            with pytest.raises(socket.timeout):
                server.accept()  # nothing reached the listener
        assert r.reason == "failed" and r.isolation == "rlimits", r
        # the same program does connect when not confined (so the check above can fail)
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            with socket.create_connection(server.getsockname(), timeout=1):
                pass
    finally:
        ex.close()


# ------------------------------------------------------------------ rsim eval / rsim train preflight

def _console(argv):
    from algos import cli, console

    return console.run(cli._run, argv)


def test_rsim_eval_on_code_refuses_before_any_model_loads(no_bwrap, tmp_path, capsys):
    import algos.evaluation  # noqa: F401

    run = sys.modules["algos.evaluation.run"]  # the module (the package re-exports a function of that name)

    def no_model(*a, **k):
        raise AssertionError("a model was loaded before the sandbox check")

    no_bwrap.setattr(run, "build_reasoner", no_model)
    status = _console(["eval", "--reasoner", "template", "--data", "code_tasks", "--limit", "2", "--modes", "none",
                       "--no-progress", "--out", str(tmp_path / "ev")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1 and len(err) == 1, err
    assert "bubblewrap" in err[0] and "RSIM_SANDBOX=rlimits" in err[0]


def test_rsim_eval_with_opt_in_runs_and_records_rlimits(no_bwrap, tmp_path, capsys):
    no_bwrap.setenv(isolation.OPT_IN_ENV, "rlimits")
    status = _console(["eval", "--reasoner", "template", "--data", "code_tasks", "--limit", "2", "--modes", "none",
                       "--no-progress", "--no-plots", "--out", str(tmp_path / "ev")])
    err = capsys.readouterr().err
    assert status == 0, err
    results = json.loads((tmp_path / "ev" / "results.json").read_text())
    assert results["isolation"] == "rlimits" and results["sandbox"]["asked"] == "rlimits"
    assert "isolation='rlimits'" in err  # logged on stderr too
    assert results["modes"]["none"]["accuracy"] == 1.0  # the scripted reasoner's programs ran and passed


def test_rsim_eval_on_math_needs_no_sandbox(no_bwrap, tmp_path):
    from algos.evaluation import main

    res = main(["--reasoner", "template", "--data", "tiny", "--limit", "2", "--modes", "none", "--no-progress"])
    assert res["isolation"] is None


def test_rsim_train_on_code_refuses_before_any_model_loads(no_bwrap, tmp_path):
    from algos import cli

    def no_model(*a, **k):
        raise AssertionError("a model was loaded before the sandbox check")

    no_bwrap.setattr(cli, "build_agents", no_model)
    with pytest.raises(SandboxUnavailable, match="RSIM_SANDBOX=rlimits"):
        cli.main(["train", "--preset", "tiny", "--data", "code_tasks", "--steps", "1", "--out", str(tmp_path / "run")])
    assert not os.path.exists(tmp_path / "run" / "checkpoints")


def test_rsim_train_with_opt_in_records_and_logs_it(no_bwrap, tmp_path, capsys):
    from algos import cli

    no_bwrap.setenv(isolation.OPT_IN_ENV, "rlimits")
    out = cli.main(["train", "--learner", "planner_only", "--planner", "tiny", "--reasoner", "template:1.0",
                    "--data", "code_tasks", "--steps", "1", "--out", str(tmp_path / "run"),
                    "--set", "train.groups_per_step=1", "--set", "train.grpo.group_size=2", "--set", "env.max_steps=2",
                    "--set", "data.size=4", "--set", "train.skip_zero_std_groups=false", "--set", "train.progress=false"])
    assert out["sandbox"]["isolation"] == "rlimits"
    assert "code sandbox isolation='rlimits'" in capsys.readouterr().err
