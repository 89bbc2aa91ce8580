"""The report's plain statements, each made from its JSON figures.

:func:`sentences` returns ``{"headline", "seeds", "ceiling", "concentration", "within_task", "replication",
"coverage", "ledger", "reward"}``; the markdown report and the README / docs block (:mod:`algos.study.docs_block`)
print them as they are. "Replicated" / "did not replicate" is said only of a significant original; otherwise the
test and replication figures are given side by side.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["sentences", "pts", "ci"]


def pts(x: float | None) -> str:
    """Signed accuracy points, one decimal (``+2.0``)."""
    return "n/a" if x is None else f"{x:+.1f}"


def ci(r: Mapping[str, Any]) -> str:
    """``+2.0 points (95 % CI -0.6, +4.7)`` from a dict with ``difference_pts`` and ``ci95_pts``."""
    lo, hi = r["ci95_pts"]
    return f"{pts(r['difference_pts'])} points (95 % CI {pts(lo)}, {pts(hi)})"


def _p(x: float | None) -> str:
    return "n/a" if x is None else "< 0.001" if x < 0.001 else f"{x:.3f}"


def _eq(x: float | None) -> str:
    s = _p(x)
    return s if s.startswith("<") else f"= {s}"


def _headline(r: Mapping[str, Any]) -> str:
    h, meta = r["headline"], r["meta"]
    plan = h["best_fixed_plan"]
    verdict = {"above": "the trained planner is above the best fixed plan",
               "below": "the trained planner is below the best fixed plan",
               "no measurable difference": "no measurable difference from the best fixed plan"}[h["verdict"]]
    m = h["configurations_scored"]
    own = meta.get("test_data")
    source = f" from {own['file']} (sha256 {own['sha256'][:16]}…)" if own else ""
    return (f"Trained planner vs the best fixed plan {plan} (chosen on {h['best_fixed_chosen_on'] or 'train+val'}): "
            f"{ci(h)} on {meta['problems']} test problems{source} of {meta['tasks']} tasks ({h['trained_accuracy_pct']:.1f} % vs "
            f"{h['best_fixed_accuracy_pct']:.1f} %; paired by problem, seeds averaged); p {_eq(h['p_value'])}; "
            f"Holm's step-down over the {m} look{'s' if m != 1 else ''} at this test set in its ledger"
            f"{_as_one(h.get('p_as_one', 0))}, p {_eq(h['p_holm'])}: {verdict}." + _replicated(r))


def _as_one(k: int) -> str:
    return f" ({k} with no p-value kept, counted as p = 1)" if k else ""


def _ledger(r: Mapping[str, Any]) -> str:
    lg = r["ledger"]
    m, k, hist = lg["configurations_scored"], lg.get("p_as_one", 0), lg.get("historical", 0)
    sec = r.get("secondary") or {}
    return (f"The test set has been looked at {m} time{'s' if m != 1 else ''} (its ledger: one look per distinct "
            f"configuration of any command that scored any of its problems; {hist} historical, from git history); "
            f"{k} look{'s have' if k != 1 else ' has'} no p-value kept and count{'s' if k == 1 else ''} as p = 1 in "
            "Holm's step-down that corrects the headline."
            + (f" The report's {sec['m']} secondary comparisons are Holm-corrected over their own family "
               "(`p_holm` beside each in report.json)." if sec.get("m") else ""))


def _replicated(r: Mapping[str, Any]) -> str:
    rep = r["replication"]
    if rep is None:
        return ""
    if rep["replicated"] is None:
        return f" On the replication split ({rep['problems']} other problems) it is {ci(rep)}."
    return (f" On the replication split ({rep['problems']} other problems) it is {ci(rep)}: "
            f"{'it replicated' if rep['replicated'] else 'it did not replicate'}.")


def _seeds(h: Mapping[str, Any], problems: int) -> str:
    s = h["seeds"]
    return (f"{s['above']} of {s['seeds']} seeds above, {s['below']} below, {s['tied']} tied (sign p {_p(s['p_value'])}). "
            f"The seeds share one test set of {problems} problems: this measures training noise, not new problems.")


def _ceiling(c: Mapping[str, Any], h: Mapping[str, Any]) -> str:
    parts = []
    for key, label in (("per_task_on_test", "per-task best plan chosen on test"), ("oracle", "per-problem oracle")):
        v = c[key]
        room = v["headroom"]
        why = ("the headroom's interval is not above 0" if room["ci95_pts"][0] is None or room["ci95_pts"][0] <= 0
               or room["difference_pts"] <= 0 else "the trained planner's gain does not have its interval above 0")
        cap = (f"; the trained planner's {pts(h['difference_pts'])} points are {v['captured']:.0f} % of it"
               if v["captured"] is not None else f"; no captured figure ({why})")
        parts.append(f"the {label} (a ceiling, not a policy) reaches {v['accuracy_pct']:.1f} %, "
                     f"{room['difference_problems']:+.1f} problems over the best fixed plan, {ci(room)}{cap}")
    text = "Ceilings: " + "; ".join(parts) + "."
    if "per_task_policy" in c:
        p = c["per_task_policy"]
        text += (f" The per-task policy chosen on {p['chosen_on'] or 'train+val'} is {p['accuracy_pct']:.1f} %, "
                 f"{ci(p['vs_best_fixed'])} over the best fixed plan; the trained planner is {ci(p['trained_vs'])} "
                 "over it." + _ties(p.get("ties")))
    return text


def _ties(t: Mapping[str, Any] | None) -> str:
    if t is None:
        return " (Its tie-breaks were not recorded with these scores: rescore to see their range.)"
    if not t["tied_tasks"]:
        return f" No task ties on the selection problems (rule: {t['rule']})."
    lo, hi = t["accuracy_range_pct"]
    return (f" {t['tied_tasks']} tasks tie on the selection problems ({t['tied_tasks_on_test']} with test problems); "
            f"rule: {t['rule']}; over every tie-break its test accuracy ranges {lo:.1f}–{hi:.1f} %.")


def _concentration(c: Mapping[str, Any]) -> str:
    if c["tasks_carrying"] is None:
        text = f"No net gain over the best fixed plan to attribute ({c['gain_problems']:+.1f} problems a seed)."
    else:
        k, n = len(c["tasks_carrying"]), c["tasks"]
        text = (f"{k} of {n} tasks carry the gain ({', '.join(c['tasks_carrying'])}: {c['carrying_problems']:+.1f} of "
                f"{c['gain_problems']:+.1f} problems a seed; the other {n - k} net {c['rest_problems']:+.1f}).")
    for key, label in (("without_top_1", "top task"), ("without_top_3", "top three tasks")):
        if c[key] is not None:
            text += f" Without the {label}: {ci(c[key])}."
    return text


def _within(w: Mapping[str, Any] | None) -> str:
    if w is None:
        return "The trained mode recorded no plans: within-task conditioning not measured."
    one = ", ".join(f"{s['tasks_one_plan']}/{s['tasks']}" for s in w["by_seed"])
    text = (f"Tasks played with one plan on every problem, per seed: {one}; "
            f"{w['departures_per_seed']:.1f} problems a seed depart from the seed's modal plan for their task, worth "
            f"{ci(w['value_vs_modal_plan'])} against that modal plan")
    if w["value_vs_per_task"] is not None:
        text += f" and {ci(w['value_vs_per_task'])} against the per-task policy"
    return text + (": the planner conditions on more than the task." if w["conditions_on_more_than_task"]
                   else ": no evidence that it conditions on more than the task.")


def _short(short: Mapping[str, Any]) -> str:
    return ", ".join(f"{t} {v if isinstance(v, int) else f'{v[1]} of {v[0]}'}" for t, v in short.items())


def _coverage(r: Mapping[str, Any]) -> str:
    c = r["coverage"]
    if not c["per_task"]:
        return f"The test split has {sum(c['test'].values())} problems over {len(c['test'])} tasks."
    if not c["test_short"]:
        return f"Every one of the test split's {len(c['test'])} tasks has {c['per_task']} problems."
    k = len(c["test_short"])
    return (f"The test split has {c['per_task']} problems a task except {k} task{'s' if k != 1 else ''} with fewer "
            f"questions to give (its test hash bucket, less the texts an earlier task asks): {_short(c['test_short'])}.")


def _replication(r: Mapping[str, Any]) -> str:
    rep = r["replication"]
    if rep is None:
        return "Not scored on a replication split."
    figure = (f"{ci(rep)} on {rep['problems']} replication problems ({rep['trained_accuracy_pct']:.1f} % vs "
              f"{rep['best_fixed_accuracy_pct']:.1f} %)")
    c, cov = rep["coverage"], rep["test_on_covered_tasks"]
    if c["replication_short"]:
        why = ("the file has fewer" if r["meta"].get("replication_data") else "their source gives no further "
               "question in the test hash bucket that the test split does not already ask")
        gaps = (f"The replication split has fewer problems than the test split on {len(c['replication_short'])} "
                f"task(s) ({_short(c['replication_short'])}: {why})")
        test = (f"; on the {cov['tasks']} tasks it covers the test difference is {ci(cov)}" if cov else
                "; it covers no test task")
        lead = f"{gaps}{test}, the replication's {figure}."
    else:
        lead = (f"The replication split covers every test task with as many problems; the test difference is "
                f"{ci(r['headline'])}, the replication's {figure}.")
    if rep["replicated"] is None:
        return (f"{lead} The test difference was not significant, so there is no result to replicate: the two figures "
                "are given side by side.")
    return f"{lead} {'Replicated' if rep['replicated'] else 'Did not replicate'}: " + (
        "the same sign with the interval excluding 0." if rep["replicated"] else
        "the replication's interval does not exclude 0 on the original's side.")


def sentences(r: Mapping[str, Any]) -> dict[str, str]:
    """Every statement of the report (module docstring), from the report dict's figures."""
    return {"headline": _headline(r), "seeds": _seeds(r["headline"], r["meta"]["problems"]),
            "ceiling": _ceiling(r["ceilings"], r["headline"]), "concentration": _concentration(r["concentration"]),
            "within_task": _within(r["within_task"]), "replication": _replication(r), "coverage": _coverage(r),
            "ledger": _ledger(r),
            "reward": r["reward_vs_accuracy"]["sentence"]}
