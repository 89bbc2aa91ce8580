"""One exit status for user errors: every ``rsim`` command exits 1 with one line, bad flags included.

argparse's own errors used to print the usage and exit 2 while the README promises 1; the parsers
now raise (:class:`algos.console.UsageError`) and the console boundary prints one line.
"""

import sys

import pytest

import algos.cli as cli


def rsim(monkeypatch, capsys, *argv):
    """Run ``rsim *argv`` as the console script does; return (exit status, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["rsim", *argv])
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    try:
        cli.main()
        status = 0
    except SystemExit as e:
        status = e.code
    out = capsys.readouterr()
    return status, out.out, out.err


@pytest.mark.parametrize("argv,says", [
    ([], "the following arguments are required: command"),
    (["fly"], "invalid choice: 'fly'"),
    (["train", "--steps", "x"], "argument --steps: invalid int value: 'x' (see rsim train --help)"),
    (["train", "--bogus"], "unrecognized arguments: --bogus"),
    (["train", "--set", "train.steps"], "expected KEY=VALUE"),
    (["eval", "--limit", "x"], "argument --limit: invalid int value: 'x' (see rsim eval --help)"),
    (["eval", "--fixed", "1,x"], "fixed sequence '1,x'"),
    (["eval", "--modes", "none,fixed:1-3-8"], "separate strategy indices with commas, fixed:1,3,8 "),
    (["view"], "the following arguments are required: dir"),
    (["export", "some_run"], "the following arguments are required: --out"),
], ids=["no-command", "bad-command", "train-type", "train-unknown", "train-set", "eval-type", "eval-parse", "eval-plan",
        "view-missing", "export-missing"])
def test_user_errors_exit_1_with_one_line(argv, says, monkeypatch, capsys):
    status, out, err = rsim(monkeypatch, capsys, *argv)
    assert status == 1, err
    assert err.count("\n") == 1 and err.startswith("rsim: error: ") and says in err, err
    assert "usage:" not in err and "Traceback" not in err


def test_help_still_exits_0(monkeypatch, capsys):
    status, out, _ = rsim(monkeypatch, capsys, "train", "--help")
    assert status == 0 and "--preset" in out


def test_eval_help_spells_a_plan_as_the_readme_does(monkeypatch, capsys):
    status, out, _ = rsim(monkeypatch, capsys, "eval", "--help")
    assert status == 0 and "fixed:1,3,8" in out and "1-3-8" not in out
