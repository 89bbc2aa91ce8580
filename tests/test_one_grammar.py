"""``rsim train`` and ``rsim eval`` speak one grammar: flags from one generator (algos/dataclass_cli.py), the
same flag for the data and the agents, and every ``--set`` key both accept addresses the same field."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from algos import cli
from algos.config import RunConfig
from algos.dataclass_cli import set_keys
from algos.evaluation import EvalConfig, parse as parse_eval
from algos.evaluation.config import TRAIN_ONLY

ROOT = Path(__file__).resolve().parent.parent


def _eval_keys() -> dict:
    return {k: v for k, v in set_keys(EvalConfig).items()
            if not any(k == t or k.startswith(t + ".") for t in TRAIN_ONLY)}


def _shared_keys() -> list[str]:
    return sorted(set(set_keys(RunConfig)) & set(_eval_keys()))


def _text(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return json.dumps(value)
    return "none" if value is None else str(value)


def _at(cfg, key: str):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def test_every_eval_key_is_a_train_key_of_the_same_field():
    train, evals = set_keys(RunConfig), _eval_keys()
    assert set(evals) <= set(train), sorted(set(evals) - set(train))
    for key in evals:
        assert evals[key] == train[key], key  # same owning dataclass, field name and type
    shared = _shared_keys()
    assert {"env.max_steps", "reasoner.max_step_tokens", "data.source", "model.reasoner", "model.frozen",
            "env.check.timeout_s"} <= set(shared)


@pytest.mark.parametrize("key", _shared_keys())
def test_a_shared_key_sets_the_same_value_in_both_commands(key):
    value = _text(_at(RunConfig(), key))
    _, train, _ = cli.parse(["train", "--set", f"{key}={value}"])
    evaluated = parse_eval(["--set", f"{key}={value}"])
    assert _at(train, key) == _at(evaluated, key)


def test_flags_name_the_same_fields_in_both_commands():
    shared = set(RunConfig.FLAGS) & set(EvalConfig.FLAGS)
    assert shared >= {"data", "planner", "reasoner"}
    assert all(RunConfig.FLAGS[f] == EvalConfig.FLAGS[f] for f in shared)
    _, train, _ = cli.parse(["train", "--data", "tiny", "--reasoner", "toy"])
    evaluated = parse_eval(["--data", "tiny", "--reasoner", "toy"])
    assert (train.data.source, train.model.reasoner) == (evaluated.data.source, evaluated.model.reasoner) == ("tiny", "toy")


def _help(parse, argv) -> str:
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        parse(argv)
    return " ".join(shown.getvalue().split())


def test_both_helps_come_from_the_generator():
    train, evaluated = _help(cli.parse, ["train", "--help"]), _help(parse_eval, ["--help"])
    for text in (train, evaluated):
        assert "--set KEY=VALUE" in text and "--data DATA" in text and "(= --set data.source=...)" in text
        assert "--source" not in text and "--max-step-tokens" not in text


def test_cli_adds_no_flag_for_a_config_field():
    """algos/cli.py's own add_argument calls are for what is not config (preset, print-config, debug, ...)."""
    fields = {f.name for f in dataclasses.fields(RunConfig)} | set(RunConfig.FLAGS)
    tree = ast.parse((ROOT / "algos" / "cli.py").read_text())
    flags = [a.value for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "add_argument" for a in n.args if isinstance(a, ast.Constant)]
    assert flags and not [f for f in flags if f.lstrip("-").replace("-", "_") in fields], flags


def test_the_planner_preset_is_the_readme_recipe():
    _, preset, _ = cli.parse(["train", "--preset", "planner"])
    _, recipe, _ = cli.parse(
        "train --preset study --learner planner_only --reasoner replay:default --set reasoner.greedy=true "
        "--set planner.head_only=true --set model.planner_lora.enabled=false --set model.reasoner_lora.enabled=false "
        "--set env.max_steps=2 --set data.size=80 --steps 125 --out runs/planner".split())
    assert preset == recipe


IMPORT_CHECK = """
import os, sys

class Trap(list):
    def _trap(self, *a):
        raise AssertionError("importing algos.cli read sys.argv")
    __iter__ = __getitem__ = __len__ = __contains__ = _trap

before = dict(os.environ)
sys.argv = Trap(["rsim", "train", "--reasoner", "llamacpp:default"])
import algos.cli
sys.argv = ["rsim"]
assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())
assert "torch" not in sys.modules, "importing algos.cli loaded torch (main() must set the wait policy first)"
print("ok")
"""


def test_importing_the_cli_reads_no_argv_and_changes_no_environment():
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", IMPORT_CHECK], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
