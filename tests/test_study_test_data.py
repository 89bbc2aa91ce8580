"""A reviewer's own problems scored as an existing study's test split (``--test-data FILE``): the tiny study filled and
trained, then a JSONL of other problems of its tasks filled into its own tree, scored with the study's heads and the
plans chosen on its train + val, and reported with the file and its content hash; its own test tree and scores are
left as they were; a file asking a train or val text, or a task the study lacks, is refused."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from algos import cli
from algos.study import jsonfile, splits
from algos.study.config import resolve

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


def _write(path: Path, items) -> Path:
    path.write_text("".join(json.dumps({"question": p.question, "answer": p.answer, "answer_type": p.answer_type,
                                        "task": splits.task_of(p)}) + "\n" for p in items))
    return path


def _fresh(cfg, per_task: int) -> list:
    """Other problems of the study's tasks: another generator seed, no text of any of its splits."""
    from rsim_env.sources.data import load_problems

    used = {p.question for s in ("train", "val", "test") for p in splits.problems(cfg, s)}
    drawn = [p for p in load_problems(cfg.data, 64, seed=777) if p.question not in used]
    return splits.first_per_task(list({p.question: p for p in drawn}.values()), per_task)


def test_a_reviewers_file_is_scored_as_the_test_split_of_the_trained_study(tmp_path, monkeypatch):
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    out = tmp_path / "study"
    base = ["study", "--preset", "tiny", "--out", str(out), "--threads", "1"]
    cli.main(base)  # the study: fill, train, score, report on its own test split
    own_tree = out / "trees" / "study_test.tree.json.gz"
    own_scores = jsonfile.read(out / "scores" / "test.json.gz")
    before = own_tree.read_bytes()

    cfg = resolve("tiny", {"out": str(out)})
    items = _fresh(cfg, 3)
    assert len(splits.by_task(items)) == 2
    file = _write(tmp_path / "mine.jsonl", items)
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    r = cli.main(base + ["--test-data", str(file)])

    assert not any(run["reused"] is False for run in r["train"]["runs"])  # the study's heads, not new ones
    assert r["fill"]["cost"]["splits"]["test"]["problems"] == len(items)
    report = r["report"]["report"]
    assert report["meta"]["test_data"] == {"file": str(file), "sha256": sha}
    assert str(file) in report["headline"]["sentences"]["headline"] and sha[:16] in report["headline"]["sentences"]["headline"]
    assert report["meta"]["problems"] == len(items)
    md = (out / "report" / "report.md").read_text()
    assert str(file) in md and sha[:16] in md
    scored = jsonfile.read(out / "scores" / f"test_{sha[:12]}.json.gz")
    assert sorted(scored["table"]["outcomes"]) == sorted(f"test/{p}" for p in _ids(file))
    assert set(scored["modes"]) >= {"trained", "best_fixed", "per_task"}
    assert scored["modes"]["best_fixed"]["info"] == own_scores["modes"]["best_fixed"]["info"]  # chosen on train + val
    assert own_tree.read_bytes() == before  # the study's own test tree is not written
    assert jsonfile.read(out / "scores" / "test.json.gz") == own_scores

    # and a file of yet other problems as the replication split of the same study, beside its own test split
    others = [p for p in _fresh(cfg, 6) if p.question not in {q.question for q in items}]
    rep_file = _write(tmp_path / "mine_rep.jsonl", splits.first_per_task(others, 2))
    r = cli.main(base + ["--replicate", "--replication-data", str(rep_file)])
    rep_sha = hashlib.sha256(rep_file.read_bytes()).hexdigest()
    report = r["report"]["report"]
    assert report["meta"]["replication_data"] == {"file": str(rep_file), "sha256": rep_sha}
    assert report["meta"]["test_data"] is None and report["meta"]["problems"] == own_scores_problems(own_scores)
    assert report["replication"]["problems"] == 4 and report["replication"]["coverage"]["replication_short"] == {}
    assert (out / "trees" / f"study_replication_{rep_sha[:12]}.tree.json.gz").is_file()


def own_scores_problems(scores: dict) -> int:
    return len(scores["table"]["outcomes"])


def _ids(file: Path) -> list[str]:
    return [f"{file.stem}/{i}" for i, line in enumerate(file.read_text().splitlines()) if line.strip()]


def test_a_file_asking_a_train_or_val_text_is_refused_naming_the_problems(tmp_path):
    cfg = resolve("tiny", {"out": str(tmp_path / "study")})
    train = splits.problems(cfg, "train")
    file = _write(tmp_path / "leaky.jsonl", _fresh(cfg, 1) + train[:2])
    cfg = resolve("tiny", {"out": str(tmp_path / "study"), "test_data": str(file)})
    with pytest.raises(ValueError, match="2 problem\\(s\\) of the file ask a text of the study's train split") as e:
        splits.problems(cfg, "test")
    assert train[0].id in str(e.value) and train[1].id in str(e.value)


def test_a_replication_file_asking_a_test_text_is_refused(tmp_path):
    cfg = resolve("tiny", {"out": str(tmp_path / "study")})
    file = _write(tmp_path / "rep.jsonl", splits.problems(cfg, "test")[:1])
    cfg = resolve("tiny", {"out": str(tmp_path / "study"), "replication_data": str(file)})
    with pytest.raises(ValueError, match="the study's test split"):
        splits.problems(cfg, "replication")


def test_a_file_with_a_task_the_study_lacks_is_refused(tmp_path):
    from rsim_env.sources.data import load_problems

    file = _write(tmp_path / "other.jsonl", load_problems("rg:gcd", 2, seed=5))
    cfg = resolve("tiny", {"out": str(tmp_path / "study"), "test_data": str(file)})
    with pytest.raises(ValueError, match="are not tasks of the study"):
        splits.problems(cfg, "test")
