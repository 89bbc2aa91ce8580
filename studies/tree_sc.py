"""Self-consistency at equal tokens on a held-out plan tree's problems: the baseline that needs new decoding.

The adaptive study's other baselines are read-backs from the tree (:mod:`studies.tree_baselines`). Self-consistency
samples the reasoner with no planner ``k`` times per problem at temperature ``T`` and takes the majority answer
(:func:`studies.efficacy_modes.majority_vote`); "at equal tokens" means ``k`` is the planner episode's reasoner
tokens (read + written) per problem over one no-planner sample's (:func:`studies.efficacy_modes.sc_samples`, at
least 1). The samples are drawn once by ``rsim eval`` (``--modes none --k K``; resumable, its episodes kept), on
exactly the tree's problems and under the planner's own run settings (the game's step and answer caps), and the
majority is scored at every ``k <= K``, the equal-token one marked. ::

    OMP_NUM_THREADS=1 python -m studies.tree_sc --out docs/training_results/tree_sc_test.json

The planner's token budget comes from ``budget_episodes``: a live ``rsim eval`` of a kept planner on problems of
the same split (``reasoner_read`` is only counted live; a replayed reasoner reads nothing).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

__all__ = ["Config", "episode_tokens", "majority_at", "main"]


@dataclass(frozen=True)
class Config:
    """Study settings."""

    tree_dir: str = "docs/efficacy_results/tree"
    """Where the held-out split's tree is (its complete problems are the ones sampled)."""
    split: str = "test"
    """The held-out split."""
    planner: str = "docs/training_results/planners/tree_adaptive_12_std/last_round_s0"
    """A kept planner run dir: its run settings (2 rounds, step and answer caps) are the samples' settings."""
    reasoner: str = "llamacpp:default#threads=1"
    """The reasoner that samples (the engine that decoded the trees; samples are never replayed)."""
    budget_episodes: str = "docs/training_results/eval_checks/tree_adaptive_12_std_s0_test60_live.episodes.jsonl.gz"
    """Live episodes of the planner (mode ``budget_mode``) whose mean reasoner tokens per problem is the budget."""
    budget_mode: str = "trained"
    """The mode of ``budget_episodes`` that is the planner."""
    k: int = 3
    """Samples drawn per problem (the majority is scored at every k up to this)."""
    temperature: float = 0.7
    """Sampling temperature."""
    seed: int = 0
    """Sampling seed (``rsim eval --seed``)."""
    batch: int = 16
    """Problems per batched rollout."""
    eval_dir: str = "runs/tree_sc"
    """``rsim eval --out`` (its journal resumes an interrupted run)."""
    out: str = ""
    """Where to write the JSON ("" = nowhere); the sampled episodes go beside it as ``<out>.episodes.jsonl.gz``."""

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"Config.k={self.k!r}: draw at least one sample per problem (e.g. --k 3).")
        if not self.temperature > 0:
            raise ValueError(f"Config.temperature={self.temperature!r}: sample at a positive temperature, e.g. 0.7.")


def episode_tokens(row: Mapping[str, Any]) -> float:
    """Reasoner tokens read + written in one episode row; refuses rows that did not count what they read."""
    from studies.efficacy_modes import reasoner_tokens

    tok = row.get("tokens") or {}
    if tok.get("reasoner_read") is None:
        raise ValueError(f"episode of {row.get('problem_id')!r} ({row.get('mode')!r}) has no reasoner_read count: "
                         "take the budget from a live run (a replayed reasoner reads nothing).")
    got = reasoner_tokens(row)
    assert got is not None
    return got


def majority_at(rows: Iterable[Mapping[str, Any]], k: int) -> dict[str, bool]:
    """Per problem, whether the majority answer of its samples ``0..k-1`` is correct."""
    from studies.efficacy_modes import majority_vote

    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by.setdefault(str(r["problem_id"]), []).append(r)
    out = {}
    for pid, rs in by.items():
        got = sorted((r for r in rs if int(r["sample"]) < k), key=lambda r: int(r["sample"]))
        if len(got) < k:
            raise ValueError(f"{pid}: {len(got)} samples, fewer than k={k}; draw them first (rsim eval --k {k}).")
        out[pid] = bool(majority_vote(got)["correct"])
    return out


