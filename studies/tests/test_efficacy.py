"""studies.efficacy at toy scale (seconds) and its paired test."""

import json
import math

import pytest

from studies.efficacy import Config, main, mcnemar_exact


def test_mcnemar_exact_known_values():
    # 0 vs 6 discordant pairs: p = 2 * 0.5**6
    r = mcnemar_exact([False] * 6 + [True] * 4, [True] * 6 + [True] * 4)
    assert (r["only_a"], r["only_b"]) == (0, 6) and r["p_value"] == pytest.approx(2 / 64)
    assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0
    r = mcnemar_exact([True] * 3 + [False] * 2, [False] * 3 + [True] * 2)  # 3 vs 2: p = 1
    assert r["p_value"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="paired"):
        mcnemar_exact([True], [])


@pytest.fixture(autouse=True)
def _replay_dir(tmp_path, monkeypatch):
    """The validation plan table's replay cache goes to a temporary directory, never ~/.cache."""
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))


NEW_MODES = {"best_fixed_exhaustive", "per_task", "self_consistency", "bandit", "trained"}


def test_toy_scale_end_to_end(tmp_path):
    out = tmp_path / "e.json"
    r = main(Config(preset="tiny", seeds=(0, 1), eval_limit=12, validation_limit=6, output_dir=str(tmp_path / "runs"),
                    out=str(out), bandit_episodes=300, bootstrap_rounds=300))
    saved = json.loads(out.read_text())
    assert saved["modes"]["best_fixed_exhaustive"]["plans_searched"] == 9  # the tiny preset's L = 2
    assert set(saved["modes"]) == {"none", "random", "best_fixed", "grpo"} | NEW_MODES
    for m in saved["modes"].values():
        assert m["n"] == 12 * (1 if m["deterministic"] else 2) and 0 <= m["ci_low"] <= m["accuracy"] <= m["ci_high"] <= 1
        assert (m["seeds"], m["problems"]) == ((1 if m["deterministic"] else 2), 12) and "bootstrap" in m["interval"]
    for m in ("trained", "bandit", "self_consistency", "grpo"):  # seeded modes: one accuracy per seed
        assert list(saved["modes"][m]["per_seed"]) == ["0", "1"]
    assert all(0 <= t["p_value"] <= 1 for t in saved["tests"].values())
    assert saved["modes"]["best_fixed"]["sequence"] in saved["validation_fixed_accuracy"]
    assert (tmp_path / "e_curves.png").is_file()
    curve = r["runs"]["stackelberg_s0"]["curve"]
    assert len(curve) == 4 and all(math.isfinite(m["planner/reward"]) for m in curve)


def test_exhaustive_per_task_and_bandit_modes_choose_on_the_validation_table(tmp_path):
    from benchmarks.plans.table import all_plans

    r = main(Config(preset="tiny", seeds=(0,), eval_limit=8, validation_limit=6, output_dir=str(tmp_path / "runs"),
                    plan_rounds=2, bandit_episodes=300, bootstrap_rounds=200, fixed=tuple(all_plans(2))))
    ex, table = r["modes"]["best_fixed_exhaustive"], r["plan_table"]
    # the replayed table agrees with live evaluations of the same plans on the same validation problems
    assert {k[len("fixed:"):]: v for k, v in r["validation_fixed_accuracy"].items()} == table["validation_accuracy"]
    assert ex["plans_searched"] == table["plans"] == 9  # every plan of <= 2 rounds, not the one-plan candidate list
    assert ex["val_accuracy"] == max(table["validation_accuracy"].values())
    assert table["validation_accuracy"][ex["plan"]] == ex["val_accuracy"]
    assert table["replay"]["misses"] > 0  # played through the replay cache: a second study decodes no step again
    assert r["replay"]["plan_table"] == table["replay"] and table["replay"]["catchup_mismatch"] == 0
    assert r["replay"]["training"] is None and all(run["replay"] is None for run in r["runs"].values())  # tiny: live
    again = main(Config(preset="tiny", seeds=(0,), eval_limit=8, validation_limit=6, output_dir=str(tmp_path / "again"),
                        plan_rounds=2, bandit_episodes=300, bootstrap_rounds=200, fixed=((8,),)))
    assert again["plan_table"]["replay"]["misses"] == 0 and again["plan_table"]["replay"]["hits"] > 0
    assert again["plan_table"]["validation_accuracy"] == table["validation_accuracy"]
    assert r["modes"]["per_task"]["plans"] == {"tiny": ex["plan"]}  # one task: per task = best fixed
    # the bandit's greedy policy plays plans of the table; its test outcomes are those plans' outcomes
    policy = r["modes"]["bandit"]["policies"]["0"]
    assert policy["choice"]["tiny"] in table["validation_accuracy"] and table["bandit_pulls"]["0"]
    assert sum(table["bandit_pulls"]["0"]["tiny"].values()) == 300


