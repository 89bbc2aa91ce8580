"""A frozen reasoner decoded by llama.cpp: ``llamacpp:default`` (the embedded GGUF) or ``llamacpp:PATH.gguf``.

It plays under every turn protocol of :mod:`rsim_env.render` (the lead-in protocols included)
because it builds each conversation's token ids exactly as :class:`agents.reasoner.Reasoner`
does: the same HF tokenizer (the one :mod:`agents.loading` uses for the torch model, or the one
transformers reads from the GGUF), the same chat-template prompt, turn glue, delimiters and
lead-ins (the turn-building methods below *are* the torch reasoner's), then the same stop rules
and token caps. Only the forward passes differ: :class:`agents.llamacpp_engine.Engine` runs the
GGUF's own (here 4-bit) weights, keeps every conversation's KV cache between turns (a turn feeds
only its new tokens) and decodes all live conversations of a step in one batched ``llama_decode``
per token; the G copies of a group read their common prompt once.

Records are :class:`agents.reasoner.ReasonerRecord` with the log-probs computed from llama.cpp's
logits under the same convention (:mod:`agents.sampling`), so token accounting works and a torch
model can rescore them (``benchmarks/rollout.py`` measures the mismatch). The agent itself is not
:class:`agents.base.Trainable`: use it where the reasoner is frozen (``rsim eval``, planner-only
training, the plug-in reasoner). :meth:`LlamaCppReasoner.sync_adapter` decodes with a LoRA adapter;
with ``model.reasoner_lora.enabled=true`` the spec builds :class:`agents.llamacpp_lora.EngineLoraReasoner`,
which trains the adapter in torch and syncs it here before every rollout.

Spec options after ``#``: ``n_ctx`` (tokens per conversation, default 2048), ``threads`` (default:
``OMP_NUM_THREADS`` or all cores), ``unified`` (0, default: one KV stream per copy; 1: one buffer
for all copies, faster but copies no longer decode independently, see :class:`agents.llamacpp_engine.Engine`), e.g. ``llamacpp:default#n_ctx=4096&threads=2``.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np


from .base import check_act_args
from .llamacpp_engine import Engine
from .reasoner import ReasonerConfig, ReasonerTurns, _Conversation

__all__ = ["LlamaCppReasoner", "build", "build_trainable", "load_tokenizer", "parse_spec"]

_OPTIONS = {"n_ctx": 1, "threads": 1, "unified": 0}  # option -> its smallest value


def parse_spec(rest: str) -> tuple[str, dict[str, int]]:
    """``"default"`` / ``"PATH.gguf"`` plus ``#key=value&...`` options -> ``(gguf path, options)``."""
    target, _, opts = rest.partition("#")
    options: dict[str, int] = {}
    for item in filter(None, opts.split("&")):
        key, eq, value = item.partition("=")
        if not eq or key not in _OPTIONS or not value.isdigit() or int(value) < _OPTIONS[key] or (key == "unified" and int(value) > 1):
            raise ValueError(f"reasoner spec 'llamacpp:{rest}': option {item!r} is not KEY=N with KEY one of "
                             f"{sorted(_OPTIONS)} and N an integer >= 1 (unified: 0 or 1).")
        options[key] = int(value)
    if not target or target == "default":
        from .loading import embedded_gguf_path

        return str(embedded_gguf_path()), options
    path = Path(target).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        raise ValueError(f"reasoner spec 'llamacpp:{rest}': {str(path)!r} is not an existing .gguf file; pass "
                         "llamacpp:PATH.gguf or llamacpp:default (the embedded model, python -m agents.embedded).")
    return str(path), options


