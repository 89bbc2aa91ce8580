"""Every study's command line is generated from its config dataclass, held to the benchmarks' checks
(tests/test_benchmark_cli.py): no hand-written parser, one-line errors with exit status 1, ``--help`` exits 0, and
the flag spellings the docs use keep working."""

import pytest

from tests.test_benchmark_cli import (RERUN, _dotted, check_bad_flag_is_one_line_and_exit_1, check_help_exits_0,
                                      check_no_hand_written_parser, parsed, runnable, scripts)

STUDIES = scripts("studies")
RUNNABLE = runnable(STUDIES)


@pytest.mark.parametrize("path", STUDIES, ids=_dotted)
def test_no_hand_written_parser(path):
    check_no_hand_written_parser(path)


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys):
    check_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys)


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_help_exits_0(name, monkeypatch, capsys):
    check_help_exits_0(name, monkeypatch, capsys)


@pytest.mark.parametrize("module,cls,argv,expect", [
    ("studies.calibrate", "Config", ["--settings", "0.7,1.0 1.0,0.9", "--modes", "none;fixed:2,8", "--tasks", "add2_1d,mul_1d",
                             "--group-size", "8"],
     dict(settings=((0.7, 1.0), (1.0, 0.9)), modes=("none", "fixed:2,8"), tasks=("add2_1d", "mul_1d"), group_size=8)),
    ("studies.interaction", "Config", ["--modes", "fixed:8;fixed:3;fixed:1,3,8;random", "--last-number-fallback",
                               "--decodings", "greedy", "--top-p", "0.9"],
     dict(modes=("fixed:8", "fixed:3", "fixed:1,3,8", "random"), last_number_fallback=True, decodings=("greedy",),
          top_p=0.9)),
    ("studies.interaction", "Config", ["--modes", "none,fixed:1,3,8,random"], dict(modes=("none", "fixed:1,3,8", "random"))),
    ("studies.continual", "Config", ["--steps-math", "2", "--math-run", "runs/m"], dict(steps_math=2, math_run="runs/m")),
    ("studies.learning_sanity", "Config", ["--steps", "3", "--target", "2,8"], dict(steps=3, target=(2, 8))),
], ids=["calibrate", "interaction-old-modes", "interaction-modes", "continual", "learning-sanity"])
def test_documented_flags_still_parse(module, cls, argv, expect):
    cfg = parsed(module, cls, argv)
    assert {k: getattr(cfg, k) for k in expect} == expect


@pytest.mark.parametrize("module,cls,argv,says", [
    ("studies.calibrate", "Config", ["--settings", "0.7"], "temperature,top_p pairs separated by spaces"),
    ("studies.interaction", "Config", ["--modes", "fixed:1-3-8"], "fixed:1,3,8"),
    ("studies.engine_study", "Config", ["--seeds", "0,x"], "comma-separated list of int"),
], ids=["settings", "plan-spelling", "seeds"])
def test_bad_values_name_the_fix(module, cls, argv, says):
    with pytest.raises(ValueError, match=says):
        parsed(module, cls, argv)