def test_self_consistency_matches_the_planner_modes_tokens(tmp_path):
    r = main(Config(preset="tiny", seeds=(0,), eval_limit=8, validation_limit=4, output_dir=str(tmp_path / "runs"),
                    plan_rounds=2, bandit_episodes=50, bootstrap_rounds=200, fixed=((8,),)))
    sc = r["modes"]["self_consistency"]
    assert sc["token_budget_per_problem"] > 0 and sc["tokens_per_sample_none"] > 0
    assert sc["k"] == max(1, round(sc["token_budget_per_problem"] / sc["tokens_per_sample_none"])) >= 1
    assert sc["tokens_per_problem"] > 0
    fixed = main(Config(preset="tiny", seeds=(0,), eval_limit=8, validation_limit=4, output_dir=str(tmp_path / "k3"),
                        plan_rounds=2, bandit_episodes=50, bootstrap_rounds=200, fixed=((8,),), sc_k=3))
    assert fixed["modes"]["self_consistency"]["k"] == 3


def test_outcome_file_regenerates_the_table(tmp_path):
    import subprocess
    import sys

    from benchmarks.plans.seedstats import read_outcomes

    out = tmp_path / "e.json"
    r = main(Config(preset="tiny", seeds=(0, 1), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                    out=str(out), plan_rounds=2, bandit_episodes=50, bootstrap_rounds=300, fixed=((8,),), sc_k=2))
    path = tmp_path / "e_outcomes.jsonl.gz"
    rows = read_outcomes(path)
    assert all(set(row) >= {"mode", "seed", "problem_id", "sample", "task", "plan", "correct"} for row in rows)
    count = {}
    for row in rows:
        count[row["mode"]] = count.get(row["mode"], 0) + 1
    # deterministic modes once, seeded modes per seed, self-consistency's 2 samples per seed and problem
    assert count == {"none": 6, "best_fixed": 6, "best_fixed_exhaustive": 6, "per_task": 6, "random": 12,
                     "bandit": 12, "trained": 12, "grpo": 12, "self_consistency": 12, "self_consistency_samples": 24}
    assert all(row["plan"] == [8] for row in rows if row["mode"] == "best_fixed")
    # the validation plan table is committed beside it: the exhaustive choice can be recomputed from it
    from studies.efficacy import choose_plans, plan_name
    from benchmarks.plans.table import all_plans

    val = read_outcomes(tmp_path / "e_validation_table.jsonl.gz")
    assert len(val) == 4 * 9
    table, tasks = {}, {}
    for row in val:
        table.setdefault(row["problem_id"], {})[",".join(map(str, row["plan"]))] = row["correct"]
        tasks[row["problem_id"]] = row["task"]
    tab = {"table": table, "tasks": tasks, "plans": [plan_name(p) for p in all_plans(2)]}
    assert choose_plans(tab)[0] == r["modes"]["best_fixed_exhaustive"]["plan"]
    again = main(Config(table_from=str(path), out=str(tmp_path / "t.md"), bootstrap_rounds=300))
    assert again["table_md"] == r["outcomes_table_md"] == (tmp_path / "t.md").read_text()
    assert "| `trained` | 2 |" in again["table_md"] and "sign test over seeds" in again["table_md"]
    cli = subprocess.run([sys.executable, "-m", "studies.efficacy", "--table-from", str(path),
                          "--bootstrap-rounds", "300"], capture_output=True, text=True, check=True)
    assert r["outcomes_table_md"] in cli.stdout
    t = r["tests"]["trained_vs_best_fixed_exhaustive"]
    assert t["sign_test_seeds"]["wins"] + t["sign_test_seeds"]["losses"] + t["sign_test_seeds"]["ties"] == 2
    assert 0 < t["bootstrap_seeds_problems"]["p_value"] <= 1
    with pytest.raises(ValueError, match="no such file"):
        main(Config(table_from=str(tmp_path / "missing.jsonl.gz")))


