"""Which route the arms' reasoner trains on (torch or llama.cpp rollouts), measured on val by ``--stage route``.

For each route of :data:`algos.study.arms.spec.ROUTES` the study's reasoner can take (torch rollouts; llama.cpp
rollouts of the adapter with truncated importance sampling), the trained arms asked (``grpo`` when none is) are
trained with the study's arm settings in ``<out>/arms/route/<route>/`` and scored live, greedily, on the **val**
split (never test): accuracy after the same episodes, and seconds per episode, side by side
(``<out>/arms/route/route.json``). Speed alone does not choose: a faster sampling copy that learns less is the worse
route. Set the winner with ``--set arm.route=ROUTE``; the docs say which was chosen and why.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..config import StudyConfig
from ..paths import StudyPaths
from .spec import ROUTES, TRAINED, parse_arms, route_reasoner

__all__ = ["measure"]


def measure(cfg: StudyConfig) -> dict[str, Any]:
    """Train and score on val under every route the reasoner has (module docstring); the side-by-side table."""
    from .score import split_problems, looks, score_look
    from .train import train

    arms = [a for a in parse_arms(cfg.arms) if a in TRAINED] or ["grpo"]
    base = Path(cfg.out) / "arms" / "route"
    rows: dict[str, Any] = {}
    for route in ROUTES:
        try:
            route_reasoner(cfg.reasoner, route)
        except ValueError as e:
            rows[route] = {"skipped": str(e)}
            continue
        paths = StudyPaths.of(cfg)
        sub = dataclasses.replace(cfg, out=str(base / route), tree_dir=str(paths.trees), heads_dir=str(paths.heads),
                                  features_dir=str(paths.features), arms=",".join(arms),
                                  arm=dataclasses.replace(cfg.arm, route=route))
        trained = train(sub)
        problems = split_problems(sub, "val")
        per_arm = {}
        for arm in arms:
            acc, seconds, episodes = [], 0.0, 0
            for lk in looks(sub, arm):
                out = score_look(sub, lk, problems, "val")
                acc.append(float(np.mean([bool(r["correct"]) for r in out])))
            for r in trained["runs"]:
                if r["arm"] == arm:
                    rec = json.loads((Path(r["run_dir"]) / "arm.json").read_text())
                    seconds += rec["wall_s"]
                    episodes += rec["totals"]["episodes"]
            per_arm[arm] = {"val_accuracy": float(np.mean(acc)), "val_accuracy_by_seed": acc,
                            "seconds_per_episode": seconds / episodes if episodes else None, "episodes": episodes}
        rows[route] = {"reasoner": route_reasoner(cfg.reasoner, route), "val_problems": len(problems), "arms": per_arm}
    path = base / "route.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows, indent=1) + "\n")
    for route, r in rows.items():
        for arm, v in r.get("arms", {}).items():
            spe = v["seconds_per_episode"]
            print(f"[rsim study arms] route {route}: {arm} val accuracy {100 * v['val_accuracy']:.1f} % "
                  f"({len(v['val_accuracy_by_seed'])} seeds), {spe if spe is None else round(spe, 3)} s/episode",
                  file=sys.stderr)
    return {"path": str(path), "routes": rows}
