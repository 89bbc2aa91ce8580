"""Decoders on an OpenAI-compatible server: the completions endpoint (any turn protocol) and the chat endpoint.

A chat-completions server renders the chat itself and cannot continue an open assistant message, so
lead-in protocols (``lead``, ``chat+lead`` -- the default -- and ``inline``) are impossible through
it. The completions endpoint (``POST {base_url}/completions``: vLLM, SGLang, llama.cpp's server, TGI,
:mod:`agents.served.server`) continues any text, so :class:`CompletionsDecoder` sends the conversation that
:mod:`agents.decoding.turns` builds (the served model's chat template rendered here): as text, or with
``token_ids`` as the very ids a local reasoner feeds. Each request sends the whole conversation (a server
re-reads it; prefix caching makes that cheap on vLLM and llama.cpp) and the reply continues it.

So that greedy served episodes equal local ones:

* no stop strings are sent: the server writes until end-of-turn or the cap and the reply is cut where
  the local stop rules stop (:meth:`agents.decoding.turns.Turn.reply`), token by token on this side's
  tokenization of the reply (or on the ids the server sampled, with ``token_ids``). With a server-side
  ``"\\n\\n"`` stop a reply could not tell a step ended by the delimiter from one ended by end-of-turn,
  and the next prompt differs between them.
* special tokens other than end-of-turn get ``logit_bias`` -100 (the local reasoner never samples them);
* the template's tokenizer must be the served model's: every reply's ``usage.prompt_tokens`` is compared
  with the local count of the same prompt and a difference raises :class:`agents.served.completions.TokenizerMismatch`.

A text prompt is exact when the generated text re-tokenizes to the generated tokens, which a
byte-level tokenizer guarantees and a BPE one usually but not always does (SmolLM2 may write
``"\n"`` ``"\n"`` as two tokens where its tokenizer reads ``"\n\n"`` as one). With ``token_ids`` the
sampled ids come back (``logprobs`` with vLLM's ``return_tokens_as_token_ids``, which vLLM and
:mod:`agents.served.server` answer), so the continuation is exact on any tokenizer.

``train=True`` (a LoRA reasoner that rolls out on the server, :mod:`agents.served.train`) also reads the
sampled tokens' log-probs into the records, so the learner can rescore them. Token accounting of a frozen
served reasoner is the server's ``usage`` (the cut does not change what the server wrote).
"""

from __future__ import annotations

import logging
import math
import urllib.error
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from rsim_env.render import CHAT_API_PROTOCOL, STEP_DELIMITER, reasoner_messages_from_observation, whole_answer_turn

from ..decoding.decoder import adapter_key
from ..decoding.turns import Conversation, Turn, Turns
from .completions import APIError, TokenizerMismatch, load_tokenizer, tokenizer_candidate

__all__ = ["CompletionsDecoder", "ChatDecoder", "ServedDecoder", "NEEDS_IDS"]

NEEDS_IDS = ("training a served reasoner needs the sampled token ids and their log-probs: a completions endpoint that "
             "takes token-id prompts and answers logprobs.tokens as 'token_id:N' (vLLM's return_tokens_as_token_ids)")


def _count(conv: Conversation, usage: dict[str, int]) -> None:
    if conv.usage is None:
        conv.usage = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
    conv.usage["requests"] += 1
    for k, v in usage.items():
        conv.usage[k] += v


def _pool_map(fn: Any, jobs: list, concurrency: int) -> list:
    with ThreadPoolExecutor(max_workers=min(concurrency, max(1, len(jobs)))) as pool:
        return list(pool.map(fn, jobs))


