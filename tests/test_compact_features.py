"""tools.compact_features: a study's planner-feature cache stored at half precision, and the committed study scored
from a converted copy of its cache (the committed file itself is never rewritten by a test)."""

from __future__ import annotations

import gzip
import json
import shutil
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
    assert all(new[k].dtype == getattr(torch, dtype) for k in new.features)
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


def _score(tmp_path: Path, features_dir: Path):
    from algos.study.config import resolve
    from algos.study.score import score

    trees = tmp_path / "trees"  # a copy: the committed test tree's ledger records real scorings, not a test's
    if not trees.is_dir():
        trees.mkdir()
        for split in ("train", "val", "test"):
            for suffix in (".tree.json.gz", ".tree.json"):
                shutil.copy(ROOT / "docs/efficacy_results/tree" / f"adaptive_{split}{suffix}", trees)
    cfg = resolve("adaptive", {"out": str(tmp_path / f"study_{features_dir.name}"), "tree_dir": str(trees),
                               "heads_dir": str(ROOT / "docs/training_results/planners/tree_adaptive_40_std"),
                               "features_dir": str(features_dir),
                               "none_episodes": str(ROOT / "docs/training_results/eval_checks/none_test282_replay.episodes.jsonl.gz"),
                               "sc_episodes": str(ROOT / "docs/training_results/tree_sc_test.episodes.jsonl.gz")})
    _, modes = score(cfg)
    return {name: ({s: {p: o.correct for p, o in by.items()} for s, by in r.outcomes.items()},
                   {s: {p: list(pl) for p, pl in plans.items()} for s, plans in (r.plans or {}).items()})
            for name, r in modes.items() if name != "random"}


def test_the_committed_study_scores_the_same_from_a_float16_copy_of_its_features(tmp_path):
    """The committed heads played on a float16 copy of the committed features give every mode's outcome and every
    seed's plan that the committed file gives (tests/test_study_score.py pins those to the committed figures), and the
    plans the powered study recorded."""
    half = tmp_path / "half"
    half.mkdir()
    for f in FEATURES.glob("*.safetensors"):
        compact_features.compact(f, half / f.name, "float16")
    got, committed = _score(tmp_path, half), _score(tmp_path, FEATURES)
    assert got == committed
    recorded = json.loads(gzip.decompress((ROOT / "docs/training_results/tree_learner_adaptive_40_std.json.gz")
                                          .read_bytes()))
    assert {run["seed"]: run["plans"]["test"] for run in recorded["runs"]} == got["trained"][1]
