"""A minimal OpenAI-compatible server for a local model (CPU demos and tests of the plug-in path).

``python -m agents.served.server --model default --port 8000`` serves the embedded SmolLM2-135M (or any
hub id / local model dir, or ``tiny``: a random-init toy model) at ``http://127.0.0.1:8000/v1``:

* ``POST /v1/completions`` continues a text ``prompt`` (what the served reasoner uses under every
  protocol: ``rsim eval --reasoner openai:default@http://127.0.0.1:8000/v1``);
* ``POST /v1/chat/completions`` answers a chat through the model's chat template (the ``chat``
  protocol only).

So the served-reasoner path can be tried without vLLM or a GPU. It answers one request at a time
with ``transformers``' ``generate`` (greedy unless ``temperature`` > 0; ``max_tokens``, ``stop``,
``logit_bias`` with -100 as a ban, ``seed`` and ``usage``); for real work use vLLM, SGLang,
llama.cpp's server or TGI. Binds to 127.0.0.1 by default.
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
from transformers import LogitsProcessor, LogitsProcessorList

from ..hf.loading import load_causal_lm, tiny_model

__all__ = ["ServeConfig", "ChatModel", "make_server", "main"]

MAX_REQUEST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ServeConfig:
    """Arguments of ``python -m agents.served.server``."""

    model: str = "default"
    """Model spec: "default" (embedded SmolLM2-135M), a hub id, a local model dir or "tiny" (random-init toy)."""
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


class _LogitBias(LogitsProcessor):
    """OpenAI ``logit_bias``: added to the logits; -100 or less bans the token."""

    def __init__(self, bias: dict[int, float]) -> None:
        self.ids = torch.tensor(list(bias), dtype=torch.long)
        values = torch.tensor(list(bias.values()), dtype=torch.float32)
        self.values = torch.where(values <= -100, torch.tensor(float("-inf")), values)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scores = scores.clone()
        scores[:, self.ids] += self.values.to(scores.dtype)
        return scores


class ChatModel:
    """``transformers`` model + tokenizer answering completions and chat-completions requests (one at a time).

    Args:
        spec: Model spec (see :attr:`ServeConfig.model`); also the model name in replies.
        max_tokens_cap: Upper bound on a request's ``max_tokens``.
        model: An already built model (with ``tokenizer``) to serve instead of loading ``spec``.
        tokenizer: Its tokenizer.
    """

    def __init__(self, spec: str, max_tokens_cap: int = 1024, model: Any = None, tokenizer: Any = None) -> None:
        self.name = spec
        if model is None:
            model, tokenizer = tiny_model("causal", seed=0) if spec == "tiny" else load_causal_lm(spec)
        self.model, self.tok = model, tokenizer
        self.model.eval()
        self.cap = max_tokens_cap
        self._lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """A chat-completions reply to ``body`` (``messages`` through the chat template)."""
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in msgs):
            raise ValueError("'messages' must be a list of {role, content} objects with string content.")
        ids = self.tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        text, new, _, finish = self._generate(ids, body)
        return {"id": f"chatcmpl-{time.time_ns()}", "object": "chat.completion", "created": int(time.time()),
                "model": self.name, "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                                 "finish_reason": finish}], "usage": _usage(len(ids), len(new))}

    def complete_text(self, body: dict[str, Any]) -> dict[str, Any]:
        """A completions reply to ``body``: continues ``prompt`` (a string, or a list of token ids)."""
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
            prompt = prompt[0]
        if isinstance(prompt, str):
            ids = list(self.tok(prompt)["input_ids"])
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and 0 <= t < len(self.tok) for t in prompt):
            ids = list(prompt)
        else:
            raise ValueError("'prompt' must be a string or a list of token ids (one prompt per request).")
        if not ids:
            raise ValueError("'prompt' is empty.")
        text, new, token_logprobs, finish = self._generate(ids, body)
        logprobs = None
        if body.get("logprobs") is not None:  # the sampled tokens (vLLM's format; no top alternatives)
            as_ids = bool(body.get("return_tokens_as_token_ids"))
            logprobs = {"tokens": [f"token_id:{t}" if as_ids else self.tok.decode([t]) for t in new],
                        "token_logprobs": token_logprobs, "top_logprobs": None}
        return {"id": f"cmpl-{time.time_ns()}", "object": "text_completion", "created": int(time.time()),
                "model": self.name, "choices": [{"index": 0, "text": text, "logprobs": logprobs,
                                                 "finish_reason": finish}], "usage": _usage(len(ids), len(new))}

    def _generate(self, ids: list[int], body: dict[str, Any]) -> tuple[str, list[int], list[float], str]:
        """Decode after ``ids``: ``(text, generated ids, their log-probs, finish_reason)``; stops at end-of-turn."""
        max_tokens = min(int(body.get("max_tokens") or 256), self.cap)
        temperature = float(body.get("temperature") or 0.0)
        stop = [s for s in (body.get("stop") or []) if isinstance(s, str) and s][:4]
        bias = body.get("logit_bias") or {}
        if not isinstance(bias, dict):
            raise ValueError("'logit_bias' must be an object {token id: bias}.")
        bias = {int(k): float(v) for k, v in bias.items() if 0 <= int(k) < len(self.tok)}
        eos = self.tok.eos_token_id
        kwargs: dict[str, Any] = {"max_new_tokens": max_tokens, "do_sample": temperature > 0, "eos_token_id": eos,
                                  "pad_token_id": self.tok.pad_token_id if self.tok.pad_token_id is not None else eos}
        if temperature > 0:
            kwargs["temperature"] = temperature
        if stop:
            kwargs.update(stop_strings=stop, tokenizer=self.tok)
        if bias:
            kwargs["logits_processor"] = LogitsProcessorList([_LogitBias(bias)])
        x = torch.tensor([ids], device=next(self.model.parameters()).device)
        with self._lock, torch.no_grad():
            if body.get("seed") is not None:
                torch.manual_seed(int(body["seed"]))
            out = self.model.generate(input_ids=x, attention_mask=torch.ones_like(x), output_scores=True,
                                      return_dict_in_generate=True, **kwargs)
        new = out.sequences[0, len(ids):].tolist()
        token_logprobs = [float(torch.log_softmax(sc[0].float(), -1)[t]) for sc, t in zip(out.scores, new)]
        finish = "stop" if new and new[-1] == eos else "length" if len(new) >= max_tokens else "stop"
        text = self.tok.decode(new, skip_special_tokens=True)
        for s in stop:
            if s in text:
                text, finish = text.split(s)[0], "stop"
        return text, new, token_logprobs, finish


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def make_server(chat: ChatModel, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server answering ``POST /v1/completions`` and ``/v1/chat/completions`` with ``chat`` (call ``serve_forever``)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("[agents.served.server] " + fmt % args + "\n")

        def do_POST(self) -> None:
            routes = {"/v1/chat/completions": chat.complete, "/v1/completions": chat.complete_text}
            answer = routes.get(self.path.rstrip("/"))
            if answer is None:
                return self._send(404, {"error": {"message": f"unknown path {self.path}; use one of {sorted(routes)}"}})
            n = int(self.headers.get("Content-Length") or 0)
            if n > MAX_REQUEST_BYTES:
                return self._send(413, {"error": {"message": "request too large"}})
            try:
                self._send(200, answer(json.loads(self.rfile.read(n))))
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
        p = argparse.ArgumentParser(prog="python -m agents.served.server", description=__doc__.split("\n\n")[0])
        p.add_argument("--model", default="default")
        p.add_argument("--host", default="127.0.0.1")
        p.add_argument("--port", type=int, default=8000)
        a = p.parse_args(list(cfg or []))
        cfg = ServeConfig(model=a.model, host=a.host, port=a.port)
    server = make_server(ChatModel(cfg.model, cfg.max_tokens_cap), cfg.host, cfg.port)
    url = f"http://{cfg.host}:{server.server_address[1]}/v1"
    print(f"serving {cfg.model} at {url}/completions and {url}/chat/completions (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return {"url": url}


if __name__ == "__main__":
    main(sys.argv[1:])
