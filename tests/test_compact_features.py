"""tools.compact_features: a study's planner-feature cache stored at half precision, and the committed study scored
from a converted copy of its cache (the committed file itself is never rewritten by a test)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tools import compact_features

ROOT = Path(__file__).resolve().parent.parent
FEATURES = ROOT / "docs/study_results/adaptive/features"


def _store(path: Path, values) -> None:
    import torch

    from algos.study.features import FeatureStore

    FeatureStore("toy", {f"k{i}": torch.tensor(v, dtype=torch.float32) for i, v in enumerate(values)}).save(path)


@pytest.mark.parametrize("dtype", compact_features.DTYPES)
def test_a_converted_store_keeps_its_keys_and_spec_at_half_the_bytes(tmp_path, dtype):
    import torch

    from algos.study.features import FeatureStore

    values = torch.randn(64, 96, generator=torch.Generator().manual_seed(0)) * 20
    src, out = tmp_path / "f.safetensors", tmp_path / "half.safetensors"
    _store(src, values.tolist())
    r = compact_features.compact(src, out, dtype)
    old, new = FeatureStore.load(src, "toy"), FeatureStore.load(out, "toy")
    assert sorted(new.features) == sorted(old.features) and new.spec == "toy"
    assert new.stored_dtype == dtype and all(new[k].dtype == torch.float32 for k in new.features)  # read as float32
    eps = torch.finfo(getattr(torch, dtype)).eps
    for k in old.features:
        assert torch.allclose(new[k].float(), old[k], rtol=eps, atol=0), k
    assert r["bytes_after"] < 0.55 * r["bytes_before"] and 0 < r["max_change"] <= eps * r["max_value"]


def test_float16_refuses_values_beyond_its_range_and_names_bfloat16(tmp_path):
    src = tmp_path / "f.safetensors"
    _store(src, [[1.0, 7e4]])
    with pytest.raises(ValueError, match="--dtype bfloat16"):
        compact_features.compact(src, tmp_path / "x.safetensors", "float16")
    assert compact_features.compact(src, tmp_path / "x.safetensors", "bfloat16")["contexts"] == 1


def test_the_command_line_converts_in_place_and_names_a_missing_file(tmp_path, capsys):
    src = tmp_path / "f.safetensors"
    _store(src, [[0.5, -2.0], [3.0, 4.0]])
    before = src.stat().st_size
    assert compact_features.main([str(src)]) == 0
    assert src.stat().st_size < before and "2 contexts as float16" in capsys.readouterr().out
    assert compact_features.main([str(tmp_path / "none.safetensors")]) == 1
    assert "no feature file" in capsys.readouterr().err


def _no_grade(problem, steps, check=None):
    """A grade that runs nothing: a head's plan is read from the tree and the features, never from a grade."""
    from rsim_env.kinds import Grade

    return Grade(False, None, None, "not graded")


def _trained_plans(features_dir: Path, monkeypatch) -> dict[int, dict[str, list[int]]]:
    """Every committed head's greedy plan on every problem of the committed test tree, on the features in
    ``features_dir`` (the path ``rsim study --stage score`` plays the ``trained`` mode by)."""
    from algos.study.config import resolve
    from algos.study.heads import HeadPlanner, greedy_plans, load_head
    from algos.study.features import feature_store
    from algos.study.score import heads
    from algos.study.tables import Groups, game_env, tree_problems
    from rsim_env.kinds.code import CODE

    monkeypatch.setattr(CODE, "prefetch", lambda problem, final: None)  # no sandbox run: nothing is graded
    cfg = resolve("adaptive", {"tree_dir": str(ROOT / "docs/study_results/adaptive/trees"), "features_dir": str(features_dir),
                               "heads_dir": str(ROOT / "docs/training_results/planners/tree_adaptive_40_std")})
    tree, items = tree_problems(cfg, "test")
    groups = Groups(game_env(tree), _no_grade)
    plans = {}
    for h in heads(cfg):
        planner = HeadPlanner(*load_head(h), feature_store(cfg, h.spec, tree, items))
        plans[h.seed] = {p: list(pl) for p, pl in greedy_plans(planner, tree, items, groups.env, groups).items()}
    return plans


def test_the_committed_heads_play_the_same_plans_on_a_float16_copy_of_the_features(tmp_path, monkeypatch):
    """Every committed head plays, from a float16 copy of the committed features, the plan the powered study recorded
    on every test problem (tests/test_study_score.py checks that the committed file gives those plans and the
    committed figures; the trained figures are read from the tree by these plans, so the same plans give the same
    figures). The file itself is converted by ``python -m tools.compact_features``, never by a test."""
    half = tmp_path / "half"
    half.mkdir()
    for f in FEATURES.glob("*.safetensors"):
        compact_features.compact(f, half / f.name, "float16")
    got = _trained_plans(half, monkeypatch)
    recorded = json.loads(gzip.decompress((ROOT / "docs/training_results/tree_learner_adaptive_40_std.json.gz")
                                          .read_bytes()))
    assert sorted(got) == sorted(run["seed"] for run in recorded["runs"]) and len(got) == 6
    for run in recorded["runs"]:
        assert len(run["plans"]["test"]) == 282 and got[run["seed"]] == run["plans"]["test"], run["seed"]


def test_a_half_precision_store_reads_as_float32_and_saves_in_its_own_precision(tmp_path):
    """A float16 store is upcast when read (training and scoring see float32) and stays float16 when saved again
    with more features, so adding features never silently doubles the committed cache."""
    import torch
    from safetensors import safe_open

    from algos.study.features import FeatureStore

    path = tmp_path / "f.safetensors"
    FeatureStore("tiny", {"a": torch.tensor([1.0, 2.5])}, stored_dtype="float16").save(path)
    store = FeatureStore.load(path, "tiny")
    assert store.stored_dtype == "float16" and store["a"].dtype == torch.float32
    store.features["b"] = torch.tensor([0.1, 3.0])
    store.save(path)
    with safe_open(str(path), "pt") as f:
        assert f.get_tensor("features").dtype == torch.float16
    assert FeatureStore.load(path, "tiny")["b"].dtype == torch.float32
    FeatureStore("tiny", {"a": torch.tensor([1.0])}).save(path)
    assert FeatureStore.load(path, "tiny").stored_dtype == "float32"