class CompletionsDecoder:
    """:class:`agents.decoding.decoder.Decoder` on ``POST {base_url}/completions`` (module docstring).

    Args:
        client: The HTTP client (:class:`agents.served.reasoner.OpenAIClient`: ``cfg``, ``request`` with retries,
            ``count_usage``, ``served_model``).
        turns: The reasoner's turn rules over the served model's tokenizer (``keep_text`` for text prompts).
        token_ids: Prompt with token ids and read back the sampled ids.
        train: Also read the sampled tokens' log-probs (implies ``token_ids``); sampling follows the turns' config.
    """

    def __init__(self, client: Any, turns: Turns, token_ids: bool = False, train: bool = False) -> None:
        self.client, self.turns = client, turns
        self.token_ids, self.train = token_ids or train, train
        self.url = client.cfg.base_url.rstrip("/") + "/completions"
        self.requests = 0
        self._synced: tuple | None = None
        self._count_warned = False
        self.ok = False
        """A request has succeeded (the endpoint exists)."""

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        pass

    def sync(self, scorer: Any) -> bool:
        """Serve ``scorer``'s LoRA adapter if its tensors changed since the last sync (a new name on the server,
        :class:`agents.served.lora.ServedAdapters`); return whether it did."""
        key = adapter_key(scorer.lora.parameters())
        if key == self._synced:
            return False
        self.client.sync_adapter(scorer.lora)
        self._synced = key
        return True

    def decode(self, turns: Sequence[Turn]) -> None:
        bodies = [self._body(t) for t in turns]
        replies = _pool_map(self._post, bodies, self.client.cfg.max_concurrency)
        for turn, body, reply in zip(turns, bodies, replies):
            if self.train:
                self._write(turn, body, reply)
            else:
                self._reply(turn, body, reply)
            self.ok = True

    # ------------------------------------------------------------------------------ requests

    def _body(self, turn: Turn) -> dict[str, Any]:
        conv, cfg, suppressed = turn.conv, self.client.cfg, self.turns.suppressed_ids
        body: dict[str, Any] = {"model": self.client.served_model, "max_tokens": turn.cap,
                                "prompt": list(conv.ids) if self.token_ids else conv.text}
        if self.train:
            rc = self.turns.config
            body.update(temperature=0.0 if rc.greedy else rc.temperature, logprobs=1, return_tokens_as_token_ids=True)
            if not rc.greedy and rc.top_p < 1.0:
                body["top_p"] = rc.top_p
            if rc.seed is not None and not rc.greedy:  # distinct per request: G copies of one prompt must differ
                body["seed"] = rc.seed * 1_000_003 + self.requests
        else:
            body["temperature"] = cfg.temperature
            if cfg.seed is not None:
                body["seed"] = cfg.seed
            if self.token_ids:  # the sampled ids come back as "token_id:N" (vLLM's extension; agents.served.server)
                body.update(logprobs=0, return_tokens_as_token_ids=True)
        if suppressed:
            body["logit_bias"] = {str(i): -100 for i in suppressed}
        self.requests += 1
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return self.client.request(body, self.url)
        except APIError as e:
            code = getattr(e.__cause__, "code", None)
            if self.train and code in (404, 405):
                raise APIError(f"{self.url} answered HTTP {code}: {NEEDS_IDS}; this looks like a chat-only server (or "
                               f"a wrong model name); serve the model with vLLM ({e})") from e
            raise

    def _choice(self, reply: Any) -> dict[str, Any]:
        try:
            choice = reply["choices"][0]
        except (KeyError, IndexError, TypeError) as e:
            raise APIError(f"{self.url}: reply has no choices[0]: {str(reply)[:300]}") from e
        if not isinstance(choice, dict):
            raise APIError(f"{self.url}: reply has no choices[0]: {str(reply)[:300]}")
        return choice

    # ------------------------------------------------------------------------------ frozen: the server's text

    def _reply(self, turn: Turn, body: dict[str, Any], reply: Any) -> None:
        choice = self._choice(reply)
        text, finish = choice.get("text"), choice.get("finish_reason")
        if not isinstance(text, str):
            raise APIError(f"{self.url}: choices[0].text is {type(text).__name__}, expected a string.")
        usage = self.client.count_usage(reply)
        name = getattr(self.client, "tokenizer_name", "?")
        if not self.token_ids:
            self._check_count(body["prompt"], usage["prompt_tokens"], name, first=not turn.conv.step_spans)
            ids = None
        else:
            ids = self._sampled_ids(choice)
            self._check_ids(text, ids, name)
        _count(turn.conv, usage)
        turn.reply(text, ended=finish == "stop", ids=ids)

    def _sampled_ids(self, choice: dict[str, Any]) -> list[int]:
        """The generated ids of a completions choice from ``logprobs.tokens`` as ``"token_id:N"`` (end-of-turn dropped)."""
        lp = choice.get("logprobs")
        tokens = lp.get("tokens") if isinstance(lp, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
            raise APIError(f"{self.url}: token_ids=1 needs the sampled token ids (logprobs.tokens as 'token_id:N', "
                           "vLLM's return_tokens_as_token_ids), which this server does not send; drop #token_ids=1.")
        try:
            ids = [int(t[len("token_id:"):]) for t in tokens]
        except ValueError as e:
            raise APIError(f"{self.url}: logprobs.tokens holds a non-integer token id: {str(tokens)[:200]}") from e
        return ids[:-1] if ids and ids[-1] == self.turns.eos_id else ids

    def _check_count(self, prompt: str, server_count: int, tokenizer_name: str, first: bool = True) -> None:
        """Raise :class:`TokenizerMismatch` when the server counted a conversation's first prompt differently
        (0 = not reported).

        Only the first prompt (template, question, lead-in: no model text yet) must count the same: it shows a wrong
        tokenizer or a doubled BOS. A later prompt also holds the server's replies, which two implementations of the
        same tokenizer may split differently (llama.cpp's server reads ``"plan:\n\n1."`` with one ``"\n\n"`` token
        where the HF tokenizer has two ``"\n"``): that is logged once, not refused.
        """
        if not server_count:
            return
        local = len(self.turns.encode(prompt))
        if local != server_count and not first:
            if not self._count_warned:
                self._count_warned = True
                logging.getLogger(__name__).warning(
                    "%s counted %d prompt tokens where %r counts %d, on a prompt that holds the server's own replies: the "
                    "two tokenizers split that text differently (the first prompts matched, so it is the served model's "
                    "tokenizer); greedy episodes may differ from local ones there. Logged once.", self.url, server_count,
                    tokenizer_name, local)
            return
        if local != server_count:
            hint = (" (one more: the server adds a BOS token the chat template already has)" if server_count == local + 1
                    else "")
            raise TokenizerMismatch(
                f"{self.url}: the server counted {server_count} prompt tokens where the local tokenizer "
                f"{tokenizer_name!r} counts {local} for the same prompt{hint}: the chat template is rendered with a "
                "tokenizer that is not the served model's; pass the served model's as #tokenizer=HUB_ID_OR_DIR, or "
                "#endpoint=chat (no lead-in protocols).")

    def _check_ids(self, reply: str, reply_ids: Sequence[int], tokenizer_name: str) -> None:
        """Raise :class:`TokenizerMismatch` when the local tokenizer decodes the server's ids to other text."""
        tok = self.turns.tokenizer
        local = tok.decode([i for i in reply_ids if i != self.turns.eos_id], skip_special_tokens=True)
        if local != reply:
            raise TokenizerMismatch(
                f"{self.url}: the server's generated token ids decode to {local[:60]!r} with the local tokenizer "
                f"{tokenizer_name!r}, but the server wrote {reply[:60]!r}: the tokenizer is not the served model's; "
                "pass the served model's as #tokenizer=HUB_ID_OR_DIR.")

    # ------------------------------------------------------------------------------ training: ids and log-probs

    def _write(self, turn: Turn, body: dict[str, Any], reply: Any) -> None:
        """Write the reply's tokens with their log-probs up to where the local reasoner stops."""
        ids, logprobs, finish = self._parse_logprobs(reply, body)
        for tok, lp in zip(ids, logprobs):
            if turn.write(tok, lp):
                return
        raise APIError(f"{self.url}: the server ended a step after {len(turn.tokens)} of {turn.cap} tokens (finish_reason "
                       f"{finish!r}) without end-of-turn, where the local reasoner goes on: remove server-side stop "
                       "strings or a generation config that stops early, or raise the server's --max-model-len.")

    def _parse_logprobs(self, reply: Any, body: dict[str, Any]) -> tuple[list[int], list[float], str]:
        """``(sampled ids, their log-probs, finish_reason)`` of a completions reply (checked)."""
        try:
            choice = reply["choices"][0]
            lp = choice["logprobs"] or {}
            tokens, logprobs = lp.get("tokens"), lp.get("token_logprobs")
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise APIError(f"{self.url}: {NEEDS_IDS}; the reply has no choices[0].logprobs: {str(reply)[:300]}") from e
        if (not isinstance(tokens, list) or not tokens or not isinstance(logprobs, list) or len(logprobs) != len(tokens)
                or not all(isinstance(t, str) and t.startswith("token_id:") and t[9:].isdigit() for t in tokens)):
            raise APIError(f"{self.url}: {NEEDS_IDS}, which this server does not send (tokens: {str(tokens)[:80]}); "
                           "serve the model with vLLM, or set model.reasoner_lora.enabled=false.")
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in logprobs):
            raise APIError(f"{self.url}: token_logprobs holds a value that is not a finite number: {str(logprobs)[:200]}")
        ids = [int(t[9:]) for t in tokens]
        usage = self.client.count_usage(reply)
        if usage["prompt_tokens"] and usage["prompt_tokens"] != len(body["prompt"]):
            raise TokenizerMismatch(f"{self.url}: the server counted {usage['prompt_tokens']} prompt tokens for the "
                                    f"{len(body['prompt'])} token ids sent; it does not take token-id prompts as they are.")
        text = choice.get("text")
        local = self.turns.tokenizer.decode([i for i in ids if i != self.turns.eos_id], skip_special_tokens=True)
        if isinstance(text, str) and text != local:
            raise TokenizerMismatch(
                f"{self.url}: the server's token ids decode to {local[:60]!r} with the learner's tokenizer but the "
                f"server wrote {text[:60]!r}: it serves another tokenizer; pass the served base as #hf=HUB_ID_OR_DIR.")
        return ids, [float(x) for x in logprobs], str(choice.get("finish_reason"))


