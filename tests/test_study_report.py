"""rsim study's report on three scripted studies whose answer is known (no model).

Each case draws train / val / test tables from a latent-difficulty model (problem ``i`` is solved by plan ``j`` iff
its difficulty ``u_i`` is below the plan's solve rate for the problem), so the best plan of a task (or of a kind of
problem) solves every problem any worse plan solves. The modes are *learned* from the train and val tables, never
written down: ``best_fixed`` / ``per_task`` choose on train + val, and the "trained" planner of each seed is a lookup
fitted on its own half of the train table, keyed on what it can see -- the task (a per-task planner) or the task and
a feature of the problem text (a planner that reads the problem).

(a) one plan best on every task: no headroom, no captured figure, CI of the headline includes 0;
(b) the best plan differs by task: trained ≈ per_task > best_fixed, a few tasks carry the gain;
(c) the best plan differs within a task by a text feature: trained > per_task, "conditions on more than the task".
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from algos.study.report import build, write
from algos.study.types import ModeResult, Outcome, Table
from tests.study_helpers import ledger_of

PLANS = [(8,)] + [(s, 8) for s in range(8)]
TASKS = ["alpha", "beta", "gamma", "delta"]
SIZES = {"train": 40, "val": 20, "test": 60, "replication": 60}
SEEDS = range(4)
ROUNDS = 2000


def _rate(case: str, task: int, text: str, plan: tuple[int, ...]) -> float:
    """Solve rate of ``plan`` on a problem of task ``task`` whose question is ``text``."""
    if case == "a":
        return 0.6 if plan == (3, 8) else 0.1 + 0.03 * plan[0]
    if case == "b":
        return 0.7 if plan == PLANS[1 + task] else 0.15
    best = PLANS[1 + task] if "[even]" in text else PLANS[5 + task]  # case c: the text decides
    return 0.75 if plan == best else 0.1


def _table(case: str, split: str, seed: int) -> tuple[Table, dict[str, str]]:
    rng = np.random.default_rng([ord(case), len(split), seed])
    tasks, outcomes, texts = {}, {}, {}
    for k, task in enumerate(TASKS):
        for i in range(SIZES[split]):
            pid = f"{split}-{task}-{i}"
            texts[pid] = f"{task} problem {i} {'[even]' if rng.random() < 0.5 else '[odd]'}"
            u = rng.random()
            tasks[pid] = task
            outcomes[pid] = {pl: Outcome(bool(u < _rate(case, k, texts[pid], pl)), float(u < _rate(case, k, texts[pid], pl)) + 0.5,
                                         100.0 + 10 * len(pl)) for pl in PLANS}
    return Table(split, tasks, outcomes), texts


def _best(table: Table, ids: list[str]) -> tuple[int, ...]:
    acc = {pl: np.mean([table.outcomes[p][pl].correct for p in ids]) for pl in PLANS}
    return max(PLANS, key=lambda pl: (acc[pl], -PLANS.index(pl)))


def _fit(tables: list[Table], key) -> tuple[dict, tuple[int, ...]]:
    """The best plan per key (over the tables' problems) and the pooled best (for keys never seen)."""
    groups = defaultdict(list)
    for t in tables:
        for p in t.ids():
            groups[key(t, p)].append((t, p))
    merged = Table("fit", {}, {p: t.outcomes[p] for t in tables for p in t.ids()})
    return ({k: _best(merged, [p for _, p in v]) for k, v in groups.items()},
            _best(merged, merged.ids()))


def _play(test: Table, name: str, plan_of: dict[int, dict[str, tuple[int, ...]]], chosen_on: str) -> ModeResult:
    return ModeResult(name, {s: {p: test.outcomes[p][pl] for p, pl in by.items()} for s, by in plan_of.items()},
                      plan_of, chosen_on)


def _modes(case: str, split: str, reads_text: bool) -> tuple[Table, dict[str, ModeResult]]:
    train, train_txt = _table(case, "train", 0)
    val, _ = _table(case, "val", 0)
    test, texts = _table(case, split, 0)
    fixed = _fit([train, val], lambda t, p: "all")[1]
    per_task, _ = _fit([train, val], lambda t, p: t.tasks[p])
    ids = test.ids()
    modes = {"best_fixed": _play(test, "best_fixed", {0: {p: fixed for p in ids}}, "train+val"),
             "per_task": _play(test, "per_task", {0: {p: per_task[test.tasks[p]] for p in ids}}, "train+val")}
    if reads_text:
        key = lambda t, p, txt=train_txt: (t.tasks[p], "[even]" in txt.get(p, texts.get(p, "")))  # noqa: E731
        test_key = lambda p: (test.tasks[p], "[even]" in texts[p])  # noqa: E731
    else:
        key = lambda t, p: t.tasks[p]  # noqa: E731
        test_key = lambda p: test.tasks[p]  # noqa: E731
    trained = {}
    for s in SEEDS:
        half = np.random.default_rng(100 + s).permutation(train.ids())[: len(train.ids()) // 2]
        sub = Table("train", {p: train.tasks[p] for p in half}, {p: train.outcomes[p] for p in half})
        lookup, default = _fit([sub], key)
        trained[s] = {p: lookup.get(test_key(p), default) for p in ids}
    modes["trained"] = _play(test, "trained", trained, "train")
    rng = np.random.default_rng(7)
    modes["random"] = _play(test, "random", {0: {p: PLANS[rng.integers(len(PLANS))] for p in ids}}, "nothing")
    # the reasoner alone: no plan, no planner reward (NaN, as the score stage reads it from episodes)
    modes["none"] = ModeResult("none", {0: {p: Outcome(False, float("nan"), 80.0) for p in ids}}, None, "")
    return test, modes


def _report(case: str, reads_text: bool, ledger: int = 1, replicate: bool = False) -> dict:
    test, modes = _modes(case, "test", reads_text)
    rep = _modes(case, "replication", reads_text) if replicate else None
    r = build(test, modes, ledger=ledger_of(test, modes, ledger, ROUNDS), replication=rep, meta={"case": case}, rounds=ROUNDS)
    json.dumps(r, allow_nan=False)  # strict JSON as it stands
    return r


def test_a_one_plan_best_everywhere_has_no_headroom():
    r = _report("a", reads_text=False)
    h = r["headline"]
    assert r["headline"]["best_fixed_plan"] == [3, 8]
    assert h["ci95_pts"][0] <= 0 <= h["ci95_pts"][1] and h["verdict"] == "no measurable difference"
    for key in ("per_task_on_test", "oracle"):
        c = r["ceilings"][key]
        assert c["headroom"]["difference_problems"] <= 0 and c["captured"] is None
    assert "no captured figure" in h["sentences"]["ceiling"] and "% of it" not in h["sentences"]["ceiling"]
    assert r["concentration"]["tasks_carrying"] is None
    assert r["within_task"]["conditions_on_more_than_task"] is False


def test_b_best_plan_by_task_trained_matches_per_task():
    r = _report("b", reads_text=False)
    h, pol = r["headline"], r["ceilings"]["per_task_policy"]
    assert h["verdict"] == "above" and h["ci95_pts"][0] > 0
    assert pol["vs_best_fixed"]["ci95_pts"][0] > 0
    lo, hi = pol["trained_vs"]["ci95_pts"]
    assert lo <= 0 <= hi and abs(pol["trained_vs"]["difference_pts"]) < 5  # trained ≈ per_task
    assert r["ceilings"]["per_task_on_test"]["captured"] is not None  # a real ceiling above best fixed
    conc = r["concentration"]
    assert len(conc["tasks_carrying"]) == 3  # best fixed is best on one task of four: the other three carry it
    assert r["within_task"]["conditions_on_more_than_task"] is False
    assert h["seeds"]["above"] == len(SEEDS) and "share one test set" in h["sentences"]["seeds"]


def test_c_best_plan_within_task_trained_beats_per_task():
    r = _report("c", reads_text=True)
    pol, w = r["ceilings"]["per_task_policy"], r["within_task"]
    assert pol["trained_vs"]["ci95_pts"][0] > 0  # the planner that reads the text beats the per-task policy
    assert w["conditions_on_more_than_task"] is True and w["value_vs_modal_plan"]["ci95_pts"][0] > 0
    assert w["value_vs_per_task"]["ci95_pts"][0] > 0
    assert all(s["tasks_one_plan"] < s["tasks"] for s in w["by_seed"]) and w["departures_per_seed"] > 0
    assert "conditions on more than the task" in r["headline"]["sentences"]["within_task"]


def test_c_per_task_planner_does_not_claim_conditioning():
    r = _report("c", reads_text=False)
    assert r["within_task"]["conditions_on_more_than_task"] is False
    assert "no evidence" in r["headline"]["sentences"]["within_task"]


def test_c_conditioning_is_judged_against_the_seeds_own_lookup():
    """When the per-task policy plays the plan a seed departs *to*, the departures land where the policy is already
    right (worth ~0 against it); against the seed's own modal plan they are still worth their problems."""
    from collections import Counter

    test, modes = _modes("c", "test", True)
    tr = modes["trained"]
    flip = {}
    for task in TASKS:
        ids = [p for p in test.ids() if test.tasks[p] == task]
        counts = Counter(tr.plans[0][p] for p in ids)
        flip[task] = min(counts, key=lambda pl: (counts[pl], pl))  # the seed's minority plan for the task
    ids = test.ids()
    modes["per_task"] = _play(test, "per_task", {0: {p: flip[test.tasks[p]] for p in ids}}, "train+val")
    r = build(test, modes, ledger=ledger_of(test, modes, rounds=ROUNDS), replication=None, meta={}, rounds=ROUNDS)
    w = r["within_task"]
    assert w["value_vs_modal_plan"]["ci95_pts"][0] > 0 and w["conditions_on_more_than_task"] is True
    assert w["value_vs_per_task"]["difference_pts"] < w["value_vs_modal_plan"]["difference_pts"]


@pytest.mark.parametrize("case,replicated", [("b", True), ("a", None)], ids=["gain-replicates", "no-gain"])
def test_replication_is_stated_plainly(case, replicated):
    """A significant gain replicates; with no significant original there is nothing to replicate: both figures are
    given side by side (tests/test_study_replication.py has the rest)."""
    r = _report(case, reads_text=False, replicate=True)
    assert r["headline"]["replicated"] is replicated and r["replication"]["replicated"] is replicated
    text = r["headline"]["sentences"]["replication"]
    if replicated:
        assert "Replicated:" in text and r["headline"]["sentences"]["headline"].endswith("it replicated.")
    else:
        assert "side by side" in text and "replicate" not in r["headline"]["sentences"]["headline"]


def test_holm_corrects_for_every_look_in_the_ledger():
    one, five = _report("b", reads_text=False), _report("b", reads_text=False, ledger=5)
    # four looks without a p-value count as p = 1: this p is the smallest, so Holm multiplies it by 5
    assert five["headline"]["p_holm"] == pytest.approx(min(1.0, 5 * one["headline"]["p_value"]))
    assert five["ledger"]["configurations_scored"] == 5 and five["ledger"]["p_as_one"] == 4
    assert "looked at 5 times" in five["headline"]["sentences"]["ledger"]
    assert "4 with no p-value kept, counted as p = 1" in five["headline"]["sentences"]["headline"]
    assert one["headline"]["difference_pts"] == five["headline"]["difference_pts"]


def test_the_headline_is_holm_over_the_ledgers_p_values_and_must_match_the_scores():
    from algos.study.stats import holm

    test, modes = _modes("b", "test", False)
    lg = ledger_of(test, modes, rounds=ROUNDS)
    mine = lg["family"][0]["p"]
    lg["family"] = [{"hash": "a" * 64, "p": mine / 4, "p_kept": True}, {"hash": "b" * 64, "p": 0.5, "p_kept": True},
                    *lg["family"]]
    r = build(test, modes, ledger=lg, replication=None, meta={}, rounds=ROUNDS)
    assert r["headline"]["p_holm"] == pytest.approx(holm([mine / 4, 0.5, mine])[2])
    assert [f["p_holm"] for f in r["ledger"]["family"]] == pytest.approx(holm([mine / 4, 0.5, mine]))
    lg["family"][-1]["p"] = mine / 2  # the ledger's p of this look is not what the scores give: refused
    with pytest.raises(ValueError, match="rescore"):
        build(test, modes, ledger=lg, replication=None, meta={}, rounds=ROUNDS)
    with pytest.raises(ValueError, match="no look of this configuration"):
        build(test, modes, ledger={**lg, "hash": "c" * 64}, replication=None, meta={}, rounds=ROUNDS)


def test_secondary_comparisons_are_holm_corrected_over_the_reports_own_family():
    from algos.study.stats import holm

    r = _report("b", reads_text=False)
    sec = r["secondary"]
    assert sec["m"] == len(sec["members"]) >= 8 and "modes.random.vs_best_fixed" in [m["where"] for m in sec["members"]]
    assert [m["p_holm"] for m in sec["members"]] == pytest.approx(holm([m["p_value"] for m in sec["members"]]))
    assert r["modes"]["random"]["vs_best_fixed"]["p_holm"] is not None
    assert "secondary comparisons are Holm-corrected over their own family" in r["headline"]["sentences"]["ledger"]


def _bend(test: Table, modes: dict, penalty) -> tuple[Table, dict]:
    bent = {p: {pl: Outcome(o.correct, o.reward - penalty(pl), o.tokens) for pl, o in by.items()}
            for p, by in test.outcomes.items()}
    return Table("test", test.tasks, bent), {
        n: ModeResult(n, {s: {p: bent[p][m.plans[s][p]] for p in by} for s, by in m.outcomes.items()}, m.plans,
                      m.chosen_on) if m.plans else m for n, m in modes.items()}


def test_reward_reported_apart_only_when_it_can_differ():
    r = _report("b", reads_text=False)
    assert r["reward_vs_accuracy"]["constant"] and r["reward_vs_accuracy"]["offset"] == pytest.approx(0.5)
    assert "reward" not in r["headline"] and "one test, not two" in r["headline"]["sentences"]["reward"]
    test, modes = _modes("b", "test", False)
    # only the one-round plan differs: random plays it, trained and best_fixed never do -> the headline is one test
    bent = _bend(test, modes, lambda pl: 0.3 * (len(pl) == 1))
    r1 = build(*bent, ledger=ledger_of(*bent, rounds=ROUNDS), replication=None, meta={}, rounds=ROUNDS)
    v = r1["reward_vs_accuracy"]
    assert not v["constant"] and v["headline_constant"] and v["differ"] == ["random"] and "reward" not in r1["headline"]
    # the penalty depends on the first strategy: the plans trained and best_fixed play differ in reward - accuracy
    bent = _bend(test, modes, lambda pl: 0.1 * pl[0])
    r2 = build(*bent, ledger=ledger_of(*bent, rounds=ROUNDS), replication=None, meta={}, rounds=ROUNDS)
    assert not r2["reward_vs_accuracy"]["headline_constant"] and "reward" in r2["headline"]
    assert "reported apart" in r2["headline"]["sentences"]["reward"]


def test_report_is_deterministic_and_writes_its_folder(tmp_path):
    r = _report("b", reads_text=False)
    assert json.dumps(r) == json.dumps(_report("b", reads_text=False))
    paths = write(r, tmp_path / "report")
    assert {p.name for p in paths} == {"report.json", "report.md", "modes.png", "tasks.png", "seeds.png"}
    assert json.loads((tmp_path / "report" / "report.json").read_text()) == r
    md = (tmp_path / "report" / "report.md").read_text()
    assert r["headline"]["sentences"]["headline"] in md and "## Per task" in md
    assert all(p.stat().st_size > 0 for p in paths)


def test_bad_inputs_name_the_problem():
    test, modes = _modes("b", "test", False)
    with pytest.raises(ValueError, match="best_fixed"):
        build(test, {k: v for k, v in modes.items() if k != "best_fixed"}, ledger=ledger_of(test, modes, rounds=ROUNDS),
              replication=None, meta={})
    short = dict(modes)
    first = test.ids()[0]
    short["random"] = ModeResult("random", {0: {p: o for p, o in modes["random"].outcomes[0].items() if p != first}},
                                 {0: {p: pl for p, pl in modes["random"].plans[0].items() if p != first}})
    with pytest.raises(ValueError, match=f"'random', seed 0.*{first}"):
        build(test, short, ledger=ledger_of(test, modes, rounds=ROUNDS), replication=None, meta={})
    with pytest.raises(ValueError, match="the test set's ledger"):
        build(test, modes, ledger=None, replication=None, meta={})
    with pytest.raises(ValueError, match="JSON-able"):
        build(test, modes, ledger=ledger_of(test, modes, rounds=10_000), replication=None, meta={"x": object()})


# --------------------------------------------------------------------------- case (c) through a trained planner

def test_c_through_rsim_study_a_trained_planner_reads_the_text(tmp_path):
    """Case (c) end to end, no model weights: the scripted family reasoner (``add`` solved only under ``[3, 8]``,
    ``mul`` only under ``[1, 8]``), both families under each of two task labels, so no per-task plan can be right on
    more than about half a task; the tiny planner's head is trained on the filled train tree (it sees the question
    text, never the label), scored on the test tree, and the report must find that it conditions on more than the
    task."""
    import json as _json

    from algos.study import fill, score, train
    from algos.study.config import resolve
    from tests import study_helpers as helpers

    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(_json.dumps({"question": p.question, "answer": p.answer, "task": f"mix{i // 2 % 2}"}) + "\n"
                            for i, p in enumerate(helpers.PROBLEMS)))
    cfg = resolve("tiny", {"out": str(tmp_path / "study"), "data": str(data), "planner": "tiny",
                           "reasoner": "tests.study_helpers:family_reasoner", "train_per_task": 8, "val_per_task": 4,
                           "test_per_task": 10, "increment": 10, "learner.seeds": 2, "learner.steps": 20,
                           "learner.groups_per_step": 4, "learner.group_size": 8, "learner.lr": 0.05,
                           "learner.eval_every": 10})
    fill.run(cfg)
    train.train(cfg)
    test, modes = score.score(cfg, "test")
    r = build(test, modes, ledger=ledger_of(test, modes, rounds=ROUNDS), replication=None, meta={"case": "c, trained"}, rounds=ROUNDS)
    pol, w = r["ceilings"]["per_task_policy"], r["within_task"]
    assert r["meta"]["problems"] >= 16 and r["meta"]["tasks"] == 2  # 10 a task, as many as the hash split gives
    assert pol["accuracy_pct"] <= 75  # one plan a task: at most the larger family of each task
    assert pol["trained_vs"]["ci95_pts"][0] > 0, pol["trained_vs"]
    assert w["conditions_on_more_than_task"] is True and w["value_vs_modal_plan"]["ci95_pts"][0] > 0, w
    assert "conditions on more than the task" in r["headline"]["sentences"]["within_task"]
