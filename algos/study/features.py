"""The frozen planner backbone's feature of every decision context on a plan tree, computed once and kept on disk.

A head-only planner (``planner.head_only``) decides from a linear head on the frozen backbone's last-token feature of
its context (the question, then each earlier round's strategy and step). On a filled tree the contexts are fixed, so
their features are computed once (:func:`compute`) and kept in the study folder as safetensors (:class:`FeatureStore`:
one ``[contexts, hidden]`` tensor, the context keys in its metadata). Training installs them in the planner's own
feature cache (:func:`install`) and scoring plays heads on them directly (:class:`algos.study.heads.HeadPlanner`): a
rerun does no forward pass.

A context is keyed by its content (:func:`context_key`: the question and the ``(strategy, step)`` pairs as the env
shows them), never by a problem id: the same context on another tree reads the same feature.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .config import StudyConfig
from .paths import StudyPaths

if TYPE_CHECKING:
    import torch

    from agents.planners.llm import Planner
    from agents.replay.plan_tree import PlanTree
    from rsim_env import Problem

__all__ = ["FORMAT", "context_key", "obs_key", "tree_contexts", "FeatureStore", "load_store", "compute", "install",
           "feature_planner", "stacked", "feature_store"]

FORMAT = "1"
"""Version of the feature file's layout (its metadata's ``format``)."""

Path_ = Sequence[tuple[int, str]]


def context_key(question: str, path: Path_) -> str:
    """A decision context's key: a hash of the question and the ``(strategy, step text)`` pairs before it."""
    blob = json.dumps([question, [[int(s), str(t)] for s, t in path]], ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def obs_key(obs: dict[str, Any]) -> str:
    """:func:`context_key` of a planner observation (its question, strategies and steps so far)."""
    return context_key(obs["question"], list(zip(obs["strategies"], obs["steps"])))


def tree_contexts(tree: PlanTree, problems: Sequence[Problem]) -> list[tuple[str, list[tuple[int, str]], int]]:
    """Every path through the tree a planner encodes, as ``(question, [(strategy, step)...], decisions)``: per problem
    and plan prefix of non-terminal strategies the longest path (cut to the tree's ``max_question_chars`` and
    ``max_step_chars``, as the env shows them), and how many of its decisions the planner encodes (a forced one --
    the last round's under ``env.terminate_last_round`` -- is never encoded). Paths that encode the same contexts are
    listed once, in the order of :func:`agents.replay.plan_tree.warm_planner` (so the batched features match)."""
    from agents.replay.plan_tree import planner_contexts

    env = tree.meta["env"]
    rounds = int(env["max_steps"])
    decisions = rounds - 1 if env.get("terminate_last_round") else rounds
    out, seen = [], set()
    for question, path in planner_contexts(tree, problems):
        used = path[:decisions - 1] if decisions >= 1 else []
        key = context_key(question, used)
        if key not in seen:
            seen.add(key)
            out.append((question, list(used), decisions))
    return out


class FeatureStore:
    """Context key -> feature (``[hidden]``, float32 in memory), loaded from and saved to one safetensors file.

    The file keeps the precision it was written in (``stored_dtype``: float32 by default; the committed adaptive cache
    is float16, see ``tools/compact_features.py``): features are upcast to float32 when read, so training and scoring
    see the same values, and cast back to the stored precision when the store is saved with more features."""

    def __init__(self, spec: str, features: dict[str, torch.Tensor] | None = None, stored_dtype: str = "float32") -> None:
        self.spec = spec
        """The planner backbone the features are of (a model spec)."""
        self.features: dict[str, torch.Tensor] = {k: v.float() for k, v in (features or {}).items()}
        self.stored_dtype = stored_dtype
        """The precision the file holds (``float32``, ``float16`` or ``bfloat16``)."""

    def __len__(self) -> int:
        return len(self.features)

    def __contains__(self, key: str) -> bool:
        return key in self.features

    def __getitem__(self, key: str) -> torch.Tensor:
        return self.features[key]

    @classmethod
    def load(cls, path: str | os.PathLike, spec: str) -> "FeatureStore":
        """The store at ``path`` (an empty one if there is no file); refuses a file of another backbone."""
        from safetensors import safe_open

        path = Path(path)
        if not path.is_file():
            return cls(spec)
        with safe_open(str(path), "pt") as f:
            meta = f.metadata() or {}
            if meta.get("format") != FORMAT:
                raise ValueError(f"{path}: feature file format {meta.get('format')!r}, this code reads {FORMAT}; "
                                 "delete it (the features are recomputed).")
            if meta.get("spec") != spec:
                raise ValueError(f"{path} holds features of the planner {meta.get('spec')!r}, not {spec!r}; keep each "
                                 "planner's features in its own file (algos.study.paths.StudyPaths.features_file).")
            keys, tensor = json.loads(meta["keys"]), f.get_tensor("features")
        return cls(spec, dict(zip(keys, tensor)), stored_dtype=str(tensor.dtype).removeprefix("torch."))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the store to a temporary sibling, then rename it into place."""
        import torch
        from safetensors.torch import save_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self.features)
        tensor = torch.stack([self.features[k].float().cpu() for k in keys]).to(getattr(torch, self.stored_dtype))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        os.close(fd)
        try:
            save_file({"features": tensor}, tmp, metadata={"format": FORMAT, "spec": self.spec,
                                                          "keys": json.dumps(keys)})
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    def missing(self, contexts: Sequence[tuple[str, list[tuple[int, str]], int]]) -> int:
        """How many decision contexts of ``contexts`` (:func:`tree_contexts`) have no feature here."""
        return sum(context_key(q, path[:d]) not in self for q, path, n in contexts for d in range(n))


def _rows(planner: Planner, contexts: Sequence[tuple[str, list[tuple[int, str]], int]]
          ) -> list[tuple[list[int], list[int], list[str]]]:
    """Per path: its token ids, the position of each encoded decision and each decision's context key."""
    from rsim_env.render import planner_header, planner_segment

    rows = []
    for question, path, decisions in contexts:
        ids = planner.encode(planner_header(question))
        positions, keys = [len(ids) - 1], [context_key(question, [])]
        for i, (s, text) in enumerate(path[:decisions - 1]):
            ids = ids + planner.encode(planner_segment(i, s, text))
            positions.append(len(ids) - 1)
            keys.append(context_key(question, path[:i + 1]))
        rows.append((ids, positions, keys))
    return rows


def compute(store: FeatureStore, planner: Planner, contexts: Sequence[tuple[str, list[tuple[int, str]], int]],
            batch: int = 16, progress: bool = False) -> int:
    """Compute the features ``store`` lacks with ``planner``'s frozen backbone (batched right-padded forwards, as
    :func:`agents.replay.plan_tree.warm_planner`); returns how many were computed."""
    import torch

    if not planner.config.head_only:  # an agents.planners.llm.Planner (its config says how it trains)
        raise ValueError("features are kept for a head-only planner (planner.head_only=true): a LoRA or fully trained "
                         "planner's features move as it trains.")
    todo = [r for r in _rows(planner, contexts) if any(k not in store for k in r[2])]
    chunks = range(0, len(todo), batch)
    if progress and todo:
        from tqdm.auto import tqdm

        chunks = tqdm(chunks, desc="planner features", unit="batch")
    added = 0
    with torch.no_grad():
        for i in chunks:
            chunk = todo[i:i + batch]
            got = planner.context_features([r[0] for r in chunk], [r[1] for r in chunk])
            for key, feature in zip(itertools.chain.from_iterable(r[2] for r in chunk), got):
                if key not in store:
                    store.features[key] = feature.detach().float().cpu().clone()
                    added += 1
    return added


def install(store: FeatureStore, planner: Planner, contexts: Sequence[tuple[str, list[tuple[int, str]], int]]) -> int:
    """Put the stored features of ``contexts`` into ``planner``'s own feature cache (keyed by the token ids it
    encodes: :meth:`agents.planners.llm.Planner.cache_feature`), so it never runs its backbone on them; returns how
    many were installed."""
    n = 0
    for ids, positions, keys in _rows(planner, contexts):
        for p, key in zip(positions, keys):
            if key in store:
                planner.cache_feature(ids[:p + 1], store[key])
                n += 1
    return n


def feature_planner(spec: str, seed: int = 0) -> Planner:
    """A fresh head-only planner on the backbone of ``spec`` (any planner spec ``rsim train`` takes), built as ``rsim
    train`` builds it: what :func:`compute` reads features with."""
    from agents.planners.llm import PlannerConfig
    from agents.registry import AgentContext, build_agent

    return build_agent(spec, AgentContext(role="planner", config=PlannerConfig(head_only=True, seed=seed),
                                          seed=seed)).agent


def stacked(store: FeatureStore, contexts: Sequence[tuple[str, list[tuple[int, str]], int]]) -> torch.Tensor:
    """The features of every decision context of ``contexts`` as one ``[contexts, hidden]`` tensor, in their order
    (e.g. the train contexts a head's standardisation is fitted to)."""
    import torch

    keys = [context_key(q, path[:d]) for q, path, n in contexts for d in range(n)]
    lost = [k for k in keys if k not in store]
    if lost:
        raise ValueError(f"{len(lost)} contexts have no stored feature; compute them first (features.compute).")
    return torch.stack([store[k] for k in keys])


def _own_file(cfg: StudyConfig, spec: str) -> Path | None:
    """Where this study writes features it computes when its ``features_dir`` is another folder (e.g. a preset's
    committed cache, read only): ``<out>/features``; None when ``features_dir`` is ``<out>/features`` itself."""
    paths = StudyPaths.of(cfg)
    own = paths.out / "features"
    return None if own.resolve() == paths.features.resolve() else dataclasses.replace(paths, features=own).features_file(spec)


def load_store(cfg: StudyConfig, spec: str) -> FeatureStore:
    """The study's features of ``spec``: :meth:`StudyPaths.features_file`, plus those this study computed itself
    beside its output when that file is another folder's (:func:`_own_file`)."""
    store = FeatureStore.load(StudyPaths.of(cfg).features_file(spec), spec)
    own = _own_file(cfg, spec)
    if own is not None and own.is_file():
        store.features.update(FeatureStore.load(own, spec).features)
    return store


def feature_store(cfg: StudyConfig, spec: str, tree: PlanTree, items: list[Problem]) -> FeatureStore:
    """The study's feature store of ``spec`` with every decision context of ``items`` on ``tree`` (missing ones
    computed with the backbone, then saved: in :meth:`StudyPaths.features_file`, or, when that is another folder's
    cache, in ``<out>/features`` -- a preset's committed cache is only written with ``--docs``)."""
    store = load_store(cfg, spec)
    contexts = tree_contexts(tree, items)
    need = store.missing(contexts)
    if need:
        own = _own_file(cfg, spec)
        base = FeatureStore.load(StudyPaths.of(cfg).features_file(spec), spec) if own is not None else None
        path = own or StudyPaths.of(cfg).features_file(spec)
        print(f"[rsim study] computing {need} planner features with {spec!r} (once; kept in {path})", file=sys.stderr,
              flush=True)
        compute(store, feature_planner(spec), contexts, progress=True)
        if base is None:
            store.save(path)
        else:  # only what the committed cache lacks, at its precision
            FeatureStore(spec, {k: v for k, v in store.features.items() if k not in base},
                         stored_dtype=base.stored_dtype).save(path)
        store = load_store(cfg, spec)  # the values as stored (a half-precision file rounds them): every reader's
    return store
