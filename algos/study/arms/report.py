"""The arms' report: does training with a planner beat training alone, at equal episodes?

Read from the live looks (:mod:`.score`), the runs' records (:mod:`.train`) and the plug-in study's tree read-backs.
The unit of evidence is the problem: an arm with several seeds enters as its per-problem correctness averaged over
its seeds (:mod:`algos.study.stats`), seeds are secondary (an exact sign test over paired per-seed accuracies).

* **headline**: ``rsim`` vs ``grpo`` -- the problem-level paired difference, its 95 % bootstrap interval and
  sign-flip p, that p corrected for every configuration scored on the test tree (the ledger's count, as the plug-in
  headline is: Holm's step-down over the test set's ledger, :func:`algos.study.ledger.holm_of`), and the smallest difference the design could detect;
* **secondary** (Holm over this family, :func:`holm`): each arm vs ``base``; ``rsim`` vs ``grpo_fixed`` (the
  comparison that separates a *learned* plan from the answer scaffold of the planner's game: both have a planner's
  game, only one learns its plan); ``rsim_warm`` vs ``planner`` (training the reasoner on top of the plug-in);
* per arm: accuracy (per seed too), strategies used per answer (distinct strategies the reasoner's own words perform,
  :func:`algos.analysis.distinct_detected`), the share of steps performing the injected strategy, the correlation of
  that count with being right, tokens per problem; per trained arm its budget -- episodes, reasoner tokens decoded
  and trained on, the planner's token share, wall / CPU seconds, effective learning rates, the share of steps and
  GRPO groups with a learning signal (reward variance within the group);
* per task: each arm's accuracy; where the headline's difference sits (tasks carrying it);
* ``curves.png``: the reasoner's batch reward per step, per trained arm (mean over seeds, each seed faint).

A difference whose interval includes 0 is written "no measurable difference". The runs' records must meet the
equal-budget contract (:func:`algos.study.arms.spec.check_equal_budget`), or the report is refused.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..stats import holm, mean_ci, paired, sign_test

__all__ = ["p_text", "p_is", "concentration_sentence", "holm",
           "mdd", "verdict", "compare", "arm_stats", "build", "markdown", "write", "SECONDARY", "HEADLINE"]

HEADLINE = ("rsim", "grpo")
"""The paper's question: training with a planner vs training alone, at equal episodes."""
SECONDARY = (("planner", "base"), ("grpo", "base"), ("grpo_fixed", "base"), ("rsim", "base"), ("rsim_warm", "base"),
             ("rsim", "grpo_fixed"), ("rsim_warm", "planner"))
"""The report's own family of secondary comparisons (Holm-corrected together)."""
NOTES = {("rsim", "grpo_fixed"): "separates a learned plan from the answer scaffold of the planner's game",
         ("rsim_warm", "planner"): "training the reasoner on top of the plug-in planner",
         ("rsim", "grpo"): "training with a planner vs training alone, at equal episodes"}
Z_ALPHA, Z_POWER = 1.959964, 0.841621
"""Two-sided 5 % and 80 % power: the minimum detectable difference is (Z_ALPHA + Z_POWER) sd(d) / sqrt(n)."""


def mdd(d: Sequence[float] | np.ndarray) -> float | None:
    """The smallest true mean difference this design detects with 80 % power at two-sided 5 %, from the paired
    per-problem differences' spread (floored at one discordant problem's: identical arms still have a finite one)."""
    v = np.asarray(d, dtype=float)
    n = v.size
    if n < 2:
        return None
    floor = math.sqrt((1 / n) * (1 - 1 / n))
    sd = max(float(v.std(ddof=1)), floor)
    return (Z_ALPHA + Z_POWER) * sd / math.sqrt(n)


