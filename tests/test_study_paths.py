"""algos.study.paths: every file of a study folder from one StudyPaths, defaults under --out and each folder setting
honoured (the committed adaptive preset reads its trees and heads from docs/, writes under its out)."""

from __future__ import annotations

from pathlib import Path

from algos.study.config import StudyConfig, resolve
from algos.study.paths import StudyPaths


def test_defaults_are_under_out():
    p = StudyPaths.of(StudyConfig(out="runs/s", name="n"))
    assert (p.trees, p.heads, p.features) == (Path("runs/s/trees"), Path("runs/s/heads"), Path("runs/s/features"))
    assert p.tree("test") == Path("runs/s/trees/n_test.tree.json.gz") and p.info("val") == Path("runs/s/trees/n_val.tree.json")
    assert p.head(3) == Path("runs/s/heads/seed_3") and p.train_summary == Path("runs/s/heads/train.json")
    assert p.split_scores("test") == Path("runs/s/scores/test.json.gz")
    assert p.table_cache("train") == Path("runs/s/scores/tables/train.json.gz") and p.report == Path("runs/s/report")
    assert p.episodes("sc", "test") == (Path("runs/s/episodes/sc_test.jsonl.gz"), False)
    assert p.features_file("hf:org/model#x=1") == Path("runs/s/features/hf_org_model_x_1.safetensors")
    assert p.scored_heads() == p.heads


def test_the_folder_settings_are_honoured(tmp_path):
    cfg = resolve("adaptive")
    p = StudyPaths.of(cfg)
    assert p.tree("test") == Path(cfg.tree_dir) / "adaptive_test.tree.json.gz"
    assert p.head(0) == Path(cfg.heads_dir) / "last_round_s0" and p.report == Path(cfg.out) / "report"
    (tmp_path / "other" / "heads").mkdir(parents=True)
    assert StudyPaths.of(StudyConfig(heads_from=str(tmp_path / "other"))).scored_heads() == tmp_path / "other" / "heads"
    assert StudyPaths.of(StudyConfig(heads_from=str(tmp_path))).scored_heads() == tmp_path  # a folder of run dirs
    assert StudyPaths.of(StudyConfig(features_dir=str(tmp_path))).features_file("tiny") == tmp_path / "tiny.safetensors"
