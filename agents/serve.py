"""A minimal OpenAI-compatible chat-completions server for a local model (CPU demos of the plug-in path).

``python -m agents.serve --model default --port 8000`` serves the embedded SmolLM2-135M (or any
hub id / local model dir) at ``http://127.0.0.1:8000/v1/chat/completions``, so the served-reasoner
path (``rsim eval --reasoner openai:MODEL@URL``) can be tried without vLLM or a GPU. It answers one
request at a time with ``transformers``' ``generate`` (the chat template, ``max_tokens``,
``temperature``, ``stop`` and ``usage``); for real work use vLLM, SGLang, llama.cpp or TGI.
Binds to 127.0.0.1 by default.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Sequence

import torch

from .loading import load_causal_lm

__all__ = ["ServeConfig", "ChatModel", "make_server", "main"]

MAX_REQUEST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ServeConfig:
    """Arguments of ``python -m agents.serve``."""

    model: str = "default"
    """Model spec: "default" (embedded SmolLM2-135M), a hub id or a local model dir."""
    host: str = "127.0.0.1"
    """Interface to bind (127.0.0.1: this machine only)."""
    port: int = 8000
    """TCP port (0 = any free port)."""
    max_tokens_cap: int = 1024
    """Upper bound on a request's max_tokens."""

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"ServeConfig.port={self.port!r}: use 0..65535.")
        if self.max_tokens_cap < 1:
            raise ValueError(f"ServeConfig.max_tokens_cap={self.max_tokens_cap!r}: use a positive int.")


class ChatModel:
    """``transformers`` model + tokenizer answering chat-completions requests (one at a time)."""

    def __init__(self, spec: str, max_tokens_cap: int = 1024) -> None:
        self.name = spec
        self.model, self.tok = load_causal_lm(spec)
        self.model.eval()
        self.cap = max_tokens_cap
        self._lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in msgs):
            raise ValueError("'messages' must be a list of {role, content} objects with string content.")
        max_tokens = min(int(body.get("max_tokens") or 256), self.cap)
        temperature = float(body.get("temperature") or 0.0)
        stop = [s for s in (body.get("stop") or []) if isinstance(s, str) and s][:4]
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0,
                                  "pad_token_id": self.tok.pad_token_id or self.tok.eos_token_id}
        if temperature > 0:
            kwargs["temperature"] = temperature
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=self.tok)
        with self._lock, torch.no_grad():
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))
            out = self.model.generate(**ids, **kwargs)
        new = out[0, ids["input_ids"].shape[1]:]
        text = self.tok.decode(new, skip_special_tokens=True)
        finish = "length" if len(new) >= max_tokens else "stop"
        for s in stop:
            if s in text:
                text, finish = text.split(s)[0], "stop"
        return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
                "model": self.name, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                 "finish_reason": finish}],
                "usage": {"prompt_tokens": int(ids["input_ids"].shape[1]), "completion_tokens": int(len(new)),
                          "total_tokens": int(ids["input_ids"].shape[1] + len(new))}}


def make_server(chat: ChatModel, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server answering ``POST /v1/chat/completions`` with ``chat`` (call ``serve_forever``)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("[agents.serve] " + fmt % args + "\n")

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._send(404, {"error": {"message": f"unknown path {self.path}; use /v1/chat/completions"}})
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_REQUEST_BYTES:
                return self._send(413, {"error": {"message": "request too large"}})
            try:
                self._send(200, chat.complete(json.loads(self.rfile.read(n))))
            except (ValueError, TypeError, json.JSONDecodeError) as e:
                self._send(400, {"error": {"message": str(e)}})

        def _send(self, status: int, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return ThreadingHTTPServer((host, port), Handler)


def main(cfg: ServeConfig | Sequence[str] | None = None) -> dict[str, Any]:
    """Load the model and serve until interrupted; returns ``{"url"}`` when stopped."""
    if not isinstance(cfg, ServeConfig):
        p = argparse.ArgumentParser(prog="python -m agents.serve", description=__doc__.split("\n\n")[0])
        p.add_argument("--model", default="default")
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=8000)
        a = p.parse_args(list(cfg or []))
        cfg = ServeConfig(model=a.model, host=a.host, port=a.port)
    server = make_server(ChatModel(cfg.model, cfg.max_tokens_cap), cfg.host, cfg.port)
    url = f"http://{cfg.host}:{server.server_address[1]}/v1"
    print(f"serving {cfg.model} at {url}/chat/completions (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return {"url": url}


if __name__ == "__main__":
    main(sys.argv[1:])