class ChatDecoder:
    """:class:`agents.decoding.decoder.Decoder` on ``POST {base_url}/chat/completions``: each turn sends the chat
    built by :func:`rsim_env.render.reasoner_messages` (every strategy its own user turn, every step its own
    assistant turn) and the reply is the step. Only the ``chat`` protocol (and no-planner mode) works; a lead-in
    protocol is refused in one line naming ``why`` the chat endpoint is in use.
    """

    def __init__(self, client: Any, why: str = "") -> None:
        self.client, self.why = client, why

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        pass

    def decode(self, turns: Sequence[Turn]) -> None:
        cfg = self.client.cfg
        for t in turns:
            proto = t.observation.get("protocol", CHAT_API_PROTOCOL)
            if proto not in (CHAT_API_PROTOCOL, "none"):
                # the environment would grade lead-in + reply while the server never saw the lead-in
                raise ValueError(
                    f"the served reasoner {cfg.model!r} is reached through {self.client.url} ({self.why}); a chat "
                    f"API cannot continue an open assistant message, so the lead-in protocol {proto!r} is impossible "
                    "there: serve the model with a completions endpoint (vLLM, llama.cpp's server, TGI, python -m "
                    "agents.served.server) and name its tokenizer (#tokenizer=HUB_ID_OR_DIR), or run with "
                    f"--set env.protocol={CHAT_API_PROTOCOL} (rsim train and rsim eval).")
        jobs = [reasoner_messages_from_observation(t.observation) for t in turns]
        replies = _pool_map(self.client.complete, jobs, cfg.max_concurrency)
        for turn, messages, (text, usage) in zip(turns, jobs, replies):
            _count(turn.conv, usage)
            # A server that ignores ``stop`` may write several steps; keep the first (planner mode only).
            single = whole_answer_turn(messages)
            turn.text = text.strip().split(STEP_DELIMITER)[0] if cfg.stop_at_delimiter and not single else text
            turn.done = True


