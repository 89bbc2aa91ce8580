"""A fake vLLM server (127.0.0.1) that decodes with a real torch model and serves runtime LoRA adapters, for tests.

It extends :class:`tests.test_vllm_lora.FakeVLLM` (vLLM's runtime LoRA rules) with ``POST /v1/completions``
as vLLM answers it (``vllm/entrypoints/openai`` protocol and serving code, read for this):

* ``prompt`` a string or a list of token ids; an id outside the vocabulary is a 400;
* ``model`` the base's name or a loaded adapter's (else 404); a loaded adapter is applied (PEFT, merged);
* ``logprobs`` an int in 0..20 (``--max-logprobs`` default 20; more is a 400); with
  ``return_tokens_as_token_ids`` the tokens are ``"token_id:N"`` strings, else their text;
  ``token_logprobs`` follow ``logprobs_mode``: ``"raw"`` (vLLM's default ``raw_logprobs``: the model's
  log-softmax before logit bias and temperature) or ``"processed"`` (after them);
* ``logit_bias`` values are clamped to [-100, 100], an out-of-vocabulary key is a 400;
* ``temperature`` below 1e-5 is greedy; ``seed`` seeds that request's sampling;
* prompt + ``max_tokens`` over ``max_model_len`` is a 400; end-of-turn is among the returned tokens
  (``finish_reason`` "stop"), the text skips special tokens; ``usage`` counts the prompt's ids.

``ignore_token_ids=True`` plays a server that does not know ``return_tokens_as_token_ids`` (tokens as text).
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from tests.test_vllm_lora import FakeVLLM

MAX_LOGPROBS = 20


class ModelVLLM(FakeVLLM):
    """``.url`` is the API root; ``.log`` every (path, body); ``.models`` name -> the model that answers it."""

    def __init__(self, model: Any, tokenizer: Any, name: str = "tiny", logprobs_mode: str = "raw",
                 ignore_token_ids: bool = False, max_model_len: int = 4096) -> None:
        self.tok, self.name, self.mode = tokenizer, name, logprobs_mode
        self.models = {name: model.eval()}
        self.ignore_token_ids, self.max_model_len = ignore_token_ids, max_model_len
        super().__init__()

    def answer(self, path: str, body: dict) -> tuple[int, object]:
        if path == "/v1/completions":
            try:
                return 200, self.complete(body)
            except LookupError as e:
                return 404, {"object": "error", "message": str(e), "code": 404}
            except ValueError as e:
                return 400, {"object": "error", "message": str(e), "code": 400}
        if path == "/v1/chat/completions":
            return 404, {"object": "error", "message": "no chat template here", "code": 404}
        status, reply = super().answer(path, body)
        if status == 200 and path == "/v1/load_lora_adapter":
            from peft import PeftModel

            merged = PeftModel.from_pretrained(copy.deepcopy(self.models[self.name]), body["lora_path"])
            self.models[body["lora_name"]] = merged.merge_and_unload().eval()
        elif status == 200 and path == "/v1/unload_lora_adapter":
            del self.models[body["lora_name"]]
        return status, reply

    def complete(self, body: dict) -> dict:
        model = self.models.get(body.get("model"))
        if model is None:
            raise LookupError(f"The model `{body.get('model')}` does not exist.")
        prompt = body.get("prompt")
        ids = list(self.tok(prompt)["input_ids"]) if isinstance(prompt, str) else prompt
        vocab = model.config.vocab_size
        if not isinstance(ids, list) or not ids or not all(isinstance(t, int) and not isinstance(t, bool) for t in ids):
            raise ValueError("prompt must be a string or a non-empty list of token ids")
        if max(ids) >= vocab or min(ids) < 0:
            raise ValueError(f"Token id {max(ids)} is out of vocabulary")
        n_lp = body.get("logprobs")
        if n_lp is not None and (not isinstance(n_lp, int) or n_lp < 0 or n_lp > MAX_LOGPROBS):
            raise ValueError(f"Requested sample logprobs of {n_lp}, which is greater than max allowed: {MAX_LOGPROBS}")
        max_tokens = int(body.get("max_tokens") or 16)
        if len(ids) + max_tokens > self.max_model_len:
            raise ValueError(f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                             f"requested {len(ids) + max_tokens} tokens.")
        new, lps, tops = self._decode(model, ids, body, max_tokens, vocab, n_lp or 0)
        eos = self.tok.eos_token_id
        as_ids = bool(body.get("return_tokens_as_token_ids")) and not self.ignore_token_ids
        name = (lambda t: f"token_id:{t}") if as_ids else (lambda t: self.tok.decode([t]))
        logprobs = None if n_lp is None else {
            "tokens": [name(t) for t in new], "token_logprobs": lps, "text_offset": [0] * len(new),
            "top_logprobs": [{name(t): lp for t, lp in top} for top in tops]}
        return {"id": "cmpl-fake", "object": "text_completion", "model": body["model"],
                "choices": [{"index": 0, "text": self.tok.decode(new, skip_special_tokens=True), "logprobs": logprobs,
                             "finish_reason": "stop" if new[-1] == eos else "length", "stop_reason": None}],
                "usage": {"prompt_tokens": len(ids), "completion_tokens": len(new), "total_tokens": len(ids) + len(new)}}

    def _decode(self, model: Any, ids: list[int], body: dict, max_tokens: int, vocab: int,
                n_top: int) -> tuple[list[int], list[float], list[list[tuple[int, float]]]]:
        bias = torch.zeros(vocab)
        for k, v in (body.get("logit_bias") or {}).items():
            if not 0 <= int(k) < vocab:
                raise ValueError(f"token_id {k} in logit_bias contains out-of-vocab token id")
            bias[int(k)] = max(-100.0, min(100.0, float(v)))
        temperature = float(body.get("temperature", 1.0))
        greedy = temperature < 1e-5
        gen = torch.Generator().manual_seed(int(body["seed"])) if body.get("seed") is not None else None
        from transformers import DynamicCache

        new, lps, tops, cache = [], [], [], DynamicCache(config=model.config)
        x = torch.tensor([ids])
        with torch.no_grad():
            for _ in range(max_tokens):
                raw = model(input_ids=x, cache=cache, use_cache=True).logits[0, -1].float()
                processed = torch.log_softmax((raw + bias) / (1.0 if greedy else temperature), -1)
                tok = int(processed.argmax() if greedy else torch.multinomial(processed.exp(), 1, generator=gen))
                shown = torch.log_softmax(raw, -1) if self.mode == "raw" else processed
                new.append(tok)
                lps.append(float(shown[tok]))
                top = shown.topk(max(1, n_top))
                tops.append(list(zip(top.indices.tolist(), top.values.tolist())))
                if tok == self.tok.eos_token_id:
                    break
                x = torch.tensor([[tok]])
        return new, lps, tops
