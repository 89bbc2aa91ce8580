"""The OpenAI-compatible reasoner against a real local chat-completions server (never the internet)."""

import json

import pytest

from agents.served.decoder import ServedDecoder
from agents.served.reasoner import APIError, OpenAIConfig, OpenAIReasoner, parse_spec
from agents.scripted.policies import FixedPlanner
from algos.rollout import rollout
from rsim_env import EnvGroup
from rsim_env.problem import Problem
from rsim_env.render import CHAT_API_PROTOCOL, INSTRUCTIONS, NO_PLANNER_SYSTEM, PROTOCOLS, reasoner_messages
from tests.chat_server import ChatServer, llama_cpp_validation_500

PROBLEMS = [Problem(id=f"p{i}", question=f"What is {i} + {2 * i}?", answer=str(3 * i)) for i in range(1, 3)]


@pytest.fixture
def server():
    s = ChatServer()
    yield s
    s.close()


def make(server, copies=8, **kw):
    """A served reasoner ready for ``copies`` conversations (a Policy acts after ``reset``)."""
    kw.setdefault("backoff_s", 0.01)
    r = OpenAIReasoner(OpenAIConfig(base_url=server.url, model="test-model", **kw))
    r.reset(copies)
    return r


def test_messages_put_each_strategy_in_its_own_user_turn():
    msgs = reasoner_messages("What is 1 + 2?", ["Split it.", "Check it."], [1, 3], 8)
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert msgs[0]["content"] == PROTOCOLS[CHAT_API_PROTOCOL].system()
    assert msgs[1]["content"] == "What is 1 + 2?\n\n" + INSTRUCTIONS[1] and msgs[2]["content"] == "Split it."
    assert msgs[3]["content"] == INSTRUCTIONS[3] and msgs[-1]["content"] == INSTRUCTIONS[8]
    assert reasoner_messages("Q", [], [], None)[0]["content"] == NO_PLANNER_SYSTEM


def test_rollout_with_env_groups(server):
    r = make(server, price_prompt_per_1m=2.0, price_completion_per_1m=8.0)
    groups = EnvGroup(PROBLEMS, group_size=3, max_steps=4, protocol="chat")
    out = rollout(groups, r, FixedPlanner([3, 8]), seed=0)
    assert len(out.trajectories) == 6 and all(t["info"]["correct"] for t in out.trajectories)
    first = out.trajectories[0]["info"]
    assert first["steps"][0] == "Let me check the numbers: substitute them back."  # stop cut the 2nd paragraph
    assert first["detected"][0] == [3]
    # the step shows validation's keywords but holds no number: an announcement, which follows nothing
    assert first["vacuous"] == [True, False] and first["components"]["follow"] == 0.0
    # the second request of a copy carries the first step as an assistant turn, then the new instruction
    second = [q for q in server.requests if len(q["messages"]) == 4][0]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert second["stop"] == ["\n\n"] and second["max_tokens"] == 256 and second["model"] == "test-model"
    u = r.usage()
    assert u["requests"] == 12 and u["retries"] == 0
    assert u["prompt_tokens"] == sum(rec.usage["prompt_tokens"] for rec in r.records()) > 0
    assert u["cost"] == pytest.approx((u["prompt_tokens"] * 2 + u["completion_tokens"] * 8) / 1e6)
    assert all(rec.usage["requests"] == 2 for rec in r.records())


def test_no_planner_mode_is_one_whole_answer(server):
    r = make(server, max_answer_tokens=300)
    out = rollout(EnvGroup(PROBLEMS[:1], group_size=2, planner=False), r, None, seed=0)
    assert all(t["info"]["correct"] for t in out.trajectories)
    assert all(q["max_tokens"] == 300 and "stop" not in q for q in server.requests)


BUSY_503 = (503, {"error": {"message": "Service Unavailable: the model is still loading", "type": "server_error"}})
OOM_500 = (500, {"error": {"message": "CUDA out of memory", "type": "internal_server_error"}})  # llama_cpp's type


@pytest.mark.parametrize("faults", [[429], [500, 503], [BUSY_503, BUSY_503], [OOM_500], ["hang"], ["empty"]],
                         ids=["429", "500_503", "503_loading", "500_internal", "timeout", "empty_body"])
