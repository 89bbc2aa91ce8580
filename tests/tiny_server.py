"""An in-process :mod:`agents.served.server` server (127.0.0.1, any free port) on a tiny random-init model, for tests.

:func:`text_model` is :func:`agents.hf.loading.tiny_model` made to write text a test can reason about:
byte tokens that are not printable ASCII get a zero output row (a text API carries text, and a lone
byte of a multi-byte character is not text), and the newline and ``}`` rows are scaled up so that
greedy steps end in every way a step can end (end-of-turn, the token cap, the ``\\n\\n`` delimiter, a
closed ``\\boxed{}``), which :func:`stop_kinds` names per step.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator

import torch

from agents.hf.loading import tiny_model
from agents.served.server import ChatModel, make_server


def text_model(seed: int = 0) -> tuple[Any, Any]:
    """Tiny random-init causal LM (+ byte tokenizer) that writes printable ASCII, newlines and braces."""
    model, tok = tiny_model("causal", seed=seed, initializer_range=0.5)
    not_text = [i for i in range(256) if len(tok.decode([i])) != 1 or not (tok.decode([i]) == "\n" or 32 <= ord(tok.decode([i])) < 127)]
    with torch.no_grad():
        model.lm_head.weight[not_text] = 0  # tied: the input rows too (these tokens never occur)
        model.lm_head.weight[tok.encode("\n")[0]] *= 6
        model.lm_head.weight[tok.encode("}")[0]] *= 2
    return model, tok


def stop_kinds(records: list[Any], tok: Any, caps: tuple[int, ...]) -> set[str]:
    """How the steps of local reasoner ``records`` ended: "eos", "delimiter", "cap" (a length in ``caps``), "answer"."""
    out = set()
    for r in records:
        for s, e in r.step_spans:
            ids = r.input_ids[s:e]
            out.add("eos" if ids[-1] == tok.eos_token_id else "delimiter" if "\n\n" in tok.decode(ids).lstrip()
                    else "cap" if e - s in caps else "answer")
    return out


@contextmanager
def served(model: Any, tok: Any, name: str = "tiny", cap: int = 512) -> Iterator[str]:
    """Serve ``model`` with :func:`agents.served.server.make_server`; yields the API root ``http://127.0.0.1:PORT/v1``."""
    server = make_server(ChatModel(name, cap, model=model, tokenizer=tok), port=0)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
