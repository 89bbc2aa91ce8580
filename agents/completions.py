"""Served reasoners under every turn protocol: the completions endpoint, the chat template rendered here.

A chat-completions server renders the chat itself and cannot continue an open assistant message,
so lead-in protocols (``lead``, ``chat+lead`` -- the default -- and ``inline``) are impossible
through it. The completions endpoint (``POST {base_url}/completions``: vLLM, SGLang, llama.cpp's
server, TGI, :mod:`agents.serve`) continues any text, so this client renders the served model's
chat template itself and keeps, per copy, the text whose tokens the local
:class:`agents.reasoner.Reasoner` would have fed (same pieces in the same order, see
:meth:`TextTurns.start`): prompt, lead-in, the generated text, end-of-turn, turn glue, the next
instruction... Each request sends the whole text (a server re-reads it; prefix caching makes that
cheap on vLLM and llama.cpp) and the reply continues it.

So that greedy served episodes equal local ones:

* no stop strings are sent: the server writes until end-of-turn or the cap and the client applies
  the local stop rules (:func:`agents.turns.step_stops`) token by token on its own tokenization of
  the reply, keeping the text up to where the local reasoner stops. (With a server-side ``"\\n\\n"``
  stop a reply could not tell a step ended by the delimiter from one ended by end-of-turn, and the
  next prompt differs between them.)
* special tokens other than end-of-turn get ``logit_bias`` -100 (the local reasoner never samples them);
* the template's tokenizer (:func:`load_tokenizer`) must be the served model's: every reply's
  ``usage.prompt_tokens`` is compared with the local count of the same prompt and a difference
  raises :class:`TokenizerMismatch` naming both counts and the fix.

A text prompt is exact when the generated text re-tokenizes to the generated tokens, which a
byte-level tokenizer guarantees and a BPE one usually but not always does (SmolLM2 may write
``"\n"`` ``"\n"`` as two tokens where its tokenizer reads ``"\n\n"`` as one). With ``token_ids``
the client sends every prompt as token ids built exactly as the local reasoner builds them (each
piece encoded on its own, the generated ids as the server sampled them: ``logprobs`` with vLLM's
``return_tokens_as_token_ids``, which vLLM and :mod:`agents.serve` answer), so the continuation is
exact on any tokenizer; the mismatch check then compares the server's text with the local
decoding of its ids.

Token accounting is the server's ``usage`` (the client's cut does not change what the server wrote).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from rsim_env import kinds
from rsim_env.kinds import Kind
from rsim_env.render import REASONER_SYSTEM, STEP_DELIMITER, no_planner_chat
from rsim_env.strategies import TERMINATION

from .turns import step_stops, turn_glue

__all__ = ["APIError", "TokenizerMismatch", "TextTurns", "Conversation", "load_tokenizer", "tokenizer_candidate",
           "refused_form"]


class APIError(RuntimeError):
    """The server refused a request (not retried) or retries ran out.

    Every served module raises it (this client, :mod:`agents.openai_reasoner`, which re-exports it, and the
    served LoRA modules); it lives at the bottom of that stack so that none of them imports another to get it.
    """


_REFUSAL = re.compile(r"\bvalidation errors?\b|ValidationError|invalid_request_error|\bInput should be\b|"
                      r"\b(?:type|value)_error\b|\bstring_type\b", re.IGNORECASE)
"""What a 5xx body says when the server refused the request's form rather than failed to serve it: pydantic's and
FastAPI's validation errors (llama_cpp.server answers those with HTTP 500) and OpenAI's ``invalid_request_error``."""


_LOC_MSG = re.compile(r"""['"]loc['"]: [(\[]((?:[^()\[\]]|\[[^\]]*\])*)[)\]], ['"]msg['"]: ['"]([^'"]*)['"]""")
"""``loc`` and ``msg`` of each error in a pydantic / FastAPI validation error (Python repr or JSON)."""
_QUOTES = " '\""


def refused_form(code: int, detail: str, data: bytes, token_ids: int = 0) -> str | None:
    """``"<the server's message>; <what to change>."`` when HTTP ``code`` with body ``detail`` refuses the generation
    request ``data`` (JSON; ``token_ids``: the spec's ``#token_ids``) itself, else None.

    Such a request fails the same way every time, so it is not retried: HTTP 400 and 422 always, and a 5xx whose
    body names a validation or type error. Any other 5xx may be transient (None: retried as before), and a request
    that generates nothing (a LoRA load or unload) keeps the plain handling (None).
    """
    if not (code in (400, 422) or (500 <= code < 600 and _REFUSAL.search(detail))):
        return None
    try:
        body = json.loads(data)
    except ValueError:
        return None
    if not isinstance(body, dict) or not ("prompt" in body or "messages" in body):
        return None
    prompt = body.get("prompt")
    if not (isinstance(prompt, list) and prompt and all(isinstance(i, int) for i in prompt)):
        fix = ("its message names what it refused: change or drop the reasoner-spec option that sets it (see "
               "agents.openai_reasoner.parse_spec), or use a server that accepts it")
    elif token_ids:
        fix = ("this server takes no token-id prompts: drop #token_ids=1 from the reasoner spec (text prompts), or "
               "serve the model with vLLM or python -m agents.serve, which take them")
    else:  # agents.served_train's roller: token ids are how it trains
        fix = ("this server takes no token-id prompts, which training a served reasoner needs: serve the model "
               "with vLLM, or set model.reasoner_lora.enabled=false")
    return f"{server_message(detail)}; {fix}."


def server_message(detail: str, limit: int = 300) -> str:
    """An error body's message (``error.message``, ``message`` or ``detail``), else the body: one line, cut at ``limit``."""
    try:
        obj = json.loads(detail)
    except ValueError:
        obj = None
    msg: Any = None
    if isinstance(obj, dict):  # OpenAI's {"error": {"message"}}, older vLLM's {"message"}, FastAPI's {"detail"}
        err = obj.get("error")
        msg = next((m for m in (err.get("message") if isinstance(err, dict) else err, obj.get("message"),
                                obj.get("detail")) if m), None)
    msg = detail if msg is None else msg if isinstance(msg, str) else json.dumps(msg)
    first: dict[str, str] = {}  # each distinct complaint at the first place it is made
    for loc, what in _LOC_MSG.findall(msg):
        first.setdefault(what, ".".join(part.strip(_QUOTES) for part in loc.split(",")))
    if first:  # a validation error: where and what, not the echoed input (a token-id prompt is thousands of ids)
        msg = "validation error: " + "; ".join(f"{loc}: {what}" for what, loc in list(first.items())[:3])
    return " ".join(msg.split())[:limit]


class TokenizerMismatch(ValueError):
    """The server counts a prompt's tokens differently from the tokenizer that rendered it."""


def tokenizer_candidate(model: str, tokenizer: str) -> str | None:
    """The tokenizer spec to try for a served ``model``: ``tokenizer`` when given, else the model name when
    it can name a tokenizer here (``"default"``, ``"tiny"``, a local dir or an ``org/name`` hub id), else None."""
    if tokenizer:
        return tokenizer
    if model in ("default", "tiny") or Path(model).is_dir() or (model.count("/") == 1 and ":" not in model):
        return model
    return None


def load_tokenizer(spec: str) -> Any:
    """The tokenizer (with its chat template) named by ``spec``.

    ``"default"``: the embedded SmolLM2-135M-Instruct's (offline: the converted cache, else read from
    the GGUF file); ``"tiny"``: :func:`agents.loading.tiny_tokenizer` (the ``tiny`` test models'); a
    local model dir or a hub id: ``AutoTokenizer.from_pretrained``.

    Raises:
        ValueError: It cannot be loaded or has no chat template; the message says what to pass.
    """
    try:
        from transformers import AutoTokenizer

        from . import loading
    except ImportError as e:
        raise ValueError(f"rendering the chat template needs transformers ({e}): pip install 'rsim[train]', "
                         "or use the chat endpoint (#endpoint=chat, --protocol chat).") from e
    try:
        if spec == "tiny":
            tok = loading.tiny_tokenizer()
        elif spec == loading.DEFAULT_SPEC:
            cached = loading.cache_dir() / "smollm2-135m-instruct"
            if (cached / "tokenizer_config.json").is_file():
                tok = AutoTokenizer.from_pretrained(str(cached))
            else:
                gguf = loading.embedded_gguf_path()
                tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        else:
            tok = AutoTokenizer.from_pretrained(spec)
    except (OSError, ValueError, ModuleNotFoundError) as e:
        raise ValueError(f"cannot load the tokenizer {spec!r} for the chat template ({type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}); pass the served model's tokenizer as "
                         "#tokenizer=HUB_ID_OR_DIR ('default' for the embedded SmolLM2).") from e
    if not getattr(tok, "chat_template", None):
        raise ValueError(f"tokenizer {spec!r} has no chat template; pass one that has (#tokenizer=HUB_ID_OR_DIR).")
    return tok


@dataclass
class Conversation:
    """One copy's conversation as text (mirrors the local reasoner's per-copy state)."""

    text: str = ""
    ids: list[int] = field(default_factory=list)
    steps: int = 0
    open: bool = True
    needs_delimiter: bool = False
    single_turn: bool = False
    terminating: bool = False
    lead: str = ""
    kind: Kind = field(default_factory=lambda: kinds.get("math"))


class TextTurns:
    """The local reasoner's turn logic in text: builds each round's prompt and cuts each reply.

    Args:
        tokenizer: The served model's tokenizer (chat template, end-of-turn token, special ids).
        max_step_tokens: Cap of a planner step.
        max_answer_tokens: Cap of the single no-planner answer and of a code problem's program.
        token_ids: Keep each conversation as token ids too, and prompt with them (see module docstring).
    """

    def __init__(self, tokenizer: Any, max_step_tokens: int, max_answer_tokens: int, token_ids: bool = False) -> None:
        self.tok = tokenizer
        self.token_ids = token_ids
        self.eos_text = tokenizer.eos_token or ""
        self.glue_user, self.glue_assistant = turn_glue(tokenizer)
        self.suppressed = sorted(set(tokenizer.all_special_ids) - {tokenizer.eos_token_id})
        self.caps = (max_step_tokens, max_answer_tokens)
        self.convs: list[Conversation] = []

    def reset(self, num_copies: int) -> None:
        self.convs = [Conversation() for _ in range(num_copies)]

    def encode(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    def _add(self, conv: Conversation, piece: str) -> None:
        conv.text += piece
        if self.token_ids and piece:
            conv.ids += self.encode(piece)

    def start(self, copy: int, obs: dict[str, Any]) -> tuple[str | list[int], int]:
        """Open round ``obs["round"]`` of ``copy``: returns ``(prompt, max_tokens)``; the prompt is text, or
        token ids with ``token_ids``.

        Same pieces as :meth:`agents.reasoner.Reasoner._start_turn` (each encoded on its own).
        """
        if not 0 <= copy < len(self.convs):
            raise ValueError(f"copy id {copy} outside range({len(self.convs)}); call reset(num_copies) first")
        conv = self.convs[copy]
        if int(obs["round"]) != conv.steps:
            raise ValueError(f"copy {copy}: observation is for round {obs['round']} but this reasoner has written "
                             f"{conv.steps} steps; call reset() at the start of every rollout")
        user = obs.get("instruction", obs["question"] if not conv.steps else "")
        conv.lead = str(obs.get("injected", ""))
        conv.terminating = int(obs.get("strategy", TERMINATION)) == TERMINATION
        conv.kind = kinds.get(str(obs.get("kind", "math")))
        eos = self.eos_text
        if not conv.text:
            conv.single_turn = bool(obs.get("no_planner", obs.get("protocol") == "none"))
            system = obs.get("system") or (no_planner_chat("")[0]["content"] if conv.single_turn else REASONER_SYSTEM)
            chat = [{"role": "system", "content": system}, {"role": "user", "content": user or obs["question"]}]
            self._add(conv, self.tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False))
        elif user:  # close the assistant turn (its end-of-turn is already there if the model wrote it)
            close = self.glue_user[len(eos):] if not conv.open and eos and self.glue_user.startswith(eos) else self.glue_user
            self._add(conv, close + user + self.glue_assistant)
        elif not conv.open:  # the model ended its turn but the protocol continues the assistant text
            self._add(conv, self.glue_assistant[len(eos):] if eos and self.glue_assistant.startswith(eos)
                      else self.glue_assistant)
        elif conv.needs_delimiter:
            self._add(conv, STEP_DELIMITER)
        conv.open = True
        self._add(conv, conv.lead)
        whole = conv.single_turn or (conv.terminating and conv.kind.whole_answer)
        return list(conv.ids) if self.token_ids else conv.text, self.caps[1] if whole else self.caps[0]

    def finish(self, copy: int, reply: str, ended: bool, reply_ids: Sequence[int] | None = None) -> str:
        """Cut ``reply`` where the local reasoner would have stopped, append it; return the step text.

        Args:
            copy: The copy id.
            reply: The server's text (it wrote until end-of-turn or the cap).
            ended: The server stopped at end-of-turn (``finish_reason == "stop"``), not at the cap.
            reply_ids: The generated token ids as the server sampled them (``token_ids``; end-of-turn
                excluded); None: ``reply`` re-tokenized here.
        """
        conv = self.convs[copy]
        delimiter_stops = not (conv.single_turn or conv.terminating)
        ids = list(self.encode(reply) if reply_ids is None else reply_ids)
        kept, n_kept = reply, len(ids)
        for n in range(1, len(ids) + 1):  # stopped at the last token: the end-of-turn after it was never written
            text = self.tok.decode(ids[:n], skip_special_tokens=False)
            if step_stops(text, conv.lead, conv.kind, delimiter_stops):
                kept, n_kept, ended = text, n, False
                break
        conv.text += kept + (self.eos_text if ended else "")
        if self.token_ids:
            conv.ids += ids[:n_kept] + ([self.tok.eos_token_id] if ended else [])
        conv.open = not ended
        conv.steps += 1
        text = kept.lstrip()
        conv.needs_delimiter = conv.open and STEP_DELIMITER not in text
        return text.strip() if not delimiter_stops else text.split(STEP_DELIMITER)[0].strip()

    def check_count(self, prompt: str | list[int], server_count: int, where: str, tokenizer_name: str) -> None:
        """Raise :class:`TokenizerMismatch` when the server counted ``prompt`` differently (0 = not reported)."""
        if not server_count or not isinstance(prompt, str):
            return
        local = len(self.encode(prompt))
        if local != server_count:
            hint = (" (one more: the server adds a BOS token the chat template already has)" if server_count == local + 1
                    else "")
            raise TokenizerMismatch(
                f"{where}: the server counted {server_count} prompt tokens where the local tokenizer {tokenizer_name!r} "
                f"counts {local} for the same prompt{hint}: the chat template is rendered with a tokenizer that is not "
                "the served model's; pass the served model's as #tokenizer=HUB_ID_OR_DIR, or #endpoint=chat "
                "(no lead-in protocols).")

    def check_ids(self, reply: str, reply_ids: Sequence[int], where: str, tokenizer_name: str) -> None:
        """Raise :class:`TokenizerMismatch` when the local tokenizer decodes the server's ids to other text."""
        local = self.tok.decode([i for i in reply_ids if i != self.tok.eos_token_id], skip_special_tokens=True)
        if local != reply:
            raise TokenizerMismatch(
                f"{where}: the server's generated token ids decode to {local[:60]!r} with the local tokenizer "
                f"{tokenizer_name!r}, but the server wrote {reply[:60]!r}: the tokenizer is not the served model's; "
                "pass the served model's as #tokenizer=HUB_ID_OR_DIR.")

    def logit_bias(self) -> dict[str, int]:
        """``logit_bias`` that bans the special tokens the local reasoner never samples."""
        return {str(i): -100 for i in self.suppressed}


def completions_act(client: Any, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
    """:meth:`agents.openai_reasoner.OpenAIReasoner.act` through the completions endpoint.

    ``client`` is the reasoner: its ``_turns`` (:class:`TextTurns`), ``cfg``, ``request`` (POST with
    retries), ``count_usage`` and per-copy ``_records``. Copies are sent concurrently.
    """
    from concurrent.futures import ThreadPoolExecutor

    turns: TextTurns = client._turns
    cfg = client.cfg
    url = cfg.base_url.rstrip("/") + "/completions"
    jobs = [turns.start(c, o) for c, o in zip(copy_ids, observations)]
    bias = turns.logit_bias()

    def one(job: tuple[str, int]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": getattr(client, "served_model", cfg.model), "prompt": job[0], "max_tokens": job[1],
                                "temperature": cfg.temperature}
        if bias:
            body["logit_bias"] = bias
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        if turns.token_ids:  # the sampled ids come back as "token_id:N" (vLLM's extension; agents.serve)
            body.update(logprobs=0, return_tokens_as_token_ids=True)
        return client.request(body, url)

    with ThreadPoolExecutor(max_workers=min(cfg.max_concurrency, max(1, len(jobs)))) as pool:
        replies = list(pool.map(one, jobs))
    out = []
    for c, (prompt, _), reply in zip(copy_ids, jobs, replies):
        try:
            choice = reply["choices"][0]
            text, finish = choice.get("text"), choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise APIError(f"{url}: reply has no choices[0]: {str(reply)[:300]}") from e
        if not isinstance(text, str):
            raise APIError(f"{url}: choices[0].text is {type(text).__name__}, expected a string.")
        usage = client.count_usage(reply)
        name = getattr(client, "tokenizer_name", "?")
        turns.check_count(prompt, usage["prompt_tokens"], url, name)
        ids = _sampled_ids(choice, url, turns.tok.eos_token_id) if turns.token_ids else None
        if ids is not None:
            turns.check_ids(text, ids, url, name)
        client._completions_ok = True
        if c < len(client._records):
            rec = client._records[c]
            rec["requests"] += 1
            for k, v in usage.items():
                rec[k] += v
        out.append(turns.finish(c, text, ended=finish == "stop", reply_ids=ids))
    return out


def _sampled_ids(choice: dict[str, Any], url: str, eos_id: int) -> list[int]:
    """The generated ids of a completions choice from ``logprobs.tokens`` as ``"token_id:N"`` (end-of-turn dropped)."""
    tokens = (choice.get("logprobs") or {}).get("tokens") if isinstance(choice.get("logprobs"), dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
        raise APIError(f"{url}: token_ids=1 needs the sampled token ids (logprobs.tokens as 'token_id:N', vLLM's "
                       "return_tokens_as_token_ids), which this server does not send; drop #token_ids=1.")
    try:
        ids = [int(t[len("token_id:"):]) for t in tokens]
    except ValueError as e:
        raise APIError(f"{url}: logprobs.tokens holds a non-integer token id: {str(tokens)[:200]}") from e
    return ids[:-1] if ids and ids[-1] == eos_id else ids
