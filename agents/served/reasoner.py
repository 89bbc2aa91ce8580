"""A reasoner served by any OpenAI-compatible API (vLLM, SGLang, llama.cpp, TGI, hosted), under every protocol.

Endpoints (``OpenAIConfig.endpoint``):

* ``completions`` (``{base_url}/completions``): the chat template is rendered here with the served
  model's tokenizer and each round's lead-in appended, so every turn protocol works -- the default
  ``chat+lead`` included -- and greedy episodes equal the local reasoner's (:mod:`agents.served.decoder`).
* ``chat`` (``{base_url}/chat/completions``): each turn sends the chat built by
  :func:`rsim_env.render.reasoner_messages` (every strategy its own user turn, every step its own
  assistant turn) and returns the reply as the step. A chat API cannot continue an open assistant
  message, so only the ``chat`` protocol (and no-planner mode) works; a lead-in protocol is refused
  with a one-line message.
* ``auto`` (default): completions when a tokenizer for the template is at hand (``#tokenizer=``, or
  the model name is ``default``, ``tiny``, a local dir or a hub id) and the server has the endpoint;
  otherwise chat.

The batch of live copies is sent concurrently (at most
``max_concurrency`` requests in flight); 429 / 5xx / connection errors and timeouts are retried
with exponential backoff (honouring ``Retry-After``); other errors raise at once with the server's
message, and so does a 5xx whose body names a validation error (llama_cpp.server answers a request that fails
its schema with HTTP 500): the line says the server refused the request's form and what to change. Tokens (as
the server reports them) and an optional price are counted per run
(:meth:`OpenAIClient.usage`, which :class:`ServedReasoner` exposes). The key is read from the environment variable named by
``api_key_env``, never from a config file. HTTP is the standard library's (no SDK); the completions route
renders the chat template with a ``transformers`` tokenizer (no torch model is loaded)::

    from agents.served.reasoner import OpenAIReasoner, OpenAIConfig
    reasoner = OpenAIReasoner(OpenAIConfig(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-7B-Instruct"))
    out = algos.rollout.rollout(groups, reasoner, planner)      # any Policy-driven loop works
    reasoner.usage()   # {"requests": ..., "prompt_tokens": ..., "completion_tokens": ..., "cost": ...}

LoRA adapters on a vLLM server (``vllm serve BASE --enable-lora`` with
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``): :meth:`OpenAIClient.sync_adapter` saves the adapter
(a PEFT dir, ``adapter_dir`` must be readable by the server), loads it by a step-specific name
(``POST /v1/load_lora_adapter``), unloads the previous one (``/v1/unload_lora_adapter``) and sends
the new name as ``model`` in every later request. With ``model.reasoner_lora.enabled=true`` the spec trains:
:mod:`agents.served.train` rolls out through token-id prompts and reads back the sampled ids and log-probs
(``#hf=`` names the torch base, ``#logprobs_mode=`` what the server's log-probs are).

Spec form (for registries / the CLI): ``openai:MODEL@URL``, see :func:`parse_spec`; e.g.
``openai:default@http://127.0.0.1:8000/v1`` (``python -m agents.served.server``) or
``openai:my-model@http://host:8000/v1#tokenizer=Qwen/Qwen2.5-7B-Instruct``.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from rsim_env.render import STEP_DELIMITER, whole_answer_turn

from ..reasoner import Reasoner
from .completions import APIError, refused_form
from .lora import ServedAdapters

__all__ = ["OpenAIConfig", "OpenAIClient", "OpenAIReasoner", "ServedReasoner", "APIError", "parse_spec", "build",
           "build_trainable"]

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""Larger responses are refused (a server reply is untrusted input)."""
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
ENDPOINTS = ("auto", "completions", "chat")


