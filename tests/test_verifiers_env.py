"""rSIM as a verifiers environment (integrations/verifiers_rsim): verifiers' own evaluation against a real
OpenAI-compatible server gives the rewards ``rsim eval`` gives on the same problems and plan.

The fast test serves scripted replies (tests/chat_server.py); the slow one serves the embedded model with
llama.cpp's server (``python -m llama_cpp.server``, greedy). Both evaluations ask the same server, so equal
rewards mean the verifiers environment plays rSIM's episode exactly: the same messages per turn, the same
``max_tokens`` and ``stop``, the same cut of a reply into a step, the same score.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

vf = pytest.importorskip("verifiers", reason="the verifiers environment is optional (pip install -e integrations/verifiers_rsim)")
pytest.importorskip("verifiers_rsim", reason="pip install -e integrations/verifiers_rsim")

PLAN, DATA, LIMIT = "fixed:6,8", "curriculum:heldout", 10
ENV_ARGS = {"data": DATA, "limit": LIMIT, "data_seed": 1000, "planner": PLAN, "max_steps": 2, "max_step_tokens": 96,
            "max_answer_tokens": 144}
"""Continuation, then termination: under this plan the embedded model's greedy episodes earn R_follow on some
held-out problems and nothing on others (measured), so the comparison is not one of zeros."""


def verifiers_rewards(url: str) -> dict[str, dict]:
    """verifiers' evaluation (``Environment.evaluate_sync``) of ``load_environment(**ENV_ARGS)``, by problem id."""
    from verifiers.types import ClientConfig
    from verifiers_rsim import OmitNullsChatClient

    os.environ.setdefault("RSIM_VERIFIERS_TEST_KEY", "unused")
    env = vf.load_environment("verifiers_rsim", **ENV_ARGS)
    client = OmitNullsChatClient(ClientConfig(client_type="openai_chat_completions", api_base_url=url,
                                              api_key_var="RSIM_VERIFIERS_TEST_KEY", max_retries=0))
    res = env.evaluate_sync(client, model="default", sampling_args={"temperature": 0.0}, num_examples=LIMIT,
                            max_concurrent=1)
    out = {}
    for o in res["outputs"]:
        assert o["error"] is None and o["is_completed"], o
        out[o["info"]["problem_id"]] = {"reward": o["reward"], **{n: o["metrics"][n] for n in ("acc", "format", "follow")}}
    return out


def rsim_eval_rewards(url: str, out: Path) -> dict[str, dict]:
    """``rsim eval`` of the served chat reasoner on the same problems and plan, by problem id."""
    from algos.evaluation import main as evaluate

    evaluate(["--reasoner", f"openai:default@{url}#endpoint=chat", "--data", DATA, "--limit", str(LIMIT),
              "--set", "data.seed=1000", "--modes", PLAN, "--set", "env.protocol=chat", "--set", "env.max_steps=2",
              "--set", "reasoner.max_step_tokens=96", "--max-answer-tokens", "144", "--out", str(out),
              "--no-plots", "--no-progress"])
    rows = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    return {r["problem_id"]: {"reward": r["rewards"]["reasoner"], **{n: r["components"][n] for n in ("acc", "format", "follow")}}
            for r in rows}


def check_equal(url: str, out: Path) -> dict[str, dict]:
    ours, theirs = rsim_eval_rewards(url, out), verifiers_rewards(url)
    assert len(ours) == LIMIT and set(theirs) == set(ours)
    assert theirs == ours
    return ours


def test_verifiers_evaluation_equals_rsim_eval_on_a_scripted_server(tmp_path):
    from tests.chat_server import ChatServer

    server = ChatServer()
    try:
        rewards = check_equal(server.url, tmp_path / "eval")
    finally:
        server.close()
    assert {r["format"] for r in rewards.values()} == {1.0}  # the scripted server boxes every final answer


def test_the_environment_refuses_a_lead_in_protocol():
    from rsim_env import EnvConfig
    from verifiers_rsim import RsimEnv

    with pytest.raises(ValueError, match="protocol='chat'"):
        RsimEnv([], env_config=EnvConfig(protocol="chat+lead"))


@pytest.mark.slow
def test_verifiers_evaluation_equals_rsim_eval_through_llama_cpp_server(tmp_path):
    from agents.llamacpp.server import LlamaServer
    from tests.test_llama_server import _real_config

    with LlamaServer(_real_config(tmp_path)) as server:
        rewards = check_equal(server.url, tmp_path / "eval")
    print({k: v["reward"] for k, v in rewards.items()})
