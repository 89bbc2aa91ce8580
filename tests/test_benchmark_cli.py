"""Every benchmark's command line is generated from its config dataclass (algos/dataclass_cli.py).

No hand-written argparse parser in ``benchmarks/``: each ``__main__`` calls ``cli_main``, so flags, help and errors
(one line, exit status 1) are the same as ``rsim``'s. The flag spellings the docs use keep working (one case per
benchmark below). The studies' command lines are held to the same checks in studies/tests/test_study_cli.py.
"""

import ast
import runpy
import sys
from pathlib import Path

import pytest

from algos.dataclass_cli import parse_config

ROOT = Path(__file__).resolve().parents[1]


def scripts(package: str) -> list[Path]:
    """The modules of ``package`` (a folder under the repository root), less ``__init__`` files and its tests."""
    return sorted(p for p in (ROOT / package).rglob("*.py") if p.name != "__init__.py" and "tests" not in
                  p.relative_to(ROOT).parts)


BENCHMARKS = scripts("benchmarks")


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def runnable(paths: list[Path]) -> list[str]:
    """Dotted names of the modules among ``paths`` that run as ``python -m``."""
    return [_dotted(p) for p in paths if 'if __name__ == "__main__":' in p.read_text()]


RUNNABLE = runnable(BENCHMARKS)


def _main_block(tree: ast.Module) -> ast.If | None:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return node
    return None


def check_no_hand_written_parser(path: Path) -> None:
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(a.name != "argparse" for a in node.names), f"{path.name} imports argparse"
        elif isinstance(node, ast.ImportFrom):
            assert node.module != "argparse", f"{path.name} imports from argparse"
        elif isinstance(node, ast.Attribute):
            assert node.attr != "add_argument", f"{path.name} calls add_argument (line {node.lineno})"
    block = _main_block(tree)
    if block is not None:  # a runnable benchmark: its console entry is dataclass_cli.cli_main
        assert "cli_main(" in ast.unparse(block), f"{path.name}: __main__ should call algos.dataclass_cli.cli_main"


@pytest.mark.parametrize("path", BENCHMARKS, ids=_dotted)
def test_no_hand_written_parser(path):
    check_no_hand_written_parser(path)


RERUN = pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy of an imported module


def check_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", [name, "--no-such-flag"])
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    with pytest.raises(SystemExit) as e:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    err = capsys.readouterr().err
    assert e.value.code == 1, err
    assert err == (f"python -m {name}: error: unrecognized arguments: --no-such-flag "
                   f"(see python -m {name} --help)\n")


def check_help_exits_0(name, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as e:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith(f"usage: python -m {name}")
    assert "--out" in out


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys):
    check_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys)


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_help_exits_0(name, monkeypatch, capsys):
    check_help_exits_0(name, monkeypatch, capsys)


def parsed(module, cls, argv):
    """``module.cls`` parsed from ``argv`` as its command line does."""
    mod = __import__(module, fromlist=[cls])
    return parse_config(getattr(mod, cls), argv, prog=module)


@pytest.mark.parametrize("module,cls,argv,expect", [
    ("benchmarks.runtime.rollout", "BenchConfig", ["--threads", "2", "--variants", "", "--skip-rollout"],
     dict(threads=2, variants=(), skip_rollout=True)),
    ("benchmarks.runtime.rollout", "BenchConfig", ["--variants", "bf16,int8", "--tokens-per-round", "8"],
     dict(threads=0, variants=("bf16", "int8"), tokens_per_round=8)),
    ("benchmarks.runtime.train_step", "Config", ["--threads", "2", "--rows", "ours_full,trl_full", "--group-size", "2"],
     dict(threads=2, rows="ours_full,trl_full", group_size=2)),
    ("benchmarks.grading.code_sandbox", "Config", ["--no-anchor", "--timeout-s", "1.5", "--hostile-every", "4"],
     dict(anchor=False, timeout_s=1.5, hostile_every=4)),
    ("benchmarks.grading.answer_check", "BenchConfig", ["--no-math-verify", "--timeout-s", "1", "--rgym-size", "10"],
     dict(math_verify=False, timeout_s=1.0, rgym_size=10)),
    ("benchmarks.runtime.env_throughput", "Config", ["--episodes", "5", "--out", "x.json"], dict(episodes=5, out="x.json")),
    ("benchmarks.plans.atlas", "Config", ["--reasoner", "llamacpp:default", "--pilot-only", "--tasks", "chain_sum,curriculum:mul_1d",
                         "--pilot-plans", "8;3,8;4,8", "--no-extend", "--table-from", "x.outcomes.jsonl.gz"],
     dict(reasoner="llamacpp:default", pilot_only=True, tasks=("chain_sum", "curriculum:mul_1d"),
          pilot_plans=((8,), (3, 8), (4, 8)), extend=False, table_from="x.outcomes.jsonl.gz")),
    ("benchmarks.plans.tree", "Config", ["--planners", "head_only", "--tree-steps", "10", "--store", "s", "--max-rounds", "3"],
     dict(planners=("head_only",), tree_steps=10, store="s", max_rounds=3)),
], ids=["rollout-no-variants", "rollout", "train-step", "code-sandbox", "answer-check", "env-throughput", "atlas",
     "plan-tree"])
def test_documented_flags_still_parse(module, cls, argv, expect):
    cfg = parsed(module, cls, argv)
    assert {k: getattr(cfg, k) for k in expect} == expect


@pytest.mark.parametrize("module,cls,argv,says", [
    ("benchmarks.plans.atlas", "Config", ["--pilot-plans", "8;3-8"], "comma lists separated by ';'"),
], ids=["atlas-plans"])
def test_bad_values_name_the_fix(module, cls, argv, says):
    with pytest.raises(ValueError, match=says):
        parsed(module, cls, argv)