def test_choices_find_the_plan_each_task_needs():
    """Task x is solved only by 0,8 and task y only by 1,8: per task and the bandit find both, one fixed plan half;
    a task whose best plans tie keeps the exhaustive best plan among them."""
    from studies.efficacy import choose_plans, train_bandit

    plans = ["8", "0,8", "1,8", "2,8"]
    ids = [f"{t}/{i}" for t in "xyz" for i in range(10)]
    tasks = {i: i[0] for i in ids}
    right = {"x": ("0,8",), "y": ("1,8",), "z": ("1,8", "8")}  # z: 1,8 ties 8 (shorter) and is the overall best
    table = {i: {p: p in right[i[0]] for p in plans} for i in ids}
    tab = {"table": table, "tasks": tasks, "plans": plans}
    best, per_task, acc = choose_plans(tab)
    assert best == "1,8" and acc == pytest.approx({"8": 1 / 3, "0,8": 1 / 3, "1,8": 2 / 3, "2,8": 0.0})
    assert per_task == {"x": "0,8", "y": "1,8", "z": "1,8"}  # z's tie goes to the best plan, not the shortest
    xy = {"table": {i: table[i] for i in ids if i[0] != "z"}, "tasks": tasks, "plans": plans}
    assert choose_plans(xy)[0] == "0,8"  # 0,8 and 1,8 tie overall: the smallest plan
    for seed in range(3):
        got = train_bandit(xy, episodes=400, seed=seed)
        assert got["choice"] == {"x": "0,8", "y": "1,8"} and got["default"] in ("0,8", "1,8")
    few = train_bandit(xy, episodes=1, seed=0)
    assert sum(sum(v.values()) for v in few["pulls"].values()) == 1
    with pytest.raises(ValueError, match="episodes"):
        train_bandit(xy, episodes=0, seed=0)
    with pytest.raises(ValueError, match="validation-limit"):
        choose_plans({"table": {}, "tasks": {}, "plans": plans})


def test_paired_permutation_clusters_on_problems():
    from studies.efficacy import paired_permutation

    # identical modes: no difference, p = 1
    same = [[True, False]] * 10
    assert paired_permutation(same, same) == {"difference": 0.0, "p_value": 1.0, "problems_differing": 0}
    # a better on 12 of 12 differing problems (every seed): p ~ 2 * 0.5**12, well below 0.01
    a = [[True, True, True]] * 12 + [[False] * 3] * 8
    b = [[False, False, False]] * 12 + [[False] * 3] * 8
    r = paired_permutation(a, b)
    assert r["difference"] == pytest.approx(12 / 20) and r["problems_differing"] == 12 and r["p_value"] < 0.01
    # one problem decided by every seed counts once, not three times: 3 of 3 problems is not significant
    r = paired_permutation([[True] * 3] * 3, [[False] * 3] * 3)
    assert r["p_value"] > 0.2
    with pytest.raises(ValueError, match="same non-zero number"):
        paired_permutation([[True]], [])


def test_study_resumes_from_its_cache(tmp_path, monkeypatch):
    import studies.efficacy as eff

    cfg = Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                 fixed=((8,), (2, 8)))
    first = main(cfg)
    calls = []
    monkeypatch.setattr(eff, "_train", lambda *a: calls.append(a))
    monkeypatch.setattr(eff, "_outcomes", lambda *a, **k: calls.append(a))
    monkeypatch.setattr(eff, "validation_table", lambda *a, **k: calls.append(a))
    again = main(cfg)  # everything comes from the cache: nothing is trained or evaluated again
    assert calls == [] and again["modes"] == first["modes"]
    with pytest.raises(ValueError, match="different settings"):
        main(Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=5, validation_limit=4, output_dir=str(tmp_path / "runs")))


