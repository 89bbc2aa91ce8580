"""agents.serve: the minimal local chat-completions server, driven by the OpenAI-compatible reasoner."""

import json
import threading
import urllib.error
import urllib.request

import pytest

from agents.openai_reasoner import OpenAIConfig, OpenAIReasoner
from rsim_env import EnvGroup
from rsim_env.problems import Problem


@pytest.fixture(scope="module")
def served():
    from agents.serve import ChatModel, make_server

    chat = ChatModel("default", max_tokens_cap=64)
    server = make_server(chat, port=0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield chat, f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_served_embedded_model_plays_an_episode(served):
    from agents.scripted import FixedPlanner
    from algos.rollout import rollout

    chat, url = served
    r = OpenAIReasoner(OpenAIConfig(base_url=url, model="default", max_step_tokens=24, max_answer_tokens=48))
    p = Problem(id="q", question="What is 12 + 30?", answer="42")
    out = rollout(EnvGroup([p], group_size=1, max_steps=3, protocol="chat"), r, FixedPlanner([1, 8]), seed=0)
    steps = out.trajectories[0]["info"]["steps"]
    assert len(steps) == 2 and all(isinstance(s, str) and s and "\n\n" not in s for s in steps)
    u = r.usage()
    # the server's prompt count is the chat template's length for the messages it got
    assert u["requests"] == 2 and u["prompt_tokens"] > 0 and 0 < u["completion_tokens"] <= 48
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
