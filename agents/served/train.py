"""A LoRA-trained reasoner that rolls out on a served model (vLLM) and learns in torch: its checks.

``model.reasoner=openai:MODEL@URL`` with ``model.reasoner_lora.enabled=true`` builds
(:func:`agents.served.reasoner.build_trainable`) an :class:`agents.reasoner.Reasoner` whose

* **scorer** is the torch LoRA learner on the served base's weights (``#hf=SPEC``, default the model name:
  ``Qwen/Qwen2.5-0.5B-Instruct``, ``default``, ``tiny``, a local dir), which scores records with gradients, is
  the KL reference and is what optimizers and checkpoints see; its tokenizer builds every prompt, so the
  server's tokenizer must be the same (checked on every reply);
* **decoder** is :class:`agents.served.decoder.CompletionsDecoder` with ``train``: every rollout goes through
  ``POST {URL}/completions`` with the conversation's token ids as the prompt (as the torch reasoner builds them),
  ``logprobs: 1`` and ``return_tokens_as_token_ids: true``; vLLM returns the sampled tokens as ``"token_id:N"``
  in ``choices[0].logprobs.tokens`` and their log-probs in ``token_logprobs``. No stop string is sent: the local
  stop rules cut each reply token by token, so a copy's :class:`agents.reasoner.ReasonerRecord` is what torch
  would have recorded and the learner can rescore it.

At each reset (the start of a rollout) the adapter tensors are compared with those last sent; after an
update they are saved as a PEFT dir and loaded under a new name (:class:`agents.served.lora.ServedAdapters`),
so the rollouts of step t+1 use step t's weights. This module holds the checks of that setup.

Log-probs: vLLM's default ``--logprobs-mode raw_logprobs`` returns them before temperature and logit
bias, which is the records' convention (:mod:`agents.hf.sampling`) only at temperature 1 (and greedy); for
another sampling temperature start vLLM with ``--logprobs-mode processed_logprobs`` and say so with
``#logprobs_mode=processed``. Either way they differ slightly from torch's (other kernels, bf16): pair it
with ``train.grpo.tis_cap``.
"""

from __future__ import annotations

from typing import Any

from .decoder import NEEDS_IDS

__all__ = ["base_spec", "check_logprobs_mode", "NEEDS_IDS"]


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


def check_logprobs_mode(config: Any, mode: str) -> None:
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