def test_random_planner_on_fewer_seeds(tmp_path):
    r = main(Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0, 1), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                    fixed=((8,),), random_seeds=1, sc_seeds=1))
    assert list(r["modes"]["random"]["per_seed"]) == ["0"] and r["modes"]["random"]["n"] == 6
    assert list(r["modes"]["self_consistency"]["per_seed"]) == ["0"]  # sampled once, like random
    assert r["modes"]["trained"]["n"] == 12 and 0 <= r["tests"]["trained_vs_random"]["p_value"] <= 1
    assert "sign_test_seeds" not in r["tests"]["trained_vs_random"]  # 2 seeds against 1: no pairing over seeds
    assert "sign_test_seeds" in r["tests"]["trained_vs_none"]  # a deterministic baseline: every seed against it
    with pytest.raises(ValueError, match="random_seeds"):
        Config(random_seeds=-1)
    with pytest.raises(ValueError, match="sc_seeds"):
        Config(sc_seeds=-1)


def test_training_variant_reuses_the_base_reasoner_evaluations(tmp_path, monkeypatch):
    import studies.efficacy as eff

    base = Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "a"),
                  fixed=((8,), (2, 8)))
    first = main(base)
    trained, evaluated = [], []
    real_train, real_outcomes = eff._train, eff._outcomes
    monkeypatch.setattr(eff, "_train", lambda cfg, *a: trained.append(cfg.overrides()) or real_train(cfg, *a))
    monkeypatch.setattr(eff, "_outcomes", lambda mode, *a, **k: evaluated.append(mode) or real_outcomes(mode, *a, **k))
    variant = Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "b"),
                     fixed=((8,), (2, 8)), train_set=("train.grpo.clip_eps_low=0.1",), baselines_from=str(tmp_path / "a"))
    r = main(variant)
    # both learners train again with the override; only the trained agents are evaluated again
    assert trained == [{"train.grpo.clip_eps_low": "0.1"}] * 2
    assert sorted(evaluated) == ["none", "trained"]  # grpo is evaluated in mode "none" with its own reasoner
    for m in ("none", "random", "best_fixed"):
        assert r["modes"][m] == first["modes"][m]
    with pytest.raises(ValueError, match="evaluation settings differ"):
        main(Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=5, validation_limit=4, output_dir=str(tmp_path / "c"),
                    baselines_from=str(tmp_path / "a")))
    with pytest.raises(ValueError, match="KEY=VALUE"):
        Config(train_set=("reasoner.sample_dtype",))


def test_old_cache_without_training_overrides_still_resumes(tmp_path):
    cfg = Config(preset="tiny", plan_rounds=2, bandit_episodes=50, seeds=(0,), eval_limit=4, validation_limit=4, output_dir=str(tmp_path), fixed=((8,),))
    cache = __import__("studies.efficacy", fromlist=["Cache"]).Cache(tmp_path / "efficacy_cache.json", cfg)
    assert "train_set" not in cache.data["config"]


def test_config_defaults_and_errors():
    assert len(Config().seeds) >= 5  # seed-level tests need at least five seeds
    for bad, field in ((dict(plan_rounds=5), "plan_rounds"), (dict(sc_k=-1), "sc_k"),
                       (dict(sc_temperature=0.0), "sc_temperature"), (dict(bandit_episodes=0), "bandit_episodes")):
        with pytest.raises(ValueError, match=field):
            Config(**bad)


def test_planner_only_study_without_grpo(tmp_path):
    """A planner-only study (the planner alone against the frozen reasoner): the `trained` mode's runs are
    planner_only runs, no reasoner is trained (no `grpo` mode, no grpo run), and the task settings given with
    --set (env.max_steps) reach training and every evaluation alike."""
    r = main(Config(preset="tiny", seeds=(0, 1), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                    bandit_episodes=50, bootstrap_rounds=200, fixed=((8,), (2, 8)), trained_learner="planner_only",
                    grpo=False, train_set=("env.max_steps=2",)))
    assert sorted(r["runs"]) == ["planner_only_s0", "planner_only_s1"]
    assert "grpo" not in r["modes"] and not any("grpo" in k for k in r["tests"])
    assert r["modes"]["trained"]["learner"].startswith("planner_only")
    assert list(r["modes"]["trained"]["per_seed"]) == ["0", "1"]
    assert "sign_test_seeds" in r["tests"]["trained_vs_best_fixed_exhaustive"]
    assert r["modes"]["best_fixed_exhaustive"]["plans_searched"] == 9  # L = env.max_steps = 2
    saved = sorted((tmp_path / "runs" / "planner_only_s0" / "checkpoints").glob("step_*/config.json"))
    assert saved and json.loads(saved[-1].read_text())["env"]["max_steps"] == 2
    with pytest.raises(ValueError, match="trained_learner"):
        Config(trained_learner="grpo")


