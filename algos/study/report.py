"""``rsim study``'s report: does the trained planner beat the best fixed plan on problems it never saw?

:func:`build` turns the test :class:`~algos.study.types.Table` and every mode's
:class:`~algos.study.types.ModeResult` into one JSON-able dict; :func:`write` lays it out as ``report.json``,
``report.md`` and PNG plots in one folder. Nothing in ``write`` computes a figure: every number in the markdown or a
plot is in the JSON. The unit of evidence is the problem (an arm over several seeds enters as its per-problem mean
over seeds); intervals are percentile bootstraps over problems (seeded: the report is a deterministic function of
its inputs), p-values paired sign-flip permutation tests (:mod:`algos.study.stats`).

JSON keys (``docs/study.md`` documents the same schema):

* ``headline`` -- ``trained`` (pooled over seeds) minus ``best_fixed``: ``difference_pts`` (accuracy points),
  ``ci95_pts``, ``difference_problems``, ``p_value``, ``p_holm`` (Holm's step-down over the ``configurations_scored``
  looks in the test set's ledger, see ``ledger``), ``verdict``
  (``above`` / ``below`` only when the interval excludes 0 and ``p_holm`` < 0.05, else ``no measurable
  difference``), ``seeds`` (per-seed sign counts: secondary, the seeds share one test set), ``replicated``
  (True / False of a significant original; None when the original was not significant or no replication split was
  scored), ``reward`` (the same in reward, only when reward and accuracy can differ), ``sentences``;
* ``ceilings`` -- ``per_task_on_test`` (each task's best plan chosen on test) and ``oracle`` (per problem, any plan
  right): ``accuracy_pct``, ``correct_problems``, ``headroom`` over the best fixed plan (points, CI, problems) and
  ``captured`` (the trained gain as a share of it; None unless the headroom and the trained gain both have their
  CI above 0); ``per_task_policy`` -- the per-task plans chosen on train + val: a policy, not a ceiling, with its
  difference from the best fixed plan, the trained planner's difference from it, and ``ties`` (the tie-break rule
  and the range of its test accuracy over every tie-break, :func:`algos.study.breakdown.tie_range`);
* ``modes`` -- per mode: ``chosen_on`` (the information it had), ``seeds``, ``accuracy_pct`` and ``ci95_pts``,
  ``accuracy_by_seed_pct``, ``reward`` (None for a mode that earns no planner reward, e.g. ``none``),
  ``tokens_per_problem``, ``vs_best_fixed``, ``info``;
* ``per_task`` -- per task: ``problems``, each mode's ``plan`` / ``distinct_plans`` / ``accuracy_pct``,
  ``test_best`` (ceiling), ``gain_problems`` (:func:`algos.study.breakdown.per_task`);
* ``concentration`` -- ``tasks_carrying`` the gain, ``rest_problems``, ``by_task``, ``without_top_1`` / ``_3``;
* ``within_task`` -- ``by_seed`` (distinct plans per task, departures), ``value_vs_modal_plan`` (CI: the
  criterion of ``conditions_on_more_than_task``), ``value_vs_per_task``, ``conditions_on_more_than_task``;
* ``reward_vs_accuracy`` -- ``constant`` (reward − correct is one number ``offset`` on every (problem, plan) a
  mode played: reward = accuracy + offset, one test not two), ``headline_constant`` / ``headline_offset`` (the same
  over the plans ``trained`` and ``best_fixed`` play: when True the headline has no separate reward figure),
  ``differ`` (modes whose reward is reported apart), ``range``;
* ``ledger`` -- the headline's correction: ``path`` and ``test_set`` (the ledger and its key), ``configurations_scored``
  (m: the looks in it, one per distinct configuration), ``p_as_one`` (looks with no p-value kept -- historical ones
  that cannot be recomputed, ``rsim eval`` looks, which have no primary comparison -- counted as p = 1),
  ``historical``, ``family`` (each look's ``hash``, ``p``, ``p_kept``, ``p_holm``, ...), ``this`` and ``note``;
* ``secondary`` -- the report's own family: every other paired comparison in it (``members``: where, ``p_value``,
  ``p_holm``), Holm-corrected over those ``m`` alone; each also carries its ``p_holm`` where it stands;
* ``coverage`` -- the test split's problems per task and its tasks short of ``test_per_task`` (:func:`coverage`);
* ``replication`` -- None, or the headline on the replication split (``difference_pts``, ``ci95_pts``, ...),
  ``replicated``, ``original_significant``, ``coverage`` (the test tasks it has fewer problems of),
  ``test_on_covered_tasks`` (the test headline on exactly the tasks it covers) and each mode's accuracy there;
* ``meta`` -- what the caller passed (reasoner, data, trees, configuration hash, ...), ``problems``, ``tasks``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .breakdown import ci_pts, concentration, per_task, tie_range, within_task
from .stats import ROUNDS, holm, mean_ci, paired, sign_test
from .types import MODES, ModeResult, Table
from .view import View, modal_plan

__all__ = ["build", "write", "headline_of", "coverage", "SCHEMA"]

SCHEMA = 1
"""Version of the report's JSON keys (module docstring)."""


