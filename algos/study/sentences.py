"""The report's plain statements, each made from its JSON figures and worded so it cannot say more than they do.

:func:`sentences` returns ``{"headline", "seeds", "ceiling", "concentration", "within_task", "replication",
"ledger", "reward"}``; the markdown report and the README / docs block (:mod:`algos.study.docs_block`) print them
as they are.
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
    return (f"Trained planner vs the best fixed plan {plan} (chosen on {h['best_fixed_chosen_on'] or 'train+val'}): "
            f"{ci(h)} on {meta['problems']} test problems of {meta['tasks']} tasks ({h['trained_accuracy_pct']:.1f} % vs "
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
    return (f" On the replication split ({rep['problems']} fresh problems) it is {ci(rep)}: "
            f"{'it replicated' if rep['replicated'] else 'it did not replicate'}.")


def _seeds(h: Mapping[str, Any], problems: int) -> str:
    s = h["seeds"]
    return (f"{s['above']} of {s['seeds']} seeds above, {s['below']} below, {s['tied']} tied (sign p {_p(s['p_value'])}). "
            f"The seeds share one test set of {problems} problems: this measures training noise, not new problems.")


def _ceiling(c: Mapping[str, Any], h: Mapping[str, Any]) -> str:
    parts = []
    unsure = "" if h["verdict"] != "no measurable difference" else " (a gain whose interval includes 0)"
    for key, label in (("per_task_on_test", "per-task best plan chosen on test"), ("oracle", "per-problem oracle")):
        v = c[key]
        room = v["headroom"]
        cap = (f"; the trained planner's {pts(h['difference_pts'])} points{unsure} are {v['captured']:.0f} % of it"
               if v["captured"] is not None
               else "; no captured figure (the headroom's interval is not above 0)")
        parts.append(f"the {label} (a ceiling, not a policy) reaches {v['accuracy_pct']:.1f} %, "
                     f"{room['difference_problems']:+.1f} problems over the best fixed plan, {ci(room)}{cap}")
    text = "Ceilings: " + "; ".join(parts) + "."
    if "per_task_policy" in c:
        p = c["per_task_policy"]
        text += (f" The per-task policy chosen on {p['chosen_on'] or 'train+val'} is {p['accuracy_pct']:.1f} %, "
                 f"{ci(p['vs_best_fixed'])} over the best fixed plan; the trained planner is {ci(p['trained_vs'])} "
                 "over it.")
    return text


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


def _replication(r: Mapping[str, Any]) -> str:
    rep = r["replication"]
    if rep is None:
        return "Not scored on a replication split."
    head = (f"on {rep['problems']} replication problems the difference is {ci(rep)} "
            f"({rep['trained_accuracy_pct']:.1f} % vs {rep['best_fixed_accuracy_pct']:.1f} %)")
    if rep["replicated"]:
        return f"Replicated: {head}, the same sign with the interval excluding 0."
    return f"Did not replicate: {head}."


def sentences(r: Mapping[str, Any]) -> dict[str, str]:
    """Every statement of the report (module docstring), from the report dict's figures."""
    return {"headline": _headline(r), "seeds": _seeds(r["headline"], r["meta"]["problems"]),
            "ceiling": _ceiling(r["ceilings"], r["headline"]), "concentration": _concentration(r["concentration"]),
            "within_task": _within(r["within_task"]), "replication": _replication(r),
            "ledger": _ledger(r),
            "reward": r["reward_vs_accuracy"]["sentence"]}
