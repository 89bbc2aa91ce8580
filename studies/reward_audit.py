"""Reward audit of committed episode files: announcements, self-repeats, and answers boxed from the question.

Replays every recorded episode of the given ``studies.interaction`` JSON files (curriculum problems,
whose question texts are regenerated from their ids) through :class:`rsim_env.game.Episode` under the
protocol it was recorded with, and reports per file:

* ``steps``, ``echo``, ``vacuous``, ``self_repeat``, ``no_number`` — shares of reasoner steps (planner modes);
* ``follow_old`` / ``follow_new`` — mean R_follow under the old rule (every step, detection only) and today's
  (:func:`rsim_env.rewards.r_follow`: answer step skipped, vacuous and self-repeat steps void);
* ``answers`` — episodes with an extracted number; ``from_question`` — share of those whose answer is a number
  of the question and not the gold (boxed without computing); ``gold_in_question`` — share of problems whose
  gold is itself a number of the question (what a penalty on question numbers would also hit);
* ``reasoner_from_question`` / ``reasoner_other_wrong`` — mean reasoner reward today of wrong answers taken
  from the question vs other wrong answers (a separate signal is needed only if the first pays more).

Run: ``python -m studies.reward_audit`` (writes ``docs/rewards_results/audit.json``, prints a table).
"""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rsim_env import EnvConfig, novelty, rewards
from rsim_env.sources import curriculum
from rsim_env.game import Episode
from rsim_env.problem import Problem

FILES = tuple(f"docs/interaction_results/{n}.json.gz" for n in ("after2", "proto_chat+lead", "proto_chat", "proto_lead",
                                                                 "proto_none", "before"))


@dataclass(frozen=True)
class Config:
    """What to audit."""

    files: tuple[str, ...] = FILES
    """``studies.interaction`` JSON files (plain or ``.gz``) with an ``episodes`` list (curriculum problem ids)."""
    out: str = "docs/rewards_results/audit.json"
    """Where the JSON goes ("" = nowhere)."""
    curriculum_size: int = 400
    """Held-out default-curriculum problems on which ``gold_in_question`` is also measured."""


@lru_cache(maxsize=None)
def _task(name: str, seed: int, size: int) -> tuple[Problem, ...]:
    return tuple(curriculum.task_problems(name, size, seed))


def problem(pid: str) -> Problem:
    """The curriculum problem behind id ``task/seed/index``."""
    name, seed, index = pid.split("/")
    return _task(name, int(seed), 64)[int(index)]


def replay_plan(row: dict[str, Any]) -> list[int]:
    """A saved episode's plan: ``strategies`` of an episode record (rsim_env.record), ``injected`` of older rows."""
    return list((row.get("strategies") if "version" in row else row.get("injected")) or [])


def replay(row: dict[str, Any], protocol: str) -> dict[str, Any]:
    """The info of a recorded episode replayed under today's rules."""
    plan = replay_plan(row)
    cfg = EnvConfig(protocol=protocol or "inline", planner=bool(plan), max_steps=max(1, len(plan)), max_step_chars=10**6)
    ep = Episode(problem(row["problem_id"]), cfg)
    for i, step in enumerate(row["steps"]):
        if plan:
            ep.plan(plan[i])
        ep.write(step)
    return ep.outcome()


def _share(xs: list[bool]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def audit_file(path: str) -> dict[str, Any]:
    raw = Path(path).read_bytes()
    data = json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)  # the committed files are gzip JSON
    protocol = data.get("config", {}).get("protocol") or "inline"  # files from before protocols: the inline design
    label = protocol if any(replay_plan(row) for row in data["episodes"]) else "none"
    steps: dict[str, list[bool]] = {"echo": [], "vacuous": [], "self_repeat": [], "no_number": []}
    follow_old, follow_new, from_q, gold_in_q, r_from_q, r_other = [], [], [], [], [], []
    for row in data["episodes"]:
        out = replay(row, protocol)
        info, q = out["info"], problem(row["problem_id"])
        if q.answer != str(row["answer"]):
            raise ValueError(f"{path}: {row['problem_id']} regenerates with gold {q.answer!r}, the file says "
                             f"{row['answer']!r}; the curriculum changed, so this file cannot be audited.")
        qnums = {u for u in novelty.math_units(q.question) if u.replace(".", "").isdigit()}
        gold_in_q.append(q.answer.lstrip("-") in qnums)
        if replay_plan(row):
            for k in ("echo", "vacuous", "self_repeat"):
                steps[k] += info[k]
            steps["no_number"] += [not any(c.isdigit() for c in s) for s in info["steps"]]
            planned, detected = info["strategies"], [set(d) for d in info["detected"]]
            follow_old.append(sum(p in d for p, d in zip(planned, detected)) / len(planned))
            follow_new.append(info["components"]["follow"])
        ans = (info["extracted"] or "").strip().lstrip("-")
        if ans and ans.replace(".", "").isdigit():
            taken = ans in qnums and not info["correct"]
            from_q.append(taken)
            if not info["correct"]:
                (r_from_q if taken else r_other).append(out["rewards"]["reasoner"])
    mean = (lambda xs: round(sum(xs) / len(xs), 4) if xs else None)
    return {"protocol": label, "episodes": len(data["episodes"]), "steps": len(steps["echo"]),
            **{k: _share(v) for k, v in steps.items()}, "follow_old": mean(follow_old), "follow_new": mean(follow_new),
            "answers": len(from_q), "from_question": _share(from_q), "gold_in_question": _share(gold_in_q),
            "reasoner_from_question": mean(r_from_q), "reasoner_other_wrong": mean(r_other)}


def gold_in_question(problems: list[Problem]) -> float:
    """Share of ``problems`` whose gold answer is one of the question's numbers."""
    hits = [p.answer.lstrip("-") in novelty.math_units(p.question) for p in problems]
    return round(sum(hits) / max(1, len(hits)), 4)


def main(cfg: Config = Config()) -> dict[str, Any]:
    t0 = time.perf_counter()
    rows = {f: audit_file(f) for f in cfg.files}
    heldout = curriculum.curriculum_problems(cfg.curriculum_size, "heldout") if cfg.curriculum_size else []
    result = {"config": asdict(cfg), "files": rows, "weights": asdict(rewards.RewardWeights()),
              "curriculum_gold_in_question": gold_in_question(heldout), "curriculum_problems": len(heldout),
              "wall_s": round(time.perf_counter() - t0, 1)}
    keys = ["protocol", "episodes", "steps", "echo", "vacuous", "self_repeat", "no_number", "follow_old", "follow_new",
            "answers", "from_question", "gold_in_question", "reasoner_from_question", "reasoner_other_wrong"]
    lines = ["| file | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    lines += [f"| {Path(f).name.removesuffix('.gz')} | " + " | ".join(str(r[k]) for k in keys) + " |" for f, r in rows.items()]
    result["table_md"] = "\n".join(lines)
    print(result["table_md"])
    print(f"gold among the question's numbers: {result['curriculum_gold_in_question']:.1%} of "
          f"{len(heldout)} held-out default-curriculum problems")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.reward_audit", __doc__)