def _verdict(r: dict[str, Any], p_holm: float | None) -> str:
    lo, hi = r["ci95_pts"]
    significant = p_holm is not None and p_holm < 0.05
    if lo is not None and lo > 0 and significant:
        return "above"
    if hi is not None and hi < 0 and significant:
        return "below"
    return "no measurable difference"


def correction(p_value: float | None, ledger: Mapping[str, Any] | None) -> dict[str, Any]:
    """This look's p-value corrected by Holm's step-down over the ledger's family (``ledger``: :func:`algos.study.ledger
    .holm_of`'s dict with ``hash``, this configuration's): ``p_holm``, ``m``, ``p_as_one``, ``historical`` and the
    family with each member's adjusted p. Without a ledger (None) there is no correction: ``p_holm`` None, ``m`` 0.

    Raises:
        ValueError: this configuration has no look in the ledger, or the look's p-value is not ``p_value`` (the scores
            changed after the look was recorded: rescore).
    """
    if ledger is None:
        return {"p_holm": None, "m": 0, "p_as_one": 0, "historical": 0, "family": [], "this": None}
    fam = [dict(f) for f in ledger["family"]]
    mine = [i for i, f in enumerate(fam) if f["hash"] == ledger["hash"]]
    if not mine:
        raise ValueError(f"the ledger {ledger.get('path')} has no look of this configuration ({ledger['hash'][:16]}…): "
                         "run rsim study --stage score, which records it.")
    kept = fam[mine[0]]["p"] if fam[mine[0]]["p_kept"] else None
    if p_value is None or kept is None or abs(kept - p_value) > 1e-12:
        raise ValueError(f"the ledger's p-value of this look ({kept}) is not the scores' ({p_value}): the scores "
                         "changed after the look was recorded; rescore (rsim study --stage score).")
    adjusted = holm([f["p"] for f in fam])
    for f, a in zip(fam, adjusted):
        f["p_holm"] = a
    return {"p_holm": adjusted[mine[0]], "m": len(fam), "p_as_one": sum(not f["p_kept"] for f in fam),
            "historical": sum(bool(f.get("historical")) for f in fam), "family": fam, "this": ledger["hash"],
            "path": ledger.get("path"), "test_set": ledger.get("test_set")}


