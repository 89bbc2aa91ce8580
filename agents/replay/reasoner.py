"""Exact replay of a frozen, greedy reasoner (model spec ``replay:SPEC``).

With greedy decoding and frozen weights a reasoner's step is a deterministic function of what it
has been shown (problem, plan prefix, protocol: all in its observations), of its own earlier steps,
of its decoding settings and of its weights. :class:`ReplayReasoner` wraps any such reasoner and
stores every step it writes in a :class:`StepStore` (SQLite in WAL mode, safe under concurrent
writers, bounded size), keyed by a hash chain::

    key_{-1} = sha256(fingerprint of the weights, decoding settings, reasoner class, device, torch)
    key_k    = sha256(key_{k-1}, step_{k-1} as the reasoner wrote it (text and token ids), observation of round k)

A step whose key is stored is read back instead of decoded, so planner-only training and every
evaluation re-use each step ever generated (``benchmarks/runtime/replay.py`` measures the speed-up and
checks the episodes are the same; ``benchmarks/plans/table.py`` builds the table of every plan on it).

Rules (documented contract):

* A reasoner that samples is refused (:func:`decoding_settings`): a cached sample would silently
  turn a stochastic policy into a fixed one. Only ``config.greedy=True`` (LLM reasoners), a
  ``greedy=True`` attribute (toy agents) or ``deterministic=True`` (your own agent) is accepted.
* The wrapped reasoner decodes lazily: a copy whose steps are all stored never reaches it. A
  reasoner keeps per-copy state (a KV cache) and drops every copy missing from an ``act`` call, so
  misses are decoded in *sessions*: copies of the wrapped reasoner (same weights, own decoding state; a
  llama.cpp reasoner's copy decodes on a fork of its engine, so sessions never share a KV cache) that
  follow a set of copies. A copy that misses at round ``k`` while no session holds its state
  (it was read back before) starts a new session that is first *caught up* to its stored rounds
  ``0..k-1`` (``stats["catchup_steps"]``). An LLM reasoner (:class:`agents.base.Prefilling`: every
  :class:`agents.reasoner.Reasoner`, torch, llama.cpp or served) is given the stored steps' token ids
  (``Reasoner.prefill``): the session's conversation holds exactly the stored tokens and the step decoded at
  round ``k`` reads them as a prompt continuation, so it is conditioned on exactly the history its key names
  whatever batch shapes stored those steps (``tests/test_replay_prefill.py``; a slow test there on llama.cpp).
  Prefilled and step-by-step decoded KV differ in floating-point rounding; ``benchmarks/runtime/replay_prefill.py``
  measures how often that alone changes a greedy step. Any other reasoner (scripted, toy: no numerics) decodes
  its stored rounds again. ``stats["catchup_mismatch"]`` counts catch-up steps whose text differs from the
  stored one (0 by construction with prefill: a nonzero count is a store inconsistent with its keys); that
  copy's later steps are returned but not stored.
* Copies that share a key in one call are each decoded (a session cannot branch a KV cache); the
  store keeps the first.
* Greedy decoding of a batch is not exactly invariant to the batch's other rows (padding, matrix
  shapes): on the embedded model 1 of 160 ``rsim eval`` episodes decoded live differed from the
  steps a differently shaped batch had stored (docs/plan_table.md). The store makes the answer
  exact: one decode per key, read back the same ever after.
* The wrapper exposes no ``module``/``score``: no learner can train (and so change) a replayed reasoner.

The cache lives in ``$RSIM_REPLAY_DIR`` (default ``$RSIM_CACHE/replay``, i.e. ``~/.cache/rsim/replay``),
capped at ``$RSIM_REPLAY_MAX_MB`` (default 2048) by evicting the oldest steps (reported in ``stats``).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

from ..base import Prefilling, check_act_args
from .store import StepStore, StoredStep

__all__ = ["ReplayReasoner", "ReplayRecord", "StepStore", "STATS", "decoding_settings", "weights_fingerprint",
           "replay_kind", "build", "default_store_path", "first_key", "next_key"]

STATS = ("hits", "misses", "catchup_steps", "catchup_mismatch", "sessions")
"""The counts in :attr:`ReplayReasoner.stats` (every run summary and study JSON records them)."""

VERSION = 2
"""Bumped when the key layout changes (old entries then simply miss). 2: the chain hashes each step's token ids
too, and steps are stored with them (catch-up by prefill)."""


def default_store_path() -> Path:
    """``$RSIM_REPLAY_DIR/steps.sqlite`` (default ``$RSIM_CACHE/replay``)."""
    from ..embedded import cache_dir

    root = os.environ.get("RSIM_REPLAY_DIR") or cache_dir() / "replay"
    return Path(root) / "steps.sqlite"


def _tensor_bytes(t: Any) -> bytes:
    if getattr(t, "is_quantized", False):
        return _tensor_bytes(t.int_repr()) + repr((float(t.q_scale()), int(t.q_zero_point()))).encode()
    flat = t.detach().cpu().contiguous().reshape(-1)
    return flat.view(__import__("torch").uint8).numpy().tobytes() if flat.numel() else b""


def _hash_value(h: Any, v: Any) -> None:
    import torch

    if isinstance(v, torch.Tensor):
        h.update(f"{v.dtype}{tuple(v.shape)}".encode())
        h.update(_tensor_bytes(v))
    elif isinstance(v, (tuple, list)):
        for x in v:
            _hash_value(h, x)
    else:  # e.g. packed params of a dynamically quantized Linear
        unpack = getattr(v, "__getstate__", None)
        h.update(repr(type(v)).encode())
        if unpack is not None and not isinstance(v, (int, float, str, bool, type(None))):
            try:
                _hash_value(h, unpack())
                return
            except Exception:  # noqa: BLE001 -- fall back to the repr below, still a function of the value
                pass
        h.update(repr(v).encode())


def weights_fingerprint(agent: Any) -> str:
    """sha256 over every parameter and buffer the agent decodes with (names, dtypes, shapes, bytes) and its
    tokenizer's vocabulary size and chat template; raises ``TypeError`` for an agent with no weights to hash."""
    modules = [m for m in (getattr(agent, "model", None), getattr(agent, "module", None)) if m is not None]
    if not modules and not getattr(agent, "deterministic", False) and not getattr(agent, "fingerprint", ""):
        raise TypeError(f"cannot fingerprint {type(agent).__name__}: it has no `model` or `module` to hash; "
                        "give it `fingerprint` (a str naming its exact behaviour) to replay it.")
    h = hashlib.sha256(repr(getattr(agent, "fingerprint", "")).encode())
    seen: set[int] = set()
    for m in modules:
        if id(m) in seen:
            continue
        seen.add(id(m))
        for name, v in sorted(m.state_dict().items()):
            h.update(name.encode())
            _hash_value(h, v)
    tok = getattr(agent, "tokenizer", None)
    if tok is not None:
        h.update(repr((len(tok), getattr(tok, "chat_template", None), tok.eos_token)).encode())
    return h.hexdigest()


