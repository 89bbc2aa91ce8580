"""The LLM reasoner: one class for every route, composed of turns, a decoder and (to train) a scorer.

:class:`Reasoner` writes one step per turn for a batch of conversations (:class:`agents.base.Policy`, role
``"reasoner"``). It is three parts:

* **turns** (:class:`agents.decoding.turns.Turns`, torch-free): builds each conversation's token ids from the
  environment's observations (chat template, turn glue, lead-ins, delimiters), owns the stop rules, the token
  caps and the records (:class:`ReasonerRecord`) -- the module docstring there says exactly how;
* a **decoder** (:mod:`agents.decoding.decoder`): feeds each turn's new ids and writes tokens --
  :class:`~agents.hf.decoder.TorchDecoder` (a KV cache kept across turns),
  :class:`~agents.llamacpp.decoder.EngineDecoder` (llama.cpp), :class:`~agents.served.decoder.CompletionsDecoder`
  and :class:`~agents.served.decoder.ChatDecoder` (an OpenAI-compatible server); :mod:`agents.replay.reasoner` replays
  any reasoner's steps from a store;
* an optional **scorer** (:class:`agents.hf.decoder.TorchLM`): the torch model a learner trains (LoRA or
  full), which rescores records with gradients (:class:`agents.base.Trainable`). A reasoner that decodes
  elsewhere and has a scorer (llama.cpp or a server rolling out, torch learning) sends the scorer's adapter to
  its decoder at every :meth:`Reasoner.reset` when it changed.

``Reasoner(model, tokenizer, config)`` is the torch reasoner (its decoder and scorer are the same model);
:func:`agents.llamacpp.reasoner.LlamaCppReasoner`, :func:`agents.served.reasoner.OpenAIReasoner` and the LoRA builders
compose the others. What a learner reads of the scorer (``model``, ``module``, ``score``, ``reference``, ``lora``,
``device``) is a property here; a reasoner without a scorer has none of them (each raises ``AttributeError``), so
it is not :class:`agents.base.Trainable` and no learner can train it. What a backend adds lives in its folder: the
served reasoner's client (``usage()``, adapters) is :class:`agents.served.reasoner.ServedReasoner`'s; the decoder
itself is ``reasoner.decoder``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Sequence

from rsim_env.validation import check_finite

from .base import check_act_args
from .decoding.decoder import KeepsCopies, Releases, SyncsAdapter
from .decoding.turns import Conversation, ReasonerRecord, Turns

__all__ = ["ReasonerConfig", "ReasonerRecord", "Reasoner"]


@dataclass(frozen=True)
class ReasonerConfig:
    """How the reasoner decodes."""

    max_step_tokens: int = 96
    """Token cap per step; a capped step is followed by a fed (not generated) delimiter."""
    temperature: float = 1.0
    """Sampling temperature (also the temperature of the recorded log-probs)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0 = off). Does not change the recorded log-probs."""
    greedy: bool = False
    """Argmax decoding (evaluation); records temperature-1 log-probs."""
    stop_at_delimiter: bool = True
    """Apply the stop rules (end-of-turn, boxed answer, delimiter); False writes exactly ``max_step_tokens``
    per step with end-of-turn suppressed (benchmarks)."""
    suppress_special_tokens: bool = True
    """Never sample chat-marker tokens other than the end-of-turn token (which always ends a step)."""
    cache: str = "prealloc"
    """KV cache layers: ``"prealloc"`` (in-place, doubling buffer) or ``"dynamic"`` (HF DynamicCache)."""
    cache_capacity: int = 512
    """Initial cache columns (grows by doubling)."""
    max_answer_tokens: int = 512
    """Token cap of the single turn in no-planner mode (``env(planner=False)``, GRPO baseline) and of a
    code problem's termination step (the whole program)."""
    seed: int | None = None
    """Seed of the sampling generator (None: torch's global RNG)."""
    sample_dtype: str = "float32"
    """Weights dtype of the copy that decodes ("float32": the model itself, in whatever dtype it has;
    "bfloat16": a bf16 copy, refreshed after every update, ~2x faster on CPUs with bf16 support; pair it
    with ``train.grpo.tis_cap`` since the loss rescores in full precision)."""
    share_prefill: bool = True
    """Encode each distinct prompt once and copy its KV cache to every copy that shares it (the G
    copies of a group); tokens are the same as with separate prefills."""

    def __post_init__(self):
        check_finite(self)
        if self.max_answer_tokens < 1:
            raise ValueError(f"max_answer_tokens must be >= 1, got {self.max_answer_tokens}")
        if self.max_step_tokens < 1:
            raise ValueError(f"max_step_tokens must be >= 1, got {self.max_step_tokens}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 (use greedy=True for argmax), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.sample_dtype not in ("float32", "bfloat16"):
            raise ValueError(f"sample_dtype must be 'float32' or 'bfloat16', got {self.sample_dtype!r}")
        if self.cache not in ("prealloc", "dynamic"):
            raise ValueError(f"cache must be 'prealloc' or 'dynamic', got {self.cache!r}")



class Reasoner:
    """Batched multi-turn reasoner (module docstring): turns + decoder (+ scorer).

    Args:
        model: A causal LM to decode and score with in torch (with ``tokenizer``), or None with ``decoder``.
        tokenizer: The model's tokenizer (chat template, special ids).
        config: How to decode (caps, stop rules, sampling).
        decoder: Decode elsewhere (llama.cpp, a server); its turns are ``turns``, or the decoder's own
            ``turns`` (a served decoder loads its tokenizer when first used).
        scorer: The torch model a learner trains (e.g. a LoRA :class:`agents.hf.decoder.TorchLM`).
        turns: The turn rules the decoder was built with.
    """

    role = "reasoner"

    def __init__(self, model: Any = None, tokenizer: Any = None, config: ReasonerConfig | None = None, *,
                 decoder: Any = None, scorer: Any = None, turns: Turns | None = None):
        self.config = config or ReasonerConfig()
        if decoder is None:
            if model is None or tokenizer is None:
                raise ValueError("Reasoner needs a model and its tokenizer, or a decoder (agents.decoding).")
            from .hf.decoder import TorchDecoder, TorchLM

            turns = Turns(tokenizer, self.config)
            scorer = TorchLM(model, self.config)
            decoder = TorchDecoder(scorer, turns)
        if scorer is not None and isinstance(decoder, SyncsAdapter) and scorer.lora is None:
            raise ValueError(f"a reasoner that decodes on {type(decoder).__name__} and learns in torch needs a LoRA "
                             "learner (its adapter is what is sent to the decoder); set model.reasoner_lora.enabled=true.")
        self.decoder, self.scorer, self._turns = decoder, scorer, turns
        self.num_copies, self._convs = 0, []
        decoder.reset(0)  # no adapter sync yet: the first rollout's reset sends it

    @classmethod
    def from_spec(cls, spec: str = "default", config: ReasonerConfig | None = None, dtype: Any = None) -> "Reasoner":
        """Load ``spec`` (``"default"``, a path or a hub id; see :mod:`agents.hf.loading`) as a torch reasoner."""
        import torch

        from .hf.loading import load_causal_lm

        return cls(*load_causal_lm(spec, dtype=dtype or torch.float32), config=config)

    def __copy__(self) -> "Reasoner":
        """A reasoner on the same weights with its own conversations and decoder state (agents.replay.reasoner's sessions)."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.decoder = copy.copy(self.decoder)
        return new

    @property
    def replay_kind(self) -> str:
        """This reasoner's name in :mod:`agents.replay.reasoner` keys: the decoder's ``replay_kind``, else "Reasoner"."""
        return str(getattr(self.decoder, "replay_kind", "Reasoner"))

    @property
    def fingerprint(self) -> str:
        """The decoder's exact behaviour for :mod:`agents.replay.reasoner` keys (a GGUF's hash), "" when the weights
        say it all (torch: replay hashes :attr:`model`)."""
        return str(getattr(self.decoder, "fingerprint", ""))

    def release(self) -> None:
        """Free what this (copied) reasoner's decoder holds of its own now: a llama.cpp fork's context."""
        if isinstance(self.decoder, Releases):
            self.decoder.release()

    # ------------------------------------------------------------------------------ the scorer (what a learner trains)

    def _need_scorer(self, name: str) -> Any:
        if self.scorer is None:  # AttributeError: a frozen reasoner has no such attribute (not Trainable)
            raise AttributeError(f"{name!r}: this reasoner decodes on {type(self.decoder).__name__} and has no "
                                 "torch scorer (it is frozen)")
        return self.scorer

    @property
    def model(self) -> Any:
        """The scorer's torch model (a LoRA reasoner's: the shared base with its adapter)."""
        return self._need_scorer("model").model

    @property
    def module(self) -> Any:
        """What the optimizer updates and a checkpoint saves: the model, or its LoRA adapter's module."""
        return self._need_scorer("module").module

    @property
    def lora(self) -> Any:
        """The scorer's :class:`agents.hf.lora.Trained` adapter, None under full fine-tuning."""
        return self._need_scorer("lora").lora

    @property
    def shares_reference(self) -> bool:
        """True for a LoRA reasoner: :attr:`reference` scores as the KL reference (:class:`agents.base.Trainable`)."""
        return self._need_scorer("shares_reference").shares_reference

    @property
    def device(self) -> Any:
        """The scorer's torch device."""
        return self._need_scorer("device").device

    @property
    def score(self) -> Any:
        """:meth:`agents.hf.decoder.TorchLM.score`: records rescored with gradients (:class:`agents.base.Trainable`);
        a property so that a reasoner without a scorer has no ``score`` at all."""
        return self._need_scorer("score").score

    @property
    def reference(self) -> Any:
        """:meth:`agents.hf.decoder.TorchLM.reference`: a context in which :attr:`score` is the reference policy's."""
        return self._need_scorer("reference").reference

    # ------------------------------------------------------------------------------ turns

    @property
    def turns(self) -> Turns:
        if self._turns is None:
            self._turns = self.decoder.turns
        return self._turns

    @property
    def tokenizer(self) -> Any:
        return self.turns.tokenizer

    @property
    def record_temperature(self) -> float:
        return self.turns.record_temperature

    @property
    def suppressed_ids(self) -> list[int]:
        return self.turns.suppressed_ids

    @property
    def pad_id(self) -> int:
        return self.turns.pad_id

    @property
    def eos_id(self) -> int | None:
        return self.turns.eos_id

    @property
    def delimiter_ids(self) -> list[int]:
        return self.turns.delimiter_ids

    def prompt_ids(self, question: str, no_planner: bool = False, system: str | None = None) -> list[int]:
        """System + user(``question``) through the chat template, ending with the assistant header."""
        return self.turns.prompt_ids(question, no_planner, system)

    # ------------------------------------------------------------------------------ LoRA (agents.hf.lora)

    def attach_lora(self, slot: Any) -> "Reasoner":
        """Run on ``slot``'s adapter of a shared frozen base; only the adapter trains."""
        if self.scorer is None:
            raise ValueError(f"this reasoner decodes on {type(self.decoder).__name__} and has no torch scorer to "
                             "attach a LoRA adapter to; build it with model.reasoner_lora.enabled=true.")
        self.scorer.attach_lora(slot)
        return self

    # ------------------------------------------------------------------------------ Policy API

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all conversations; the next :meth:`act` starts ``num_copies`` new ones. A reasoner that decodes
        elsewhere than its scorer first sends the scorer's adapter when it changed (``decoder.sync``)."""
        self.num_copies = num_copies
        self._convs = [Conversation() for _ in range(num_copies)]
        if self.scorer is not None and self.scorer.lora is not None and isinstance(self.decoder, SyncsAdapter):
            self.decoder.sync(self.scorer)
        self.decoder.reset(num_copies, seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        """Write the next step of every listed copy (one batched decode); return the step texts."""
        check_act_args(copy_ids, observations, self.num_copies)
        if isinstance(self.decoder, KeepsCopies):  # a decoder with per-copy state drops the copies that finished
            self.decoder.keep(copy_ids)
        turns = self.turns
        by_copy = dict(zip(copy_ids, observations))
        open_turns = [turns.start(c, self._convs[c], by_copy[c]) for c in sorted(copy_ids)]
        self.decoder.decode(open_turns)
        texts = {t.copy: turns.finish(t) for t in open_turns}
        return [texts[c] for c in copy_ids]

    def prefill(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]], steps: Sequence[Sequence[int]],
                texts: Sequence[str] | None = None) -> list[str]:
        """Give every listed copy the step it wrote before for this round, without decoding it
        (:class:`agents.base.Prefilling`; :meth:`agents.decoding.turns.Turns.prefill` says exactly what the
        conversation then holds). The decoder reads the step with the copy's next :meth:`act`, as a prompt
        continuation; no copy is dropped.

        Args:
            copy_ids: The copies.
            observations: This round's observation of each.
            steps: Each copy's step as the token ids its turn wrote (:meth:`step_ids` of the run that wrote it).
            texts: Each step's text (needed only by a chat-server reasoner, which keeps no token ids).

        Returns:
            The step texts, as :meth:`act` returned them when they were written.
        """
        check_act_args(copy_ids, observations, self.num_copies)
        texts = [""] * len(copy_ids) if texts is None else list(texts)
        if not len(steps) == len(texts) == len(copy_ids):
            raise ValueError(f"prefill() got {len(copy_ids)} copy ids, {len(steps)} steps and {len(texts)} texts; "
                             "pass one step (and text) per copy.")
        return [self.turns.prefill(c, self._convs[c], obs, ids, text)
                for c, obs, ids, text in zip(copy_ids, observations, steps, texts)]

    def step_ids(self, copy_id: int, round: int = -1) -> list[int]:
        """The token ids the turn of ``round`` (default: the newest) wrote for ``copy_id``: what :meth:`prefill`
        takes to give another copy of this reasoner the same step."""
        return self.turns.step_ids(self._convs[copy_id], round)

    def records(self) -> list[ReasonerRecord]:
        """Per copy: everything a learner needs to recompute and weight the log-probs."""
        return [self.turns.record(c) for c in self._convs]

    def num_generated(self, record: ReasonerRecord) -> int:
        """Tokens this reasoner generated in one copy's episode (a server's count when it served it)."""
        if record.usage is not None:
            return int(record.usage.get("completion_tokens", 0))
        return int(sum(record.gen_mask))

    def token_usage(self, record: ReasonerRecord) -> dict[str, int]:
        """Tokens one episode cost: ``reasoner_written`` (generated) and ``reasoner_read`` (fed but not
        written: prompt, injected strategy prompts, delimiters; each encoded once thanks to the KV cache).

        Served (``record.usage``): as the server counted them; ``reasoner_read`` sums every request's prompt (the
        server re-reads the whole conversation each turn; prefix caches make that cheap but ``usage`` counts it)
        and ``reasoner_written`` includes text after the point where a step is cut.
        """
        if record.usage is not None:
            return {"reasoner_read": int(record.usage.get("prompt_tokens", 0)),
                    "reasoner_written": int(record.usage.get("completion_tokens", 0))}
        written = self.num_generated(record)
        return {"reasoner_written": written, "reasoner_read": len(record.input_ids) - written}
