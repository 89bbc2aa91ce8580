"""The console boundary: one line on stderr and a non-zero exit; --debug / RSIM_DEBUG show the traceback."""

import pytest

from algos.console import run


def _raise(exc):
    def entry(argv):
        raise exc
    return entry


@pytest.mark.parametrize("exc,line", [
    (ValueError("resume: bad\nsecond line"), "rsim: error: resume: bad second line (traceback: rerun with --debug"),
    (FileNotFoundError("No JSONL problem file at x.jsonl"), "rsim: error: No JSONL problem file at x.jsonl"),
    (AttributeError("'NoneType' object has no attribute 'x'"), "rsim: internal error (AttributeError): 'NoneType'"),
], ids=["value-error-multiline", "file-not-found", "bug"])
def test_error_is_one_line_and_nonzero_exit(capsys, monkeypatch, exc, line):
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    assert run(_raise(exc), ["train"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(line) and "Traceback" not in err


def test_debug_flag_and_env_reraise(monkeypatch):
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    seen = []
    with pytest.raises(ValueError, match="boom"):
        run(lambda argv: (seen.append(argv), _raise(ValueError("boom"))(argv)), ["train", "--debug", "--steps", "2"])
    assert seen == [["train", "--steps", "2"]]  # --debug is not passed on
    monkeypatch.setenv("RSIM_DEBUG", "1")
    with pytest.raises(ValueError):
        run(_raise(ValueError("boom")), ["train"])


def test_success_and_interrupt(capsys, monkeypatch):
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    assert run(lambda argv: None, ["train"]) == 0
    assert run(_raise(KeyboardInterrupt()), ["train"]) == 130
    assert capsys.readouterr().err == "rsim: interrupted\n"
