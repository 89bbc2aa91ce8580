"""LLM reasoner: writes one step per turn for a batch of conversations, keeping the KV cache.

The environment's observation says what each round adds to the chat (``rsim_env.render`` builds
it for the configured turn protocol): ``instruction`` — the content of a new user turn ("" =
continue the open assistant message) — and ``injected`` — a lead-in that the assistant text
continues. Each conversation's token sequence is built only from ids — never by re-tokenising
decoded text::

    chat_template(system, user=instruction_0, generation prompt) + ids(lead_0)   # round 0
    + generated_0
    + [end-of-turn if not generated] + ids(user turn glue + instruction_1 + assistant glue)  # chat round
      or [ids("\\n\\n") if not generated] + ...                                        # same message
    + ids(lead_1) + generated_1 ...

The turn glue (the template's text between an assistant message and the next user message, and
between a user message and the assistant header) is read once from the tokenizer's chat template
(:meth:`Reasoner.turn_glue`), so any template whose rendering of a longer chat extends that of a
shorter one works. Per round, :meth:`Reasoner.act` feeds every live conversation only its *new*
tokens in one batched forward, then decodes all rows in lockstep, one forward per token.

Stop rules of a step (first that applies):

* the model's end-of-turn token (``tokenizer.eos_token``, never suppressed; it is recorded as a
  generated token so learners train the decision to stop);
* the problem kind's stop rule (``rsim_env.kinds.Kind.stops`` of the observation's ``kind``) on lead-in +
  generated text: math stops at a closed, non-empty ``\\boxed{...}`` (the answer is stated); code at a
  closed fenced Python block with a non-blank body (code's termination lead-in opens the block, so the
  closing fence ends it) -- the boxed rule does not apply to code;
* the step delimiter ``render.STEP_DELIMITER`` (planner rounds other than termination, if
  ``stop_at_delimiter``);
* the token cap: ``max_step_tokens``, or ``max_answer_tokens`` for the single turn of no-planner
  mode (the observation's ``no_planner`` field), which stops only at end-of-turn, a boxed answer (code:
  a closed program block) or the cap, and for the termination step of a kind whose answer is whole
  (``Kind.whole_answer``: a code problem's program).

Other special tokens (chat markers) are suppressed. The text returned to the environment is the
generated step before any delimiter, without the end-of-turn token, stripped.

The record of a copy (:meth:`Reasoner.records`) is exactly what was fed/sampled, with a mask of
generated tokens and their log-probs (convention in :mod:`agents.sampling`); learners recompute
log-probs with :meth:`Reasoner.score` (gradients flow; :class:`agents.base.Trainable`), which is
non-zero only where ``gen_mask`` is 1 — never on prompt, instruction or lead-in tokens.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rsim_env import kinds
from rsim_env.kinds import Kind
from rsim_env.render import REASONER_SYSTEM, STEP_DELIMITER, no_planner_chat
from rsim_env.strategies import TERMINATION
from rsim_env.validation import check_finite

from .kv import KVBatch
from .base import Scored, check_act_args
from .prefix import shared_prefix_logprobs
from .sampling import generated_logprobs, masked_logprobs, sample
from .turns import step_stops, turn_glue

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


@dataclass(frozen=True)
class ReasonerRecord:
    """One copy's episode as the reasoner saw it: everything a learner needs to rescore it."""

    input_ids: list[int]
    """Prompt + injections + generated tokens, in order."""
    gen_mask: list[int]
    """1 on tokens the model generated, 0 on prompt / injected / delimiter tokens."""
    logprobs: list[float]
    """Log-probs of the generated tokens at sampling time (0 elsewhere)."""
    prompt_len: int
    """Tokens of the chat-template prompt."""
    step_spans: list[tuple[int, int]]
    """``[start, end)`` of each step's generated tokens."""
    temperature: float
    """Temperature of ``logprobs`` (the log-prob convention of :mod:`agents.sampling`)."""
    suppressed_ids: list[int]
    """Vocabulary ids removed from the distribution (same convention)."""
    pad_id: int
    """Padding id for batching."""


