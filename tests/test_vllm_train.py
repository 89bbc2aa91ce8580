"""The vLLM training route: a LoRA reasoner that rolls out through a served completions endpoint (token-id
prompts, sampled ids and log-probs back) and learns in torch, against a fake vLLM server on 127.0.0.1
(:mod:`tests.vllm_fake`: a real tiny model, runtime LoRA adapters, vLLM's request rules)."""

from __future__ import annotations

import json
import pytest
import torch

from agents.hf.lora import LoraSpec
from agents.served.reasoner import APIError, OpenAIConfig
from agents.reasoner import Reasoner, ReasonerConfig
from agents.scripted.policies import FixedPlanner
from algos.rollout import rollout
from rsim_env import EnvGroup
from rsim_env.problem import Problem
from tests.vllm_fake import ModelVLLM

CAPS = dict(max_step_tokens=24, max_answer_tokens=40)


def _problems():
    return [Problem(id=f"p{i}", question=f"What is {i} + {2 * i}?", answer=str(3 * i)) for i in range(1, 3)]


@pytest.fixture
def text_server(request):
    from tests.tiny_server import text_model

    model, tok = text_model()
    s = ModelVLLM(model, tok, logprobs_mode=getattr(request, "param", "raw"))
    yield s, tok
    s.close()


def _roller(url: str, tok, config: ReasonerConfig, **kw):
    """A served reasoner on the training route (token-id prompts, sampled ids and log-probs read back)."""
    from agents.served.decoder import CompletionsDecoder
    from agents.decoding.turns import Turns
    from agents.served.reasoner import OpenAIClient
    from agents.reasoner import Reasoner

    turns = Turns(tok, config)
    client = OpenAIClient(OpenAIConfig(base_url=url, model="tiny", max_retries=0, **kw))
    return Reasoner(config=config, decoder=CompletionsDecoder(client, turns, train=True), turns=turns)


def _episode(agent, proto: str):
    kw = {"planner": False} if proto == "none" else {"protocol": proto}
    planner = None if proto == "none" else FixedPlanner([1, 3, 0, 8])
    return rollout(EnvGroup(_problems(), 2, max_steps=4, **kw), agent, planner, seed=0)


@pytest.mark.parametrize("text_server", ["raw", "processed"], indirect=True)
@pytest.mark.parametrize("proto", ["chat+lead", "chat", "none"])
def test_served_records_equal_the_local_reasoners(text_server, proto):
    """Same weights, greedy: the served roller's records (ids, mask, spans) are the torch reasoner's, and its
    log-probs are the server's (processed: exactly torch's; raw: before the special-token ban, so no larger)."""
    from tests.tiny_server import stop_kinds, text_model

    server, tok = text_server
    config = ReasonerConfig(greedy=True, **CAPS)
    local = Reasoner(text_model()[0], tok, config)
    want = _episode(local, proto)
    roller = _roller(server.url, tok, config)
    got = _episode(roller, proto)
    assert json.dumps([t["info"] for t in got.trajectories]) == json.dumps([t["info"] for t in want.trajectories])
    mine, theirs = roller.records(), local.records()
    assert len(stop_kinds(theirs, tok, (24, 40))) >= 2  # steps ended in several ways
    for a, b in zip(mine, theirs):
        assert (a.input_ids, a.gen_mask, a.step_spans, a.prompt_len) == (b.input_ids, b.gen_mask, b.step_spans, b.prompt_len)
        assert (a.temperature, a.suppressed_ids, a.pad_id) == (b.temperature, b.suppressed_ids, b.pad_id)
        diff = [x - y for x, y, m in zip(a.logprobs, b.logprobs, a.gen_mask) if m]
        if server.mode == "processed":
            assert max(map(abs, diff)) < 1e-4
        else:
            assert max(diff) < 1e-5 and min(diff) > -0.5
    assert roller.token_usage(mine[0]) == local.token_usage(theirs[0])
    sent = [b for p, b in server.log if p == "/v1/completions"]
    assert all(isinstance(b["prompt"], list) and b["logprobs"] == 1 and b["return_tokens_as_token_ids"] for b in sent)
    assert all(b["temperature"] == 0.0 and set(map(int, b["logit_bias"])) == set(roller.suppressed_ids) for b in sent)


