"""LoRA adapter sync of the served reasoner over vLLM's runtime LoRA API, against a local fake server.

The fake (stdlib HTTP on 127.0.0.1) keeps vLLM's rules: ``POST /v1/load_lora_adapter``
``{"lora_name", "lora_path"}`` answers plain text, refuses a name already loaded or a path without
``adapter_config.json`` (400); ``/v1/unload_lora_adapter`` refuses an unknown name; a completion whose
``model`` is neither the base nor a loaded adapter is a 404. Without runtime updating (vLLM started
without ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``) the admin routes do not exist (404).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.served.reasoner import APIError, OpenAIConfig, OpenAIReasoner

BASE = "base-model"


class FakeVLLM:
    """``.url`` is the API root; ``.log`` every (path, body); ``.loaded`` name -> path."""

    def __init__(self, runtime_lora: bool = True) -> None:
        self.log: list[tuple[str, dict]] = []
        self.loaded: dict[str, str] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.log.append((self.path, body))
                status, reply = fake.answer(self.path, body)
                data = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain" if isinstance(reply, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.runtime_lora = runtime_lora
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def answer(self, path: str, body: dict) -> tuple[int, object]:
        error = lambda code, msg: (code, {"object": "error", "message": msg, "code": code})  # noqa: E731
        if path in ("/v1/load_lora_adapter", "/v1/unload_lora_adapter") and not self.runtime_lora:
            return error(404, "Not Found")
        if path == "/v1/load_lora_adapter":
            name, where = body.get("lora_name"), body.get("lora_path")
            if name in self.loaded:
                return error(400, f"The lora adapter '{name}' has already been loaded.")
            if not where or not (Path(where) / "adapter_config.json").is_file():
                return error(400, f"No adapter found for {where}")
            self.loaded[name] = where
            return 200, f"Success: LoRA adapter '{name}' added successfully."
        if path == "/v1/unload_lora_adapter":
            name = body.get("lora_name")
            if name not in self.loaded:
                return error(400, f"The lora adapter '{name}' cannot be found.")
            del self.loaded[name]
            return 200, f"Success: LoRA adapter '{name}' removed successfully."
        if body.get("model") not in (BASE, *self.loaded):
            return error(404, f"The model `{body.get('model')}` does not exist.")
        if path == "/v1/chat/completions":
            return 200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Add them."},
                                      "finish_reason": "stop"}], "usage": {"prompt_tokens": 0, "completion_tokens": 2}}
        if path == "/v1/completions":
            return 200, {"choices": [{"index": 0, "text": " 4}", "finish_reason": "stop"}]}
        return error(404, "Not Found")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeVLLM()
    yield s
    s.close()


def _reasoner(url: str, **kw) -> OpenAIReasoner:
    return OpenAIReasoner(OpenAIConfig(base_url=url, model=BASE, endpoint="chat", max_retries=0, **kw))


def _peft_dir(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "adapter_config.json").write_text(json.dumps({"r": 4, "lora_alpha": 8, "peft_type": "LORA"}))
    return d


def _ask(reasoner: OpenAIReasoner) -> str:
    return reasoner.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "What is 2 + 2?"},
                              {"role": "assistant", "content": "Let me see."}, {"role": "user", "content": "Go on."}])[0]


def test_each_sync_loads_a_new_name_unloads_the_old_and_requests_use_it(server, tmp_path):
    r = _reasoner(server.url)
    assert _ask(r) == "Add them." and server.log[-1][1]["model"] == BASE
    first = r.sync_adapter(_peft_dir(tmp_path, "step0"))
    second = r.sync_adapter(str(_peft_dir(tmp_path, "step1")))
    assert first != second and first.endswith("-step-0") and second.endswith("-step-1")
    admin = [(p, b) for p, b in server.log if "lora_adapter" in p]
    assert admin == [("/v1/load_lora_adapter", {"lora_name": first, "lora_path": str((tmp_path / "step0").resolve())}),
                     ("/v1/load_lora_adapter", {"lora_name": second, "lora_path": str((tmp_path / "step1").resolve())}),
                     ("/v1/unload_lora_adapter", {"lora_name": first})]
    assert list(server.loaded) == [second]
    _ask(r)
    assert server.log[-1] == ("/v1/chat/completions", server.log[-1][1]) and server.log[-1][1]["model"] == second
    r.unload_adapter()
    assert server.loaded == {} and r.served_model == BASE
    _ask(r)
    assert server.log[-1][1]["model"] == BASE
    assert (tmp_path / "step0").is_dir()  # a dir the caller saved is the caller's to delete


def test_completions_route_sends_the_adapter_name(server, tmp_path):
    pytest.importorskip("transformers")
    from rsim_env import Problem
    from rsim_env.game import EnvConfig
    from rsim_env.group import EnvGroup

    r = OpenAIReasoner(OpenAIConfig(base_url=server.url, model=BASE, endpoint="completions", tokenizer="tiny",
                                    max_retries=0, max_step_tokens=8))
    name = r.sync_adapter(_peft_dir(tmp_path, "a"))
    group = EnvGroup([Problem(id="p", question="What is 2 + 2?", answer="4")], 1,
                     config=EnvConfig(max_steps=1, planner=False))
    group.reset(seed=0)
    _, ids, observations = group.observe()
    r.reset(1)
    r.act(ids, observations)
    sent = [b for p, b in server.log if p == "/v1/completions"]
    assert sent and all(b["model"] == name for b in sent)


def test_an_adapter_slot_is_saved_as_a_peft_dir_and_removed_once_replaced(server, tmp_path):
    from agents.hf.loading import tiny_model
    from agents.hf.lora import LoraSpec, SharedBase

    model, _ = tiny_model("causal")
    slot = SharedBase(model, "tiny").add("reasoner", LoraSpec(enabled=True, rank=4, alpha=8.0))
    r = _reasoner(server.url, adapter_dir=str(tmp_path / "shared"))
    first = r.sync_adapter(slot)
    path = Path(server.loaded[first])
    assert path.is_relative_to(tmp_path / "shared") and (path / "adapter_config.json").is_file()
    assert json.loads((path / "adapter_config.json").read_text())["r"] == 4
    assert any(path.glob("adapter_model.*"))
    r.sync_adapter(slot)
    assert not path.exists() and len(list((tmp_path / "shared").iterdir())) == 1  # the unloaded copy is gone


def test_errors_name_the_fix(tmp_path):
    s = FakeVLLM(runtime_lora=False)
    try:
        r = _reasoner(s.url)
        with pytest.raises(APIError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora"):
            r.sync_adapter(_peft_dir(tmp_path, "a"))
        assert r.served_model == BASE  # nothing changed
        with pytest.raises(ValueError, match="not a PEFT adapter dir"):
            r.sync_adapter(tmp_path)
        with pytest.raises(TypeError, match="PEFT adapter dir or an agents.hf.lora.AdapterSlot"):
            r.sync_adapter({"weights": 1})
    finally:
        s.close()
    s = FakeVLLM()
    try:
        r = _reasoner(s.url)
        s.loaded[f"{r.adapters.tag}-step-0"] = "/x"  # the name is already taken on the server
        with pytest.raises(APIError, match="already been loaded"):
            r.sync_adapter(_peft_dir(tmp_path, "b"))
        assert r.served_model == BASE and r.adapters.syncs == 0
    finally:
        s.close()
