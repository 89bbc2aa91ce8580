"""LLM planner: a decoder-only backbone + ``Linear(hidden, 9)`` head on the last token.

Token layout of one copy's trajectory (built from ids, never by re-tokenising joined text)::

    ids(planner_header(q)) + ids(planner_segment(0, p0, z0)) + ids(planner_segment(1, p1, z1)) + ...

The context of the decision at round ``t`` is the header plus segments ``0..t-1``, a token-prefix
of every later context; its strategy logits come from the hidden state of its last token. So the
log-probs of *all* decisions of a trajectory come from one causal forward over the longest
context (:meth:`Planner.trajectory_logprobs`), gathering hidden states at the recorded
``positions`` — equal to scoring each round separately (tested).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import copy

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from rsim_env.render import planner_header, planner_segment
from rsim_env import strategies
from rsim_env.validation import check_finite

from ..base import Scored, check_act_args
from ..hf.prefix import shareable, shared_prefix_hidden
from ..hf.sampling import right_pad

__all__ = ["PlannerConfig", "PlannerRecord", "StrategyHead", "Planner", "feature_key"]

_FORMAT = 1


def feature_key(ids: Sequence[int]) -> bytes:
    """The feature cache's key of a decision context: a hash of its token ids up to and including its last token
    (:attr:`Planner.feature_cache`)."""
    return hashlib.blake2b(np.asarray(ids, np.int64).tobytes(), digest_size=16).digest()


@dataclass(frozen=True)
class PlannerConfig:
    """How the planner picks strategies."""

    greedy: bool = False
    """Argmax at inference; False samples (training rollouts)."""
    temperature: float = 1.0
    """Softmax temperature of the strategy distribution (sampling and recorded log-probs)."""
    head_init_std: float = 0.02
    """Std of the freshly initialised head's weights (bias starts at 0)."""
    seed: int | None = None
    """Seed of the sampling generator (None: torch's global RNG)."""
    use_cache: bool = True
    """Keep a KV cache across rounds in :meth:`Planner.act` (feed only new segments) instead of
    re-encoding every context; decisions are the same either way."""
    share_prefill: bool = True
    """With the cache: encode each distinct question header once and copy its KV to every copy."""
    head_only: bool = False
    """Train the head alone on the frozen backbone's features (no LoRA, no gradient into the backbone). A context's
    feature (the last token's hidden state) is then a function of its tokens: it is computed once and kept, so
    planner-only training on a replayed reasoner (:mod:`agents.replay.reasoner`) costs one matmul per decision once every
    context has been seen. The KL reference is the frozen backbone with the initial head. Checkpoints hold the head."""
    feature_cache: int = 100_000
    """``head_only``: most context features kept in memory (least recently used go first; 0 = none)."""

    def __post_init__(self):
        check_finite(self)
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 (use greedy=True for argmax), got {self.temperature}")
        if isinstance(self.feature_cache, bool) or not isinstance(self.feature_cache, int) or self.feature_cache < 0:
            raise ValueError(f"feature_cache={self.feature_cache!r} is invalid: use an int >= 0 (0 = no cache).")


@dataclass(frozen=True)
class PlannerRecord:
    """One copy's decisions: everything a learner needs to rescore them in one forward."""

    input_ids: list[int]
    """Header + finished segments (the longest context)."""
    positions: list[int]
    """Last context token of each decision."""
    actions: list[int]
    """Chosen strategy per decision."""
    logprobs: list[float]
    """Log-prob of each choice at sampling time."""
    action_masks: list[list[int]]
    """Legal strategies at each decision."""
    temperature: float
    """Softmax temperature of the recorded log-probs."""


@dataclass
class _Trajectory:
    ids: list[int] = field(default_factory=list)
    segments: int = 0  # finished rounds already appended to ids
    fed: int = 0  # ids[:fed] are in the planner's KV cache (use_cache=True)
    positions: list[int] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    action_masks: list[list[int]] = field(default_factory=list)


