"""agents.served.server: the minimal local server (completions and chat completions), driven by the OpenAI-compatible reasoner."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from agents.served.reasoner import OpenAIConfig, OpenAIReasoner
from rsim_env import EnvGroup
from rsim_env.problem import Problem
from rsim_env.render import PROTOCOLS


@pytest.fixture(scope="module")
def served():
    from agents.served.server import ChatModel, make_server

    chat = ChatModel("default", max_tokens_cap=64)
    server = make_server(chat, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield chat, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
@pytest.mark.parametrize("proto,token_ids", [("chat+lead", 0), ("chat+lead", 1), ("chat", 1)])
def test_served_embedded_model_plays_the_local_episodes(served, proto, token_ids):
    """The embedded SmolLM2-135M served (completions endpoint, its real BPE tokenizer and chat template) plays the
    local reasoner's greedy episodes. Text prompts are exact only while replies re-tokenize to the sampled tokens:
    under ``chat`` the model writes "\\n" "\\n" as two tokens where its tokenizer reads one "\\n\\n", so that case
    needs token-id prompts (``token_ids=1``)."""
    from agents.reasoner import Reasoner, ReasonerConfig
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout

    chat, url = served
    problems = [Problem(id="q", question="What is 12 + 30?", answer="42"),
                Problem(id="r", question="A box holds 7 rows of 6 eggs. How many eggs?", answer="42")]
    r = OpenAIReasoner(OpenAIConfig(base_url=url, model="default", max_step_tokens=24, max_answer_tokens=48,
                                    token_ids=token_ids))
    local = Reasoner(chat.model, chat.tok, ReasonerConfig(greedy=True, max_step_tokens=24, max_answer_tokens=48))
    got, want = (rollout(EnvGroup(problems, group_size=1, max_steps=3, protocol=proto), x, FixedPlanner([1, 3, 8]),
                         seed=0) for x in (r, local))
    steps = [t["info"]["steps"] for t in got.trajectories]
    assert steps == [t["info"]["steps"] for t in want.trajectories]
    assert [t["info"]["correct"] for t in got.trajectories] == [t["info"]["correct"] for t in want.trajectories]
    u = r.usage()
    assert type(r.decoder.route).__name__ == "CompletionsDecoder" and u["requests"] == 6 and u["prompt_tokens"] > 0
    print("served steps:", steps, u)


@pytest.mark.slow
def test_served_errors(served):
    _, url = served
    for path, body, code in (("/chat/completions", {"messages": []}, 404),
                             ("/v1/chat/completions", {"messages": "hi"}, 400)):
        req = urllib.request.Request(url.replace("/v1", "") + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == code


# -- the completions endpoint: the served reasoner under every protocol (tiny in-process model, not slow) ----------

PROTOCOL_CASES = [*PROTOCOLS, "none"]  # "none": no-planner mode (one whole answer)


@pytest.fixture(scope="module")
def tiny_served():
    from tests.tiny_server import served, text_model

    model, tok = text_model()
    with served(model, tok) as url:
        yield model, tok, url


def _problems():
    from tests.test_code_prompts import DOUBLE

    return [*(Problem(id=f"p{i}", question=f"What is {i} + {2 * i}?", answer=str(3 * i)) for i in range(1, 3)), DOUBLE]


@pytest.mark.parametrize("proto,token_ids", [*((p, 0) for p in PROTOCOL_CASES), ("chat+lead", 1), ("chat", 1)])
def test_greedy_served_episodes_equal_local_ones(tiny_served, proto, token_ids):
    """Same weights, greedy: the served reasoner (completions endpoint; text or token-id prompts) plays the local
    reasoner's episodes byte for byte, whatever ended each step (end-of-turn, cap, delimiter, a closed box or program)."""
    from agents.reasoner import Reasoner, ReasonerConfig
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout
    from tests.tiny_server import stop_kinds

    model, tok, url = tiny_served
    kw = {"planner": False} if proto == "none" else {"protocol": proto}
    planner = None if proto == "none" else FixedPlanner([1, 3, 0, 8])
    local = Reasoner(model, tok, ReasonerConfig(greedy=True, max_step_tokens=32, max_answer_tokens=48))
    served = OpenAIReasoner(OpenAIConfig(base_url=url, model="tiny", max_step_tokens=32, max_answer_tokens=48,
                                         token_ids=token_ids))
    want = rollout(EnvGroup(_problems(), 2, max_steps=4, **kw), local, planner, seed=0)
    got = rollout(EnvGroup(_problems(), 2, max_steps=4, **kw), served, planner, seed=0)
    assert type(served.decoder.route).__name__ == "CompletionsDecoder"
    assert json.dumps([t["info"] for t in got.trajectories]) == json.dumps([t["info"] for t in want.trajectories])
    kinds = stop_kinds(local.records(), tok, (32, 48))
    assert len(kinds) >= (2 if proto == "none" else 3), kinds  # the comparison covers several ways a step ends
    if token_ids:
        assert served._convs[0].ids == local.records()[0].input_ids  # the very same tokens
    u = served.usage()  # the server's usage: every request re-reads its whole prompt
    assert u["requests"] == sum(r.usage["requests"] for r in served.records()) and u["retries"] == 0
    assert u["prompt_tokens"] == sum(served.token_usage(r)["reasoner_read"] for r in served.records()) > 0