def verdict(a: str, b: str, r: Mapping[str, Any]) -> str:
    """The comparison in words, from its numbers: "no measurable difference" when the interval includes 0."""
    lo, hi = r["ci95"]
    d = r["difference"]
    if d is None or lo is None:
        return f"{a} vs {b}: no problems to compare"
    span = f"{100 * d:+.1f} points, 95 % CI {100 * lo:+.1f} to {100 * hi:+.1f}"
    if lo <= 0 <= hi:
        return f"no measurable difference between {a} and {b} ({span})"
    return f"{a} is {'above' if d > 0 else 'below'} {b} ({span})"


def _vector(looks: Mapping[int, Sequence[Mapping[str, Any]]], ids: Sequence[str]) -> np.ndarray:
    """Per-problem correctness averaged over the seeds, in ``ids`` order."""
    by_seed = []
    for s in sorted(looks):
        by = {str(r["problem_id"]): float(bool(r["correct"])) for r in looks[s]}
        missing = [p for p in ids if p not in by]
        if missing:
            raise ValueError(f"a look has no episode for {len(missing)} problems (e.g. {missing[0]!r}); rescore it.")
        by_seed.append([by[p] for p in ids])
    return np.asarray(by_seed, dtype=float).mean(axis=0)


def _by_seed(looks: Mapping[int, Sequence[Mapping[str, Any]]]) -> list[float]:
    return [float(np.mean([bool(r["correct"]) for r in looks[s]])) for s in sorted(looks)]


def compare(a: str, b: str, looks: Mapping[str, Mapping[int, Sequence[Mapping[str, Any]]]], ids: Sequence[str],
            rounds: int, seed: int) -> dict[str, Any]:
    """``a`` vs ``b``: paired over problems (difference, CI, p, minimum detectable difference), seeds secondary."""
    va, vb = _vector(looks[a], ids), _vector(looks[b], ids)
    r = paired(va, vb, rounds, seed)
    sa, sb = _by_seed(looks[a]), _by_seed(looks[b])
    seeds = sign_test(sa, sb) if len(sa) == len(sb) and len(sa) > 1 else None
    return {"a": a, "b": b, **r, "mdd": mdd(va - vb), "seeds": seeds, "verdict": verdict(a, b, r),
            "note": NOTES.get((a, b), "")}


def _injected_share(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of planned steps whose generated text performs the injected strategy (None without a planner)."""
    hit = total = 0
    for r in rows:
        for i, s in enumerate(r.get("strategies") or []):
            det = (r.get("detected") or [])
            total += 1
            hit += i < len(det) and int(s) in {int(x) for x in det[i]}
    return hit / total if total else None


def _tok(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    vals = [(r.get("tokens") or {}).get(key) for r in rows]
    vals = [float(v) for v in vals if v is not None]
    return sum(vals) / len(vals) if vals else None


def plans_played(looks: Mapping[int, Sequence[Mapping[str, Any]]]) -> dict[str, Any] | None:
    """Which plans a look's planner played: the distinct plans over every seed's episodes, the modal plan and its
    share, and each seed's modal plan and share (a planner that plays one plan everywhere is a fixed plan in
    effect); None without a planner."""
    import collections

    by_seed = {s: collections.Counter(tuple(int(x) for x in (r.get("strategies") or ())) for r in looks[s])
               for s in sorted(looks)}
    every = sum(by_seed.values(), collections.Counter())
    if not every or set(every) == {()}:
        return None
    n = sum(every.values())
    modal, count = every.most_common(1)[0]
    return {"distinct": len(every), "modal": list(modal), "modal_share": count / n,
            "by_seed": [{"seed": s, "distinct": len(c), "modal": list(c.most_common(1)[0][0]),
                         "modal_share": c.most_common(1)[0][1] / sum(c.values())} for s, c in by_seed.items() if c]}


def arm_stats(name: str, looks: Mapping[int, Sequence[Mapping[str, Any]]], ids: Sequence[str], rounds: int,
              seed: int) -> dict[str, Any]:
    """One look's figures (module docstring), over every seed's episodes."""
    from algos.analysis import accuracy_by_strategy_count, distinct_detected

    rows = [r for s in sorted(looks) for r in looks[s]]
    v = _vector(looks, ids)
    read, written = _tok(rows, "reasoner_read"), _tok(rows, "reasoner_written")
    return {"name": name, "seeds": len(looks), "accuracy": float(v.mean()) if v.size else None,
            "ci95": mean_ci(v, rounds, seed)["ci95"], "accuracy_by_seed": _by_seed(looks),
            "strategies_per_answer": float(np.mean([distinct_detected(r) for r in rows])) if rows else None,
            "injected_performed": _injected_share(rows), "plans": plans_played(looks), "answered": _answered(rows),
            "strategies_vs_correct_r": accuracy_by_strategy_count(rows)["pearson_r"],
            "tokens_per_problem": {"reasoner_read": read, "reasoner_written": written,
                                   "reasoner": None if read is None or written is None else read + written,
                                   "planner_read": _tok(rows, "planner_read")}}


def _answered(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The share of episodes whose answer the checker could extract (``extracted`` not null: a ``\\boxed{}``, an
    answer tag or "the answer is"): an episode with no answer scores 0 whatever it reasoned, and the planner's game
    opens the box for the reasoner (its termination strategy), which the game without a planner does not."""
    kept = [r for r in rows if "extracted" in r]
    return float(np.mean([r["extracted"] is not None for r in kept])) if kept else None


