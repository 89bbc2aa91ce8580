"""Audit of the ``rg`` kind: gold and perturbed answers graded by the kind, by ``score_answer`` and by math.

For a sample of reasoning-gym generators (lists, words, strings, yes/no), each of the first ``n`` entries'
gold and a few perturbations of it (items reversed, two items swapped, a character dropped, case changed,
the answer inside a sentence) are graded three ways:

* ``score``: the generator's own ``score_answer``, called in this process on our own perturbations of a gold
  (no model text is involved);
* ``rg``: the ``rg`` kind (:mod:`rsim_env.kinds.rgym`) on a ``\\boxed{}`` final step -- its partial score
  (``Grade.fraction``) and whether it counts as correct (full score only);
* ``math``: the math checker (:func:`rsim_env.answers.check`, as every reasoning-gym task was graded
  before this kind) on the same step.

``agree`` is the share of rows where the kind's score is the scorer's; ``math_false_credit`` counts rows
the math checker calls correct although the generator's scorer does not give full credit (an unsorted list
for a sorting task, ...).

Run: ``python -m studies.rg_audit`` (writes ``docs/rg_audit.json``, prints a table).
"""

from __future__ import annotations

import ast
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from rsim_env import answers
from rsim_env.kinds.rgym import RG
from rsim_env.sources.problems import reasoning_gym_problems

GENERATORS = ("number_sorting", "number_filtering", "word_sorting", "word_sequence_reversal", "spell_backward",
              "letter_counting", "syllogism", "family_relationships", "caesar_cipher", "spiral_matrix")
"""Sample: sorted/filtered number lists, word lists, a reversed word, a count (numeric: math by default),
yes/no, a relation word, a sentence, a matrix whose scorer calls ``eval`` (run behind the literal guard)."""


@dataclass(frozen=True)
class Config:
    """What to audit."""

    generators: tuple[str, ...] = GENERATORS
    """reasoning-gym dataset names."""
    n: int = 3
    """Entries per generator."""
    seed: int = 0
    """Generator seed."""
    out: str = "docs/rg_audit.json"
    """Where the JSON goes ("" = nowhere)."""


def _items(gold: str) -> tuple[list[str], Callable[[list[str]], str]] | None:
    """The gold as a list of items and the function that writes items back in the gold's own format."""
    if gold.startswith("["):
        value = ast.literal_eval(gold)  # a generator's gold, never model text
        return [str(v) for v in value], lambda xs: str(xs)
    for sep in (", ", " ", "\n"):
        if sep in gold:
            return gold.split(sep), sep.join
    return None


def perturbations(gold: str) -> dict[str, str]:
    """Named perturbations of ``gold`` that differ from it."""
    out = {"gold": gold}
    split = _items(gold)
    if split and len(split[0]) > 1:
        items, join = split
        out["reversed"] = join(items[::-1])
        out["swapped"] = join([items[1], items[0], *items[2:]])
    elif len(gold) > 1:
        out["reversed"] = gold[::-1]
    if len(gold) > 1:
        out["dropped_char"] = gold[: len(gold) // 2] + gold[len(gold) // 2 + 1:]
    out["upper"], out["lower"] = gold.upper(), gold.lower()
    out["in_sentence"] = f"it is {gold}"
    return {k: v for k, v in out.items() if k == "gold" or v != gold}


def audit(generator: str, n: int, seed: int) -> list[dict[str, Any]]:
    """One row per (entry, perturbation) of ``generator``."""
    import reasoning_gym

    ds = reasoning_gym.create_dataset(generator, size=n, seed=seed)
    rows = []
    for problem in reasoning_gym_problems((generator,), size=n, seed=seed, grading="rg"):
        entry = ds[problem.metadata["rg"]["index"]]
        for name, answer in perturbations(problem.answer).items():
            step = f"The final answer is \\boxed{{{answer}}}."
            grade = RG.grade(problem, [step])
            rows.append({"generator": generator, "id": problem.id, "perturbation": name, "answer": answer,
                         "score": float(ds.score_answer(answer, entry)), "rg_score": grade.fraction,
                         "rg_correct": grade.correct, "rg_reason": grade.reason,
                         "math_correct": answers.check(step, problem.answer).correct})
    return rows


def main(cfg: Config = Config()) -> dict[str, Any]:
    t0 = time.perf_counter()
    rows = [r for g in cfg.generators for r in audit(g, cfg.n, cfg.seed)]
    agree = [r["rg_score"] == r["score"] and r["rg_correct"] == (r["score"] == 1.0) for r in rows]
    false_credit = [r for r in rows if r["math_correct"] and r["score"] < 1.0]
    result = {"config": asdict(cfg), "rows": rows, "agree": round(sum(agree) / max(1, len(rows)), 4),
              "math_false_credit": len(false_credit), "rows_total": len(rows),
              "wall_s": round(time.perf_counter() - t0, 1)}
    lines = ["| generator | perturbation | answer | score_answer | rg (correct) | math correct |", "|---" * 6 + "|"]
    lines += [f"| {r['generator']} | {r['perturbation']} | {r['answer'][:40]!r} | {r['score']:.3g} | "
              f"{r['rg_score'] if r['rg_score'] is None else round(r['rg_score'], 3)} ({r['rg_correct']}) | "
              f"{r['math_correct']} |" for r in rows]
    result["table_md"] = "\n".join(lines)
    print(result["table_md"])
    print(f"kind agrees with score_answer on {result['agree']:.1%} of {len(rows)} rows; math gave full credit "
          f"to {len(false_credit)} answers the generator's scorer does not")
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.rg_audit", __doc__)