def headline_of(view: View, ledger: Mapping[str, Any] | None, rounds: int = ROUNDS, seed: int = 0) -> dict[str, Any]:
    """``trained`` vs ``best_fixed`` on the view's problems: the problem-level paired difference, its interval, the
    p-value and its Holm correction over the ledger's looks (:func:`correction`), and the seed-level counts."""
    tr, bf = view.modes["trained"], view.modes["best_fixed"]
    r = ci_pts(paired(tr.pooled(), bf.pooled(), rounds, seed))
    corr = correction(r["p_value"], ledger)
    p_holm = corr["p_holm"]
    per_seed = [float(x) for x in tr.correct.mean(axis=1)]
    base = float(bf.correct.mean())
    seeds = sign_test(per_seed, [base] * len(per_seed))
    return {**r, "trained_accuracy_pct": 100 * float(tr.correct.mean()), "best_fixed_accuracy_pct": 100 * base,
            "best_fixed_plan": list(modal_plan([p for row in bf.plans for p in row])) if bf.plans else None,
            "best_fixed_chosen_on": bf.chosen_on, "tasks": len(view.task_names()),
            "configurations_scored": corr["m"], "p_as_one": corr["p_as_one"], "p_holm": p_holm,
            "verdict": _verdict(r, p_holm), "_correction": corr,
            "seeds": {**seeds, "seeds": len(per_seed), "trained_accuracy_by_seed_pct": [100 * x for x in per_seed]}}


def _ceilings(view: View, head: Mapping[str, Any], rounds: int, seed: int) -> dict[str, Any]:
    bf = view.modes["best_fixed"].pooled()
    gain_pts = 100 * float(view.modes["trained"].pooled().mean() - bf.mean())
    gain_lo = head["ci95_pts"][0]
    gain_ok = gain_lo is not None and gain_lo > 0
    j_bf = view.plan_index(modal_plan([p for row in view.modes["best_fixed"].plans for p in row]))
    test_best, col = {}, np.zeros(len(view.ids), dtype=int)
    for t in view.task_names():
        rows = view.rows(t)
        acc = view.correct[rows].mean(axis=0)
        j = j_bf if acc[j_bf] == acc.max() else int(np.argmax(acc))
        test_best[t], col[rows] = view.plans[j], j
    out = {}
    for name, values, how in (
            ("per_task_on_test", view.correct[np.arange(len(view.ids)), col],
             "each task's best plan chosen on the test problems themselves: a ceiling, not a policy"),
            ("oracle", view.correct.max(axis=1),
             "per problem, right if any plan is right (the plan picked knowing the answer): a ceiling")):
        room = ci_pts(paired(values, bf, rounds, seed))
        ok = room["difference_pts"] > 0 and room["ci95_pts"][0] > 0
        note = (None if ok and gain_ok else "no captured figure: the headroom over the best fixed plan is not above 0 "
                "with its 95 % interval above 0" if not ok else "no captured figure: the trained planner's gain over "
                "the best fixed plan does not have its 95 % interval above 0")
        out[name] = {"accuracy_pct": 100 * float(values.mean()), "correct_problems": int(values.sum()),
                     "chosen_on": "test", "what": how, "headroom": room,
                     "captured": 100 * gain_pts / room["difference_pts"] if ok and gain_ok else None,
                     "captured_note": note}
    if "per_task" in view.modes:
        pt = view.modes["per_task"]
        out["per_task_policy"] = {
            "accuracy_pct": 100 * float(pt.correct.mean()), "chosen_on": pt.chosen_on,
            "what": "per task, the plan best on the selection problems: a policy, not a ceiling",
            "vs_best_fixed": ci_pts(paired(pt.pooled(), bf, rounds, seed)),
            "trained_vs": ci_pts(paired(view.modes["trained"].pooled(), pt.pooled(), rounds, seed)),
            "ties": tie_range(view, pt.info["tied"]) if "tied" in pt.info else None}
    return {**out, "test_best_plans": {t: list(p) for t, p in test_best.items()}}