def test_transient_errors_are_retried(server, faults):
    """Each fault costs exactly one retry. The client's timeout only has to end the hung request (which never
    answers), so it is long enough for any other request on a loaded machine: a short one made a slow ordinary
    reply count as one more retry."""
    server.faults = list(faults)
    r = make(server, timeout_s=2.0 if faults == ["hang"] else 60.0)
    text = r.act([0], [_obs()])[0]
    assert text.startswith("Let me check")
    assert r.usage()["retries"] == len(faults) and r.usage()["requests"] == len(faults) + 1


def test_retries_run_out_with_a_clear_error(server):
    server.faults = [500, 500, 500]
    with pytest.raises(APIError, match="gave up after 3 attempts.*HTTP 500"):
        make(server, max_retries=2).act([0], [_obs()])


def test_client_errors_are_not_retried(server, monkeypatch):
    monkeypatch.setenv("RSIM_TEST_KEY", "sk-test")
    server.faults = [401]
    with pytest.raises(APIError, match=r"HTTP 401 \(check the key in \$RSIM_TEST_KEY\)"):
        make(server, api_key_env="RSIM_TEST_KEY").act([0], [_obs()])
    assert len(server.requests) == 1 and server.headers[0]["Authorization"] == "Bearer sk-test"
    server.faults = ["garbage"]
    with pytest.raises(APIError, match="not JSON"):
        make(server).act([0], [_obs()])
    bad = OpenAIReasoner(OpenAIConfig(base_url=server.url.replace("/v1", "/v2"), model="m"))
    bad.reset(1)
    with pytest.raises(APIError, match="HTTP 404.*base_url"):
        bad.act([0], [_obs()])


REFUSALS = {
    # llama_cpp.server: a request failing its schema is an HTTP 500 naming the validation error
    "500_validation": (500, llama_cpp_validation_500(["not", "text"])),
    "422_fastapi": (422, {"detail": [{"loc": ["body", "seed"], "msg": "Input should be a valid integer"}]}),
    "400_openai": (400, {"error": {"message": "'stop' is not supported", "type": "invalid_request_error"}}),
}


@pytest.mark.parametrize("status, body", list(REFUSALS.values()), ids=list(REFUSALS))
def test_a_refused_request_form_stops_at_once_in_one_line(server, status, body):
    """A request the server refuses as malformed fails the same way every time: no retry, one line that says so."""
    server.faults = [(status, body)] * 3
    r = make(server, max_retries=2)
    with pytest.raises(APIError, match=rf"refused this request's form \(HTTP {status}, not retried") as info:
        r.act([0], [_obs()])
    line = str(info.value)
    assert "\n" not in line and "change or drop the reasoner-spec option" in line and "overloaded" not in line
    assert ("valid string" in line) == (status == 500)  # the server's own message is carried
    assert len(server.requests) == 1 and r.usage()["retries"] == 0


IDS, TEXT, LOAD = {"prompt": [1, 2, 3]}, {"prompt": "Q"}, {"lora_name": "a", "lora_path": "/x"}
CLASSIFIED = {  # (status, body, request, token_ids) -> a fragment of the line, or None: the usual handling
    "ids_spec": (500, llama_cpp_validation_500([1, 2, 3]), IDS, 1, "drop #token_ids=1"),
    "ids_training": (500, llama_cpp_validation_500([1, 2, 3]), IDS, 0, "training a served reasoner needs"),
    "text_422": (422, {"detail": [{"loc": ["body", "n"], "msg": "bad n"}]}, TEXT, 0, "body.n: bad n; its message"),
    "oom_500": (*OOM_500, IDS, 1, None),
    "busy_503": (*BUSY_503, TEXT, 0, None),
    "lora_load_400": (400, {"message": "already loaded"}, LOAD, 0, None),  # agents.served.lora reads the 4xx itself
}


@pytest.mark.parametrize("status, body, request_, token_ids, fragment", list(CLASSIFIED.values()), ids=list(CLASSIFIED))
def test_which_errors_refuse_the_request_form(status, body, request_, token_ids, fragment):
    from agents.served.completions import refused_form

    line = refused_form(status, json.dumps(body), json.dumps(request_).encode(), token_ids)
    assert line is None if fragment is None else fragment in line, line