def load_tokenizer(gguf: str | Path) -> Any:
    """The HF tokenizer the torch reasoner would use for ``gguf``: the converted embedded model's for
    the embedded file, else the one transformers builds from the GGUF's own vocabulary and template."""
    from transformers import AutoTokenizer

    from .embedded import GGUF_FILE
    from .loading import DEFAULT_SPEC, resolve

    gguf = Path(gguf)
    if gguf.name == GGUF_FILE:
        return AutoTokenizer.from_pretrained(resolve(DEFAULT_SPEC))
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def build(rest: str, ctx: Any) -> Any:
    """Agent-registry builder for ``llamacpp:default`` / ``llamacpp:PATH.gguf[#n_ctx=..&threads=..]``."""
    from .registry import Built

    if ctx.role != "reasoner":
        raise ValueError("spec 'llamacpp:...' is a reasoner; a planner needs another spec (e.g. default).")
    if getattr(ctx, "frozen", "same") != "same":
        raise ValueError(f"--frozen {ctx.frozen}: the llamacpp: reasoner decodes the GGUF's own weights as they are; "
                         "drop --frozen (or use it with a torch reasoner spec).")
    if getattr(ctx.lora, "enabled", False):  # trained: rollouts here, updates in torch (agents.llamacpp_lora)
        return build_trainable(rest, ctx)
    path, options = parse_spec(rest)
    engine = Engine(path, **options)
    config = ctx.config if isinstance(ctx.config, ReasonerConfig) else ReasonerConfig(seed=ctx.seed)
    reasoner = LlamaCppReasoner(engine, load_tokenizer(path), config)
    return Built(reasoner, {"kind": "llamacpp", "gguf": path, "n_ctx": engine.n_ctx, "threads": engine.threads,
                            "unified": engine.unified})


def build_trainable(rest: str, ctx: Any) -> Any:
    """Registry builder for ``llamacpp:default`` with ``ctx.lora.enabled`` (:mod:`agents.llamacpp_lora`)."""
    from .embedded import GGUF_FILE
    from .llamacpp_lora import EngineLoraReasoner
    from .loading import load_causal_lm
    from .registry import Built, _torch_dtype, _with_lora

    path, options = parse_spec(rest)
    if Path(path).name != GGUF_FILE:
        raise ValueError(f"a LoRA reasoner on the engine needs a torch twin of the GGUF to learn on; only "
                         f"llamacpp:default (the embedded model) has one, not {path!r}. Use llamacpp:default or a "
                         "torch reasoner spec.")
    learner = _with_lora("default", ctx, lambda: load_causal_lm("default", dtype=_torch_dtype(ctx.dtype))).agent
    roller = LlamaCppReasoner(Engine(path, **options), learner.tokenizer, learner.config)
    engine = roller.engine
    return Built(EngineLoraReasoner(learner, roller),
                 {"kind": "llamacpp", "gguf": path, "n_ctx": engine.n_ctx, "threads": engine.threads,
                  "unified": engine.unified, "lora": True, "learner": "default"})