def test_completions_endpoint(tiny_served):
    model, tok, url = tiny_served

    def post(path, body):
        req = urllib.request.Request(url.replace("/v1", "") + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    prompt = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    free = post("/v1/completions", {"prompt": prompt, "max_tokens": 8})
    text = free["choices"][0]["text"]
    assert free["usage"]["prompt_tokens"] == len(tok(prompt)["input_ids"]) and text
    first = tok.encode(text)[0]
    banned = post("/v1/completions", {"prompt": prompt, "max_tokens": 8, "logit_bias": {str(first): -100}})
    assert not banned["choices"][0]["text"].startswith(text[0])  # -100 bans the greedy first token
    capped = post("/v1/completions", {"prompt": [*tok(prompt)["input_ids"]], "max_tokens": 1})  # token ids work too
    assert capped["choices"][0]["finish_reason"] == "length" and capped["usage"]["completion_tokens"] == 1
    for path, body in (("/v1/completions", {"prompt": 3}), ("/v1/completions", {"prompt": "x", "logit_bias": [1]})):
        with pytest.raises(urllib.error.HTTPError) as e:
            post(path, body)
        assert e.value.code == 400
    with pytest.raises(urllib.error.HTTPError) as e:
        post("/v1/embeddings", {})
    assert e.value.code == 404 and "/v1/completions" in e.value.read().decode()


def test_rsim_eval_default_protocol_against_a_completions_server(tmp_path):
    """``rsim eval --reasoner openai:MODEL@URL`` under the default protocol plays what ``--reasoner tiny`` plays
    locally (agents.served.server serves the same random-init weights: tiny seed 0)."""
    from algos.evaluation import main as evaluate
    from tests.tiny_server import served

    from agents.hf.loading import tiny_model

    args = ["--data", "tiny", "--limit", "3", "--modes", "none,fixed:1,3,8", "--set", "reasoner.max_step_tokens=16",
            "--set", "env.max_steps=3", "--no-plots"]
    local = evaluate(["--reasoner", "tiny", *args, "--out", str(tmp_path / "local")])
    with served(*tiny_model("causal", seed=0)) as url:
        remote = evaluate(["--reasoner", f"openai:tiny@{url}", *args, "--out", str(tmp_path / "served")])
    rows = {k: [json.loads(x) for x in (tmp_path / k / "episodes.jsonl").read_text().splitlines()] for k in ("local", "served")}
    assert [r["steps"] for r in rows["served"]] == [r["steps"] for r in rows["local"]] and len(rows["local"]) == 6
    assert all(r["tokens"]["reasoner_read"] > 0 for r in rows["served"])
    assert remote["modes"].keys() == local["modes"].keys()