def decoding_settings(agent: Any) -> dict[str, Any]:
    """The decoding settings that go into the key; raises ``ValueError`` if ``agent`` may sample."""
    cfg = getattr(agent, "config", None)
    if cfg is not None and hasattr(cfg, "greedy"):
        greedy = bool(cfg.greedy)
        settings = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(vars(cfg))
    else:
        greedy = bool(getattr(agent, "greedy", False) or getattr(agent, "deterministic", False))
        settings = {"greedy": greedy}
    if not greedy:
        raise ValueError(f"replay: the reasoner {type(agent).__name__} samples (greedy=False), so its steps are not a "
                         "function of its inputs and caching them would silently fix one sample; decode greedily "
                         "(rsim train --set reasoner.greedy=true, rsim eval -k 1) or do not wrap it in replay:.")
    for name in ("seed", "temperature", "top_p"):  # argmax ignores them: training (T=0.7) and eval share steps
        settings.pop(name, None)
    return json.loads(json.dumps(settings, default=str))


def _jsonable(v: Any) -> Any:
    if hasattr(v, "tolist"):
        return v.tolist()
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return v


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(_jsonable(list(parts)), sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def first_key(root: str, obs: dict[str, Any]) -> str:
    """The key of a copy's first step: ``sha256(root, observation)`` (module docstring)."""
    return _digest(root, obs)


def next_key(previous: str, step: StoredStep, obs: dict[str, Any]) -> str:
    """The key of the step after ``step`` (stored under ``previous``), shown ``obs``: the chain of the module docstring."""
    return _digest(previous, step.text, step.ids, obs)


@dataclasses.dataclass
class ReplayRecord:
    """One copy's steps and the tokens each cost when it was first decoded."""

    steps: list[str] = dataclasses.field(default_factory=list)
    tokens: list[int] = dataclasses.field(default_factory=list)
    replayed: list[bool] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Copy:
    keys: list[str] = dataclasses.field(default_factory=list)
    observations: list[dict] = dataclasses.field(default_factory=list)
    record: ReplayRecord = dataclasses.field(default_factory=ReplayRecord)
    ids: list[tuple[int, ...] | None] = dataclasses.field(default_factory=list)
    """Each step's token ids (None for an agent without tokens): what a catch-up prefills."""
    session: Any = None
    """The :class:`_Session` holding this copy's decoding state, if any."""
    diverged: bool = False
    """A catch-up step differed from the stored one: later steps of this copy are not stored."""


class _Session:
    """A shallow copy of the wrapped reasoner following ``local`` (copy id -> its id in the session)."""

    def __init__(self, inner: Any, copies: list[int]) -> None:
        self.agent = copy.copy(inner)
        self.agent.reset(len(copies))
        self.local = {c: i for i, c in enumerate(copies)}
        self.written = dict.fromkeys(copies, 0)

    def close(self) -> None:
        """Free what this session's copy holds of its own (a llama.cpp fork's context, ``release``); torch copies
        hold nothing beyond Python objects."""
        release = getattr(self.agent, "release", None)
        if callable(release):
            release()

    def act(self, copies: list[int], observations: list[dict]) -> list[StoredStep]:
        """Decode the next step of ``copies`` (every other copy of the session is dropped, as the reasoner drops it)."""
        texts = self.agent.act([self.local[c] for c in copies], observations)
        recs = self.agent.records() if hasattr(self.agent, "records") else None
        for c in list(self.local):  # the reasoner dropped every copy not in this call
            if c not in copies:
                del self.local[c]
        out = []
        for c, text in zip(copies, texts):
            self.written[c] += 1
            ids = tuple(self.agent.step_ids(self.local[c])) if isinstance(self.agent, Prefilling) else None
            out.append(StoredStep(text, _last_step_tokens(recs[self.local[c]] if recs else None, text), ids))
        return out

    def prefill(self, copies: list[int], observations: list[dict], steps: list[StoredStep]) -> list[str]:
        """Give ``copies`` their stored steps of this round without decoding (:meth:`agents.reasoner.Reasoner.prefill`)."""
        texts = self.agent.prefill([self.local[c] for c in copies], observations, [s.ids for s in steps],
                                   [s.text for s in steps])
        for c in copies:
            self.written[c] += 1
        return texts


class ReplayReasoner:
    """A frozen greedy reasoner whose steps are read from a :class:`StepStore` when stored (module docstring).

    Args:
        inner: the reasoner to replay (any :class:`agents.base.Policy` with role ``"reasoner"``).
        store: where steps live (shared by every process that replays the same reasoner).
        fingerprint: the weights' fingerprint (computed with :func:`weights_fingerprint` when None).
    """

    role = "reasoner"

    def __init__(self, inner: Any, store: StepStore, fingerprint: str | None = None) -> None:
        if getattr(inner, "role", "reasoner") != "reasoner":
            raise ValueError(f"replay: wraps a reasoner, got a {inner.role!r} agent.")
        self.inner, self.store = inner, store
        self.settings = decoding_settings(inner)
        self.fingerprint = fingerprint or weights_fingerprint(inner)
        device = getattr(inner, "device", "cpu")
        import torch

        self.root = _digest("rsim-replay", VERSION, self.fingerprint, self.settings, replay_kind(inner),
                            str(getattr(device, "type", device)), torch.__version__)
        self.prefills = isinstance(inner, Prefilling)
        """Catch-up gives sessions the stored steps (True for every LLM reasoner) instead of decoding them again."""
        self.stats = dict.fromkeys(STATS, 0)
        self._copies: list[_Copy] = []
        self.num_copies = 0

    @property
    def catch_up(self) -> str:
        """How a session catches up to stored rounds: ``"prefill"`` (the stored token ids are fed) or ``"decode"``
        (decoded again: an agent with no tokens, for which a step is a function of the observations alone)."""
        return "prefill" if self.prefills else "decode"

    # ------------------------------------------------------------------------------ Policy API

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        """Forget all conversations (the wrapped reasoner is used only when a step misses) and close their sessions."""
        for s in {id(c.session): c.session for c in getattr(self, "_copies", ()) if c.session is not None}.values():
            s.close()
        self.num_copies = num_copies
        self._copies = [_Copy() for _ in range(num_copies)]

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        """The next step of every listed copy: stored ones read back, the rest decoded and stored."""
        check_act_args(copy_ids, observations, self.num_copies)
        keys = [self._key(c, o) for c, o in zip(copy_ids, observations)]
        found = self.store.get_many(keys)
        for c, key, obs in zip(copy_ids, keys, observations):
            self._copies[c].keys.append(key)
            self._copies[c].observations.append(dict(obs))
        missed = [c for c, key in zip(copy_ids, keys) if key not in found]
        self.stats["hits"] += len(copy_ids) - len(missed)
        self.stats["misses"] += len(missed)
        decoded = self._decode(missed) if missed else {}
        self.store.put_many([(self._copies[c].keys[-1], *decoded[c]) for c in missed if not self._copies[c].diverged])
        texts = []
        for c, key in zip(copy_ids, keys):
            step = decoded[c] if c in decoded else found[key]
            cp = self._copies[c]
            cp.ids.append(step.ids)
            cp.record.steps.append(step.text)
            cp.record.tokens.append(step.tokens)
            cp.record.replayed.append(c not in decoded)
            texts.append(step.text)
        return texts

    def records(self) -> list[ReplayRecord]:
        """Per copy: its steps, their token counts and whether each was read back."""
        return [c.record for c in self._copies]

    def num_generated(self, record: ReplayRecord) -> int:
        """Tokens the reasoner wrote for this episode when its steps were first decoded."""
        return int(sum(record.tokens))

    def token_usage(self, record: ReplayRecord) -> dict[str, int]:
        """``reasoner_written`` as when decoded live (what was read is not stored)."""
        return {"reasoner_written": self.num_generated(record)}

    # ------------------------------------------------------------------------------ internals

    def history(self, copy: int) -> list[tuple[str, StoredStep]]:
        """Copy ``copy``'s steps since :meth:`reset`, each with its key (what :mod:`agents.replay.plan_tree` keeps)."""
        cp = self._copies[copy]
        return [(k, StoredStep(t, n, ids)) for k, t, n, ids in zip(cp.keys, cp.record.steps, cp.record.tokens, cp.ids)]

    def _key(self, c: int, obs: dict[str, Any]) -> str:
        copy_ = self._copies[c]
        if copy_.keys:
            return next_key(copy_.keys[-1], StoredStep(copy_.record.steps[-1], 0, copy_.ids[-1]), obs)
        return first_key(self.root, obs)

    def _decode(self, copies: list[int]) -> dict[int, StoredStep]:
        """Decode the newest round of ``copies``: in the session that holds a copy's state, or in a new
        session after catching the copy up (module docstring)."""
        by_session: dict[int, tuple[_Session, list[int]]] = {}
        fresh = []
        for c in copies:
            cp = self._copies[c]
            s = cp.session
            if s is not None and c in s.local and s.written[c] == len(cp.keys) - 1:
                by_session.setdefault(id(s), (s, []))[1].append(c)
            else:
                fresh.append(c)
        for r in sorted({len(self._copies[c].keys) for c in fresh}):  # one new session per round
            group = [c for c in fresh if len(self._copies[c].keys) == r]
            s = _Session(self.inner, group)
            self.stats["sessions"] += 1
            self._catch_up(s, group)
            by_session[id(s)] = (s, group)
        out: dict[int, StoredStep] = {}
        for s, cs in by_session.values():
            for c in cs:
                self._copies[c].session = s
            out.update(zip(cs, s.act(cs, [self._copies[c].observations[-1] for c in cs])))
        return out

    def _catch_up(self, session: _Session, copies: list[int]) -> None:
        """Bring ``copies`` to their stored rounds in ``session``, one call per round: prefilled with the stored
        steps (an LLM reasoner), else decoded again (module docstring)."""
        for r in range(len(self._copies[copies[0]].keys) - 1):  # every copy here is at the same round
            obs = [self._copies[c].observations[r] for c in copies]
            stored = [StoredStep(self._copies[c].record.steps[r], self._copies[c].record.tokens[r], self._copies[c].ids[r])
                      for c in copies]
            if self.prefills:
                missing = [c for c, s in zip(copies, stored) if s.ids is None]
                if missing:
                    raise ValueError(f"replay: the stored round {r} of copies {missing} has no token ids, so a "
                                     f"{type(self.inner).__name__} cannot be caught up to it; the store "
                                     f"{self.store.path} holds steps of another agent under this reasoner's keys: "
                                     "delete it (it only caches steps, which are decoded again).")
                texts = session.prefill(copies, obs, stored)
            else:
                texts = [step.text for step in session.act(copies, obs)]
            for c, text, step in zip(copies, texts, stored):
                self.stats["catchup_steps"] += 1
                if text != step.text:
                    self.stats["catchup_mismatch"] += 1
                    self._copies[c].diverged = True


def replay_kind(agent: Any) -> str:
    """The agent's name in replay keys: its ``replay_kind`` when it has one, else its class name. An
    :class:`agents.reasoner.Reasoner` names its decoder's (``"LlamaCppReasoner"`` for llama.cpp: the class name the
    keys were made with before the decoding layer, so steps already stored stay valid)."""
    return str(getattr(agent, "replay_kind", None) or type(agent).__name__)


def _last_step_tokens(record: Any, text: str) -> int:
    """Tokens the newest step of ``record`` took (its last ``step_spans`` entry; else its word count)."""
    spans = getattr(record, "step_spans", None)
    if spans:
        start, end = spans[-1]
        return int(sum(record.gen_mask[start:end]))
    tokens = getattr(record, "tokens", None)
    if tokens and isinstance(tokens[-1], list):
        return len(tokens[-1])
    return len(text.split())


def build(rest: str, ctx: Any) -> Any:
    """Registry builder of ``replay:SPEC``: SPEC's reasoner, replayed from :func:`default_store_path`."""
    from ..registry import Built, build_agent

    if ctx.role != "reasoner":
        raise ValueError("spec 'replay:' wraps a reasoner; a planner is trained, so its choices cannot be replayed.")
    if not rest:
        raise ValueError("spec 'replay:' needs the reasoner's spec after the colon, e.g. replay:default.")
    inner, info = build_agent(rest, ctx)
    path = default_store_path()
    max_mb = float(os.environ.get("RSIM_REPLAY_MAX_MB", "2048"))
    agent = ReplayReasoner(inner, StepStore(path, max_mb=max_mb))
    return Built(agent, {"kind": "replay", "spec": rest, "loaded": info, "store": str(path),
                         "fingerprint": agent.fingerprint})
