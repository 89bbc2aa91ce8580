"""A LoRA-trained reasoner that rolls out on a served model (vLLM) and learns in torch.

``model.reasoner=openai:MODEL@URL`` with ``model.reasoner_lora.enabled=true`` builds
(:func:`agents.openai_reasoner.build_trainable`, beside the spec's parser) :class:`ServedLoraReasoner`, the
served twin of :class:`agents.llamacpp_lora.EngineLoraReasoner`:

* the **learner**, the torch :class:`agents.reasoner.Reasoner` with its LoRA adapter on the served base's
  weights (``#hf=SPEC``, default the model name: ``Qwen/Qwen2.5-0.5B-Instruct``, ``default``, ``tiny``, a local
  dir), which scores records with gradients, is the KL reference and is what optimizers and checkpoints see;
  its tokenizer builds every prompt, so the server's tokenizer must be the same (checked on every reply);
* the **roller**, :class:`ServedRoller`, which writes every rollout through ``POST {URL}/completions``.

The roller builds each conversation's token ids exactly as the torch reasoner does (its turn-building
methods *are* the reasoner's, as for :class:`agents.llamacpp.LlamaCppReasoner`) and sends them as the
prompt (a list of token ids, which vLLM's completions endpoint accepts), with ``logprobs: 1`` and
``return_tokens_as_token_ids: true``: vLLM then returns the sampled tokens as ``"token_id:N"`` strings in
``choices[0].logprobs.tokens`` and their log-probs in ``token_logprobs``. No stop string is sent: the
server writes until end-of-turn or the cap, and the roller applies the local stop rules token by token and
keeps the tokens up to where the local reasoner would have stopped. So a copy's
:class:`agents.reasoner.ReasonerRecord` (ids, generated-token mask, log-probs, step spans) is what torch
would have recorded, token accounting works and the learner can rescore it. Special tokens other than
end-of-turn get ``logit_bias`` -100 (the local reasoner never samples them).

At each :meth:`ServedLoraReasoner.reset` (the start of a rollout) the adapter tensors are compared with those
last sent; after an update they are saved as a PEFT dir and loaded under a new name
(:class:`agents.served_lora.ServedAdapters`), so the rollouts of step t+1 use step t's weights.

Log-probs: vLLM's default ``--logprobs-mode raw_logprobs`` returns them before temperature and logit
bias, which is the records' convention (:mod:`agents.sampling`) only at temperature 1 (and greedy); for
another sampling temperature start vLLM with ``--logprobs-mode processed_logprobs`` and say so with
``#logprobs_mode=processed``. Either way they differ slightly from torch's (other kernels, bf16): pair it
with ``train.grpo.tis_cap``.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from .base import check_act_args
from .llamacpp_lora import EngineLoraReasoner
from .reasoner import ReasonerConfig, ReasonerTurns, _Conversation

__all__ = ["ServedRoller", "ServedLoraReasoner", "base_spec", "check_logprobs_mode", "NEEDS_IDS"]

NEEDS_IDS = ("training a served reasoner needs the sampled token ids and their log-probs: a completions endpoint that "
              "takes token-id prompts and answers logprobs.tokens as 'token_id:N' (vLLM's return_tokens_as_token_ids)")


def base_spec(model: str, hf: str, tokenizer: str) -> str:
    """The torch model the adapter learns on: ``hf``, else the served model name when it names one.

    Raises:
        ValueError: No base can be named, or ``tokenizer`` names another one.
    """
    from .completions import tokenizer_candidate

    base = hf or tokenizer_candidate(model, "")
    if not base:
        raise ValueError(f"the served model name {model!r} names no torch model for the LoRA learner: pass the served "
                         "base's weights as #hf=HUB_ID_OR_DIR (the learner's tokenizer builds every prompt).")
    if tokenizer and tokenizer != base:
        raise ValueError(f"#tokenizer={tokenizer!r} differs from the learner's base {base!r}: a trained served reasoner "
                         "builds prompts with its torch base's tokenizer; drop #tokenizer= or pass #hf= that model.")
    return base


def check_logprobs_mode(config: ReasonerConfig, mode: str) -> None:
    """Refuse a sampling setup whose served log-probs would not follow the records' convention."""
    if config.greedy:
        return
    if mode == "raw" and config.temperature != 1.0:
        raise ValueError(f"reasoner.temperature={config.temperature} but vLLM's default log-probs (raw_logprobs) are "
                         "before temperature: start vLLM with --logprobs-mode processed_logprobs and add "
                         "#logprobs_mode=processed to the reasoner spec, or set reasoner.temperature=1.")
    if mode == "processed" and config.top_p < 1.0:
        raise ValueError(f"reasoner.top_p={config.top_p}: vLLM's processed log-probs are renormalised over the nucleus, "
                         "the records' are not; set reasoner.top_p=1, or temperature 1 with raw log-probs.")