class LlamaCppReasoner(ReasonerTurns):
    """:class:`agents.base.Policy` (role ``"reasoner"``) on a llama.cpp :class:`Engine` (see module docstring)."""

    role = "reasoner"

    def __init__(self, engine: Engine, tokenizer: Any, config: ReasonerConfig | None = None):
        self.engine, self.tokenizer = engine, tokenizer
        self.config = config or ReasonerConfig()
        if len(tokenizer) > engine.n_vocab:
            raise ValueError(f"the tokenizer has {len(tokenizer)} tokens but {engine.path.name} only {engine.n_vocab}; "
                             "it is not this model's tokenizer.")
        probe = "Step 1: 2 + 3 = 5.\n\nSo \\boxed{5}"
        if engine.tokenize(probe) != self._encode(probe):
            raise ValueError(f"the tokenizer does not encode text as {engine.path.name}'s own vocabulary does; "
                             "it is not this model's tokenizer.")
        self._setup_ids()
        self._suppressed = np.asarray(self.suppressed_ids, dtype=np.int64)
        self.generator = np.random.default_rng(self.config.seed)
        self.adapter_syncs = 0
        self._adapted = False
        self._adapter_dir: Path | None = None
        self.reset(0)

    @property
    def fingerprint(self) -> str:
        """What :mod:`agents.replay` keys this reasoner's steps by: the GGUF's sha256, llama.cpp's version and the
        engine settings that change a step (context size, unified KV); raises ``TypeError`` once an adapter is synced
        (a trained reasoner is not frozen: replay the bare GGUF, or a GGUF with the adapter merged)."""
        if self._adapted:
            raise TypeError("cannot fingerprint a llamacpp reasoner with a synced LoRA adapter for replay; replay the "
                            "bare GGUF or merge the adapter into a GGUF first.")
        import hashlib

        import llama_cpp

        h = hashlib.sha256()
        with open(self.engine.path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return f"llamacpp:{h.hexdigest()}:{llama_cpp.__version__}:n_ctx={self.engine.n_ctx}:unified={self.engine.unified}"

    # ------------------------------------------------------------------------------ LoRA adapter sync

    def sync_adapter(self, adapter: Mapping[str, Any] | str | Path | None, alpha: float | None = None,
                     name: str | None = None) -> dict[str, Any]:
        """Decode with this LoRA adapter from now on (call between rollouts; it drops the KV caches).

        Args:
            adapter: PEFT adapter weights by name (``...layers.N.self_attn.q_proj.lora_A[.NAME].weight``;
                only they are written, :mod:`agents.gguf_lora`), a PEFT adapter dir (``adapter_config.json``
                + ``adapter_model.safetensors``), an adapter ``.gguf`` file, or None for the bare base.
            alpha: PEFT's ``lora_alpha`` (needed with weights; a dir has it in its config).
            name: Keep only this PEFT adapter's weights (a shared base carries one per agent).

        Returns:
            The loaded adapter's summary (tensors, ranks, alpha), empty for None.
        """
        self._adapted = adapter is not None
        if adapter is None:
            self.engine.clear_adapter()
            return {}
        if isinstance(adapter, (str, Path)) and Path(adapter).suffix == ".gguf":
            return self.engine.load_adapter(adapter)
        if isinstance(adapter, (str, Path)):
            adapter, alpha = _read_peft_dir(Path(adapter))
        if alpha is None:
            raise ValueError("sync_adapter(weights) needs alpha= (the adapter's lora_alpha, agents.lora.LoraSpec.alpha).")
        from .gguf_lora import write_adapter

        if self._adapter_dir is None:
            self._adapter_dir = Path(tempfile.mkdtemp(prefix="rsim-lora-"))
            weakref.finalize(self, shutil.rmtree, str(self._adapter_dir), True)
        path = write_adapter(self._adapter_dir / f"adapter-{self.adapter_syncs}.gguf", adapter, alpha,
                             self.engine.base_tensors, adapter=name)
        try:
            summary = self.engine.load_adapter(path)  # llama.cpp copies the tensors into its own buffers
        finally:
            path.unlink(missing_ok=True)
        self.adapter_syncs += 1
        return summary

    # ------------------------------------------------------------------------------ Policy API

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all conversations; the next :meth:`act` starts ``num_copies`` new ones."""
        self.num_copies = num_copies
        self._convs = [_Conversation() for _ in range(num_copies)]
        self._live = set(range(num_copies))
        self.engine.reset(num_copies)
        if seed is not None:
            self.generator = np.random.default_rng(seed)

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        """Write the next step of every listed copy (one batched decode); return the step texts."""
        check_act_args(copy_ids, observations, self.num_copies)
        for gone in self._live - set(copy_ids):  # finished copies: free their KV
            self.engine.remove(gone)
        self._live = set(copy_ids)
        rows = sorted(copy_ids)
        by_copy = dict(zip(copy_ids, observations))
        feeds = {c: self._start_turn(c, by_copy[c]) for c in rows}
        logits = self._prefill_prompts(feeds)
        texts = self._decode_turn(rows, feeds, logits)
        return [texts[c] for c in copy_ids]

    # ------------------------------------------------------------------------------ internals

    def _prefill_prompts(self, feeds: dict[int, list[int]]) -> dict[int, np.ndarray]:
        """Round 0: each distinct prompt is decoded once and its KV copied to the copies that share it;
        ``feeds`` keeps only what follows the prompt (the lead-in). Returns the prompts' logits."""
        if not self.config.share_prefill or any(self.engine.past[c] for c in feeds):
            return {}
        first: dict[tuple[int, ...], int] = {}
        for c in feeds:
            first.setdefault(tuple(feeds[c][:self._convs[c].prompt_len]), c)
        logits = self.engine.feed({c: list(p) for p, c in first.items()})
        out = {}
        for c in list(feeds):
            n = self._convs[c].prompt_len
            src = first[tuple(feeds[c][:n])]
            if src != c:
                self.engine.share(src, c)
            out[c], feeds[c] = logits[src], feeds[c][n:]
        return out

    def _decode_turn(self, rows: list[int], feeds: dict[int, list[int]], logits: dict[int, np.ndarray]) -> dict[int, str]:
        cfg = self.config
        convs = [self._convs[c] for c in rows]
        starts = [len(c.ids) for c in convs]
        step_tokens: list[list[int]] = [[] for _ in rows]
        active = [True] * len(rows)
        caps = self._caps(convs)
        logits = {**logits, **self.engine.feed(feeds)}
        for count in range(1, max(caps) + 1):
            live = [r for r in range(len(rows)) if active[r]]
            tokens, lps = self._pick(np.stack([logits[rows[r]] for r in live]))
            for r, tok, lp in zip(live, tokens, lps):
                conv = convs[r]
                conv.ids.append(tok); conv.gen_mask.append(1); conv.logprobs.append(lp)
                step_tokens[r].append(tok)
                if tok == self.eos_id:
                    conv.open = False
                if count == caps[r] or not conv.open or (cfg.stop_at_delimiter and self._stops(conv, step_tokens[r])):
                    active[r] = False
            if not any(active):
                break
            logits = self.engine.feed({rows[r]: [step_tokens[r][-1]] for r in range(len(rows)) if active[r]})
            for r, conv in enumerate(convs):
                conv.fed += active[r]
        return self._close_turns(rows, convs, starts, step_tokens)

    def _pick(self, logits: np.ndarray) -> tuple[list[int], list[float]]:
        """One token per row of ``[rows, vocab]`` logits and its log-prob (:mod:`agents.sampling`'s convention)."""
        x = logits.astype(np.float32) / np.float32(self.record_temperature)
        if self._suppressed.size:
            x[:, self._suppressed] = -np.inf
        top = x.max(-1, keepdims=True)
        lp = x - (top + np.log(np.exp(x - top).sum(-1, keepdims=True)))
        if self.config.greedy:
            tokens = lp.argmax(-1)
        else:
            tokens = np.array([self._sample_row(row) for row in lp])
        return tokens.tolist(), lp[np.arange(len(lp)), tokens].astype(float).tolist()

    def _sample_row(self, lp: np.ndarray) -> int:
        p = np.exp(lp.astype(np.float64))
        order = None
        if self.config.top_p < 1.0:  # the smallest set of top tokens whose mass reaches top_p (always >= 1 token)
            order = np.argsort(-p, kind="stable")
            sorted_p = p[order]
            p = sorted_p * (np.cumsum(sorted_p) - sorted_p < self.config.top_p)
        cum = np.cumsum(p)
        i = int(min(np.searchsorted(cum, self.generator.random() * cum[-1], side="right"), len(p) - 1))
        return int(order[i]) if order is not None else i


def _read_peft_dir(path: Path) -> tuple[dict[str, Any], float]:
    """A PEFT adapter dir's weights and the alpha that gives llama.cpp's ``alpha / r`` PEFT's scale."""
    import json

    from safetensors.numpy import load_file

    config, weights = path / "adapter_config.json", path / "adapter_model.safetensors"
    if not config.is_file() or not weights.is_file():
        raise ValueError(f"{str(path)!r} is not a PEFT adapter dir (needs adapter_config.json and "
                         "adapter_model.safetensors; save one with model.save_pretrained), nor a .gguf adapter.")
    try:
        cfg = json.loads(config.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{config} is not valid JSON ({e}); save the adapter again (model.save_pretrained).") from e
    if not isinstance(cfg, dict):
        raise ValueError(f"{config}: expected a JSON object, got {type(cfg).__name__}; save the adapter again.")
    alpha, rank = float(cfg.get("lora_alpha", 0)), int(cfg.get("r", 0))
    if not alpha > 0 or rank < 1 or cfg.get("rank_pattern") or cfg.get("alpha_pattern") or cfg.get("use_dora"):
        raise ValueError(f"{config}: llama.cpp takes a plain LoRA: a positive lora_alpha and r, no per-module "
                         "rank/alpha patterns, no DoRA.")
    if cfg.get("use_rslora"):  # PEFT scales by alpha / sqrt(r), llama.cpp by alpha / r
        alpha *= rank ** 0.5
    try:
        return load_file(str(weights)), alpha
    except Exception as e:  # noqa: BLE001 -- safetensors' own error names neither the file nor the fix
        raise ValueError(f"{weights} cannot be read, truncated or not safetensors ({' '.join(str(e).split())[:160]}); "
                         "save the adapter again (model.save_pretrained).") from e
