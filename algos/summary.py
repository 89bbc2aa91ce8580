"""What ``rsim train`` says when it ends: what ran, where its results are, and the next commands.

The run's numbers go to ``RUN_DIR/summary.json`` (what ``rsim train`` printed as raw JSON before);
the console gets a few lines a person reads. :func:`summary_dict` and :func:`summary_text` are pure
(tests call them on a fake result); :func:`report` writes the file and returns the text.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

SUMMARY_FILE = "summary.json"
"""Name of the run's summary, written into its output dir by every finished ``rsim train``."""


def summary_dict(out: dict[str, Any]) -> dict[str, Any]:
    """``train()``'s result without tensors and history: every field (``replay``: the replayed reasoner's hits,
    misses, catch-up steps and mismatches, or None) plus ``last`` (the last step's rewards and the metrics without
    a ``/``, rounded)."""
    shown = {k: v for k, v in out.items() if k not in ("history", "params")}
    last = out["history"][-1] if out.get("history") else {}
    shown["last"] = {k: round(v, 4) for k, v in last.items() if "/" not in k or k.endswith("/reward")}
    return shown


def summary_text(cfg: Any, shown: dict[str, Any]) -> str:
    """The lines printed at the end of a run: what ran, where it is, what to run next.

    Args:
        cfg: the run's :class:`algos.config.RunConfig` (learner, models, data).
        shown: :func:`summary_dict` of the run's result.
    """
    run = shown["output_dir"]
    q = shlex.quote(run)
    rewards = ", ".join(f"{k} {v:+.2f}" for k, v in shown.get("last", {}).items() if k.endswith("/reward"))
    lines = [
        f"rsim train: {shown['steps']} steps of {cfg.learner} (planner {cfg.model.planner}, reasoner "
        f"{cfg.model.reasoner}, data {cfg.data.source}) in {shown.get('seconds', 0):.0f} s "
        f"({shown.get('seconds_per_step', 0):.1f} s/step)",
    ]
    if rewards:
        lines.append(f"  last step    {rewards}")
    replay = shown.get("replay")
    if replay:
        lines.append(f"  replay       {replay['hits']} steps read back, {replay['misses']} decoded, "
                     f"{replay['catchup_steps']} caught up ({replay['catchup_mismatch']} mismatched)")
    lines += [
        f"  run dir      {run}",
        f"  checkpoint   {shown.get('checkpoint') or '(none written)'}",
        f"  TensorBoard  {Path(run) / 'tensorboard'} (the curves; the resolved config as text)",
        f"  rollouts     {Path(run) / 'samples.jsonl'}",
        f"  summary      {Path(run) / SUMMARY_FILE} (every number above, as JSON)",
        "next:",
        f"  rsim view {q}   # the rollouts as one HTML page: {Path(run) / 'rollouts.html'}",
        f"  tensorboard --logdir {q}   # the curves in a browser",
    ]
    trained = "planner" if cfg.learner in ("stackelberg", "planner_only") else "reasoner"
    if trained == "planner":
        # a planner trained against a frozen reasoner is evaluated with that reasoner (e.g. replay:default)
        frozen = cfg.learner == "planner_only" and cfg.model.reasoner != "default"
        reasoner = f" --reasoner {shlex.quote(cfg.model.reasoner)}" if frozen else ""
        lines.append(f"  rsim eval --planner {q}{reasoner} --modes none,fixed:3,8,trained --limit 100 --out {q}/eval"
                     "   # score the trained planner (held-out problems)")
    else:
        lines.append(f"  rsim eval --reasoner {q} --modes none --limit 100 --out {q}/eval"
                     "   # the trained reasoner on held-out problems")
    lines.append(f"  rsim train --resume {q} --steps {int(shown['steps']) * 2}   # train on from the last checkpoint")
    return "\n".join(lines)


def report(cfg: Any, out: dict[str, Any]) -> str:
    """Write ``RUN_DIR/summary.json`` and return the text to print."""
    shown = summary_dict(out)
    path = Path(shown["output_dir"]) / SUMMARY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(shown, indent=1) + "\n", encoding="utf-8")
    return summary_text(cfg, shown)
