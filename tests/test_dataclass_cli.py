"""Flags generated from a config dataclass (``rsim eval`` and the benchmarks use this)."""

from dataclasses import dataclass, field

import pytest

from algos.dataclass_cli import field_docs, parse_config


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

    def __post_init__(self) -> None:
        if self.max_steps < 1:
            raise ValueError(f"Demo.max_steps={self.max_steps} must be >= 1.")


def test_docs_defaults_and_types():
    assert field_docs(Demo) == {"max_steps": "Rounds.", "name": "A name.", "plots": "Write plots.",
                                "fast": "Go fast.", "pairs": "Pairs."}
    assert parse_config(Demo, [], prog="demo") == Demo()
    got = parse_config(Demo, ["--max-steps", "5", "--no-plots", "--fast", "--pairs", "3,4", "--pairs", "5,6"], prog="d")
    assert got == Demo(max_steps=5, plots=False, fast=True, pairs=((3, 4), (5, 6)))
    assert parse_config(Demo, ["--max_steps", "2"], prog="d").max_steps == 2  # older scripts' spelling


def test_config_errors_exit_with_usage(capsys):
    with pytest.raises(SystemExit):
        parse_config(Demo, ["--max-steps", "0"], prog="d")
    assert "Demo.max_steps=0" in capsys.readouterr().err