def training(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A trained arm's budget over its runs (per-run means, and the totals of seconds)."""
    if not records:
        return {}
    t = [r["totals"] for r in records]

    def mean(key: str) -> float | None:
        vals = [x[key] for x in t if x.get(key) is not None]
        return float(np.mean(vals)) if vals else None

    return {"runs": len(records), "episodes": [x["episodes"] for x in t], "steps": [x["steps"] for x in t],
            "reasoner_tokens_decoded": mean("reasoner_tokens_decoded"),
            "reasoner_tokens_trained": mean("reasoner_tokens_trained"),
            "planner_token_share": mean("planner_token_share"), "groups_with_signal": mean("groups_with_signal"),
            "steps_with_signal": mean("steps_with_signal"),
            "wall_s": float(np.mean([r["wall_s"] for r in records])),
            "cpu_s": float(np.mean([r["cpu_s"] for r in records])),
            "wall_s_total": float(sum(r["wall_s"] for r in records)),
            "effective_lr": records[0]["totals"]["effective_lr"],
            "fixed_plan": records[0].get("fixed_plan")}


def _curves(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[list[float | None]]]:
    """Per arm, per seed: the reasoner's batch reward at every step."""
    return {arm: [[row["reasoner_reward"] for row in r["rows"]] for r in recs] for arm, recs in records.items()}


def _per_task(looks: Mapping[str, Mapping[int, Sequence[Mapping[str, Any]]]], ids: Sequence[str],
              tasks: Mapping[str, str]) -> dict[str, Any]:
    names = sorted({tasks[p] for p in ids})
    vec = {a: _vector(lk, ids) for a, lk in looks.items()}
    out = {}
    for t in names:
        rows = [i for i, p in enumerate(ids) if tasks[p] == t]
        out[t] = {"problems": len(rows), **{a: float(v[rows].mean()) for a, v in vec.items()}}
    return out


def _concentration(a: np.ndarray, b: np.ndarray, ids: Sequence[str], tasks: Mapping[str, str]) -> dict[str, Any]:
    """Where ``a - b`` sits: per task its gain in problems, and the fewest tasks whose gain reaches the total."""
    d = a - b
    gain: dict[str, float] = {}
    for i, p in enumerate(ids):
        gain[tasks[p]] = gain.get(tasks[p], 0.0) + float(d[i])
    total = float(d.sum())
    carrying = None
    if total > 0:
        acc, carrying = 0.0, []
        for t, g in sorted(gain.items(), key=lambda kv: -kv[1]):
            acc += g
            carrying.append(t)
            if acc >= total - 1e-9:
                break
    return {"gain_problems": total, "by_task": gain, "tasks_carrying": carrying}


def build(looks: Mapping[str, Mapping[int, Sequence[Mapping[str, Any]]]], ids: Sequence[str],
          tasks: Mapping[str, str], records: Mapping[str, Sequence[Mapping[str, Any]]], *,
          correction: Mapping[str, Any] | None = None,
          readbacks: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
          replication: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None,
          rounds: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """The report (module docstring) as JSON-able data.

    Args:
        looks: look name (``base``, ``base_fixed``, ``planner``, ``grpo``, ...) -> seed -> compact episodes.
        ids: the problems every look was scored on (the test tree's).
        tasks: problem id -> task.
        records: trained arm -> its runs' records (:func:`algos.study.arms.train.summaries`).
        correction: the headline look's Holm correction over the test set's ledger
            (:func:`algos.study.ledger.holm_of`); None before the look is recorded (the score stage).
        readbacks: tree read-back -> seed -> problem id -> correct (``planner (tree)``, ``base_fixed (tree)``).
        replication: ``build(...)`` of the replication looks (its headline is reported beside this one).
    """
    from .spec import check_equal_budget
    from .train import contract

    check_equal_budget(contract(dict(records)))
    arms = {name: arm_stats(name, lk, ids, rounds, seed) | {"training": training(records.get(name, []))}
            for name, lk in looks.items()}
    for name, by in (readbacks or {}).items():
        v = np.mean([[float(bool(by[s][p])) for p in ids] for s in sorted(by)], axis=0)
        arms[name] = {"name": name, "seeds": len(by), "accuracy": float(v.mean()), "read_back": True,
                      "ci95": mean_ci(v, rounds, seed)["ci95"]}
    headline = None
    if all(a in looks for a in HEADLINE):
        headline = compare(*HEADLINE, looks, ids, rounds, seed)
        headline["p_corrected"] = None if correction is None else correction["p_holm"]
        headline["configurations_scored"] = None if correction is None else correction["m"]
        headline["looks_as_p1"] = None if correction is None else correction["p_as_one"]
        headline["concentration"] = _concentration(_vector(looks["rsim"], ids), _vector(looks["grpo"], ids), ids, tasks)
    family = [compare(a, b, looks, ids, rounds, seed) for a, b in SECONDARY if a in looks and b in looks]
    for c, adj in zip(family, holm([c["p_value"] for c in family])):
        c["p_holm"] = adj
    out = {"meta": dict(meta or {}) | {"problems": len(ids), "tasks": len(set(tasks[p] for p in ids))},
           "headline": headline, "comparisons": family, "arms": arms,
           "per_task": _per_task(looks, ids, tasks), "curves": _curves(records)}
    if replication is not None:
        out["replication"] = {"headline": replication.get("headline"), "comparisons": replication.get("comparisons"),
                              "arms": {k: {key: v.get(key) for key in ("accuracy", "ci95", "answered")}
                                       for k, v in replication.get("arms", {}).items()}}
    return out


def _pct(x: float | None) -> str:
    return "--" if x is None else f"{100 * x:.1f}"


def p_text(x: float | None) -> str:
    """A p-value as the reports print it: three decimals, and ``< 0.001`` below that (a resampled p has a floor,
    1 / (resamples + 1), and "0.000" would claim a p of zero)."""
    return "--" if x is None else "< 0.001" if x < 0.001 else f"{x:.3f}"


def p_is(x: float | None) -> str:
    """``p_text`` after "p" in a sentence: ``= 0.034``, ``< 0.001``."""
    t = p_text(x)
    return t if t.startswith("<") else f"= {t}"


def _num(x: float | None, fmt: str = ".2f") -> str:
    return "--" if x is None else format(x, fmt)


def _headline_md(h: Mapping[str, Any] | None) -> list[str]:
    if not h:
        return ["No headline: score both `rsim` and `grpo` (`--arms ...,grpo,rsim`).", ""]
    seeds = h.get("seeds")
    return [f"**Headline (rsim vs grpo, equal episodes):** {h['verdict']}; p {p_is(h['p_value'])} "
            f"(Holm's step-down over the {h['configurations_scored']} looks in the test set's ledger, "
            f"{h['looks_as_p1']} of them counted as p = 1: p {p_is(h['p_corrected'])}); the design detects a "
            "difference of "
            f"{_num(None if h['mdd'] is None else 100 * h['mdd'], '.1f')} points (80 % power)."
            + (f" Seeds: rsim above grpo in {seeds['above']}, below in {seeds['below']}, tied in "
               f"{seeds['tied']} (sign test p = {seeds['p_value']:.3f})." if seeds else ""), ""]


def _arms_md(arms: Mapping[str, Any]) -> list[str]:
    lines = ["| arm | seeds | accuracy % (95 % CI) | by seed | answered % | plans played (modal, share) | strategies / answer | "
             "injected performed % | r(strategies, correct) | reasoner tokens / problem | planner tokens / problem | "
             "live decode s |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, a in arms.items():
        lo, hi = a.get("ci95", [None, None])
        tok = a.get("tokens_per_problem", {})
        lines.append(f"| `{name}`{' (tree read-back)' if a.get('read_back') else ''} | {a['seeds']} | "
                     f"{_pct(a['accuracy'])} ({_pct(lo)}, {_pct(hi)}) | "
                     f"{', '.join(_pct(x) for x in a.get('accuracy_by_seed', []))} | {_pct(a.get('answered'))} | "
                     f"{_plans(a.get('plans'))} | "
                     f"{_num(a.get('strategies_per_answer'))} | {_pct(a.get('injected_performed'))} | "
                     f"{_num(a.get('strategies_vs_correct_r'))} | {_num(tok.get('reasoner'), '.0f')} | "
                     f"{_num(tok.get('planner_read'), '.0f')} | {_num(a.get('decode_wall_s'), '.1f')} |")
    return lines


def _plans(p: Mapping[str, Any] | None) -> str:
    if not p:
        return "--"
    return f"{p['distinct']} ({p['modal']}, {_pct(p['modal_share'])})"


def _pts(x: float | None, fmt: str = "+.1f") -> str:
    return _num(None if x is None else 100 * x, fmt)


def _comparisons_md(family: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["", "| comparison | difference, points (95 % CI) | p | p (Holm, this family) | detectable | verdict |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in family:
        lo, hi = c["ci95"]
        lines.append(f"| {c['a']} vs {c['b']} | {_pts(c['difference'])} ({_pts(lo)}, {_pts(hi)}) | "
                     f"{p_text(c['p_value'])} | {p_text(c['p_holm'])} | {_pts(c['mdd'], '.1f')} | "
                     f"{c['verdict']}{'; ' + c['note'] if c['note'] else ''} |")
    return lines


def _training_md(arms: Mapping[str, Any]) -> list[str]:
    lines = ["", "| trained arm | runs | episodes a run | reasoner tokens decoded / trained a run | planner token "
             "share % | groups / steps with signal % | wall / CPU s a run | effective lr (reasoner; planner) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, a in arms.items():
        t = a.get("training") or {}
        if not t:
            continue
        lr = t["effective_lr"]
        lines.append(f"| `{name}` | {t['runs']} | {', '.join(map(str, sorted(set(t['episodes']))))} | "
                     f"{_num(t['reasoner_tokens_decoded'], '.0f')} / {_num(t['reasoner_tokens_trained'], '.0f')} | "
                     f"{_pct(t['planner_token_share'])} | {_pct(t['groups_with_signal'])} / "
                     f"{_pct(t['steps_with_signal'])} | {t['wall_s']:.1f} / {t['cpu_s']:.1f} | "
                     f"{', '.join(f'{x:.2g}' for x in lr['reasoner_lr']) or '--'}; "
                     f"{', '.join(f'{x:.2g}' for x in lr['planner_lr']) or '--'} |")
    if any(a.get("training") for a in arms.values()):
        lines += ["", "Training curves: [curves.png](curves.png), the reasoner's batch reward per optimizer step (mean "
                  "over seeds). Each arm's reward is its own game's: the planner's game (every trained arm but "
                  "`grpo`) adds the reward for following the injected strategy, so `grpo`'s curve is on its own "
                  "scale; compare the arms by accuracy, not by curve height."]
    return lines


def _tasks_md(rep: Mapping[str, Any]) -> list[str]:
    names = list(next(iter(rep["per_task"].values()), {}).keys())[1:]
    lines: list[str] = []
    if names:
        lines += ["", "| task | problems | " + " | ".join(f"`{n}` %" for n in names) + " |",
                  "| --- | --- | " + " | ".join("---" for _ in names) + " |"]
        for t, row in rep["per_task"].items():
            lines.append(f"| {t} | {row['problems']} | " + " | ".join(_pct(row[n]) for n in names) + " |")
    h = rep.get("headline")
    if h and h["concentration"]["tasks_carrying"]:
        lines += ["", concentration_sentence(h["concentration"])]
    return lines


def concentration_sentence(conc: Mapping[str, Any], top: int = 3, lead: str = "The headline's") -> str:
    """How much of the headline's net gain a few tasks carry: the gain in problems (seeds averaged), the fewest tasks
    whose gains reach it, and the share the ``top`` largest carry; ``lead`` opens the sentence (the results block
    writes it after a label)."""
    total, by = conc["gain_problems"], conc["by_task"]
    if not conc.get("tasks_carrying") or total <= 0:
        return "The headline has no net gain to place."
    ranked = sorted(by.items(), key=lambda kv: -kv[1])[:top]
    share = sum(g for _, g in ranked) / total
    losing = [g for g in by.values() if g < 0]
    return (f"{lead} net gain is {total:.1f} problems (seeds averaged) over {len(by)} tasks; the "
            f"{len(ranked)} largest gains, " + ", ".join(f"{t} ({g:+.1f})" for t, g in ranked)
            + f", are {100 * share:.0f} % of it; {len(conc['tasks_carrying'])} task(s) are needed to reach it; "
            f"{len(losing)} task(s) lose problems ({sum(losing):+.1f}).")


def markdown(rep: Mapping[str, Any]) -> str:
    """The report as Markdown (the headline first)."""
    m = rep["meta"]
    lines = [f"# Does training with a planner beat training alone? ({m.get('problems')} test problems, "
             f"{m.get('tasks')} tasks)", ""]
    lines += _headline_md(rep.get("headline")) + _arms_md(rep["arms"]) + _comparisons_md(rep["comparisons"])
    lines += _training_md(rep["arms"]) + _tasks_md(rep)
    rep_h = (rep.get("replication") or {}).get("headline")
    if rep_h:
        lines += ["", f"**Replication:** {rep_h['verdict']} (p {p_is(rep_h['p_value'])})."]
    lines += ["", "Live: every arm decoded greedily on one route with a fixed batch; `(tree read-back)` rows are the "
              "plug-in study's scores of the same policies read from the test tree. Accuracies over seeds are per "
              "problem averaged over the seeds; p: paired sign-flip test over problems."]
    return "\n".join(lines) + "\n"


def _plot(curves: Mapping[str, Sequence[Sequence[float | None]]], path: Path) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not curves:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for i, (arm, seeds) in enumerate(curves.items()):
        color = f"C{i}"
        rows = [[np.nan if y is None else y for y in s] for s in seeds if s]
        if not rows:
            continue
        n = min(map(len, rows))
        for s in rows:
            ax.plot(range(1, len(s) + 1), s, color=color, alpha=0.25, lw=0.8)
        ax.plot(range(1, n + 1), np.nanmean([s[:n] for s in rows], axis=0), color=color, lw=2, label=arm)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("reasoner batch reward")
    ax.set_title("training curves (mean over seeds; seeds faint)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(rep: Mapping[str, Any], folder: str | Path) -> list[Path]:
    """``report.json``, ``report.md`` and ``curves.png`` in ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "report.json", folder / "report.md"]
    paths[0].write_text(json.dumps(rep, indent=1, default=float) + "\n")
    paths[1].write_text(markdown(rep))
    png = _plot(rep.get("curves", {}), folder / "curves.png")
    return paths + ([png] if png else [])
