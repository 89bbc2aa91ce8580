"""benchmarks.efficacy at toy scale (seconds) and its paired test."""

import json
import math

import pytest

from benchmarks.efficacy import Config, main, mcnemar_exact


def test_mcnemar_exact_known_values():
    # 0 vs 6 discordant pairs: p = 2 * 0.5**6
    r = mcnemar_exact([False] * 6 + [True] * 4, [True] * 6 + [True] * 4)
    assert (r["only_a"], r["only_b"]) == (0, 6) and r["p_value"] == pytest.approx(2 / 64)
    assert mcnemar_exact([True, False], [True, False])["p_value"] == 1.0
    r = mcnemar_exact([True] * 3 + [False] * 2, [False] * 3 + [True] * 2)  # 3 vs 2: p = 1
    assert r["p_value"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="paired"):
        mcnemar_exact([True], [])


def test_toy_scale_end_to_end(tmp_path):
    out = tmp_path / "e.json"
    r = main(Config(preset="tiny", seeds=(0,), eval_limit=12, validation_limit=6, output_dir=str(tmp_path / "runs"),
                    out=str(out)))
    saved = json.loads(out.read_text())
    assert set(saved["modes"]) == {"none", "random", "best_fixed", "stackelberg", "grpo"}
    for m in saved["modes"].values():
        assert m["n"] == 12 and 0 <= m["ci_low"] <= m["accuracy"] <= m["ci_high"] <= 1
    assert all(0 <= t["p_value"] <= 1 for t in saved["tests"].values())
    assert saved["modes"]["best_fixed"]["sequence"] in saved["validation_fixed_accuracy"]
    assert (tmp_path / "e_curves.png").is_file()
    curve = r["runs"]["stackelberg_s0"]["curve"]
    assert len(curve) == 4 and all(math.isfinite(m["planner/reward"]) for m in curve)


def test_paired_permutation_clusters_on_problems():
    from benchmarks.efficacy import paired_permutation

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
    import benchmarks.efficacy as eff

    cfg = Config(preset="tiny", seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                 fixed=((8,), (2, 8)))
    first = main(cfg)
    calls = []
    monkeypatch.setattr(eff, "_train", lambda *a: calls.append(a))
    monkeypatch.setattr(eff, "_outcomes", lambda *a, **k: calls.append(a))
    again = main(cfg)  # everything comes from the cache: nothing is trained or evaluated again
    assert calls == [] and again["modes"] == first["modes"]
    with pytest.raises(ValueError, match="different settings"):
        main(Config(preset="tiny", seeds=(0,), eval_limit=5, validation_limit=4, output_dir=str(tmp_path / "runs")))


def test_random_planner_on_fewer_seeds(tmp_path):
    r = main(Config(preset="tiny", seeds=(0, 1), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "runs"),
                    fixed=((8,),), random_seeds=1))
    assert list(r["modes"]["random"]["per_seed"]) == ["0"] and r["modes"]["random"]["n"] == 6
    assert r["modes"]["stackelberg"]["n"] == 12 and 0 <= r["tests"]["stackelberg_vs_random"]["p_value"] <= 1
    with pytest.raises(ValueError, match="random_seeds"):
        Config(random_seeds=-1)


def test_training_variant_reuses_the_base_reasoner_evaluations(tmp_path, monkeypatch):
    import benchmarks.efficacy as eff

    base = Config(preset="tiny", seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "a"),
                  fixed=((8,), (2, 8)))
    first = main(base)
    trained, evaluated = [], []
    real_train, real_outcomes = eff._train, eff._outcomes
    monkeypatch.setattr(eff, "_train", lambda cfg, *a: trained.append(cfg.overrides()) or real_train(cfg, *a))
    monkeypatch.setattr(eff, "_outcomes", lambda mode, *a, **k: evaluated.append(mode) or real_outcomes(mode, *a, **k))
    variant = Config(preset="tiny", seeds=(0,), eval_limit=6, validation_limit=4, output_dir=str(tmp_path / "b"),
                     fixed=((8,), (2, 8)), train_set=("train.grpo.clip_eps_low=0.1",), baselines_from=str(tmp_path / "a"))
    r = main(variant)
    # both learners train again with the override; only the trained agents are evaluated again
    assert trained == [{"train.grpo.clip_eps_low": "0.1"}] * 2
    assert sorted(evaluated) == ["none", "trained"]  # grpo is evaluated in mode "none" with its own reasoner
    for m in ("none", "random", "best_fixed"):
        assert r["modes"][m] == first["modes"][m]
    with pytest.raises(ValueError, match="evaluation settings differ"):
        main(Config(preset="tiny", seeds=(0,), eval_limit=5, validation_limit=4, output_dir=str(tmp_path / "c"),
                    baselines_from=str(tmp_path / "a")))
    with pytest.raises(ValueError, match="KEY=VALUE"):
        Config(train_set=("reasoner.sample_dtype",))


def test_old_cache_without_training_overrides_still_resumes(tmp_path):
    cfg = Config(preset="tiny", seeds=(0,), eval_limit=4, validation_limit=4, output_dir=str(tmp_path), fixed=((8,),))
    cache = __import__("benchmarks.efficacy", fromlist=["Cache"]).Cache(tmp_path / "efficacy_cache.json", cfg)
    assert "train_set" not in cache.data["config"]
