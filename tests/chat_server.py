"""A real (local, stdlib) HTTP server speaking the OpenAI chat-completions protocol, for tests.

Scripted replies: the last user message decides (a termination instruction — it asks for the
boxed final answer — gets the boxed sum of the "What is A + B?" question; one that asks for a program
(code) a fenced ``double`` with blank lines in it; anything else a validation-flavoured step followed by a second
paragraph, which ``stop=["\\n\\n"]`` cuts off as a real server does). Faults are injected per
request from ``server.faults`` (an HTTP status, ``(status, body)`` to answer that JSON body, ``("slow", seconds)``,
``"hang"`` (no reply until :meth:`ChatServer.close`: a client timeout that holds on any machine), ``"garbage"``,
``"empty"``), consumed in order. ``server.gather = n`` holds every request until ``n`` have been in flight at once
(at most 60 s), so a test of concurrency sees the overlap whatever the machine's load.

A chat-only server by default (``/v1/completions`` answers 404, as on hosted chat APIs); with
``ChatServer(completions=True)`` it also answers ``/v1/completions`` with a fixed text and counts the
prompt's tokens as whitespace-separated words (so a client's tokenizer check sees a mismatch). With
``text_prompts_only=True`` a token-id prompt there gets llama_cpp.server 0.3.36's answer: HTTP 500 carrying the
request's validation error (``Input should be a valid string``).
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def scripted_reply(messages: list[dict[str, str]]) -> str:
    last = messages[-1]["content"]
    question = next(m["content"] for m in messages if m["role"] == "user").split("\n\n")[0]
    nums = [int(x) for x in re.findall(r"-?\d+", question)]
    if "```python code block" in last or messages[0]["content"].startswith("You are a careful Python programmer. Think"):
        return "Here it is.\n\n```python\ndef double(x):\n\n    return 2 * x\n```"  # blank lines: no delimiter cut
    if "\\boxed" in last or messages[0]["content"].startswith("You are a careful math tutor. Solve the problem step by step"):
        return f"Adding them gives {sum(nums)}. So the final answer is \\boxed{{{sum(nums)}}}."
    return "Let me check the numbers: substitute them back.\n\nThen we add them up."


def llama_cpp_validation_500(prompt: Any) -> dict[str, Any]:
    """llama_cpp.server's body for a request that fails its schema: FastAPI's validation error, wrapped by its
    route handler as an ``internal_server_error`` (sent with HTTP 500). Every error echoes its input, so a long
    token-id prompt makes a body longer than a client reads of it."""
    errors = [{"type": "string_type", "loc": ("body", "prompt", "str"), "msg": "Input should be a valid string",
               "input": prompt}]
    errors += [{"type": "string_type", "loc": ("body", "prompt", "list[str]", i), "msg": "Input should be a valid string",
                "input": x} for i, x in enumerate(prompt if isinstance(prompt, list) else [])]
    message = f"{len(errors)} validation errors:\n  " + "\n  ".join(str(e) for e in errors)
    return {"error": {"message": message, "type": "internal_server_error", "param": None, "code": None}}


class ChatServer:
    """Start with ``ChatServer()``; ``.url`` is the API root (``http://127.0.0.1:PORT/v1``).

    ``port`` 0 takes any free port; a fixed one lets a restarted server come back at the same URL
    (``benchmarks/runtime/soak.py`` kills and restarts it). ``completions``: also answer ``/v1/completions``.
    """

    def __init__(self, port: int = 0, completions: bool = False, text_prompts_only: bool = False) -> None:
        self.completions, self.text_prompts_only = completions, text_prompts_only
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.faults: list[Any] = []
        self.delay_s = 0.0
        self.gather = 0
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._overlap = threading.Condition(self._lock)
        self._closed = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    fault = server.faults.pop(0) if server.faults else None
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server._overlap.notify_all()
                    server._overlap.wait_for(lambda: server.max_in_flight >= server.gather, timeout=60)
                self._counted = True
                try:
                    self._answer(body, fault)
                finally:
                    self._leave()

            def _leave(self):
                # a request stops being in flight *before* its reply is written: once the client has the
                # reply it may send its next request, which must not be seen overlapping this one
                if getattr(self, "_counted", False):
                    self._counted = False
                    with server._lock:
                        server.in_flight -= 1

            def _answer(self, body, fault):
                if server.completions and self.path == "/v1/completions":
                    if server.text_prompts_only and not isinstance(body.get("prompt"), str):
                        return self._send(500, llama_cpp_validation_500(body.get("prompt")))
                    words = len(str(body.get("prompt")).split())
                    return self._send(200, {"id": "x", "object": "text_completion", "model": body["model"],
                                            "choices": [{"index": 0, "text": " 4}", "finish_reason": "stop"}],
                                            "usage": {"prompt_tokens": words, "completion_tokens": 2}})
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if isinstance(fault, tuple) and isinstance(fault[0], int):
                    return self._send(fault[0], fault[1])
                if isinstance(fault, int):
                    headers = {"Retry-After": "0"} if fault == 429 else {}
                    return self._send(fault, {"error": {"message": f"injected {fault}"}}, headers)
                if isinstance(fault, tuple) and fault[0] == "slow":
                    time.sleep(fault[1])
                if fault == "hang":
                    server._closed.wait(300)
                    return
                if fault == "garbage":
                    return self._send(200, None, raw=b"<html>not json</html>")
                if fault == "empty":  # headers, then no body: a server that died mid-reply
                    return self._send(200, None, raw=b"")
                time.sleep(server.delay_s)
                text = scripted_reply(body["messages"])
                for stop in body.get("stop") or []:
                    text = text.split(stop)[0]
                prompt_tokens = sum(len(m["content"].split()) for m in body["messages"])
                self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(text.split()),
                                           "total_tokens": prompt_tokens + len(text.split())}})

            def _send(self, status, obj, headers=None, raw=None):
                data = raw if raw is not None else json.dumps(obj).encode()
                self._leave()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closed.set()
        self.httpd.shutdown()
        self.httpd.server_close()