class ServedRoller(ReasonerTurns):
    """:class:`agents.base.Policy` (role ``"reasoner"``) that writes each step through a completions server.

    Args:
        client: The :class:`agents.openai_reasoner.OpenAIReasoner` (HTTP with retries, usage, adapters).
        tokenizer: The learner's tokenizer (the served model's).
        config: How to decode (token caps, temperature, stop rules; the learner's config).
    """

    role = "reasoner"

    def __init__(self, client: Any, tokenizer: Any, config: ReasonerConfig | None = None) -> None:
        self.client, self.tokenizer = client, tokenizer
        self.config = config or ReasonerConfig()
        self.url = client.cfg.base_url.rstrip("/") + "/completions"
        self._setup_ids()
        self.requests = 0
        self.reset(0)

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all conversations; the next :meth:`act` starts ``num_copies`` new ones."""
        self.num_copies = num_copies
        self._convs = [_Conversation() for _ in range(num_copies)]

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        """Write the next step of every listed copy (one request each, sent concurrently); return the step texts."""
        check_act_args(copy_ids, observations, self.num_copies)
        rows = list(copy_ids)
        convs = [self._convs[c] for c in rows]
        for c, obs in zip(rows, observations):
            self._start_turn(c, obs)
        starts = [len(conv.ids) for conv in convs]
        caps = self._caps(convs)
        bodies = [self._body(list(conv.ids), cap) for conv, cap in zip(convs, caps)]
        with ThreadPoolExecutor(max_workers=min(self.client.cfg.max_concurrency, max(1, len(bodies)))) as pool:
            replies = list(pool.map(self._post, bodies))
        steps = [self._append(conv, cap, body, reply) for conv, cap, body, reply in zip(convs, caps, bodies, replies)]
        texts = self._close_turns(rows, convs, starts, steps)
        return [texts[c] for c in copy_ids]

    # ------------------------------------------------------------------------------ internals

    def _body(self, prompt: list[int], cap: int) -> dict[str, Any]:
        cfg = self.config
        body: dict[str, Any] = {"model": self.client.served_model, "prompt": prompt, "max_tokens": cap,
                                "temperature": 0.0 if cfg.greedy else cfg.temperature,
                                "logprobs": 1, "return_tokens_as_token_ids": True}
        if not cfg.greedy and cfg.top_p < 1.0:
            body["top_p"] = cfg.top_p
        if self.suppressed_ids:
            body["logit_bias"] = {str(i): -100 for i in self.suppressed_ids}
        if cfg.seed is not None and not cfg.greedy:  # distinct per request: G copies of one prompt must differ
            body["seed"] = cfg.seed * 1_000_003 + self.requests
        self.requests += 1
        return body

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        from .completions import APIError

        try:
            return self.client.request(body, self.url)
        except APIError as e:
            code = getattr(e.__cause__, "code", None)
            if code in (404, 405):
                raise APIError(f"{self.url} answered HTTP {code}: {NEEDS_IDS}; this looks like a chat-only server (or "
                               f"a wrong model name); serve the model with vLLM ({e})") from e
            raise

    def _parse(self, reply: Any, body: dict[str, Any]) -> tuple[list[int], list[float], str]:
        """``(sampled ids, their log-probs, finish_reason)`` of a completions reply (checked)."""
        from .completions import TokenizerMismatch
        from .completions import APIError

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
        local = self.tokenizer.decode([i for i in ids if i != self.eos_id], skip_special_tokens=True)
        if isinstance(text, str) and text != local:
            raise TokenizerMismatch(
                f"{self.url}: the server's token ids decode to {local[:60]!r} with the learner's tokenizer but the "
                f"server wrote {text[:60]!r}: it serves another tokenizer; pass the served base as #hf=HUB_ID_OR_DIR.")
        return ids, [float(x) for x in logprobs], str(choice.get("finish_reason"))

    def _append(self, conv: _Conversation, cap: int, body: dict[str, Any], reply: Any) -> list[int]:
        """Append the reply's tokens up to where the local reasoner stops; return the step's tokens."""
        from .completions import APIError

        ids, logprobs, finish = self._parse(reply, body)
        step: list[int] = []
        for tok, lp in zip(ids, logprobs):
            conv.ids.append(tok); conv.gen_mask.append(1); conv.logprobs.append(lp)
            step.append(tok)
            if tok == self.eos_id:
                conv.open = False
            if len(step) == cap or not conv.open or (self.config.stop_at_delimiter and self._stops(conv, step)):
                return step
        raise APIError(f"{self.url}: the server ended a step after {len(step)} of {cap} tokens (finish_reason "
                       f"{finish!r}) without end-of-turn, where the local reasoner goes on: remove server-side stop "
                       "strings or a generation config that stops early, or raise the server's --max-model-len.")


class ServedLoraReasoner(EngineLoraReasoner):
    """:class:`agents.base.Trainable` reasoner: rollouts on a served model, scoring and updates in torch.

    Args:
        learner: A torch :class:`agents.reasoner.Reasoner` with a LoRA adapter attached.
        roller: A :class:`ServedRoller` on a server of the learner's base with runtime LoRA on.
    """

    def _send(self, params: dict[str, Any]) -> None:
        """Save the adapter as a PEFT dir and load it on the server under a new name (ServedAdapters)."""
        self.roller.client.sync_adapter(self.lora)

    @property
    def served_name(self) -> str | None:
        """The adapter name the roller's requests send as ``model`` (None: the base)."""
        return self.roller.client.adapters.name