def _modes(view: View, rounds: int, seed: int) -> dict[str, Any]:
    order = [m for m in MODES if m in view.modes] + sorted(m for m in view.modes if m not in MODES)
    bf = view.modes["best_fixed"].pooled()
    out = {}
    for name in order:
        m = view.modes[name]
        acc = mean_ci(m.pooled(), rounds, seed)
        out[name] = {"chosen_on": m.chosen_on, "seeds": m.seeds, "accuracy_pct": 100 * acc["mean"],
                     "ci95_pts": [100 * x for x in acc["ci95"]],
                     "accuracy_by_seed_pct": [100 * float(x) for x in m.correct.mean(axis=1)],
                     "reward": float(m.reward.mean()) if np.isfinite(m.reward).all() else None,
                     "tokens_per_problem": float(m.tokens.mean()),
                     "plays_plans": m.plans is not None,
                     "vs_best_fixed": ci_pts(paired(m.pooled(), bf, rounds, seed)), "info": dict(m.info)}
    return out


def _offsets(m: Any) -> tuple[float, float]:
    off = (m.reward - m.correct).ravel()
    return float(off.min()), float(off.max())


def _reward_vs_accuracy(view: View) -> dict[str, Any]:
    by_mode = {n: _offsets(m) for n, m in view.modes.items() if m.plans is not None}
    lo, hi = min(v[0] for v in by_mode.values()), max(v[1] for v in by_mode.values())
    h_lo = min(by_mode[n][0] for n in ("trained", "best_fixed"))
    h_hi = max(by_mode[n][1] for n in ("trained", "best_fixed"))
    constant, headline = hi - lo <= 1e-9, h_hi - h_lo <= 1e-9
    differ = sorted(n for n, (a, b) in by_mode.items() if b - a > 1e-9 or abs(a - h_lo) > 1e-9)
    if constant:
        text = f"reward = accuracy + {lo:g} on every (problem, plan) played: one test, not two; accuracy only."
    elif headline:
        text = (f"reward = accuracy + {h_lo:g} on every (problem, plan) trained and best_fixed play: the headline is one "
                f"test, not two; reward − accuracy differs for {differ}: their reward is reported apart.")
    else:
        text = f"reward − accuracy ranges over [{lo:g}, {hi:g}]: reward and accuracy are reported apart."
    return {"constant": constant, "headline_constant": headline, "offset": lo if constant else None,
            "headline_offset": h_lo if headline else None, "range": [lo, hi], "differ": differ, "sentence": text}


def _counts(view: View) -> dict[str, int]:
    return {t: int(view.rows(t).size) for t in view.task_names()}


def _on_tasks(view: View, tasks: set[str], rounds: int, seed: int) -> dict[str, Any]:
    """``trained`` vs ``best_fixed`` on the view's problems of ``tasks`` only."""
    keep = np.array([i for i, t in enumerate(view.tasks) if t in tasks], dtype=int)
    tr, bf = view.modes["trained"].pooled()[keep], view.modes["best_fixed"].pooled()[keep]
    return {**ci_pts(paired(tr, bf, rounds, seed)), "tasks": len(tasks),
            "trained_accuracy_pct": 100 * float(tr.mean()), "best_fixed_accuracy_pct": 100 * float(bf.mean())}


def coverage(test: Mapping[str, int], replication: Mapping[str, int] | None = None,
             per_task: int | None = None) -> dict[str, Any]:
    """Problems a task: ``test_short`` (test tasks with fewer than ``per_task``), and with a replication split
    ``replication_short`` (test tasks with fewer replication problems than test problems: ``{task: [test,
    replication]}``), ``replication_missing`` (test tasks with none) and ``replication_extra`` (tasks not in test)."""
    out: dict[str, Any] = {"per_task": per_task, "test": dict(test),
                           "test_short": {t: n for t, n in test.items() if per_task and n < per_task}}
    if replication is not None:
        out.update(replication=dict(replication),
                   replication_short={t: [n, replication.get(t, 0)] for t, n in test.items()
                                      if replication.get(t, 0) < n},
                   replication_missing=[t for t in test if not replication.get(t)],
                   replication_extra=[t for t in replication if t not in test])
    return out


