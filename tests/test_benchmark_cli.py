"""Every benchmark's and study's command line is generated from its config dataclass (algos/dataclass_cli.py).

No hand-written argparse parser in ``benchmarks/`` or ``studies/``: each ``__main__`` calls ``cli_main``, so flags,
help and errors (one line, exit status 1) are the same as ``rsim``'s. The flag spellings the docs
use keep working (one case per benchmark below).
"""

import ast
import runpy
import sys
from pathlib import Path

import pytest

from algos.dataclass_cli import parse_config

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted(p for pkg in ("benchmarks", "studies") for p in (ROOT / pkg).rglob("*.py") if p.name != "__init__.py")


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


RUNNABLE = [_dotted(p) for p in BENCHMARKS if 'if __name__ == "__main__":' in p.read_text()]


def _main_block(tree: ast.Module) -> ast.If | None:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return node
    return None


@pytest.mark.parametrize("path", BENCHMARKS, ids=_dotted)
def test_no_hand_written_parser(path):
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


RERUN = pytest.mark.filterwarnings("ignore:.*found in sys.modules:RuntimeWarning")  # runpy of an imported module


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_bad_flag_is_one_line_and_exit_1(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [name, "--no-such-flag"])
    monkeypatch.delenv("RSIM_DEBUG", raising=False)
    with pytest.raises(SystemExit) as e:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    err = capsys.readouterr().err
    assert e.value.code == 1, err
    assert err == (f"python -m {name}: error: unrecognized arguments: --no-such-flag "
                   f"(see python -m {name} --help)\n")


@RERUN
@pytest.mark.parametrize("name", RUNNABLE)
def test_help_exits_0(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as e:
        runpy.run_module(name, run_name="__main__", alter_sys=True)
    out = capsys.readouterr().out
    assert e.value.code == 0 and out.startswith(f"usage: python -m {name}")
    assert "--out" in out


def _cfg(module, cls, argv):
    mod = __import__(module, fromlist=[cls])
    return parse_config(getattr(mod, cls), argv, prog=module)


@pytest.mark.parametrize("module,cls,argv,expect", [
    ("studies.calibrate", "Config", ["--settings", "0.7,1.0 1.0,0.9", "--modes", "none;fixed:2,8", "--tasks", "add2_1d,mul_1d",
                             "--group-size", "8"],
     dict(settings=((0.7, 1.0), (1.0, 0.9)), modes=("none", "fixed:2,8"), tasks=("add2_1d", "mul_1d"), group_size=8)),
    ("studies.interaction", "Config", ["--modes", "fixed:8;fixed:3;fixed:1,3,8;random", "--last-number-fallback",
                               "--decodings", "greedy", "--top-p", "0.9"],
     dict(modes=("fixed:8", "fixed:3", "fixed:1,3,8", "random"), last_number_fallback=True, decodings=("greedy",),
          top_p=0.9)),
    ("studies.interaction", "Config", ["--modes", "none,fixed:1,3,8,random"], dict(modes=("none", "fixed:1,3,8", "random"))),
    ("studies.efficacy", "Config", ["--steps", "12", "--batch", "64", "--random-seeds", "1", "--output-dir", "runs/e",
                            "--set", "reasoner.sample_dtype=bfloat16", "--set", "train.grpo.tis_cap=2",
                            "--baselines-from", "runs/v2", "--seeds", "0,1", "--fixed", "1,3,8"],
     dict(steps=12, batch=64, random_seeds=1, output_dir="runs/e", baselines_from="runs/v2", seeds=(0, 1),
          train_set=("reasoner.sample_dtype=bfloat16", "train.grpo.tis_cap=2"), fixed=((1, 3, 8),))),
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
    ("studies.continual", "Config", ["--steps-math", "2", "--math-run", "runs/m"], dict(steps_math=2, math_run="runs/m")),
    ("benchmarks.runtime.env_throughput", "Config", ["--episodes", "5", "--out", "x.json"], dict(episodes=5, out="x.json")),
    ("studies.learning_sanity", "Config", ["--steps", "3", "--target", "2,8"], dict(steps=3, target=(2, 8))),
    ("studies.paper", "PaperConfig", ["--rsim", "runs/demo", "--limit", "5"], dict(rsim="runs/demo", limit=5)),
    ("benchmarks.plans.atlas", "Config", ["--reasoner", "llamacpp:default", "--pilot-only", "--tasks", "chain_sum,curriculum:mul_1d",
                         "--pilot-plans", "8;3,8;4,8", "--no-extend", "--table-from", "x.outcomes.jsonl.gz"],
     dict(reasoner="llamacpp:default", pilot_only=True, tasks=("chain_sum", "curriculum:mul_1d"),
          pilot_plans=((8,), (3, 8), (4, 8)), extend=False, table_from="x.outcomes.jsonl.gz")),
    ("benchmarks.plans.tree", "Config", ["--planners", "head_only", "--tree-steps", "10", "--store", "s", "--max-rounds", "3"],
     dict(planners=("head_only",), tree_steps=10, store="s", max_rounds=3)),
], ids=["calibrate", "interaction-old-modes", "interaction-modes", "efficacy", "rollout-no-variants", "rollout",
        "train-step", "code-sandbox", "answer-check", "continual", "env-throughput", "learning-sanity", "paper",
        "atlas", "plan-tree"])
def test_documented_flags_still_parse(module, cls, argv, expect):
    cfg = _cfg(module, cls, argv)
    assert {k: getattr(cfg, k) for k in expect} == expect


@pytest.mark.parametrize("module,cls,argv,says", [
    ("studies.calibrate", "Config", ["--settings", "0.7"], "temperature,top_p pairs separated by spaces"),
    ("studies.interaction", "Config", ["--modes", "fixed:1-3-8"], "fixed:1,3,8"),
    ("studies.efficacy", "Config", ["--set", "train.steps"], "not KEY=VALUE"),
    ("studies.efficacy", "Config", ["--seeds", "0,x"], "comma-separated list of int"),
    ("benchmarks.plans.atlas", "Config", ["--pilot-plans", "8;3-8"], "comma lists separated by ';'"),
], ids=["settings", "plan-spelling", "set", "seeds", "atlas-plans"])
def test_bad_values_name_the_fix(module, cls, argv, says):
    with pytest.raises(ValueError, match=says):
        _cfg(module, cls, argv)
