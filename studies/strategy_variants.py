"""Strategies a small reasoner can perform: the turn-protocol variants, compared on atlas runs.

Each input is an atlas JSON (``python -m benchmarks.plans.atlas --protocol P --out F.json``) whose
``F.outcomes.jsonl.gz`` holds one row per task, problem and plan. The runs share tasks, problems and plans and
differ only in the turn protocol (``chat+lead``, the default; ``chat+lead:action``: strategy texts that demand a
visible move; ``chat+lead:exemplar``: each strategy's instruction carries a worked example of the move on another
problem, rsim_env/protocols.py). Per protocol, from the outcome rows alone (nothing is decoded):

* **accuracy**: per plan, averaged over tasks; the validation-chosen best plan's test accuracy, averaged over tasks;
  the protocol's best single plan (by mean validation accuracy over tasks) on test;
* **heterogeneity**: the distinct validation-best plans across tasks, the atlas's surviving task pairs, and the
  headroom of its K-task mix (per-task policy minus the best single plan on test, 95 % interval);
* **what the first step does** (plans ``[s, 8]`` with ``s`` not termination; the step the strategy shapes):
  ``echo`` (mostly copies injected text: every text of every protocol plus this round's instruction and lead),
  ``vacuous`` (no number, equation or expression the question and the injected texts lack, rsim_env.novelty),
  ``follow`` (the planned strategy is detected in the generated content), ``copy`` (writes a number of the worked
  example the exemplar protocol shows for this question and strategy that the question lacks: under the other
  protocols, where no example is shown, it is the chance rate), ``answer_in_step1`` (the final answer's text
  already appears in step 1: restate-then-copy). Self-repeats need two non-answer steps: none at L = 2;
* **paired against the first input** (the default) on the same (task, problem, plan) cells: cells won and lost,
  and an exact two-sided sign test; since a problem's plans are not independent, the same test per problem too
  (won: the variant solves it under more plans).

Writes ``--out`` (JSON) and prints the tables (docs/atlas.md quotes them; tests/test_atlas.py checks the copy). ::

    python -m studies.strategy_variants --atlases docs/atlas_results/screen_chat_lead.json,\\
        docs/atlas_results/screen_chat_lead_action.json,docs/atlas_results/screen_chat_lead_exemplar.json \\
        --out docs/atlas_results/screen.json
"""

from __future__ import annotations

import gzip
import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from rsim_env import echo, novelty
from rsim_env.protocols import DEFAULT_PROTOCOL, copied_numbers, exemplar, exemplar_numbers, protocol
from rsim_env.render import injected_texts
from rsim_env.strategies import STRATEGIES, TERMINATION, detect

SCREEN = tuple(f"docs/atlas_results/screen_{n}.json" for n in ("chat_lead", "chat_lead_action", "chat_lead_exemplar"))


@dataclass(frozen=True)
class Config:
    """Inputs and output of the comparison."""

    atlases: tuple[str, ...] = SCREEN
    """Atlas JSON files, the first the reference (their outcomes files lie beside them)."""
    out: str = ""
    """JSON path ("" = print only)."""
    quote: int = 2
    """Episodes quoted per protocol in the printed report (same problems across protocols)."""

    def __post_init__(self) -> None:
        if len(self.atlases) < 1:
            raise ValueError("Config.atlases: name at least one atlas JSON (a comma list on the command line).")


def outcomes_path(atlas: str | Path) -> Path:
    p = Path(atlas)
    return p.with_name(p.name.removesuffix(".json") + ".outcomes.jsonl.gz")