@dataclass
class _Conversation:
    ids: list[int] = field(default_factory=list)
    gen_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    fed: int = 0  # ids[:fed] are in the KV cache; ids[fed:] is the pending last sampled token
    prompt_len: int = 0
    step_spans: list[tuple[int, int]] = field(default_factory=list)
    needs_delimiter: bool = False
    open: bool = True  # the assistant message is open (its end-of-turn token was not generated)
    single_turn: bool = False  # no-planner mode: one whole answer, no delimiter stop
    terminating: bool = False  # this round's strategy is termination: no delimiter stop
    lead: str = ""  # this round's injected lead-in (for the boxed-answer / program stop rule)
    kind: Kind = field(default_factory=lambda: kinds.get("math"))  # the observation's "kind": its stop rule

    def extend(self, ids: Sequence[int]) -> None:
        self.ids.extend(ids)
        self.gen_mask.extend([0] * len(ids))
        self.logprobs.extend([0.0] * len(ids))


class Reasoner:
    """Batched multi-turn reasoner implementing :class:`agents.base.Policy` (role ``"reasoner"``)."""

    role = "reasoner"

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: ReasonerConfig | None = None):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config or ReasonerConfig()
        self.device = next(model.parameters()).device
        self._setup_ids()
        self._suppressed = torch.as_tensor(self.suppressed_ids, dtype=torch.long, device=self.device)
        self.generator = None
        if self.config.seed is not None:
            self.generator = torch.Generator(self.device).manual_seed(self.config.seed)
        self.lora = None  # AdapterSlot when the model is a LoRA adapter on a shared frozen base
        self._trained = None
        self._reference = False
        self.reset(0)

    # ------------------------------------------------------------------------------ LoRA (agents.lora)

    def attach_lora(self, slot: Any) -> "Reasoner":
        """Run on ``slot``'s adapter of a shared frozen base; only the adapter trains."""
        from .lora import Trained

        self.lora, self._trained = slot, Trained(slot.parameters())
        return self

    def _scope(self) -> contextlib.AbstractContextManager:
        if self.lora is None:
            return contextlib.nullcontext()
        return self.lora.disabled() if self._reference else self.lora.active()

    def _decode_model(self) -> torch.nn.Module:
        """What decoding runs: the model, a copy in ``sample_dtype``, or for LoRA its merged sampler.

        ``sample_dtype="float32"`` means no cast: the model decodes in its own dtype (a frozen bf16 or
        int8 reasoner, ``model.frozen``, decodes as it is, not through a float32 copy).
        """
        dtype = None if self.config.sample_dtype == "float32" else getattr(torch, self.config.sample_dtype)
        if self.lora is not None and self.lora.base.adapters[self.lora.name].merged_sampler:
            return self.lora.base.sampler(self.lora.name, dtype)  # None: the base's dtype
        if dtype is None or dtype == next(self.model.parameters()).dtype:
            return self.model
        from .lora import cast_copy

        self._sampler = cast_copy(self.model, dtype, getattr(self, "_sampler", None))
        return self._sampler

    @contextlib.contextmanager
    def reference(self):
        """Context: score as the KL reference (LoRA only: the base with the adapter disabled)."""
        if self.lora is None:
            raise ValueError("Reasoner.reference() needs a LoRA reasoner; a fully fine-tuned one keeps a frozen copy")
        self._reference = True
        try:
            yield self
        finally:
            self._reference = False

    @classmethod
    def from_spec(cls, spec: str = "default", config: ReasonerConfig | None = None,
                  dtype: torch.dtype = torch.float32) -> "Reasoner":
        """Load ``spec`` (``"default"``, a path or a hub id; see :mod:`agents.loading`)."""
        from .loading import load_causal_lm

        return cls(*load_causal_lm(spec, dtype=dtype), config=config)

    @property
    def record_temperature(self) -> float:
        return 1.0 if self.config.greedy else self.config.temperature

    def _setup_ids(self) -> None:
        """Token ids the turn building and stop rules use, from ``self.tokenizer`` and ``self.config``."""
        tokenizer = self.tokenizer
        self.delimiter_ids = self._encode(STEP_DELIMITER)
        self.eos_id = tokenizer.eos_token_id
        # The end-of-turn token ends a step, so it stays samplable (unless steps have a fixed length).
        allowed = {self.eos_id} if self.config.stop_at_delimiter else set()
        self.suppressed_ids = (sorted(set(tokenizer.all_special_ids) - allowed)
                               if self.config.suppress_special_tokens else [])
        self.glue_user, self.glue_assistant = self.turn_glue()
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt_ids(self, question: str, no_planner: bool = False, system: str | None = None) -> list[int]:
        """System + user(``question``) through the chat template, ending with the assistant header.

        ``question`` is the round-0 user turn (``obs["instruction"]``); ``system`` defaults to the
        no-planner or ``inline`` system prompt.
        """
        if system is None:
            system = no_planner_chat("")[0]["content"] if no_planner else REASONER_SYSTEM
        chat = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        out = self.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True)
        return list(out["input_ids"] if hasattr(out, "keys") else out)

    def turn_glue(self) -> tuple[str, str]:
        """``(after assistant, before a user turn's content)`` and ``(after a user turn, assistant header)``,
        read from the chat template (:func:`agents.turns.turn_glue`)."""
        return turn_glue(self.tokenizer)

    # ------------------------------------------------------------------------------ Policy API

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all conversations; the next :meth:`act` starts ``num_copies`` new ones."""
        self.num_copies = num_copies
        self._convs = [_Conversation() for _ in range(num_copies)]
        self._kv: KVBatch | None = None
        if seed is not None:
            self.generator = torch.Generator(self.device).manual_seed(seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        """Write the next step of every listed copy (one batched decode); return the step texts."""
        check_act_args(copy_ids, observations, self.num_copies)
        with torch.inference_mode(), self._scope():
            decoder = self._decode_model()
            if self._kv is None:
                self._kv = KVBatch(decoder, self.num_copies, self.pad_id, self.config.cache,
                                   self.config.cache_capacity, share_prefill=self.config.share_prefill)
            self._kv.keep(copy_ids)
            by_copy = dict(zip(copy_ids, observations))
            feeds = [self._start_turn(c, by_copy[c]) for c in self._kv.rows]
            texts = self._decode_turn(*self._prefill_prompts(feeds))
        return [texts[c] for c in copy_ids]

    def records(self) -> list[ReasonerRecord]:
        """Per copy: everything a learner needs to recompute and weight the log-probs."""
        return [ReasonerRecord(input_ids=list(c.ids), gen_mask=list(c.gen_mask), logprobs=list(c.logprobs),
                               prompt_len=c.prompt_len, step_spans=list(c.step_spans),
                               temperature=self.record_temperature, suppressed_ids=list(self.suppressed_ids),
                               pad_id=self.pad_id) for c in self._convs]

    # ------------------------------------------------------------------------------ learner API

    @property
    def module(self) -> torch.nn.Module:
        """The parameters a learner optimises (:class:`agents.base.Trainable`): the model, or with
        LoRA only its adapter (:class:`agents.lora.Trained`)."""
        return self.model if self.lora is None else self._trained

    def score(self, records: Sequence[ReasonerRecord]) -> Scored:
        """Log-probs of the generated tokens of ``records`` with gradients, in one forward over the batch.

        Non-zero only where ``gen_mask`` is 1; uses each record's own sampling convention
        (``temperature``, ``suppressed_ids``; see :mod:`agents.sampling`).
        """
        first = records[0]
        seqs, masks = [r.input_ids for r in records], [r.gen_mask for r in records]
        with self._scope():
            if self.config.share_prefill:  # the G copies of a group: their prompt is encoded once
                logp, mask, entropy = shared_prefix_logprobs(
                    self.model, seqs, masks, [r.prompt_len for r in records], float(first.temperature),
                    first.suppressed_ids, first.pad_id)
            else:
                logp, mask, entropy = generated_logprobs(
                    self.model, seqs, masks, float(first.temperature), first.suppressed_ids, first.pad_id)
        return Scored(logp, mask, entropy)

    def num_generated(self, record: ReasonerRecord) -> int:
        """Tokens this reasoner generated in one copy's episode."""
        return int(sum(record.gen_mask))

    def token_usage(self, record: ReasonerRecord) -> dict[str, int]:
        """Tokens one episode cost: ``reasoner_written`` (generated) and ``reasoner_read`` (fed but not
        written: prompt, injected strategy prompts, delimiters; each encoded once thanks to the KV cache)."""
        written = self.num_generated(record)
        return {"reasoner_written": written, "reasoner_read": len(record.input_ids) - written}

    # ------------------------------------------------------------------------------ internals

    def _start_turn(self, copy: int, obs: dict[str, Any]) -> list[int]:
        conv = self._convs[copy]
        written = len(conv.step_spans)
        if int(obs["round"]) != written:
            raise ValueError(f"copy {copy}: observation is for round {obs['round']} but this reasoner has written "
                             f"{written} steps; call reset() at the start of every rollout")
        user = obs.get("instruction", obs["question"] if not written else "")
        conv.lead = str(obs.get("injected", ""))
        conv.terminating = int(obs.get("strategy", TERMINATION)) == TERMINATION
        conv.kind = kinds.get(str(obs.get("kind", "math")))
        if not conv.ids:
            # env(planner=False): one whole answer (the no_planner field; older observations: protocol "none")
            conv.single_turn = bool(obs.get("no_planner", obs.get("protocol") == "none"))
            conv.extend(self.prompt_ids(user or obs["question"], no_planner=conv.single_turn, system=obs.get("system")))
            conv.prompt_len = len(conv.ids)
        elif user:  # a new user turn: close the assistant turn (unless the model did), then open the next
            close = self.glue_user
            eos_text = self.tokenizer.eos_token or ""
            if not conv.open and eos_text and close.startswith(eos_text):
                close = close[len(eos_text):]
            conv.extend(self._encode(close + user + self.glue_assistant))
        elif not conv.open:  # the model ended its turn but the protocol continues the assistant text
            eos_text = self.tokenizer.eos_token or ""
            reopen = self.glue_assistant[len(eos_text):] if self.glue_assistant.startswith(eos_text) else self.glue_assistant
            conv.extend(self._encode(reopen))
        elif conv.needs_delimiter:
            conv.extend(self.delimiter_ids)
        conv.open = True
        if conv.lead:
            conv.extend(self._encode(conv.lead))
        feed = conv.ids[conv.fed:]
        conv.fed = len(conv.ids)
        return feed

    def _pick(self, logits: torch.Tensor) -> tuple[list[int], list[float]]:
        lp = masked_logprobs(logits, self.record_temperature, self._suppressed)
        tokens, token_lp = sample(lp, self.config.greedy, self.config.top_p, self.generator)
        return tokens.tolist(), token_lp.tolist()

    def _prefill_prompts(self, feeds: list[list[int]]) -> tuple[list[list[int]], torch.Tensor | None]:
        """Round 0 with prefill sharing: feed the prompts alone first (KVBatch encodes each distinct
        prompt once), leaving the per-copy injections; returns the rest and the prompts' logits."""
        if self._kv.columns or not self.config.share_prefill:
            return feeds, None
        lens = [self._convs[c].prompt_len for c in self._kv.rows]
        logits = self._kv.feed([f[:n] for f, n in zip(feeds, lens)])
        return [f[n:] for f, n in zip(feeds, lens)], logits

    def _decode_turn(self, feeds: list[list[int]], logits: torch.Tensor | None = None) -> dict[int, str]:
        kv, cfg = self._kv, self.config
        rows = list(kv.rows)
        convs = [self._convs[c] for c in rows]
        starts = [len(c.ids) for c in convs]
        step_tokens: list[list[int]] = [[] for _ in rows]
        active = [True] * len(rows)
        caps = self._caps(convs)
        if any(feeds):
            fed = kv.feed(feeds)
            logits = fed if logits is None else torch.where(torch.tensor([bool(f) for f in feeds], device=fed.device)[:, None], fed, logits)
        for count in range(1, max(caps) + 1):
            tokens, lps = self._pick(logits)
            for r, conv in enumerate(convs):
                if not active[r]:
                    continue
                conv.ids.append(tokens[r]); conv.gen_mask.append(1); conv.logprobs.append(lps[r])
                step_tokens[r].append(tokens[r])
                if tokens[r] == self.eos_id:
                    conv.open = False
                if count == caps[r] or not conv.open or (cfg.stop_at_delimiter and self._stops(conv, step_tokens[r])):
                    active[r] = False
            if not any(active):
                break
            logits = kv.feed([[tokens[r]] if active[r] else [] for r in range(len(rows))])
            for r, conv in enumerate(convs):
                conv.fed += active[r]
        return self._close_turns(rows, convs, starts, step_tokens)

    def _caps(self, convs: list[Any]) -> list[int]:
        """Token cap of each conversation's turn: the answer cap for a whole answer (no-planner mode, or a kind
        whose termination turn is one, as a program is), else the step cap."""
        cfg = self.config
        return [cfg.max_answer_tokens if c.single_turn or (c.terminating and c.kind.whole_answer) else cfg.max_step_tokens
                for c in convs]

    def _close_turns(self, rows: list[int], convs: list[Any], starts: list[int],
                     step_tokens: list[list[int]]) -> dict[int, str]:
        """Record each conversation's step span and return its step text (cut at the delimiter unless the turn
        is one whole answer); shared with :class:`agents.llamacpp.LlamaCppReasoner`."""
        texts = {}
        for r, conv in enumerate(convs):
            conv.step_spans.append((starts[r], len(conv.ids)))
            text = self._text(step_tokens[r]).lstrip()
            conv.needs_delimiter = conv.open and STEP_DELIMITER not in text
            texts[rows[r]] = text.strip() if conv.single_turn or conv.terminating else text.split(STEP_DELIMITER)[0].strip()
        return texts

    def _text(self, tokens: list[int]) -> str:
        return self.tokenizer.decode([t for t in tokens if t != self.eos_id], skip_special_tokens=False)

    def _stops(self, conv: _Conversation, tokens: list[int]) -> bool:
        """Stop rules other than end-of-turn and the cap (see module docstring)."""
        delimiter_stops = self.config.stop_at_delimiter and not (conv.single_turn or conv.terminating)
        return step_stops(self._text(tokens), conv.lead, conv.kind, delimiter_stops)


class ReasonerTurns:
    """The torch :class:`Reasoner`'s turn building, stop rules and records, for reasoners that decode elsewhere
    (llama.cpp, a server): the same ids by construction. A subclass sets ``tokenizer`` and ``config``, calls
    :meth:`_setup_ids`, and keeps ``_convs`` as :class:`Reasoner` does."""

    _setup_ids = Reasoner._setup_ids
    _encode = Reasoner._encode
    prompt_ids = Reasoner.prompt_ids
    turn_glue = Reasoner.turn_glue
    _start_turn = Reasoner._start_turn
    _stops = Reasoner._stops
    _text = Reasoner._text
    _close_turns = Reasoner._close_turns
    _caps = Reasoner._caps
    records = Reasoner.records
    num_generated = Reasoner.num_generated
    token_usage = Reasoner.token_usage
    record_temperature = Reasoner.record_temperature