def _read(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def _problems(cfg: Config) -> tuple[list[Any], int]:
    """The held-out tree's complete problems and the ``rsim eval --limit`` that loads exactly them."""
    from agents.replay.plan_tree import PlanTree
    from studies.tree_game import tree_eval_limit, tree_problems

    per_task, limit = tree_eval_limit(cfg.tree_dir, cfg.split)
    tree = PlanTree.load(Path(cfg.tree_dir) / f"adaptive_{cfg.split}.tree.json.gz")
    return tree_problems(tree, cfg.split, per_task), limit


def summarise(rows: Sequence[Mapping[str, Any]], ids: Sequence[str], budget: float, k_max: int) -> dict[str, Any]:
    """Majority accuracy at every k <= ``k_max`` on ``ids``, the tokens per sample, and the equal-token k."""
    from studies.efficacy_modes import sc_samples

    rows = [r for r in rows if r["problem_id"] in set(ids)]
    per_sample = sum(episode_tokens(r) for r in rows) / len(rows)
    k_equal = sc_samples(budget, per_sample, 0)
    by_k = {}
    for k in range(1, k_max + 1):
        got = majority_at(rows, k)
        by_k[str(k)] = {"accuracy": sum(got[p] for p in ids) / len(ids), "correct": [got[p] for p in ids]}
    single = [r for r in rows if int(r["sample"]) < k_max]
    return {"problems": len(ids), "budget_tokens_per_problem": budget, "tokens_per_sample": per_sample,
            "k_equal_tokens": k_equal, "k_equal_drawn": k_equal <= k_max,
            "sample_accuracy": sum(bool(r["correct"]) for r in single) / len(single),
            "no_answer": sum(r.get("extracted") is None for r in single) / len(single),
            "majority": by_k, "problem_ids": list(ids)}


def main(cfg: Config) -> dict[str, Any]:
    """Draw the samples (resumable), score the majority at every k, write the JSON and the episodes."""
    from algos.evaluation import main as evaluate

    problems, limit = _problems(cfg)
    ids = [p.id for p in problems]
    budget_rows = [r for r in _read(Path(cfg.budget_episodes)) if r["mode"] == cfg.budget_mode]
    if not budget_rows:
        raise ValueError(f"{cfg.budget_episodes} has no {cfg.budget_mode!r} episodes: name the planner's mode "
                         "(--budget-mode).")
    budget = sum(episode_tokens(r) for r in budget_rows) / len(budget_rows)
    evaluate(["--planner", cfg.planner, "--reasoner", cfg.reasoner, "--data", f"adaptive:{cfg.split}",
              "--limit", str(limit), "--modes", "none", "--k", str(cfg.k), "--temperature", str(cfg.temperature),
              "--seed", str(cfg.seed), "--batch", str(cfg.batch), "--out", cfg.eval_dir, "--no-plots"])
    rows = _read(Path(cfg.eval_dir) / "episodes.jsonl")
    missing = sorted(set(ids) - {r["problem_id"] for r in rows})
    if missing:
        raise ValueError(f"the samples miss {len(missing)} of the tree's problems (e.g. {missing[0]!r}): the eval "
                         f"loaded other problems than the {cfg.split} tree holds.")
    result = {"config": asdict(cfg), "budget_episodes": len(budget_rows),
              **summarise(rows, ids, budget, cfg.k)}
    s = result
    print(f"[tree_sc] {s['problems']} problems: budget {s['budget_tokens_per_problem']:.0f} tokens a problem, "
          f"{s['tokens_per_sample']:.0f} a sample -> k = {s['k_equal_tokens']} at equal tokens; majority accuracy "
          + ", ".join(f"k={k}: {100 * v['accuracy']:.1f} %" for k, v in s["majority"].items()))
    if cfg.out:
        out = Path(cfg.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        keep = [r for r in rows if r["problem_id"] in set(ids)]
        with gzip.open(out.with_suffix(".episodes.jsonl.gz"), "wt") as f:
            f.writelines(json.dumps(r) + "\n" for r in keep)
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.tree_sc", __doc__)