def _trainable(url: str, spec_tail: str = "", **config):
    from agents.registry import AgentContext, build_agent

    ctx = AgentContext("reasoner", config=ReasonerConfig(**{**CAPS, "max_step_tokens": 8, **config}),
                       lora=LoraSpec(enabled=True, rank=4, alpha=8.0))
    return build_agent(f"openai:tiny@{url}#max_retries=0{spec_tail}", ctx)


@pytest.fixture
def tiny_server():
    from agents.hf.loading import tiny_model

    model, tok = tiny_model("causal", seed=0)  # the learner's base ("tiny", seed 0): the same weights
    s = ModelVLLM(model, tok, logprobs_mode="processed")  # after the special-token ban: torch's convention exactly
    yield s
    s.close()


def test_adapter_is_loaded_by_a_new_name_after_each_update_and_requests_name_it(tiny_server):
    built = _trainable(tiny_server.url, greedy=True)
    agent = built.agent
    assert built.info["lora"] and built.info["learner"] == "tiny" and agent.lora is not None
    first = _episode(agent, "chat+lead")
    name0 = agent.adapters.name
    assert name0 and name0.endswith("-step-0") and list(tiny_server.loaded) == [name0]
    _episode(agent, "chat+lead")
    assert agent.adapters.name == name0  # unchanged weights: nothing re-sent
    recs = [t["reasoner"] for t in first.trajectories]
    logp = agent.score(recs).logp.detach()
    diffs = [abs(float(logp[r, i]) - rec.logprobs[i]) for r, rec in enumerate(recs) for i, m in enumerate(rec.gen_mask)
             if m and i]
    assert len(diffs) > 10 and max(diffs) < 1e-3  # the server's log-probs, rescored by the learner in torch
    optimizer = torch.optim.SGD(agent.module.parameters(), lr=1.0)
    (-agent.score(recs).logp.sum()).backward()
    optimizer.step()
    n = len(tiny_server.log)
    second = _episode(agent, "chat+lead")
    name1 = agent.adapters.name
    assert name1.endswith("-step-1") and list(tiny_server.loaded) == [name1]
    admin = [(p, b["lora_name"]) for p, b in tiny_server.log[n:] if "lora_adapter" in p]
    assert admin == [("/v1/load_lora_adapter", name1), ("/v1/unload_lora_adapter", name0)]
    assert all(b["model"] == name1 for p, b in tiny_server.log[n:] if p == "/v1/completions")
    recs = [t["reasoner"] for t in second.trajectories]
    logp = agent.score(recs).logp.detach()  # step t+1's rollouts come from step t's weights
    diffs = [abs(float(logp[r, i]) - rec.logprobs[i]) for r, rec in enumerate(recs) for i, m in enumerate(rec.gen_mask)
             if m and i]
    assert max(diffs) < 1e-3