def load(atlas: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The atlas JSON and its outcome rows of the kept (task, setting)s, one per (task, problem, plan)."""
    path = Path(atlas)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such atlas JSON; run python -m benchmarks.plans.atlas --out {path} first.")
    result = json.loads(path.read_text())
    kept = {(t["task"], t["setting"]) for t in result["tasks"]}
    rows: dict[tuple, dict[str, Any]] = {}
    with gzip.open(outcomes_path(path), "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("row") == "outcome" and (r["task"], r["setting"]) in kept:
                rows[(r["task"], r["problem_id"], tuple(r["plan"]))] = r
    return result, list(rows.values())


def _numbers_or_words(text: str) -> set[str]:
    nums = exemplar_numbers(text)
    return nums if nums else set(echo.words(text))


def step_facts(row: dict[str, Any], proto_name: str) -> dict[str, bool] | None:
    """Facts of an ``[s, 8]`` episode's first step (None for other plans or a step never written)."""
    plan = list(row["plan"])
    if len(plan) != 2 or plan[0] == TERMINATION or not row.get("steps"):
        return None
    s, q = plan[0], row["question"]
    step = row["steps"][0]
    shown = (row.get("shown_steps") or [step])[0]
    proto = protocol(proto_name)
    instr, lead = proto.instruction(q, 0, s), proto.lead(0, s)
    refs = (*injected_texts(), instr, lead)
    example = exemplar(STRATEGIES[s].name, q, 0)
    answer = (row.get("extracted") or "").strip()
    ans = _numbers_or_words(answer) if answer else set()
    return {
        "echo": echo.is_echo(step, refs),
        "vacuous": novelty.is_vacuous(step, [q, instr, lead]),
        "follow": s in detect(echo.generated_content(shown, refs)),
        "copy": bool(copied_numbers(step, example, q)),
        "answer_in_step1": bool(ans) and ans <= _numbers_or_words(step),
    }


def _rate(xs: Sequence[bool]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test of ``wins`` vs ``losses`` discordant pairs (1.0 when there are none)."""
    n = wins + losses
    if not n:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def protocol_figures(result: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    name = result["config"].get("protocol") or DEFAULT_PROTOCOL
    tasks = result["tasks"]
    plans = sorted({p for t in tasks for p in t["accuracy"]}, key=lambda k: (len(k), k))
    mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
    per_plan = {p: mean([t["accuracy"][p] for t in tasks if p in t["accuracy"]]) for p in plans}
    val_mean = {p: mean([t["val_accuracy"][p] for t in tasks if p in t["val_accuracy"]]) for p in plans}
    single = max(plans, key=lambda p: (val_mean[p], -len(p))) if plans else None
    facts: list[dict[str, bool]] = []
    by_strategy: dict[str, list[dict[str, bool]]] = defaultdict(list)
    for r in rows:  # each step's facts once (echo and novelty scans are the study's main cost)
        if (f := step_facts(r, name)) is not None:
            facts.append(f)
            by_strategy[STRATEGIES[r["plan"][0]].name].append(f)
    keys = ("echo", "vacuous", "follow", "copy", "answer_in_step1")
    mix = result.get("mix") or {}
    return {
        "protocol": name, "tasks": [t["task"] for t in tasks], "episodes": len(rows),
        "accuracy_per_plan": per_plan,
        "mean_accuracy": mean([c for c in per_plan.values() if c is not None]),
        "best_plan_per_task": {t["task"]: t["best_plan"] for t in tasks},
        "per_task": {t["task"]: {"mean": mean(list(t["accuracy"].values())), "best_plan": t["best_plan"],
                                 "best_test": t["best_test"]} for t in tasks},
        "best_test_mean": mean([t["best_test"] for t in tasks]),
        "best_single_plan": single,
        "best_single_test_mean": mean([t["test_accuracy"][single] for t in tasks]) if single else None,
        "distinct_best_plans": len({tuple(t["best_plan"]) for t in tasks}),
        "heterogeneity_surviving": (result.get("heterogeneity") or {}).get("surviving"),
        "heterogeneity_pairs": (result.get("heterogeneity") or {}).get("pairs_tested"),
        "mix": {"tasks": mix.get("tasks"), "headroom": mix.get("headroom")},
        "first_step": {"n": len(facts), **{k: _rate([f[k] for f in facts]) for k in keys}},
        "first_step_by_strategy": {s: {"n": len(fs), **{k: _rate([f[k] for f in fs]) for k in keys}}
                                   for s, fs in sorted(by_strategy.items())},
    }


def paired(ref: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """Cells (task, problem, plan) both runs played: won / lost by ``other`` against ``ref``, sign test."""
    a = {(r["task"], r["problem_id"], tuple(r["plan"])): bool(r["correct"]) for r in ref}
    b = {(r["task"], r["problem_id"], tuple(r["plan"])): bool(r["correct"]) for r in other}
    both = sorted(set(a) & set(b))
    wins = sum(b[k] and not a[k] for k in both)
    losses = sum(a[k] and not b[k] for k in both)
    first = [k for k in both if len(k[2]) == 2]  # the strategy-shaped plans only ([8] is the same text everywhere)
    # a problem's nine cells are not independent: the same test per problem, on its share of plans solved
    per: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for k in both:
        per[k[:2]][0] += a[k]
        per[k[:2]][1] += b[k]
    p_wins = sum(y > x for x, y in per.values())
    p_losses = sum(y < x for x, y in per.values())
    return {"cells": len(both), "ref_correct": sum(a[k] for k in both), "correct": sum(b[k] for k in both),
            "wins": wins, "losses": losses, "sign_test_p": sign_test(wins, losses),
            "two_step_cells": len(first), "two_step_ref_correct": sum(a[k] for k in first),
            "two_step_correct": sum(b[k] for k in first),
            "problems": len(per), "problems_won": p_wins, "problems_lost": p_losses,
            "problems_sign_test_p": sign_test(p_wins, p_losses)}


def episodes_to_quote(runs: list[tuple[dict, list[dict]]], n: int) -> list[dict[str, Any]]:
    """The same ``n`` two-step episodes (task, problem, plan) under every protocol, picked where they differ."""
    if not runs or n < 1:
        return []
    maps = [{(r["task"], r["problem_id"], tuple(r["plan"])): r for r in rows} for _, rows in runs]
    common = sorted(set.intersection(*(set(m) for m in maps)))
    common = [k for k in common if len(k[2]) == 2 and k[2][0] != TERMINATION]
    differ = [k for k in common if len({m[k]["correct"] for m in maps}) > 1]
    picked: list[tuple] = []
    for k in differ + common:  # one per task first, then any
        if len(picked) >= n:
            break
        if k not in picked and all(k[0] != p[0] for p in picked):
            picked.append(k)
    out = []
    for k in picked:
        out.append({"task": k[0], "problem_id": k[1], "plan": list(k[2]), "question": maps[0][k]["question"][:300],
                    "gold": maps[0][k].get("answer"),
                    "by_protocol": {(res["config"].get("protocol") or DEFAULT_PROTOCOL):
                                    {"shown_steps": m[k].get("shown_steps") or m[k]["steps"],
                                     "correct": m[k]["correct"], "extracted": m[k].get("extracted")}
                                    for (res, _), m in zip(runs, maps)}})
    return out


def main(cfg: Config) -> dict[str, Any]:
    runs = [load(a) for a in cfg.atlases]
    figures = [protocol_figures(res, rows) for res, rows in runs]
    out = {"config": asdict(cfg), "protocols": figures,
           "paired_vs_first": {f["protocol"]: paired(runs[0][1], rows) for f, (_, rows) in zip(figures[1:], runs[1:])},
           "wall_seconds": {f["protocol"]: res.get("wall_seconds") for f, (res, _) in zip(figures, runs)},
           "quoted": episodes_to_quote(runs, cfg.quote)}
    print(table(out))
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(out, indent=1) + "\n")
    return out


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def table(r: dict[str, Any]) -> str:
    """The markdown tables docs/atlas.md quotes."""
    ps = r["protocols"]
    lines = ["| protocol | episodes | mean accuracy % | `[8]` % | `[3, 8]` % | best plan per task, test % | "
             "best single plan (val) | its test % | distinct best plans | surviving pairs | mix headroom (95 % CI) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in ps:
        h = (p["mix"] or {}).get("headroom") or {}
        head = "–" if not h else f"{100 * h['point']:+.1f} ({100 * h['ci95'][0]:+.1f}, {100 * h['ci95'][1]:+.1f})"
        lines.append(f"| {p['protocol']} | {p['episodes']} | {_pct(p['mean_accuracy'])} | "
                     f"{_pct(p['accuracy_per_plan'].get('8'))} | {_pct(p['accuracy_per_plan'].get('3,8'))} | "
                     f"{_pct(p['best_test_mean'])} | `[{p['best_single_plan']}]` | {_pct(p['best_single_test_mean'])} | "
                     f"{p['distinct_best_plans']} | {p['heterogeneity_surviving']} of {p['heterogeneity_pairs']} | {head} |")
    lines += ["", "| protocol | first steps | echo % | vacuous % | follow % | copies the example % | answer already in step 1 % |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for p in ps:
        f = p["first_step"]
        lines.append(f"| {p['protocol']} | {f['n']} | {_pct(f['echo'])} | {_pct(f['vacuous'])} | {_pct(f['follow'])} | "
                     f"{_pct(f['copy'])} | {_pct(f['answer_in_step1'])} |")
    lines += ["", "| protocol | " + " | ".join(f"`[{k}]`" for k in ps[0]["accuracy_per_plan"]) + " |",
              "| --- |" + " --- |" * len(ps[0]["accuracy_per_plan"])]
    for p in ps:
        lines.append(f"| {p['protocol']} | " + " | ".join(_pct(p["accuracy_per_plan"].get(k))
                                                         for k in ps[0]["accuracy_per_plan"]) + " |")
    tasks = sorted({t for p in ps for t in p["tasks"]})
    lines += ["", "| task | " + " | ".join(f"{p['protocol']}: mean over plans % / best plan (val) / its test %" for p in ps) + " |",
              "| --- |" + " --- |" * len(ps)]
    for t in tasks:
        cells = []
        for p in ps:
            x = p["per_task"].get(t)
            cells.append("dropped by the pilot" if x is None else
                         f"{_pct(x['mean'])} / `{x['best_plan']}` / {_pct(x['best_test'])}")
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    if r["paired_vs_first"]:
        lines += ["", f"| protocol vs {ps[0]['protocol']} | cells | correct (ref) | correct | won | lost | sign test p | "
                      "two-step cells: correct (ref) / correct | problems | problems won / lost (more plans solved) | "
                      "sign test p (problems) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for name, q in r["paired_vs_first"].items():
            lines.append(f"| {name} | {q['cells']} | {q['ref_correct']} | {q['correct']} | {q['wins']} | {q['losses']} | "
                         f"{q['sign_test_p']:.3g} | {q['two_step_ref_correct']} / {q['two_step_correct']} | {q['problems']} | "
                         f"{q['problems_won']} / {q['problems_lost']} | {q['problems_sign_test_p']:.3g} |")
    return "\n".join(lines)


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, Config, "python -m studies.strategy_variants", __doc__)