class ServedDecoder:
    """The decoder of an ``openai:`` reasoner: completions or chat, chosen once (``OpenAIConfig.endpoint``).

    ``auto`` takes the completions endpoint when a tokenizer for the template is at hand (``#tokenizer=``, or the
    model name is ``default``, ``tiny``, a local dir or a hub id) and falls back to chat when the server answers
    404/405 there before any completions request succeeded. The client (``usage()``, ``served_model``, adapters) is
    :attr:`client`; :class:`agents.served.reasoner.ServedReasoner` exposes it on the reasoner.

    Args:
        client: The :class:`agents.served.reasoner.OpenAIClient`.
        config: The :class:`agents.reasoner.ReasonerConfig` of the turns (caps, stop rules).
    """

    def __init__(self, client: Any, config: Any) -> None:
        self.client, self.config = client, config
        self.route: CompletionsDecoder | ChatDecoder | None = None
        self._turns: Turns | None = None

    @property
    def turns(self) -> Turns:
        """The turn rules over the served model's tokenizer (None for the chat route: the server renders)."""
        self._choose()
        return self._turns

    @property
    def fingerprint(self) -> str:
        """What :mod:`agents.replay.reasoner` keys this decoder's steps by: the served model's name and the request
        form (tokenizer, endpoint, token ids). The client cannot see the server's weights, so a served model is its
        name: serve other weights under another name. Raises ``TypeError`` once a LoRA adapter is synced (a trained
        reasoner is not frozen)."""
        cfg = self.client.cfg
        if self.client.served_model != cfg.model:
            raise TypeError(f"cannot fingerprint a served reasoner decoding through adapter "
                            f"{self.client.served_model!r} for replay; replay the base model.")
        return f"openai:{cfg.model}|tokenizer={cfg.tokenizer}|endpoint={cfg.endpoint}|token_ids={cfg.token_ids}"

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        pass

    def decode(self, turns: Sequence[Turn]) -> None:
        route = self._choose()
        if isinstance(route, CompletionsDecoder):
            try:
                return route.decode(turns)
            except APIError as e:
                if not self._falls_back(e, route):
                    raise
        self.route.decode(turns)

    def _choose(self) -> CompletionsDecoder | ChatDecoder:
        if self.route is not None:
            return self.route
        cfg, why = self.client.cfg, ""
        name = tokenizer_candidate(cfg.model, cfg.tokenizer) if cfg.endpoint != "chat" else None
        if cfg.endpoint == "chat":
            why = "endpoint=chat was asked for"
        elif name is None and cfg.endpoint == "completions":
            raise ValueError(f"endpoint=completions renders the chat template here and needs the served model's "
                             f"tokenizer; the model name {cfg.model!r} names none: pass #tokenizer=HUB_ID_OR_DIR.")
        elif name is None:
            why = (f"no tokenizer to render its chat template: the model name {cfg.model!r} names none, "
                   "pass #tokenizer=HUB_ID_OR_DIR")
        else:
            try:
                tok = load_tokenizer(name)
            except ValueError as e:
                if cfg.endpoint == "completions" or cfg.tokenizer:
                    raise
                why = f"no tokenizer to render its chat template: {e}"
            else:
                self.client.tokenizer_name = name
                self._turns = Turns(tok, self.config, keep_text=not cfg.token_ids)
                self.route = CompletionsDecoder(self.client, self._turns, token_ids=bool(cfg.token_ids))
                return self.route
        self._turns = Turns(None, self.config)
        self.route = ChatDecoder(self.client, why)
        return self.route

    def _falls_back(self, error: APIError, route: CompletionsDecoder) -> bool:
        """Under ``endpoint="auto"``, a server without the completions endpoint switches this reasoner to chat."""
        cause = error.__cause__
        if (self.client.cfg.endpoint != "auto" or route.ok or not isinstance(cause, urllib.error.HTTPError)
                or cause.code not in (404, 405)):
            return False
        self.route = ChatDecoder(self.client, f"{route.url} answered HTTP {cause.code}: a chat-only server (or a "
                                              "wrong model name)")
        return True