def test_self_consistency_samples_even_when_the_budget_allows_one_answer(tmp_path):
    """rsim eval's k = 1 means greedy; self-consistency's one-sample vote must still be a *sample* at sc_temperature,
    or the mode silently equals `none` (the planner-only study's token budget gave k = 1)."""
    import dataclasses

    from studies.efficacy import Cache, _Study

    cfg = Config(preset="tiny", seeds=(0,), eval_limit=4, validation_limit=4, output_dir=str(tmp_path), fixed=((8,),),
                 sc_k=1)
    st = _Study(cfg, Cache(tmp_path / "efficacy_cache.json", cfg))
    ecfg = dataclasses.replace(st.ecfg[0], k=1, temperature=0.7)
    sampler, _ = st.sampler(ecfg, st.test)
    base, _ = st.base(ecfg, st.test)
    greedy = lambda agent: getattr(getattr(agent, "config", agent), "greedy", None)  # noqa: E731
    assert greedy(base) is True and greedy(sampler) is False


def test_interval_counts_identical_seeds_once():
    """Six seeds that play alike carry one seed's evidence: the interval is as wide as one seed's over the same
    40 problems, not the Wilson interval of 240 (seed, problem) pairs (what the table showed before)."""
    from algos.analysis import wilson
    from benchmarks.plans.seedstats import bootstrap_accuracy
    from studies.efficacy_report import outcome_table

    one = [i % 4 == 0 for i in range(40)]  # 25 %
    six = bootstrap_accuracy({s: one for s in range(6)})
    single = bootstrap_accuracy({0: one})
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    lo, hi = wilson(60, 240)
    assert six["accuracy"] == 0.25 and (six["seeds"], six["problems"]) == (6, 40)
    assert width(six["ci95"]) > 1.5 * (hi - lo)
    assert width(six["ci95"]) == pytest.approx(width(single["ci95"]), abs=0.04)
    # seeds that differ widen it further
    spread = bootstrap_accuracy({0: [True] * 40, 1: [False] * 40, 2: one})
    assert width(spread["ci95"]) > width(six["ci95"])
    rows = [{"mode": m, "seed": s, "problem_id": f"p{i}", "correct": c}
            for m, seeds in (("fixed", (0,)), ("trained", range(6))) for s in seeds for i, c in enumerate(one)]
    md = outcome_table(rows, "fixed", rounds=500)
    assert "| `trained` | 25.0% |" in md and "| 6 × 40 |" in md and "Wilson" not in md
    with pytest.raises(ValueError, match="same non-empty problems"):
        bootstrap_accuracy({0: [True], 1: [True, False]})


COMMITTED = "docs/efficacy_results/v3_planner_only"


def test_committed_episodes_are_the_outcomes_they_explain():
    """The committed episodes file holds no evaluation the outcome file does not score: the greedy
    `self_consistency_k1_s*` rows from before self-consistency sampled at k = 1 are gone, and every kept
    self-consistency episode is the outcome file's (seed, problem) outcome."""
    import gzip
    import re
    from pathlib import Path

    from benchmarks.plans.seedstats import read_outcomes

    root = Path(__file__).resolve().parents[2]  # the repository (this file is studies/tests/)
    with gzip.open(root / f"{COMMITTED}_episodes.jsonl.gz", "rt", encoding="utf-8") as f:
        episodes = [json.loads(line) for line in f]
    evals = {e["evaluation"] for e in episodes}
    assert not [e for e in evals if re.fullmatch(r"self_consistency_k\d+_s\d+", e)]
    sc = {(r["seed"], r["problem_id"]): r["correct"] for r in read_outcomes(root / f"{COMMITTED}_outcomes.jsonl.gz")
          if r["mode"] == "self_consistency"}
    sampled = [e for e in episodes if e["evaluation"].startswith("self_consistency_")]
    assert len(sampled) == len(sc) == 1200
    for e in sampled:
        seed = int(re.fullmatch(r"self_consistency_k1_T0\.7_s(\d+)", e["evaluation"]).group(1))
        assert e["correct"] == sc[(seed, e["problem_id"])]


