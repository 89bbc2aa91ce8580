"""rSIM's verifiers v1 environment evaluated by verifiers itself against llama.cpp's server (slow: the embedded model).

verifiers' eval runner (``vf-eval``'s :func:`verifiers.v1.cli.eval.runner.run_eval`) loads the env by its taskset id
through verifiers' loader and plays every episode for real: each role's agent is verifiers' ``null`` chat harness
launched as a local subprocess (no sandbox), talking to llama.cpp's OpenAI-compatible server on loopback through
verifiers' interception server, greedy. ``rsim eval`` plays the same problems through the same server with its
served chat reasoner. Both roles are exercised:

* ``plan=fixed:6,8``: rSIM's fixed planner inside the env, the model writes every step (the reasoner role);
* ``plan=model``: the model also names each strategy (the planner role); each valid episode is compared with
  ``rsim eval --modes fixed:<the strategies it named>``. (With ``terminate_last_round`` the greedy 135M model
  repeats its first answer where only termination is allowed, so every episode would end invalid: measured.)

Every per-problem reward and component must be equal. The harness's chat program is a PEP 723 script that
verifiers prepares with ``uv`` (the venv's own) on first use: its packages come from PyPI once, then from uv's cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the verifiers environment is optional (make install builds it)")
pytest.importorskip("verifiers_rsim", reason="pip install -e integrations/verifiers_rsim")

DATA, LIMIT, MAX_STEPS = "curriculum:heldout", 3, 2  # 3 problems: each of both roles compared, in under a minute
COMPONENTS = ("acc", "format", "follow", "terminal", "penalty")
KEY = "RSIM_VERIFIERS_TEST_KEY"


def verifiers_eval(url: str, plan: str, out: Path) -> dict[str, dict]:
    """verifiers' eval of the env on llama.cpp's server: ``{problem_id: {role: trace}}``."""
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    os.environ.setdefault(KEY, "unused")  # llama.cpp's server takes any key; verifiers reads one from the environment
    config = EvalConfig.model_validate({
        "env": {"taskset": {"id": "verifiers-rsim", "data": DATA, "limit": LIMIT, "data_seed": 1000}, "plan": plan,
                "max_steps": MAX_STEPS},
        "model": "default", "client": {"type": "eval", "base_url": url, "api_key_var": KEY},
        # One episode at a time: llama-cpp-python's server cuts a streaming reply short when another request arrives
        # (its interrupt_requests setting, on by default), and verifiers' chat program streams every turn.
        "sampling": {"temperature": 0.0}, "max_concurrent": 1, "push": False, "rich": None, "output_dir": str(out)})
    episodes = asyncio.run(run_eval(config))
    assert len(episodes) == LIMIT
    out = {}
    for e in episodes:
        assert e.ok, [err.message for err in e.errors]
        out[e.task.data.problem_id] = {t.agent.name: t for t in e.traces}
    return out


def rsim_eval(url: str, plans: list[str], out: Path) -> dict[tuple[str, str], dict]:
    """``rsim eval`` of the served chat reasoner on the same problems under each plan: ``{(plan, problem_id): row}``."""
    from algos.evaluation import main as evaluate

    evaluate(["--reasoner", f"openai:default@{url}#endpoint=chat", "--data", DATA, "--limit", str(LIMIT),
              "--set", "data.seed=1000", "--modes", ",".join(plans), "--set", "env.protocol=chat",
              "--set", f"env.max_steps={MAX_STEPS}", "--set", "reasoner.max_step_tokens=96", "--out", str(out),
              "--no-plots", "--no-progress"])
    rows = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    return {(r["mode"], r["problem_id"]): r for r in rows}


def named_plan(planner_trace) -> str:
    """The ``fixed:`` plan a planner role's replies named."""
    from verifiers_rsim.planner_turns import parse_strategy

    replies = [vf.types.content_text(m.content) for m in planner_trace.messages if m.role == "assistant"]
    return "fixed:" + ",".join(str(parse_strategy(r, range(9))[0]) for r in replies)


def check(trace, row, role: str) -> None:
    assert {k: r.score for k, r in trace.rewards.items()} == {role: row["rewards"][role]}, row["problem_id"]
    assert {n: trace.metrics[n] for n in COMPONENTS} == {n: row["components"][n] for n in COMPONENTS}, row["problem_id"]
    assert trace.metrics["reasoner_reward"] == row["rewards"]["reasoner"]
    assert trace.metrics["planner_reward"] == row["rewards"]["planner"]


@pytest.mark.slow
def test_verifiers_eval_equals_rsim_eval_through_llama_cpp_server(tmp_path, monkeypatch):
    from agents.llamacpp.server import LlamaServer
    from tests.test_llama_server import _real_config

    # verifiers looks for uv on PATH to prepare its chat program: the venv's own (a dependency of verifiers-rsim)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")

    with LlamaServer(_real_config(tmp_path)) as server:
        fixed = verifiers_eval(server.url, "fixed:6,8", tmp_path / "vf-fixed")
        model = verifiers_eval(server.url, "model", tmp_path / "vf-model")
        valid = {pid: named_plan(t["planner"]) for pid, t in model.items() if t["planner"].metrics["invalid_plan"] == 0}
        reference = rsim_eval(server.url, sorted({"fixed:6,8", *valid.values()}), tmp_path / "rsim")

    for pid, traces in fixed.items():
        assert set(traces) == {"reasoner"}
        check(traces["reasoner"], reference[("fixed:6,8", pid)], "reasoner")
    assert valid, "the model planner named no legal strategy on any problem: nothing to compare"
    for pid, plan in valid.items():
        check(model[pid]["planner"], reference[(plan, pid)], "planner")
        check(model[pid]["reasoner"], reference[(plan, pid)], "reasoner")
    for pid in set(model) - set(valid):
        assert {k: r.score for k, r in model[pid]["planner"].rewards.items()} == {"planner": 0.0}
    rewritten = sum(t["reasoner"].metrics["rewritten_steps"] for t in [*fixed.values(), *model.values()] if "reasoner" in t)
    print("replies rewritten to rSIM's step:", rewritten)
    print({"fixed:6,8": {pid: t["reasoner"].rewards["reasoner"].score for pid, t in fixed.items()},
           "model": {pid: (valid.get(pid, "invalid"), t["planner"].rewards["planner"].score) for pid, t in model.items()}})
