"""Flags generated from a config dataclass (``rsim train``, ``rsim eval`` and the benchmarks use this)."""

from dataclasses import dataclass, field

import pytest

from algos.dataclass_cli import UsageError, cli_main, field_docs, parse_config


def _pair(text: str) -> tuple[int, int]:
    a, b = text.split(",")
    return int(a), int(b)


@dataclass(frozen=True)
class Demo:
    """A config."""

    max_steps: int = 3
    """Rounds."""
    name: str = "x"
    """A name."""
    plots: bool = True
    """Write plots."""
    fast: bool = False
    """Go fast."""
    pairs: tuple[tuple[int, int], ...] = field(default=((1, 2),), metadata={"parse": _pair, "append": True})
    """Pairs."""
    seeds: tuple[int, ...] = (0, 1)
    """Seeds (95% of them are fine)."""
    names: tuple[str, ...] = ("a",)
    """Names."""
    threads: int | None = None
    """Threads."""
    hidden: str = field(default="h", metadata={"cli": False})
    """Not a flag."""

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"Demo.max_steps={self.max_steps} must be >= 1.")


def test_docs_defaults_and_types():
    assert field_docs(Demo) == {"max_steps": "Rounds.", "name": "A name.", "plots": "Write plots.",
                                "fast": "Go fast.", "pairs": "Pairs.", "seeds": "Seeds (95% of them are fine).",
                                "names": "Names.", "threads": "Threads.", "hidden": "Not a flag."}
    assert parse_config(Demo, [], prog="demo") == Demo()
    got = parse_config(Demo, ["--max-steps", "5", "--no-plots", "--fast", "--pairs", "3,4", "--pairs", "5,6"], prog="d")
    assert got == Demo(max_steps=5, plots=False, fast=True, pairs=((3, 4), (5, 6)))
    with pytest.raises(UsageError, match="unrecognized arguments: --max_steps"):
        parse_config(Demo, ["--max_steps", "2"], prog="d")  # one spelling of each flag


def test_tuples_optionals_and_hidden_fields(capsys):
    got = parse_config(Demo, ["--seeds", "3, 4,5", "--names", "x,y", "--threads", "2"], prog="d")
    assert (got.seeds, got.names, got.threads) == ((3, 4, 5), ("x", "y"), 2)
    with pytest.raises(UsageError, match="expected a comma-separated list of int"):
        parse_config(Demo, ["--seeds", "1,b"], prog="d")
    with pytest.raises(UsageError, match="unrecognized arguments: --hidden"):
        parse_config(Demo, ["--hidden", "z"], prog="d")
    with pytest.raises(SystemExit):
        parse_config(Demo, ["--help"], prog="d")
    assert "Seeds (95% of them are fine). (default: 0,1)" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("argv,error,match", [
    (["--max-steps", "0"], ValueError, "Demo.max_steps=0"),  # the config's own check
    (["--max-steps", "x"], UsageError, r"argument --max-steps: invalid int value: 'x' \(see d --help\)"),
    (["--bogus"], UsageError, "unrecognized arguments: --bogus"),
], ids=["config", "type", "unknown"])
def test_errors_raise_instead_of_exiting_2(argv, error, match, capsys):
    with pytest.raises(error, match=match):
        parse_config(Demo, argv, prog="d")
    assert capsys.readouterr().err == ""  # no usage dump: the console prints one line


def _demo_main(cfg):
    print("ran", cfg.max_steps)


@pytest.mark.parametrize("argv,status,out,err", [
    (["--max-steps", "4"], 0, "ran 4\n", ""),
    (["--max-steps", "x"], 1, "", "d: error: argument --max-steps: invalid int value: 'x' (see d --help)\n"),
    (["--max-steps", "0"], 1, "", "Demo.max_steps=0"),
], ids=["ok", "usage", "config"])
def test_cli_main_exits_0_or_1_with_one_line(argv, status, out, err, capsys, monkeypatch):
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    with pytest.raises(SystemExit) as e:
        cli_main(_demo_main, Demo, "d", "Demo.\n\nMore.", argv=argv)
    got = capsys.readouterr()
    assert e.value.code == status and got.out == out
    assert (got.err == err) if status == 0 or "usage" in err else (err in got.err and got.err.count("\n") == 1)