def test_plans_table_marks_what_differs_from_the_usual_plan():
    from studies.efficacy_report import plans_table

    rows = [{"mode": "bandit", "seed": s, "problem_id": f"{t}/{i}", "task": t, "plan": plan, "correct": i == 0}
            for s, odd in ((0, "mul"), (1, None)) for t in ("add", "mul") for i in range(2)
            for plan in ([[4, 8] if t == odd else [3, 8]])]
    md = plans_table(rows)
    assert "| `bandit` | 0 | [3, 8] | **[4, 8]** | 50.0% |" in md and "| `bandit` | 1 | [3, 8] | [3, 8] | 50.0% |" in md
    assert plans_table(rows, modes=("trained",)) == ""


def test_efficacy_doc_tables_are_generated_from_the_committed_outcomes():
    """docs/efficacy.md's accuracy and plans tables are `--table-from` of the committed outcome files (the adaptive
    study's Stackelberg and planner-only arms, and the v3 study's)."""
    import re
    from pathlib import Path

    from studies.efficacy_report import table_from

    root = Path(__file__).resolve().parents[2]  # the repository (this file is studies/tests/)
    doc = (root / "docs" / "efficacy.md").read_text()
    for name, key in (("efficacy table", "table_md"), ("plans table", "plans_md")):
        blocks = list(re.finditer(rf"<!-- {name}: python -m studies\.efficacy --table-from (\S+) -->\n(.*?)\n"
                                  rf"<!-- /{name} -->", doc, re.S))
        assert [b.group(1) for b in blocks] == ["docs/efficacy_results/v4_adaptive_stackelberg_outcomes.jsonl.gz",
                                                "docs/efficacy_results/v4_adaptive_outcomes.jsonl.gz",
                                                f"{COMMITTED}_outcomes.jsonl.gz"], f"docs/efficacy.md: {name} blocks"
        for b in blocks:
            assert b.group(2) == table_from(str(root / b.group(1)))[key].rstrip("\n"), f"{name} of {b.group(1)} is stale"


def test_study_sources_are_given_and_must_be_disjoint(tmp_path):
    """--source / --validation choose the study's test and validation problems (the adaptive study: adaptive:test,
    adaptive:val); a pair that shares a question is refused, naming the fix, and a bad spec fails at construction."""
    cfg = Config(preset="tiny", source="adaptive:test", validation="adaptive:val")
    assert cfg.sources() == ("adaptive:test", "adaptive:val")
    assert Config(preset="tiny").sources() == ("tiny", "tiny")
    with pytest.raises(ValueError, match="both test .* and validation"):
        main(Config(preset="tiny", seeds=(0,), eval_limit=8, validation_limit=8, source="adaptive:val",
                    validation="adaptive:val", output_dir=str(tmp_path / "runs")))
    with pytest.raises(ValueError):
        Config(source="no_such_source:x")


def test_seed_placeholder_gives_each_run_its_own_warm_start(monkeypatch, tmp_path):
    """`--set model.planner=runs/po/planner_only_s{seed}`: each seed's run starts from the planner-only run of the same
    seed (the Stackelberg runs warm-started from the planner-only heads)."""
    import algos.cli
    import algos.config
    from studies.efficacy import _train

    seen = []
    monkeypatch.setattr(algos.config, "resolve", lambda preset, overrides: seen.append(overrides) or overrides)
    monkeypatch.setattr(algos.cli, "train", lambda cfg: {"history": []})
    cfg = Config(preset="tiny", output_dir=str(tmp_path), train_set=("model.planner=runs/po/planner_only_s{seed}",))
    for seed in (0, 3):
        _train(cfg, "stackelberg", seed)
    assert [o["model.planner"] for o in seen] == ["runs/po/planner_only_s0", "runs/po/planner_only_s3"]
    assert all("{seed}" not in str(v) for o in seen for v in o.values())