def _replication(pair: tuple[Table, Mapping[str, ModeResult]], test_view: View, test_head: dict[str, Any],
                 per_task: int | None, rounds: int, seed: int,
                 ledger: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The headline on the replication split (its p corrected by Holm over the replication set's ledger), its
    coverage of the test tasks, the test effect on the tasks it covers, and ``replicated``: True / False only of a
    significant original (the headline's verdict), else None."""
    table, modes = pair
    view = View.of(table, modes)
    _need(view, "replication")
    head = headline_of(view, ledger, rounds, seed)
    head.pop("_correction")
    cov = coverage(_counts(test_view), _counts(view), per_task)
    covered = set(test_view.task_names()) & set(view.task_names())
    d, (lo, hi) = test_head["difference_pts"], head["ci95_pts"]
    replicated = None
    if test_head["verdict"] != "no measurable difference":
        same = head["difference_pts"] is not None and np.sign(d) == np.sign(head["difference_pts"]) != 0
        replicated = bool(same and (lo > 0 if d > 0 else hi < 0))
    return {**head, "replicated": replicated, "original_significant": replicated is not None, "coverage": cov,
            "test_on_covered_tasks": _on_tasks(test_view, covered, rounds, seed) if covered else None,
            "modes": {n: 100 * float(m.correct.mean()) for n, m in view.modes.items()}}


def _need(view: View, split: str) -> None:
    missing = [m for m in ("trained", "best_fixed") if m not in view.modes]
    if missing:
        raise ValueError(f"the {split} modes lack {missing}: the report compares the trained planner with the best "
                         "fixed plan; score both (rsim study --stage score).")
    if view.modes["best_fixed"].plans is None:
        raise ValueError("mode 'best_fixed' has no plans; give the plan it played on every problem.")


def _secondary(report: dict[str, Any]) -> dict[str, Any]:
    """Holm over the report's own secondary comparisons (every paired comparison but the headline and the replication):
    each member's ``p_holm`` is set where it stands; returns the family (``m``, ``members``, ``note``)."""
    members: list[tuple[str, dict[str, Any]]] = []
    for name, m in report["modes"].items():
        if name not in ("trained", "best_fixed"):
            members.append((f"modes.{name}.vs_best_fixed", m["vs_best_fixed"]))
    c = report["ceilings"]
    members += [(f"ceilings.{k}.headroom", c[k]["headroom"]) for k in ("per_task_on_test", "oracle") if k in c]
    if "per_task_policy" in c:  # its vs_best_fixed is mode per_task's comparison: one member, not two
        members += [(f"ceilings.per_task_policy.{k}", c["per_task_policy"][k]) for k in ("vs_best_fixed", "trained_vs")
                    if k == "trained_vs" or "per_task" not in report["modes"]]
    for key in ("without_top_1", "without_top_3"):
        members.append((f"concentration.{key}", (report["concentration"] or {}).get(key)))
    for key in ("value_vs_modal_plan", "value_vs_per_task"):
        members.append((f"within_task.{key}", (report["within_task"] or {}).get(key)))
    members.append(("headline.seeds (sign test)", report["headline"]["seeds"]))
    if "reward" in report["headline"]:
        members.append(("headline.reward", report["headline"]["reward"]))
    members = [(k, v) for k, v in members if isinstance(v, dict) and v.get("p_value") is not None]
    adjusted = holm([v["p_value"] for _, v in members])
    for (_, v), a in zip(members, adjusted):
        v["p_holm"] = a
    if "per_task_policy" in c and "per_task" in report["modes"]:
        c["per_task_policy"]["vs_best_fixed"]["p_holm"] = report["modes"]["per_task"]["vs_best_fixed"].get("p_holm")
    return {"m": len(members), "members": [{"where": k, "p_value": v["p_value"], "p_holm": v["p_holm"]}
                                           for k, v in members],
            "note": f"the report's {len(members)} secondary comparisons, Holm-corrected over this family alone (the "
                    "headline is corrected over the test set's ledger instead)"}


def _ledger_section(corr: Mapping[str, Any]) -> dict[str, Any]:
    """The report's ``ledger`` key from :func:`correction`'s result."""
    return {"path": corr["path"], "test_set": corr["test_set"], "configurations_scored": corr["m"],
            "p_as_one": corr["p_as_one"], "historical": corr["historical"], "this": corr["this"],
            "family": corr["family"],
            "note": "the family is every look at this test set (any scoring that included any of its problems, by any "
                    "command, one per distinct configuration); the headline p-value is Holm's step-down adjusted p "
                    "over their p-values, a look with none kept counted as p = 1"}


def build(test: Table, modes: Mapping[str, ModeResult], *, ledger: Mapping[str, Any],
          replication: tuple[Table, Mapping[str, ModeResult]] | None, meta: Mapping[str, Any],
          replication_ledger: Mapping[str, Any] | None = None, rounds: int = ROUNDS, seed: int = 0) -> dict[str, Any]:
    """The report as a JSON-able dict (module docstring for its keys).

    Args:
        test: The test split's read-back table.
        modes: Every mode scored on it (``trained`` and ``best_fixed`` required).
        ledger: The test set's ledger as :func:`algos.study.ledger.holm_of` gives it, with ``hash``: this scoring's
            configuration hash (its look must be in the family with the p-value the scores give).
        replication: The replication split's table and modes, or None when it was not scored.
        meta: JSON-able facts about the study (reasoner, data, tree dir, configuration hash, ...), copied as is.
        replication_ledger: The replication set's ledger, the same way (None: its p-value is not corrected).
        rounds: Bootstrap and permutation replicates.
        seed: Their RNG seed.
    """
    from .sentences import sentences

    if ledger is None or "family" not in ledger or "hash" not in ledger:
        raise ValueError("build: ledger must be the test set's ledger (algos.study.ledger.holm_of(...) with 'hash'); "
                         "the headline p-value is corrected over its looks.")
    try:
        meta = json.loads(json.dumps(dict(meta)))
    except TypeError as e:
        raise ValueError(f"meta must be JSON-able (strings, numbers, lists, dicts): {e}") from None
    view = View.of(test, modes)
    _need(view, "test")
    head = headline_of(view, ledger, rounds, seed)
    corr = head.pop("_correction")
    rva = _reward_vs_accuracy(view)
    if not rva["headline_constant"]:
        head["reward"] = ci_pts(paired(view.modes["trained"].pooled("reward"), view.modes["best_fixed"].pooled("reward"),
                                       rounds, seed))
    ceilings = _ceilings(view, head, rounds, seed)
    config = meta.get("config") or {}
    per_task_n = None if config.get("test_data") else config.get("test_per_task")
    rep = None if replication is None else _replication(replication, view, head, per_task_n, rounds, seed,
                                                        replication_ledger)
    head["replicated"] = None if rep is None else rep["replicated"]
    report = {"schema": SCHEMA, "meta": {**meta, "split": test.split, "problems": len(view.ids),
                                         "tasks": len(view.task_names())},
              "headline": head, "ceilings": ceilings, "modes": _modes(view, rounds, seed),
              "per_task": per_task(view, {t: tuple(p) for t, p in ceilings["test_best_plans"].items()}),
              "concentration": concentration(view, rounds, seed), "within_task": within_task(view, rounds, seed),
              "reward_vs_accuracy": rva, "coverage": coverage(_counts(view), None, per_task_n),
              "ledger": _ledger_section(corr), "replication": rep}
    report["secondary"] = _secondary(report)
    head["sentences"] = sentences(report)
    return report


def write(report: Mapping[str, Any], folder: str | Path) -> list[Path]:
    """Write ``report.json``, ``report.md`` and the plots into ``folder`` (created); return the paths written."""
    from .plots import plot_all
    from .report_md import markdown

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "report.json", folder / "report.md"]
    paths[0].write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    paths[1].write_text(markdown(report) + "\n")
    return paths + plot_all(report, folder)
