"""What every served route shares: the server's errors, refused request forms, and the served model's tokenizer.

:mod:`agents.served.reasoner` (the client and the ``openai:`` spec), :mod:`agents.served.decoder` (the
completions and chat decoders) and the served LoRA modules raise :class:`APIError` and
:class:`TokenizerMismatch`; :func:`load_tokenizer` gives the tokenizer whose chat template the completions
route renders. No HTTP here and no torch.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["APIError", "TokenizerMismatch", "load_tokenizer", "tokenizer_candidate", "refused_form", "server_message"]


class APIError(RuntimeError):
    """The server refused a request (not retried) or retries ran out.

    Every served module raises it (this client, :mod:`agents.served.reasoner`, which re-exports it, and the
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
               "agents.served.reasoner.parse_spec), or use a server that accepts it")
    elif token_ids:
        fix = ("this server takes no token-id prompts: drop #token_ids=1 from the reasoner spec (text prompts), or "
               "serve the model with vLLM or python -m agents.served.server, which take them")
    else:  # agents.served.train's roller: token ids are how it trains
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
    the GGUF file); ``"tiny"``: :func:`agents.hf.loading.tiny_tokenizer` (the ``tiny`` test models'); a
    local model dir or a hub id: ``AutoTokenizer.from_pretrained``.

    Raises:
        ValueError: It cannot be loaded or has no chat template; the message says what to pass.
    """
    try:
        from transformers import AutoTokenizer

        from ..embedded import embedded_gguf_path
        from ..hf import loading
    except ImportError as e:
        raise ValueError(f"rendering the chat template needs transformers ({e}): pip install 'rsim[train]', "
                         "or use the chat endpoint (#endpoint=chat, --set env.protocol=chat).") from e
    try:
        if spec == "tiny":
            tok = loading.tiny_tokenizer()
        elif spec == loading.DEFAULT_SPEC:
            cached = loading.cache_dir() / "smollm2-135m-instruct"
            if (cached / "tokenizer_config.json").is_file():
                tok = AutoTokenizer.from_pretrained(str(cached))
            else:
                gguf = embedded_gguf_path()
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