@dataclass(frozen=True)
class OpenAIConfig:
    """Connection and decoding settings of :class:`OpenAIReasoner`."""

    base_url: str
    """API root including the version, e.g. "http://127.0.0.1:8000/v1" (…/completions or …/chat/completions is appended)."""
    model: str
    """Model name the server knows."""
    endpoint: str = "auto"
    """"completions" (template rendered here: every protocol), "chat" (only the chat protocol) or "auto"
    (completions when a tokenizer is at hand and the server has the endpoint, else chat)."""
    tokenizer: str = ""
    """Tokenizer of the served model, for the chat template (hub id, local dir, "default", "tiny");
    "" = the model name when it names one."""
    token_ids: int = 0
    """1: completions prompts are token ids and the sampled ids are read back (vLLM, agents.served.server): exact
    continuation on any tokenizer (see :mod:`agents.served.completions`); 0: text prompts (any completions server)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the API key; unset or empty = no Authorization header (local servers)."""
    max_concurrency: int = 8
    """Requests in flight at once."""
    max_retries: int = 4
    """Retries of a request after a 429 / 5xx / connection error / timeout (not a 5xx naming a validation error)."""
    backoff_s: float = 0.5
    """First retry delay; doubles each retry (with jitter), capped at 30 s; Retry-After wins if longer."""
    timeout_s: float = 60.0
    """Per-request timeout (connect + read)."""
    max_step_tokens: int = 256
    """``max_tokens`` of one step."""
    max_answer_tokens: int = 1024
    """``max_tokens`` of the single answer in no-planner mode and of a code problem's final program."""
    temperature: float = 0.0
    """Sampling temperature (0 = greedy on most servers)."""
    stop_at_delimiter: bool = True
    """Send ``stop=["\\n\\n"]`` so a reply is one step (not in no-planner mode, nor for a code program)."""
    price_prompt_per_1m: float = 0.0
    """Price per million prompt tokens (for the cost count; 0 = not counted)."""
    price_completion_per_1m: float = 0.0
    """Price per million completion tokens."""
    seed: int | None = None
    """Seed sent to the server (if it supports one) and of the backoff jitter."""
    adapter_dir: str = ""
    """Where :meth:`OpenAIReasoner.sync_adapter` saves each step's LoRA adapter; the server reads it from there
    (a shared path when it runs elsewhere). "" = a temporary dir (the server runs on this machine)."""
    hf: str = ""
    """LoRA training only (:mod:`agents.served.train`): the torch model the adapter learns on, the served base's
    weights (hub id, local dir, "default", "tiny"); "" = the model name when it names one."""
    logprobs_mode: str = "raw"
    """LoRA training only: what the server's log-probs are. "raw" (vLLM's default ``raw_logprobs``: before
    temperature and logit bias) or "processed" (``vllm serve --logprobs-mode processed_logprobs``: after them)."""

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"OpenAIConfig.base_url={self.base_url!r}: use an http(s) URL such as "
                             "http://127.0.0.1:8000/v1.")
        if not self.model:
            raise ValueError("OpenAIConfig.model is empty; pass the model name the server serves.")
        if self.token_ids not in (0, 1) or isinstance(self.token_ids, bool):
            raise ValueError(f"OpenAIConfig.token_ids={self.token_ids!r}: use 0 (text prompts) or 1 (token-id prompts).")
        if self.logprobs_mode not in ("raw", "processed"):
            raise ValueError(f"OpenAIConfig.logprobs_mode={self.logprobs_mode!r}: use 'raw' (vLLM's default) or "
                             "'processed' (vllm serve --logprobs-mode processed_logprobs).")
        if self.endpoint not in ENDPOINTS:
            raise ValueError(f"OpenAIConfig.endpoint={self.endpoint!r}: use one of {ENDPOINTS}.")
        for name in ("max_concurrency", "max_step_tokens", "max_answer_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"OpenAIConfig.{name}={v!r}: use an int >= 1.")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError(f"OpenAIConfig.max_retries={self.max_retries!r}: use an int >= 0.")
        for name in ("backoff_s", "timeout_s", "temperature", "price_prompt_per_1m", "price_completion_per_1m"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or v < 0 or (name == "timeout_s" and v == 0):
                raise ValueError(f"OpenAIConfig.{name}={v!r}: use a non-negative number (timeout > 0).")


_INT_FIELDS = ("max_concurrency", "max_retries", "max_step_tokens", "max_answer_tokens", "seed", "token_ids")
_FLOAT_FIELDS = ("backoff_s", "timeout_s", "temperature", "price_prompt_per_1m", "price_completion_per_1m")
_STR_FIELDS = ("api_key_env", "endpoint", "tokenizer", "adapter_dir", "hf", "logprobs_mode")


def _spec_options(text: str, spec: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in filter(None, text.split("&")):
        key, eq, value = item.partition("=")
        if not eq or key not in (*_INT_FIELDS, *_FLOAT_FIELDS, *_STR_FIELDS):
            raise ValueError(f"reasoner spec {spec!r}: option {item!r} is not KEY=VALUE with KEY one of "
                             f"{sorted((*_INT_FIELDS, *_FLOAT_FIELDS, *_STR_FIELDS))}.")
        try:
            out[key] = int(value) if key in _INT_FIELDS else float(value) if key in _FLOAT_FIELDS else value
        except ValueError as e:
            raise ValueError(f"reasoner spec {spec!r}: option {key}={value!r} is not a number.") from e
    return out


def parse_spec(spec: str, **overrides: Any) -> OpenAIConfig:
    """``"openai:MODEL@URL[#key=value&...]"`` -> :class:`OpenAIConfig` (``MODEL`` may contain ``/`` and ``:``).

    Options after ``#`` set :class:`OpenAIConfig` fields, e.g. ``#max_concurrency=16&timeout_s=30`` or
    ``#tokenizer=Qwen/Qwen2.5-7B-Instruct&endpoint=completions``; keyword ``overrides`` win over both.
    """
    body = spec[len("openai:"):] if spec.startswith("openai:") else spec
    body, _, options = body.partition("#")
    overrides = {**_spec_options(options, spec), **overrides}
    model, sep, url = body.rpartition("@")
    if not sep or not model or not url.startswith(("http://", "https://")):
        raise ValueError(f"reasoner spec {spec!r}: expected openai:MODEL@URL, e.g. "
                         "openai:Qwen/Qwen2.5-7B-Instruct@http://127.0.0.1:8000/v1")
    return OpenAIConfig(base_url=url, model=model, **overrides)


def build(rest: str, ctx: Any) -> Any:
    """Agent-registry builder for ``openai:MODEL@URL[#options]`` (see :mod:`agents.registry`).

    Decoding settings come from the role's config when it has them (``rsim eval``'s
    ``--set reasoner.max_step_tokens``, greedy for k = 1, ``--temperature``); options in the spec win.
    """
    from ..registry import Built

    if ctx.role != "reasoner":
        raise ValueError("spec 'openai:MODEL@URL' is a reasoner; a planner needs another spec.")
    if getattr(ctx.lora, "enabled", False):  # trained: rollouts on the server, updates in torch (agents.served.train)
        return build_trainable(rest, ctx)
    c = ctx.config
    derived: dict[str, Any] = {"seed": ctx.seed}
    if c is not None:
        derived["max_step_tokens"] = int(getattr(c, "max_step_tokens", 256))
        if getattr(c, "max_answer_tokens", 0):
            derived["max_answer_tokens"] = int(c.max_answer_tokens)
        derived["temperature"] = 0.0 if getattr(c, "greedy", False) else float(getattr(c, "temperature", 0.0))
    spec = "openai:" + rest
    explicit = _spec_options(rest.partition("#")[2], spec)
    cfg = parse_spec(spec, **{k: v for k, v in derived.items() if k not in explicit})
    reasoner = OpenAIReasoner(cfg)
    return Built(reasoner, {"kind": "openai", "model": cfg.model, "base_url": cfg.base_url, "endpoint": cfg.endpoint,
                            "tokenizer": cfg.tokenizer, "max_concurrency": cfg.max_concurrency,
                            "temperature": cfg.temperature, "max_step_tokens": cfg.max_step_tokens})


def build_trainable(rest: str, ctx: Any) -> Any:
    """Registry builder for ``openai:MODEL@URL[#hf=..&logprobs_mode=..]`` with ``ctx.lora`` enabled.

    The reasoner rolls out on the server (:class:`agents.served.decoder.CompletionsDecoder` with ``train``: token-id
    prompts, the sampled ids and log-probs read back) and learns in torch (the learner's LoRA scorer), see
    :mod:`agents.served.train`; torch is imported only here, on demand.
    """
    from ..hf.loading import load_causal_lm, tiny_model
    from ..reasoner import ReasonerConfig
    from ..registry import Built, _torch_dtype, _with_lora
    from .decoder import NEEDS_IDS, CompletionsDecoder
    from .train import base_spec, check_logprobs_mode

    cfg = parse_spec("openai:" + rest)
    if cfg.endpoint == "chat":
        raise ValueError(f"{NEEDS_IDS}; #endpoint=chat cannot train: drop it and serve the model with vLLM, or set "
                         "model.reasoner_lora.enabled=false for a frozen served reasoner.")
    config = ctx.config if isinstance(ctx.config, ReasonerConfig) else ReasonerConfig(seed=ctx.seed)
    check_logprobs_mode(config, cfg.logprobs_mode)
    base = base_spec(cfg.model, cfg.hf, cfg.tokenizer)
    load = ((lambda: tiny_model("causal", seed=ctx.seed)) if base == "tiny"
            else (lambda: load_causal_lm(base, dtype=_torch_dtype(ctx.dtype))))
    learner = _with_lora(base, ctx, load).agent
    decoder = CompletionsDecoder(OpenAIClient(cfg), learner.turns, train=True)
    agent = ServedReasoner(config=learner.config, decoder=decoder, scorer=learner.scorer, turns=learner.turns)
    return Built(agent,
                 {"kind": "openai", "model": cfg.model, "base_url": cfg.base_url, "lora": True, "learner": base,
                  "logprobs_mode": cfg.logprobs_mode, "max_concurrency": cfg.max_concurrency})


def reasoner_config(cfg: OpenAIConfig) -> Any:
    """The turns' :class:`agents.reasoner.ReasonerConfig` of a frozen served reasoner: its caps, greedy at
    temperature 0, the local stop rules (the server is sent none, :mod:`agents.served.decoder`)."""
    from ..reasoner import ReasonerConfig

    return ReasonerConfig(max_step_tokens=cfg.max_step_tokens, max_answer_tokens=cfg.max_answer_tokens,
                          greedy=cfg.temperature == 0, temperature=cfg.temperature or 1.0, seed=cfg.seed)


class ServedReasoner(Reasoner):
    """A :class:`agents.reasoner.Reasoner` whose decoder talks to an OpenAI-compatible server through an
    :class:`OpenAIClient` (:class:`agents.served.decoder.ServedDecoder`, or a training
    :class:`~agents.served.decoder.CompletionsDecoder`): the client's counters and LoRA adapters are the reasoner's."""

    @property
    def client(self) -> "OpenAIClient":
        """The HTTP client of this reasoner's decoder."""
        return self.decoder.client

    @property
    def cfg(self) -> "OpenAIConfig":
        """The client's :class:`OpenAIConfig` (server, model, retries, concurrency)."""
        return self.client.cfg

    def usage(self) -> dict[str, Any]:
        """:meth:`OpenAIClient.usage`: requests, retries, prompt/completion tokens and cost since construction."""
        return self.client.usage()

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int]]:
        """:meth:`OpenAIClient.complete`: one chat completion outside any episode, ``(text, token counts)``."""
        return self.client.complete(messages)

    @property
    def served_model(self) -> str:
        """:attr:`OpenAIClient.served_model`: the synced LoRA adapter's name, else the base model's."""
        return self.client.served_model

    @property
    def adapters(self) -> ServedAdapters:
        """The LoRA adapters loaded on the server (:class:`agents.served.lora.ServedAdapters`)."""
        return self.client.adapters

    def sync_adapter(self, adapter: Any) -> str:
        """:meth:`OpenAIClient.sync_adapter`: serve the next requests from this LoRA adapter; return its name."""
        return self.client.sync_adapter(adapter)

    def unload_adapter(self) -> None:
        """:meth:`OpenAIClient.unload_adapter`: serve the base model again."""
        self.client.unload_adapter()


def OpenAIReasoner(config: OpenAIConfig) -> ServedReasoner:
    """A :class:`ServedReasoner` on an OpenAI-compatible API (module docstring): its decoder is
    :class:`agents.served.decoder.ServedDecoder` on an :class:`OpenAIClient`."""
    from .decoder import ServedDecoder

    rc = reasoner_config(config)
    return ServedReasoner(config=rc, decoder=ServedDecoder(OpenAIClient(config), rc))


def from_spec(spec: str, **overrides: Any) -> Any:
    """:func:`OpenAIReasoner` from ``"openai:MODEL@URL"`` (see :func:`parse_spec`)."""
    return OpenAIReasoner(parse_spec(spec, **overrides))


OpenAIReasoner.from_spec = from_spec  # the class-style constructor callers know


class OpenAIClient:
    """HTTP to an OpenAI-compatible server: requests with retries, token and cost totals, LoRA adapters."""

    def __init__(self, config: OpenAIConfig) -> None:
        self.cfg = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self._lock = threading.Lock()
        self._rng = random.Random(config.seed)
        self._totals = {"requests": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self.adapters = ServedAdapters(self)  # LoRA adapters loaded on the server (sync_adapter)

    def usage(self) -> dict[str, Any]:
        """Totals since construction: requests, retries, prompt/completion tokens and cost."""
        with self._lock:
            t = dict(self._totals)
        t["cost"] = (t["prompt_tokens"] * self.cfg.price_prompt_per_1m
                     + t["completion_tokens"] * self.cfg.price_completion_per_1m) / 1e6
        return t

    # -- LoRA adapters (vLLM's runtime LoRA API; agents.served.lora) ------------------------
    @property
    def served_model(self) -> str:
        """The ``model`` of every request: the synced LoRA adapter's name, else the base's."""
        return self.adapters.name or self.cfg.model

    def sync_adapter(self, adapter: Any) -> str:
        """Serve the next requests from this LoRA adapter (a PEFT dir or an :class:`agents.hf.lora.AdapterSlot`);
        return its served name. See :meth:`agents.served.lora.ServedAdapters.sync`."""
        return self.adapters.sync(adapter)

    def unload_adapter(self) -> None:
        """Serve the base model again (unloads the synced adapter)."""
        self.adapters.unload()

    # -- HTTP ---------------------------------------------------------------------------------
    def complete(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int]]:
        """One chat completion (with retries); returns ``(text, {"prompt_tokens", "completion_tokens"})``."""
        single = whole_answer_turn(messages)
        body: dict[str, Any] = {"model": self.served_model, "messages": messages, "temperature": self.cfg.temperature,
                                "max_tokens": self.cfg.max_answer_tokens if single else self.cfg.max_step_tokens}
        if self.cfg.stop_at_delimiter and not single:
            body["stop"] = [STEP_DELIMITER]
        if self.cfg.seed is not None:
            body["seed"] = self.cfg.seed
        return self._parse(self.request(body))

    def request(self, body: dict[str, Any], url: str | None = None, raw: bool = False) -> Any:
        """POST ``body`` as JSON to ``url`` (default: the chat endpoint) with retries; the decoded reply
        (``raw``: its text, for endpoints that answer plain text)."""
        url = url or self.url
        data = json.dumps(body).encode()
        for attempt in range(self.cfg.max_retries + 1):
            try:
                return self._post(data, url, raw)
            except _Retryable as e:
                if attempt == self.cfg.max_retries:
                    raise APIError(f"{url}: gave up after {attempt + 1} attempts; last error: {e}. Check that "
                                   "the server is up and not overloaded, or raise max_retries / timeout_s.") from e
                with self._lock:
                    self._totals["retries"] += 1
                time.sleep(_log_retry(url, attempt, self.cfg.max_retries, self._delay(attempt, e.retry_after), e))
        raise AssertionError("unreachable")

    def count_usage(self, reply: dict[str, Any]) -> dict[str, int]:
        """The reply's ``usage`` (prompt/completion tokens, 0 when absent), added to the run's totals."""
        u = reply.get("usage") or {}
        usage = {k: int(u.get(k) or 0) for k in ("prompt_tokens", "completion_tokens")}
        with self._lock:
            for k, v in usage.items():
                self._totals[k] += v
        return usage

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        with self._lock:
            jitter = 0.5 + self._rng.random()
        d = min(30.0, self.cfg.backoff_s * (2 ** attempt) * jitter)
        return max(d, min(60.0, retry_after)) if retry_after is not None else d

    def _post(self, data: bytes, url: str | None = None, raw_text: bool = False) -> Any:
        url = url or self.url
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.cfg.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(url, data=data, headers=headers, method="POST")
        with self._lock:
            self._totals["requests"] += 1
        try:
            with urllib.request.urlopen(req, timeout=self.cfg.timeout_s) as resp:
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as e:
            detail = e.read(2000).decode("utf-8", "replace")
            refused = refused_form(e.code, detail, data, self.cfg.token_ids)
            if refused is not None:  # the same request would fail the same way: no retry, and say what to change
                raise APIError(f"{url} refused this request's form (HTTP {e.code}, not retried: it would fail the same "
                               f"way again): {refused}") from e
            if e.code in RETRY_STATUS:
                raise _Retryable(f"HTTP {e.code}: {detail[:200]}", _retry_after(e.headers.get("Retry-After"))) from e
            hint = {401: f"check the key in ${self.cfg.api_key_env}", 403: f"check the key in ${self.cfg.api_key_env}",
                    404: "check base_url (it usually ends in /v1) and the model name"}.get(e.code, "see the message")
            raise APIError(f"{url} answered HTTP {e.code} ({hint}): {detail[:500]}") from e
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, http.client.IncompleteRead) as e:
            raise _Retryable(f"{type(e).__name__}: {e}", None) from e
        if raw_text:
            return raw[:MAX_RESPONSE_BYTES].decode("utf-8", "replace")
        if not raw.strip():  # the connection closed before the reply's body (e.g. the server died mid-answer)
            raise _Retryable("empty response body", None)
        if len(raw) > MAX_RESPONSE_BYTES:
            raise APIError(f"{url}: response larger than {MAX_RESPONSE_BYTES} bytes; refusing it.")
        try:
            return json.loads(raw)
        except json.JSONDecodeError as e:
            raise APIError(f"{url}: response is not JSON ({e.msg}): {raw[:200]!r}") from e

    def _parse(self, reply: dict[str, Any]) -> tuple[str, dict[str, int]]:
        try:
            content = reply["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise APIError(f"{self.url}: reply has no choices[0].message: {str(reply)[:300]}") from e
        if not isinstance(content, str):
            raise APIError(f"{self.url}: message content is {type(content).__name__}, expected a string.")
        return content, self.count_usage(reply)


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _log_retry(url: str, attempt: int, max_retries: int, delay: float, error: Exception) -> float:
    """Say on the ``agents.served.reasoner`` logger that a request failed and will be retried; returns ``delay``.

    One WARNING line per retry (a server that went away shows up in the log, not only as a slow run).
    """
    logging.getLogger(__name__).warning("served reasoner %s: %s; retry %d/%d in %.1f s", url, error, attempt + 1,
                                        max_retries, delay)
    return delay


def _retry_after(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