class StrategyHead(torch.nn.Linear):
    """``Linear(hidden, k)`` on standardised features: ``W (x - feature_mean) / feature_scale + b``.

    The buffers start at 0 and 1 (the features as they are, bit for bit) and travel in every state dict, so a
    checkpoint carries them. :meth:`Planner.standardize_features` fits them (head-only planners). Why: a frozen
    LM's last-token features of one prompt template share one large component (SmolLM2-135M on the adaptive
    tree: feature norm 57.6, the mean feature's 56.1, per-dimension spread 0.48). Adam's sign-like step on raw
    features then moves every context's logits alike -- a global bias step of about ``lr x |mean|_1`` -- which
    collapses the policy onto one plan before the per-problem directions are learned (docs/training.md)."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__(in_features, out_features)
        self.register_buffer("feature_mean", torch.zeros(in_features))
        self.register_buffer("feature_scale", torch.ones(in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward((x - self.feature_mean) / self.feature_scale)


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    """Entropy (nats) over the last axis of log-probs where masked actions are ``-inf`` (they add 0)."""
    finite = torch.isfinite(logp)
    safe = torch.where(finite, logp, torch.zeros_like(logp))  # 0 * -inf would make NaN gradients
    return -(safe.exp() * safe * finite).sum(-1)


class Planner(torch.nn.Module):
    """Strategy policy implementing :class:`agents.base.Policy` (role ``"planner"``)."""

    role = "planner"

    def __init__(self, backbone: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 config: PlannerConfig | None = None, num_strategies: int | None = None):
        super().__init__()
        self.backbone = backbone
        self.tokenizer = tokenizer
        self.config = config or PlannerConfig()
        # one logit per row of the strategy table (default: as many as it has now)
        self.head = StrategyHead(backbone.config.hidden_size, num_strategies or strategies.num_strategies())
        with torch.no_grad():
            self.head.weight.normal_(0.0, self.config.head_init_std)
            self.head.bias.zero_()
        self.head.to(next(backbone.parameters()).device)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.generator = None
        if self.config.seed is not None:
            self.generator = torch.Generator(self.device).manual_seed(self.config.seed)
        self.lora = None  # AdapterSlot when the backbone is a LoRA adapter on a shared frozen base
        self._reference = False
        self._features: OrderedDict[bytes, torch.Tensor] = OrderedDict()  # head_only: context hash -> feature
        self.feature_stats = {"hits": 0, "misses": 0}
        if self.config.head_only:
            backbone.requires_grad_(False)
            object.__setattr__(self, "_ref_head", copy.deepcopy(self.head).requires_grad_(False))
        self.reset(0)

    def attach_lora(self, slot: Any) -> "Planner":
        """Run on ``slot``'s adapter of a shared frozen base (:mod:`agents.hf.lora`); train adapter + head.

        The KL reference (:meth:`reference`) is the base with the adapter disabled and the head as it
        is now (its initial weights), a frozen copy of ``Linear(hidden, 9)`` only.
        """
        from ..hf.lora import Trained

        if self.config.head_only:
            raise ValueError("A head_only planner trains the head on a frozen backbone; it takes no LoRA adapter. "
                             "Turn one off (--set model.planner_lora.enabled=false, or planner.head_only=false).")
        self.lora = slot
        params = {f"backbone.{n.removeprefix('model.')}": p for n, p in slot.parameters().items()}
        params |= {f"head.{n}": p for n, p in self.head.named_parameters()}
        object.__setattr__(self, "_trained", Trained(params))  # not a submodule: no double registration
        object.__setattr__(self, "_ref_head", copy.deepcopy(self.head).requires_grad_(False))
        return self

    def _scope(self) -> contextlib.AbstractContextManager:
        if self.lora is None:
            return contextlib.nullcontext()
        return self.lora.disabled() if self._reference else self.lora.active()

    def standardize_features(self, features: torch.Tensor, min_scale: float = 1e-3) -> None:
        """Head-only: fit the head's feature standardisation (:class:`StrategyHead`) to ``features``
        (``[contexts, hidden]``: the frozen backbone's features of the training contexts, e.g. a plan tree's), the
        KL reference's too. Call it before training: it changes what the head's weights mean."""
        if not self.config.head_only:
            raise ValueError("standardize_features fits a head on frozen features; this planner trains its backbone "
                             "(its features move). Build it with PlannerConfig(head_only=True).")
        hidden = self.head.in_features
        if features.ndim != 2 or features.shape[1] != hidden or features.shape[0] < 2:
            raise ValueError(f"standardize_features needs [contexts >= 2, {hidden}] features, got "
                             f"{list(features.shape)}; pass the training contexts' features (Planner.feature_cache).")
        f = features.detach().float().to(self.device)
        mean, scale = f.mean(0), f.std(0).clamp_min(min_scale)
        if not (torch.isfinite(mean).all() and torch.isfinite(scale).all()):
            raise ValueError("standardize_features: the features hold NaN or inf.")
        with torch.no_grad():
            for head in (self.head, self._ref_head):
                head.feature_mean.copy_(mean)
                head.feature_scale.copy_(scale)

    @property
    def shares_reference(self) -> bool:
        """True when :meth:`reference` gives the KL reference (LoRA, head_only); else a learner keeps a frozen copy."""
        return self.lora is not None or self.config.head_only

    @contextlib.contextmanager
    def reference(self):
        """Context: score as the KL reference (LoRA: base without adapter, initial head; head_only: initial head)."""
        if not self.shares_reference:
            raise ValueError("Planner.reference() needs a LoRA planner; a fully fine-tuned one keeps a frozen copy")
        self._reference = True
        try:
            yield self
        finally:
            self._reference = False

    @property
    def device(self) -> torch.device:
        return next(self.backbone.parameters()).device

    @classmethod
    def from_spec(cls, spec: str = "default", config: PlannerConfig | None = None,
                  dtype: torch.dtype = torch.float32) -> "Planner":
        """Fresh planner (new head) on the backbone of ``spec`` (see :mod:`agents.hf.loading`)."""
        from ..hf.loading import load_backbone

        return cls(*load_backbone(spec, dtype=dtype), config=config)

    # ------------------------------------------------------------------------------ scoring

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def strategy_logits(self, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]]) -> torch.Tensor:
        """Head logits at ``positions[r]`` of ``sequences[r]``, one right-padded forward.

        Returns:
            ``[rows, max_positions, num_strategies]`` (rows with fewer positions are zero-padded).
        """
        n = len(sequences)
        t_max = max(len(p) for p in positions)
        rows = torch.tensor([r for r, p in enumerate(positions) for _ in p], device=self.device)
        cols = torch.tensor([i for p in positions for i in p], device=self.device)
        # the first decision's context is the question header, shared by the G copies: encode it once
        prefix = [p[0] + 1 if p else 0 for p in positions]
        with self._scope():
            if self.config.head_only:
                picked = self.context_features(sequences, positions)
            elif self.config.share_prefill and shareable(sequences, prefix):
                picked = shared_prefix_hidden(self.backbone, sequences, prefix, rows, cols, self.pad_id)
            else:
                ids, mask = right_pad(sequences, self.pad_id, self.device)
                picked = self.backbone(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state[rows, cols]
        head = self._ref_head if self._reference else self.head
        gathered = head(picked.float())
        out = gathered.new_zeros(n, t_max, gathered.shape[-1])
        slot = torch.tensor([j for p in positions for j in range(len(p))], device=self.device)
        out[rows, slot] = gathered
        return out

    @property
    def feature_cache(self) -> OrderedDict[bytes, torch.Tensor]:
        """head_only: the frozen backbone's features by context (:func:`feature_key` of the context's token ids),
        kept up to ``config.feature_cache`` entries, least recently used dropped first. Planners on the same frozen
        backbone may share one (``planner.feature_cache = other.feature_cache``): a feature is computed once."""
        return self._features

    @feature_cache.setter
    def feature_cache(self, cache: OrderedDict[bytes, torch.Tensor]) -> None:
        if not isinstance(cache, OrderedDict):
            raise TypeError(f"Planner.feature_cache takes an OrderedDict (another planner's feature_cache), not "
                            f"{type(cache).__name__}.")
        self._features = cache

    def cache_feature(self, ids: Sequence[int], feature: torch.Tensor) -> None:
        """head_only: keep ``feature`` (``[hidden]``, e.g. read from disk) as the backbone's feature of the context
        whose token ids are ``ids`` (its last token is the decision's), so :meth:`context_features` reads it and runs
        no forward for it."""
        self._features[feature_key(ids)] = feature.to(self.device)

    def context_features(self, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]]) -> torch.Tensor:
        """head_only: the frozen backbone's hidden state at every ``positions[r]`` of ``sequences[r]`` (row-major),
        each read from the feature cache or computed (one right-padded forward over the rows with a miss)."""
        keys = [[feature_key(seq[:p + 1]) for p in ps] for seq, ps in zip(sequences, positions)]
        found: dict[bytes, torch.Tensor] = {}
        for k in (k for row in keys for k in row):
            if k in self._features:
                self._features.move_to_end(k)
                found[k] = self._features[k]
        todo = [r for r, row in enumerate(keys) if any(k not in found for k in row)]
        self.feature_stats["hits"] += sum(k in found for row in keys for k in row)
        if todo:
            rows = [sequences[r][:max(positions[r]) + 1] for r in todo]
            ids, mask = right_pad(rows, self.pad_id, self.device)
            with torch.no_grad():
                hidden = self.backbone(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state.float()
            for i, r in enumerate(todo):
                for k, p in zip(keys[r], positions[r]):
                    if k not in found:
                        found[k] = hidden[i, p].detach().clone()
                        self.feature_stats["misses"] += 1
                        if self.config.feature_cache:
                            self._features[k] = found[k]
            while len(self._features) > self.config.feature_cache:
                self._features.popitem(last=False)
        return torch.stack([found[k] for row in keys for k in row])

    def _logprobs(self, logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        logits = (logits / self.config.temperature).masked_fill(masks == 0, float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    def trajectory_logprobs(self, records: Sequence[PlannerRecord]) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs of the recorded actions of whole trajectories, one forward (gradients flow).

        Returns:
            ``(logp, valid)``: ``[rows, max_decisions]`` log-probs and a 0/1 float mask of real decisions.
        """
        logp, valid, _ = self._scored(records)
        return logp, valid

    def _scored(self, records: Sequence[PlannerRecord]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(logp, valid, entropy)``: :meth:`trajectory_logprobs` plus each decision's entropy (nats)."""
        logits = self._decision_logits(records)
        n, t_max, k = logits.shape
        masks = torch.ones(n, t_max, k, dtype=torch.int8, device=logits.device)
        actions = torch.zeros(n, t_max, dtype=torch.long, device=logits.device)
        valid = torch.zeros(n, t_max, device=logits.device)
        for r, rec in enumerate(records):
            t = len(rec.actions)
            masks[r, :t] = torch.as_tensor(np.asarray(rec.action_masks, dtype=np.int8), device=logits.device)
            actions[r, :t] = torch.as_tensor(rec.actions, device=logits.device)
            valid[r, :t] = 1
        full = self._logprobs(logits, masks)
        logp = full.gather(-1, actions[..., None]).squeeze(-1)
        return torch.where(valid.bool(), logp, torch.zeros_like(logp)), valid, _entropy(full) * valid

    def _decision_logits(self, records: Sequence[PlannerRecord]) -> torch.Tensor:
        """``[rows, max_decisions, num_strategies]`` head logits of the recorded decisions, computed only for the
        decisions with more than one allowed action: a forced one's log-prob is 0 and its gradient 0 whatever its
        logits, so its context (e.g. every last-round context under ``env.terminate_last_round``) is never encoded."""
        k, t_max = self.head.out_features, max((len(r.positions) for r in records), default=0)
        keep = [[j for j in range(len(r.positions)) if j >= len(r.action_masks) or sum(r.action_masks[j]) != 1]
                for r in records]
        rows = [r for r, js in enumerate(keep) if js]
        out = torch.zeros(len(records), t_max, k, device=self.device)
        if not rows:  # every decision forced: zero logits that still reach the parameters (a backward stays valid)
            return out + 0.0 * sum(p.sum() for p in self.module.parameters() if p.requires_grad)
        seqs = [records[r].input_ids[:max(records[r].positions[j] for j in keep[r]) + 1] for r in rows]
        sub = self.strategy_logits(seqs, [[records[r].positions[j] for j in keep[r]] for r in rows])
        at_r = torch.tensor([r for r in rows for _ in keep[r]], device=self.device)
        at_j = torch.tensor([j for r in rows for j in keep[r]], device=self.device)
        slot_r = torch.tensor([i for i, r in enumerate(rows) for _ in keep[r]], device=self.device)
        slot_j = torch.tensor([n for r in rows for n in range(len(keep[r]))], device=self.device)
        return out.index_put((at_r, at_j), sub[slot_r, slot_j].to(out.dtype))

    # ------------------------------------------------------------------------------ learner API

    @property
    def module(self) -> torch.nn.Module:
        """The parameters a learner optimises: the whole planner (backbone + head), or with LoRA
        only the adapter + head (:class:`agents.hf.lora.Trained`)."""
        if self.config.head_only:
            return self.head
        return self if self.lora is None else self._trained

    def score(self, records: Sequence[PlannerRecord]) -> Scored:
        """:meth:`trajectory_logprobs` as :class:`agents.base.Scored` (one advantage per decision), with the
        entropy of each decision's masked strategy distribution (gradients flow: an entropy bonus uses it)."""
        return Scored(*self._scored(records))

    def token_usage(self, record: PlannerRecord) -> dict[str, int]:
        """Tokens one episode cost: ``planner_context`` (longest context) and ``planner_read`` (tokens
        encoded: the longest context with the KV cache, else the sum of every decision's context)."""
        contexts = [p + 1 for p in record.positions]
        longest = max(contexts, default=0)
        return {"planner_context": longest, "planner_read": longest if self.config.use_cache else sum(contexts)}

    # ------------------------------------------------------------------------------ Policy API

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all trajectories; the next :meth:`act` starts ``num_copies`` new ones."""
        self.num_copies = num_copies
        self._trajs = [_Trajectory() for _ in range(num_copies)]
        self._kv = None
        if seed is not None:
            self.generator = torch.Generator(self.device).manual_seed(seed)

    def _context(self, copy: int, obs: dict[str, Any]) -> list[int]:
        traj = self._trajs[copy]
        steps, plans = obs["steps"], obs["strategies"]
        if int(obs["round"]) != len(traj.actions) or len(steps) != len(traj.actions):
            raise ValueError(f"copy {copy}: observation is for round {obs['round']} with {len(steps)} steps, but this "
                             f"planner has made {len(traj.actions)} decisions; call reset() before every rollout")
        if not traj.ids:
            traj.ids = self.encode(planner_header(obs["question"]))
        for i in range(traj.segments, len(steps)):
            traj.ids += self.encode(planner_segment(i, int(plans[i]), steps[i]))
        traj.segments = len(steps)
        return traj.ids

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        """Choose a strategy for every listed copy (one batched forward)."""
        check_act_args(copy_ids, observations, self.num_copies)
        contexts = [self._context(c, o) for c, o in zip(copy_ids, observations)]
        k = self.head.out_features
        masks = [np.asarray(o.get("action_mask", np.ones(k, np.int8)), dtype=np.int8) for o in observations]
        if any(m.shape != (k,) or not m.any() for m in masks):
            raise ValueError(f"action_mask must have shape ({k},) with at least one allowed action")
        kv = self.config.use_cache and not self.config.head_only  # head_only reads its feature cache instead
        # a decision with one allowed action (e.g. env.terminate_last_round) is forced: no forward, log-prob 0 (the
        # KV-cache route still feeds it, since its cache advances with every copy's turn)
        free = [i for i, m in enumerate(masks) if kv or int(m.sum()) > 1]
        actions, chosen = [int(np.flatnonzero(m)[0]) for m in masks], [0.0] * len(masks)
        if free:
            with torch.inference_mode():
                if kv:
                    logits = self._cached_logits(copy_ids)
                else:
                    logits = self.strategy_logits([contexts[i] for i in free],
                                                  [[len(contexts[i]) - 1] for i in free])[:, 0]
                mask_t = torch.as_tensor(np.stack([masks[i] for i in free]), device=logits.device)
                logp = self._logprobs(logits, mask_t)
                if self.config.greedy:
                    picked = logp.argmax(-1)
                else:
                    picked = torch.multinomial(logp.exp(), 1, generator=self.generator).squeeze(-1)
                for i, a, lp in zip(free, picked.tolist(), logp.gather(-1, picked[:, None]).squeeze(-1).tolist()):
                    actions[i], chosen[i] = a, lp
        for c, ctx, a, lp, m in zip(copy_ids, contexts, actions, chosen, masks):
            traj = self._trajs[c]
            traj.positions.append(len(ctx) - 1)
            traj.actions.append(a)
            traj.logprobs.append(lp)
            traj.action_masks.append(m.tolist())
        return actions

    def _cached_logits(self, copy_ids: Sequence[int]) -> torch.Tensor:
        """Head logits for each copy's current context, feeding the cache only the new segments."""
        from ..hf.kv import KVBatch

        if self._kv is None:
            self._kv = KVBatch(self.backbone, self.num_copies, self.pad_id, "prealloc", 512,
                               share_prefill=self.config.share_prefill)
        self._kv.keep(copy_ids)
        feeds = []
        for c in self._kv.rows:
            traj = self._trajs[c]
            feeds.append(traj.ids[traj.fed:])
            traj.fed = len(traj.ids)
        with self._scope():
            hidden = self._kv.feed(feeds)
        order = {c: r for r, c in enumerate(self._kv.rows)}
        return self.head(hidden[[order[c] for c in copy_ids]])

    def records(self) -> list[PlannerRecord]:
        """Per copy: the decisions of this rollout (rescore them with :meth:`score`)."""
        return [PlannerRecord(input_ids=list(t.ids), positions=list(t.positions), actions=list(t.actions),
                              logprobs=list(t.logprobs), action_masks=[list(m) for m in t.action_masks],
                              temperature=self.config.temperature) for t in self._trajs]

    # ------------------------------------------------------------------------------ persistence

    def save_pretrained(self, path: str | os.PathLike) -> Path:
        """Write ``backbone/`` (HF format + tokenizer), ``head.safetensors`` and ``planner.json``.

        Written to a temporary sibling directory and renamed into place, so a crash never leaves a
        half-saved planner at ``path``.
        """
        if self.lora is not None:
            raise ValueError("This planner is a LoRA adapter on a shared base; write a standalone planner with "
                             "`rsim export RUN_DIR --out DIR` (merges the adapter into the backbone).")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
        try:
            self.backbone.save_pretrained(tmp / "backbone", safe_serialization=True)
            self.tokenizer.save_pretrained(tmp / "backbone")
            save_file({k: v.detach().cpu().contiguous() for k, v in self.head.state_dict().items()},
                      tmp / "head.safetensors")
            meta = dict(format=_FORMAT, num_strategies=self.head.out_features,
                        hidden_size=self.head.in_features, config=asdict(self.config))
            (tmp / "planner.json").write_text(json.dumps(meta, indent=2))
            old = path.with_name(f".{path.name}.old")
            if path.exists():
                shutil.rmtree(old, ignore_errors=True)
                os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, config: PlannerConfig | None = None,
                        dtype: torch.dtype = torch.float32) -> "Planner":
        """Load a planner written by :meth:`save_pretrained` (``config`` overrides the saved one)."""
        path = Path(path)
        meta_file = path / "planner.json"
        if not meta_file.is_file():
            raise FileNotFoundError(f"{path} is not a saved planner (no planner.json); save one with "
                                    f"Planner.save_pretrained(path)")
        meta = json.loads(meta_file.read_text())
        if meta.get("format") != _FORMAT:
            raise ValueError(f"{meta_file}: planner format {meta.get('format')!r}, this code reads {_FORMAT}")
        backbone = AutoModel.from_pretrained(path / "backbone", dtype=dtype)
        tokenizer = AutoTokenizer.from_pretrained(path / "backbone")
        planner = cls(backbone, tokenizer, config or PlannerConfig(**meta["config"]), meta["num_strategies"])
        planner.head.load_state_dict(load_file(path / "head.safetensors", device=str(planner.device)))
        return planner
