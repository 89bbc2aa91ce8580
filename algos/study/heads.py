"""Trained planner heads read from disk and played greedily on stored features: no backbone, no forward pass.

A head-only planner's decision is ``argmax log_softmax(head(feature) / T)`` over the legal strategies, the feature
being the frozen backbone's (:mod:`algos.study.features`). :func:`find_heads` finds the kept heads of a study folder
(``heads/seed_<k>/``) or of any directory of ``rsim train`` run dirs (``<name>_s<k>/checkpoints/step_*/``);
:class:`HeadPlanner` plays one of them as a planner policy, the same greedy decision
:class:`agents.planners.llm.Planner` makes (forced decisions are not scored).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from .features import FeatureStore, obs_key

if TYPE_CHECKING:
    from agents.base import Policy
    from agents.planners.llm import StrategyHead
    from agents.replay.plan_tree import PlanTree
    from rsim_env import Problem
    from rsim_env.game import EnvConfig

    from .tables import Groups

__all__ = ["Head", "find_heads", "load_head", "HeadPlanner", "greedy_plans"]

WEIGHTS = "model.planner.safetensors"


@dataclass(frozen=True)
class Head:
    """One kept head: where it is, its seed and the planner backbone it was trained on."""

    seed: int
    path: Path
    """The checkpoint directory (``config.json`` + :data:`WEIGHTS`)."""
    spec: str
    """The planner backbone's model spec (the run config's ``model.planner``)."""


def find_heads(folder: str | Path) -> list[Head]:
    """The kept heads under ``folder``: run dirs named ``seed_<k>`` or ``<name>_s<k>``, by seed."""
    from agents.runs import find_checkpoint

    folder = Path(folder)
    found: dict[int, Head] = {}
    for d in sorted(folder.iterdir()) if folder.is_dir() else []:
        m = re.fullmatch(r"(?:seed_|.+_s)(\d+)", d.name)
        ckpt = find_checkpoint(d, "planner") if m and d.is_dir() else None
        if ckpt is None:
            continue
        seed = int(m.group(1))
        if seed in found:
            raise ValueError(f"{folder}: two head dirs for seed {seed} ({found[seed].path}, {ckpt}); keep one.")
        config = json.loads((ckpt / "config.json").read_text())
        found[seed] = Head(seed, ckpt, str(config.get("model", {}).get("planner", "default")))
    if not found:
        raise ValueError(f"no trained heads under {folder}: expected run dirs seed_<k>/ (rsim study --stage train) or "
                         "<name>_s<k>/checkpoints/step_*/ holding model.planner.safetensors.")
    return [found[s] for s in sorted(found)]


def load_head(head: Head) -> tuple[StrategyHead, float]:
    """The head module (:class:`agents.planners.llm.StrategyHead`, its standardisation included) and the planner's
    softmax temperature."""
    import torch
    from safetensors.torch import load_file

    from agents.planners.llm import StrategyHead

    state = load_file(str(head.path / WEIGHTS))
    missing = {"weight", "bias", "feature_mean", "feature_scale"} - set(state)
    if missing:
        raise ValueError(f"{head.path / WEIGHTS} lacks {sorted(missing)}: it is not a head-only planner's head "
                         "(train with planner.head_only=true).")
    out, hidden = state["weight"].shape
    module = StrategyHead(hidden, out)
    module.load_state_dict(state)
    config = json.loads((head.path / "config.json").read_text())
    temperature = float(config.get("planner", {}).get("temperature", 1.0))
    return module.requires_grad_(False).to(torch.float32), temperature


class HeadPlanner:
    """A greedy planner policy: a kept head on stored features (module docstring). A context without a stored
    feature raises naming the fix (compute the features: the score stage does)."""

    role = "planner"

    def __init__(self, head: StrategyHead, temperature: float, store: FeatureStore) -> None:
        self.head, self.temperature, self.store = head, temperature, store
        self.reset(0)

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self.num_copies = num_copies

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        import numpy as np
        import torch

        k = self.head.out_features
        masks = [np.asarray(o.get("action_mask", np.ones(k, np.int8)), dtype=np.int8) for o in observations]
        actions = [int(np.flatnonzero(m)[0]) for m in masks]
        free = [i for i, m in enumerate(masks) if int(m.sum()) > 1]
        if not free:
            return actions
        keys = [obs_key(observations[i]) for i in free]
        lost = [key for key in keys if key not in self.store]
        if lost:
            raise ValueError(f"{len(lost)} planner contexts have no stored feature (e.g. {lost[0]}): compute the "
                             f"features of this tree with the planner {self.store.spec!r} first (rsim study --stage "
                             "score computes missing ones).")
        with torch.inference_mode():
            logits = self.head(torch.stack([self.store[key] for key in keys]).float())
            mask_t = torch.as_tensor(np.stack([masks[i] for i in free]))
            logp = torch.log_softmax((logits / self.temperature).masked_fill(mask_t == 0, float("-inf")), dim=-1)
            for i, a in zip(free, logp.argmax(-1).tolist()):
                actions[i] = int(a)
        return actions

    def records(self) -> list[None]:
        return [None] * self.num_copies


def greedy_plans(planner: Policy, tree: PlanTree, problems: Sequence[Problem], env: EnvConfig,
                 groups: Groups | None = None) -> dict[str, tuple[int, ...]]:
    """``planner``'s greedy plan on every problem, played against ``tree`` (one batched rollout; ``groups``: an
    :class:`algos.study.tables.Groups` of ``env`` to reuse)."""
    from agents.replay.plan_tree import TreeReasoner
    from algos.rollout import rollout

    from .tables import Groups

    out = rollout((groups or Groups(env)).get(problems, 1), TreeReasoner(tree), planner, seed=0)
    return {t["info"]["problem_id"]: tuple(int(s) for s in t["info"]["strategies"]) for t in out.trajectories}