def test_no_key_no_auth_header(server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    make(server).act([0], [_obs()])
    assert "Authorization" not in server.headers[0]


def test_concurrency_limit(server):
    server.delay_s, server.gather = 0.15, 2  # the first request waits for a second one: the overlap is certain
    r = make(server, max_concurrency=2)
    r.reset(6)
    r.act(list(range(6)), [_obs()] * 6)
    assert server.max_in_flight == 2


def test_spec_and_config_errors():
    cfg = parse_spec("openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1", max_concurrency=3)
    assert (cfg.model, cfg.base_url, cfg.max_concurrency) == ("Qwen/Qwen2.5-7B-Instruct", "http://127.0.0.1:8000/v1", 3)
    assert parse_spec("openai:org/m:q4@https://h/v1").model == "org/m:q4"
    with pytest.raises(ValueError, match="openai:MODEL@URL"):
        parse_spec("openai:just-a-model")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIConfig(base_url="http://x/v1", model="m", max_concurrency=0)
    with pytest.raises(ValueError, match="http"):
        OpenAIConfig(base_url="127.0.0.1:8000", model="m")


def _obs():
    import rsim_env

    e = rsim_env.env(problems=PROBLEMS, max_steps=3, protocol="chat")
    e.reset(seed=0)
    e.step(3)
    return e.observe("reasoner")


def test_registry_spec_and_rsim_eval_end_to_end(server, tmp_path):
    pytest.importorskip("torch", reason="rsim eval is part of the 'train' extra (this file also runs env-only)")
    from agents.registry import AgentContext, build_agent
    from algos.evaluation import main as evaluate

    agent, info = build_agent(f"openai:test-model@{server.url}#max_concurrency=3&timeout_s=5",
                              AgentContext("reasoner", seed=1))
    assert isinstance(agent.decoder, ServedDecoder) and (agent.cfg.max_concurrency, agent.cfg.timeout_s) == (3, 5.0)
    assert info["kind"] == "openai" and info["model"] == "test-model"
    with pytest.raises(ValueError, match="is a reasoner"):
        build_agent(f"openai:m@{server.url}", AgentContext("planner"))
    out = evaluate(["--reasoner", f"openai:test-model@{server.url}", "--data", "tiny", "--limit", "4",
                    "--modes", "none,fixed:3,8,random", "--set", "reasoner.max_step_tokens=40", "--no-plots", "--set", "env.protocol=chat",
                    "--out", str(tmp_path / "eval")])
    assert out["modes"]["none"]["accuracy"] == 1.0 and out["modes"]["fixed:3,8"]["accuracy"] == 1.0
    steps = [q for q in server.requests if q["messages"][0]["content"] != NO_PLANNER_SYSTEM]
    assert steps and all(q["max_tokens"] == 40 and q["temperature"] == 0.0 for q in steps)
    row = next(r for r in map(json.loads, (tmp_path / "eval" / "episodes.jsonl").read_text().splitlines())
               if r["mode"] == "fixed:3,8")
    assert row["tokens"]["reasoner_read"] > 0 and row["tokens"]["reasoner_written"] > 0


def test_frozen_served_reasoner_in_planner_only_training(server, tmp_path):
    pytest.importorskip("torch", reason="training is part of the 'train' extra (this file also runs env-only)")
    from algos.cli import main as cli

    out = cli(["train", "--preset", "tiny", "--learner", "planner_only", "--set",
               f"model.reasoner=openai:test-model@{server.url}", "--set", "env.protocol=chat", "--out", str(tmp_path / "po"), "--steps", "3"])
    assert out["steps"] == 3 and len(server.requests) > 0
    assert set(out["params"]) == {"planner"}  # only the planner trains; the served reasoner is frozen
    assert any(h.get("planner/grad_norm", 0) > 0 for h in out["history"])


def test_a_lead_in_protocol_is_refused_with_the_fix(server):
    """The env would grade lead-in + reply, but a chat API never sees an open assistant lead-in."""
    r = make(server)
    with pytest.raises(ValueError, match="--set env.protocol=chat"):
        rollout(EnvGroup(PROBLEMS[:1], group_size=1, max_steps=2, protocol="chat+lead"), r, FixedPlanner([3, 8]), seed=0)


def test_code_programs_are_requested_whole(server):
    """A code problem's final program has blank lines: its turn is sent without the delimiter stop."""
    from tests.test_code_prompts import DOUBLE

    for planner in (True, False):
        server.requests.clear()
        out = rollout(EnvGroup([DOUBLE], 1, protocol="chat", planner=planner), make(server, max_answer_tokens=300),
                      FixedPlanner([3]) if planner else None, seed=0)
        info = out.trajectories[0]["info"]
        assert info["correct"] and info["extracted"] == "def double(x):\n\n    return 2 * x"
        final = server.requests[-1]
        assert "stop" not in final and final["max_tokens"] == 300
        assert all("stop" in q for q in server.requests[:-1])  # planner-mode steps still stop at a blank line


# -- the completions route: every protocol (agents.served.completions); the chat-only refusal --------------------------------


def _console(argv):
    """``rsim ARGV`` as the console runs it: (exit status, stderr lines)."""
    import contextlib
    import io

    from algos.cli import _run
    from algos.console import run

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = run(_run, argv)
    return status, err.getvalue().strip().splitlines()


@pytest.mark.parametrize("spec_tail", ["", "#tokenizer=tiny", "#endpoint=chat&tokenizer=tiny"],
                         ids=["no_tokenizer", "server_404", "chat_asked"])
def test_chat_only_server_refuses_a_lead_in_protocol_in_one_line(server, spec_tail, tmp_path):
    """Under the default protocol (chat+lead) a chat-only server cannot be used: one line says why and what to do."""
    pytest.importorskip("torch", reason="rsim eval is part of the 'train' extra")
    status, lines = _console(["eval", "--reasoner", f"openai:test-model@{server.url}{spec_tail}", "--data", "tiny",
                              "--limit", "1", "--modes", "fixed:8", "--no-plots", "--no-progress", "--out", str(tmp_path / "e")])
    assert status == 1 and len(lines) == 1, lines
    why = {"": "names none", "#tokenizer=tiny": "HTTP 404", "#endpoint=chat&tokenizer=tiny": "endpoint=chat"}[spec_tail]
    assert "'chat+lead' is impossible there" in lines[0] and why in lines[0] and "--set env.protocol=chat" in lines[0]
    assert len(server.requests) == (1 if spec_tail == "#tokenizer=tiny" else 0)  # refused before any step (one probe)


def test_token_id_prompts_on_a_text_only_server_stop_in_one_line(tmp_path):
    """``#token_ids=1`` against a server that takes text prompts only (llama_cpp.server: HTTP 500, a validation
    error): not retried; ``rsim eval`` stops with one line that names the server's message and says to drop it."""
    pytest.importorskip("torch", reason="rsim eval is part of the 'train' extra")
    s = ChatServer(completions=True, text_prompts_only=True)
    try:
        status, lines = _console(["eval", "--reasoner", f"openai:test-model@{s.url}#tokenizer=tiny&token_ids=1&backoff_s=0.01",
                                  "--data", "tiny", "--limit", "1", "--modes", "fixed:8", "--no-plots", "--no-progress",
                                  "--out", str(tmp_path / "e")])
    finally:
        s.close()
    assert status == 1 and len(lines) == 1, lines
    assert "refused this request's form (HTTP 500, not retried" in lines[0] and "valid string" in lines[0]
    assert "drop #token_ids=1" in lines[0] and "overloaded" not in lines[0]
    assert len(s.requests) == 1 and isinstance(s.requests[0]["prompt"], list)
    print(lines[0])


def test_auto_falls_back_to_chat_on_a_chat_only_server(server):
    """A tokenizer at hand but no completions endpoint (HTTP 404): the chat protocol still works, through chat."""
    pytest.importorskip("transformers", reason="the completions route renders the chat template (the 'train' extra; this file also runs env-only)")
    r = make(server, tokenizer="tiny")
    out = rollout(EnvGroup(PROBLEMS[:1], group_size=1, max_steps=3, protocol="chat"), r, FixedPlanner([3, 8]), seed=0)
    assert out.trajectories[0]["info"]["correct"] and type(r.decoder.route).__name__ == "ChatDecoder"
    assert [q.get("prompt") is not None for q in server.requests] == [True, False, False]  # one probe, then chat


def test_tokenizer_mismatch_is_named():
    """The server counts the prompt's tokens differently from the template's tokenizer: an error names both counts."""
    pytest.importorskip("transformers", reason="the completions route renders the chat template (the 'train' extra; this file also runs env-only)")
    from agents.served.completions import TokenizerMismatch

    s = ChatServer(completions=True)
    try:
        r = make(s, tokenizer="tiny")
        with pytest.raises(TokenizerMismatch, match=r"server counted \d+ prompt tokens where the local tokenizer "
                                                      r"'tiny' counts \d+.*#tokenizer="):
            rollout(EnvGroup(PROBLEMS[:1], group_size=1, max_steps=2), r, FixedPlanner([8]), seed=0)
        assert s.requests[0]["prompt"].endswith("The final answer is \\boxed{") and "stop" not in s.requests[0]
        assert s.requests[0]["logit_bias"] == {str(i): -100 for i in r.turns.suppressed_ids}
        with pytest.raises(APIError, match="token ids.*drop #token_ids=1"):  # this server sends no sampled ids
            rollout(EnvGroup(PROBLEMS[:1], group_size=1, max_steps=2), make(s, tokenizer="tiny", token_ids=1),
                    FixedPlanner([8]), seed=0)
        assert isinstance(s.requests[-1]["prompt"], list) and s.requests[-1]["return_tokens_as_token_ids"] is True
    finally:
        s.close()


def test_spec_selects_the_endpoint_and_tokenizer():
    cfg = parse_spec("openai:m@http://h/v1#endpoint=completions&tokenizer=Qwen/Qwen2.5-0.5B-Instruct")
    assert (cfg.endpoint, cfg.tokenizer) == ("completions", "Qwen/Qwen2.5-0.5B-Instruct")
    with pytest.raises(ValueError, match="endpoint"):
        parse_spec("openai:m@http://h/v1#endpoint=rest")
    with pytest.raises(ValueError, match="#tokenizer=HUB_ID_OR_DIR"):  # completions asked, no tokenizer named
        r = OpenAIReasoner(parse_spec("openai:test-model@http://h/v1#endpoint=completions"))
        r.reset(1)
        r.act([0], [_obs()])


def test_a_step_that_ends_at_its_last_token_keeps_the_turn_open():
    """The client cuts a reply where the local reasoner stops: a box closed by the reply's last token ends the step
    there (the end-of-turn the server wrote after it was never reached locally), text after it is dropped."""
    pytest.importorskip("transformers", reason="the completions route renders the chat template (the 'train' extra; this file also runs env-only)")
    from agents.decoding.turns import Conversation, Turns
    from agents.hf.loading import tiny_tokenizer
    from agents.reasoner import ReasonerConfig

    tok = tiny_tokenizer()
    turns = Turns(tok, ReasonerConfig(max_step_tokens=32, max_answer_tokens=48), keep_text=True)
    obs = {"question": "Q", "round": 0, "strategy": 3, "instruction": "Q\n\nCheck.", "injected": "So \\boxed{",
           "system": "S", "kind": "math"}
    for reply, ended, kept, still_open in (("4}", True, "So \\boxed{4}", True),
                                           ("4} more\n\nx", True, "So \\boxed{4}", True),
                                           ("4 ", True, "So \\boxed{4 " + tok.eos_token, False),
                                           ("4 ", False, "So \\boxed{4 ", True)):
        conv = Conversation()
        turn = turns.start(0, conv, obs)
        prompt = conv.text
        assert turn.cap == 32 and prompt.endswith("<|im_start|>assistant\nSo \\boxed{")
        turn.reply(reply, ended)
        turns.finish(turn)
        assert conv.text == prompt[:-len("So \\boxed{")] + kept
        assert conv.open == still_open


def test_a_later_prompt_counted_differently_is_logged_not_refused(monkeypatch, caplog):
    """Two implementations of the same tokenizer may split the server's own replies differently (llama.cpp's server
    reads "plan:\\n\\n1." with one "\\n\\n" token, the HF tokenizer with two): only a conversation's first prompt, which
    holds no model text, must count the same."""
    pytest.importorskip("transformers", reason="the completions route renders the chat template (the 'train' extra; this file also runs env-only)")
    from agents.served.completions import TokenizerMismatch

    def served(offsets):
        r = OpenAIReasoner(OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="tiny", tokenizer="tiny"))
        r.reset(1)
        sent = []

        def request(body, url=None, raw=False):
            local = len(r.turns.encode(body["prompt"]))
            sent.append(body["prompt"])
            return {"choices": [{"text": "a step\n\n", "finish_reason": "length"}],
                    "usage": {"prompt_tokens": local + offsets[len(sent) - 1], "completion_tokens": 3}}

        monkeypatch.setattr(r.decoder.client, "request", request)
        return r, sent

    first = {"question": "Q?", "round": 0, "strategy": 3, "injected": "Check: ", "instruction": "Q?", "kind": "math"}
    later = dict(first, round=1, instruction="")
    r, sent = served([0, -1, -1])
    with caplog.at_level("WARNING"):
        assert r.act([0], [first]) == ["a step"]
        r.act([0], [later])
        r.act([0], [dict(later, round=2)])
    assert len(sent) == 3 and sum("counted" in m for m in caplog.messages) == 1  # logged once
    r, _ = served([-1])
    with pytest.raises(TokenizerMismatch, match="server counted"):
        r.act([0], [first])