def test_two_training_steps_through_the_served_route(tiny_server, tmp_path, monkeypatch):
    """``rsim train`` (the CLI entry) with the reasoner on the served route: two GRPO steps, TIS on."""
    from algos.cli import main as cli
    from rsim_env import rewards

    # A random tiny reasoner earns no reward under the env's rules, so no group would update (as in test_lora):
    # this test is about the route, so R_format pays the final step's length parity.
    monkeypatch.setattr(rewards, "r_format", lambda final: float(len(final) % 2))

    out = cli(["train", "--preset", "tiny", "--learner", "grpo", "--set", "model.reasoner=openai:tiny@" + tiny_server.url
               + "#max_retries=0", "--set", "model.reasoner_lora.enabled=true", "--set", "reasoner.max_step_tokens=8",
               "--set", "reasoner.max_answer_tokens=12", "--set", "train.grpo.tis_cap=2", "--set",
               "train.reasoner_optim.lr=0.05", "--out", str(tmp_path / "run"), "--steps", "2"])
    assert out["steps"] == 2 and set(out["params"]) == {"reasoner"}
    names = [b["lora_name"] for p, b in tiny_server.log if p == "/v1/load_lora_adapter"]
    assert len(names) == 2 and names[0].endswith("-step-0") and names[1].endswith("-step-1")
    models = [b["model"] for p, b in tiny_server.log if p == "/v1/completions"]
    assert models and set(models) == set(names) and models.index(names[1]) > models.index(names[0])
    b = dict(out["params"]["reasoner"].named_parameters())
    assert any("lora_B" in k and float(v.detach().abs().sum()) > 0 for k, v in b.items())  # the adapter moved
    from agents.registry import AgentContext, build_agent  # rsim eval --reasoner RUN_DIR: same route, trained adapter

    loaded = build_agent(str(tmp_path / "run"), AgentContext("reasoner", config=ReasonerConfig(greedy=True))).agent
    assert type(loaded.decoder).__name__ == "CompletionsDecoder" and loaded.decoder.train and loaded.scorer is not None
    got = dict(loaded.module.named_parameters())
    assert all(torch.equal(got[k].detach(), v.detach()) for k, v in b.items())
    _episode(loaded, "chat+lead")
    assert tiny_server.log[-1][1]["model"] == loaded.adapters.name != names[1]


def test_refusals_name_the_fix(tmp_path):
    from agents.hf.loading import tiny_model
    from agents.served.train import base_spec

    model, tok = tiny_model("causal", seed=0)
    s = ModelVLLM(model, tok, ignore_token_ids=True)  # a server that does not know return_tokens_as_token_ids
    try:
        with pytest.raises(APIError, match="return_tokens_as_token_ids.*which this server does not send"):
            _episode(_trainable(s.url, greedy=True).agent, "chat+lead")
        with pytest.raises(ValueError, match="#endpoint=chat cannot train"):
            _trainable(s.url, "&endpoint=chat", greedy=True)
        with pytest.raises(ValueError, match="--logprobs-mode processed_logprobs"):
            _trainable(s.url, temperature=0.7)
        _trainable(s.url, "&logprobs_mode=processed", temperature=0.7)  # the server says it sends processed ones
        with pytest.raises(ValueError, match="top_p"):
            _trainable(s.url, "&logprobs_mode=processed", temperature=0.7, top_p=0.9)
    finally:
        s.close()
    with pytest.raises(ValueError, match="#hf=HUB_ID_OR_DIR"):
        base_spec("served-name", "", "")
    with pytest.raises(ValueError, match="differs from the learner's base"):
        base_spec("tiny", "", "Qwen/Qwen2.5-0.5B-Instruct")
    assert base_spec("served-name", "tiny", "") == "tiny"
    from tests.chat_server import ChatServer

    chat = ChatServer()  # chat-only: /v1/completions answers 404
    try:
        with pytest.raises(APIError, match="runtime LoRA API"):  # the adapter sync comes first
            _episode(_trainable(chat.url, greedy=True).agent, "chat+lead")
        with pytest.raises(APIError, match="chat-only server"):
            _episode(_roller(chat.url, tok, ReasonerConfig(greedy=True, **CAPS)), "chat+lead")
    finally:
        chat.close()


def test_a_served_tokenizer_mismatch_is_named():
    from agents.hf.loading import tiny_model
    from agents.served.completions import TokenizerMismatch

    model, tok = tiny_model("causal", seed=0)
    s = ModelVLLM(model, tok)
    try:
        agent = _trainable(s.url, greedy=True).agent
        s.tok = _ShiftedTokenizer(tok)  # the server decodes its ids with another vocabulary
        with pytest.raises(TokenizerMismatch, match="#hf=HUB_ID_OR_DIR"):
            _episode(agent, "chat+lead")
    finally:
        s.close()


class _ShiftedTokenizer:
    """Wraps a tokenizer: decodes every id as the next one (another vocabulary)."""

    def __init__(self, tok):
        self._tok = tok

    def __getattr__(self, name):
        return getattr(self._tok, name)

    def __call__(self, *a, **k):
        return self._tok(*a, **k)

    def decode(self, ids, **kw):
        return self._tok.decode([(i + 1) % 256 for i in ids], **kw)
