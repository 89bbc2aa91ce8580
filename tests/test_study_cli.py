"""rsim study: its grammar (--help, --print-config, presets, --set, --stage), its config's checks, what its scoring
hash covers, and the stage order with stand-in stages (the report stage only reads; the score stage records looks).
The ledger itself: tests/test_study_ledger.py."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from algos import cli
from algos.study import cli as study_cli
from algos.study import jsonfile, ledger
from algos.study.config import PRESETS, StudyConfig, resolve
from algos.study.paths import StudyPaths
from algos.study.types import ModeResult, Outcome, Table

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


def test_help_lists_the_stages_and_every_flag(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["study", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for text in ("rsim study", "--stage", "--reasoner", "--data", "--replicate", "--set", "--preset", "openai:MODEL@URL"):
        assert text in out, text


def test_rsim_lists_study(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "study" in capsys.readouterr().out


def test_print_config_resolves_preset_flags_and_set(capsys):
    out = cli.main(["study", "--preset", "adaptive", "--seeds", "2", "--set", "learner.lr=3e-4", "--stage", "report",
                    "--print-config"])
    printed = json.loads(capsys.readouterr().out)
    assert printed == out["config"]
    assert printed["learner"]["seeds"] == 2 and printed["learner"]["lr"] == 3e-4 and printed["stage"] == "report"
    assert printed["tree_dir"] == "docs/study_results/adaptive/trees" and printed["max_step_tokens"] == 48
    assert printed["head_name"] == "last_round_s{seed}" and printed["learner"]["steps"] == 200


def test_the_adaptive_preset_points_at_committed_trees_and_heads():
    cfg = resolve("adaptive")
    for split in ("train", "val", "test"):
        assert (ROOT / cfg.tree_dir / f"adaptive_{split}.tree.json.gz").is_file()
    from algos.study.paths import StudyPaths

    assert all((ROOT / StudyPaths.of(cfg).head(s)).is_dir() for s in range(cfg.learner.seeds))
    assert (cfg.train_per_task, cfg.val_per_task, cfg.test_per_task, cfg.rounds) == (40, 20, 10, 2)


@pytest.mark.parametrize("overrides, match", [
    ({"stage": "decode"}, "stage"),
    ({"rounds": 0}, "rounds"),
    ({"test_per_task": 0}, "test_per_task"),
    ({"learner.group_size": 1}, "group_size"),
    ({"learner.lr": 5.0}, "lr"),
    ({"learner.variant": "default"}, "variant"),
    ({"fill_splits": "train,dev"}, "fill_splits"),
    ({"head_name": "head"}, "head_name"),
    ({"reasoner": "tree:x.json.gz"}, "reasoner"),
    ({"replication_seed": 0}, "replication_seed"),
    ({"name": "a/b"}, "name"),
], ids=lambda x: str(x)[:24])
def test_config_refuses_bad_values_naming_the_field(overrides, match):
    with pytest.raises(ValueError, match=match):
        resolve(None, overrides)


def test_bad_command_lines_are_one_line_errors():
    with pytest.raises(ValueError, match="unknown study preset|invalid choice"):
        study_cli.parse(["--preset", "nope"])
    with pytest.raises(ValueError, match="learner.foo"):
        study_cli.parse(["--set", "learner.foo=1"])
    assert cli.main.__module__ == "algos.cli" and sorted(PRESETS) == ["adaptive", "arms", "tiny"]


def test_the_wheel_ships_the_command():
    import tomllib

    from setuptools import find_namespace_packages

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    shipped = find_namespace_packages(where=str(ROOT), include=tool["packages"]["find"]["include"])
    assert "algos.study" in shipped


# ----------------------------------------------------------------------------------------------- ledger


def _tree(path: Path, problems: dict[str, str]) -> Path:
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"format": 1, "meta": {"root": "r", "env": {"max_steps": 2}}, "problems": problems, "nodes": [],
                   "steps": {}}, f)
    return path


def test_tree_fingerprint_follows_content_not_bytes(tmp_path):
    a = ledger.tree_fingerprint(_tree(tmp_path / "a.json.gz", {"a": "k1", "b": "k2"}))
    b = ledger.tree_fingerprint(_tree(tmp_path / "b.json.gz", {"b": "k2", "a": "k1"}))
    c = ledger.tree_fingerprint(_tree(tmp_path / "c.json.gz", {"a": "k1", "b": "k2", "c": "k3"}))
    assert a == b != c
    assert ledger.config_hash({}, a) != ledger.config_hash({}, c)


def test_scoring_hash_changes_with_the_heads_features_and_episodes(tmp_path):
    cfg = StudyConfig(out=str(tmp_path / "s"))
    _tree(tmp_path / "s" / "trees" / "study_test.tree.json.gz", {"a": "k"})
    before, settings = ledger.scoring_hash(cfg)
    head = tmp_path / "s" / "heads" / "seed_0" / "model.safetensors"
    head.parent.mkdir(parents=True)
    head.write_bytes(b"weights")
    after, _ = ledger.scoring_hash(cfg)
    assert before != after and settings["learner"]["seeds"] == 6 and "out" not in settings
    (head.parent / "state.json").write_text("{}")  # a log or state beside the weights is not another configuration
    (tmp_path / "s" / "heads" / "train.json").write_text("{}")
    assert ledger.scoring_hash(cfg)[0] == after
    assert ledger.scoring_hash(cfg, extra={"features": "other"})[0] != after  # other features: another look
    none = tmp_path / "s" / "episodes" / "none_test.jsonl.gz"
    none.parent.mkdir(parents=True)
    none.write_bytes(b"episodes")
    assert ledger.scoring_hash(cfg)[0] != after  # other episodes read: another look


# ----------------------------------------------------------------------------------------------- stages


def _fakes(monkeypatch, calls):
    """Stand-in stages: ``score`` keeps a scoring and records its look as the real one does; ``build`` notes the
    ledger's m (the looks Holm corrects over)."""
    table = Table("test", {"p1": "t", "p2": "t"}, {p: {(8,): Outcome(True, 1.5, 10), (3, 8): Outcome(False, 0.5, 20)}
                                                   for p in ("p1", "p2")})
    modes = {"trained": ModeResult("trained", {0: {p: Outcome(True, 1.5, 10) for p in ("p1", "p2")}})}

    def tree_problems(cfg, split):
        return None, [types.SimpleNamespace(id=p, question=f"{split} question {p}") for p in ("p1", "p2")]

    def scores_path(cfg, split):
        return StudyPaths.of(cfg).split_scores(split)

    def features_digest(cfg, split, ensure=False):
        return "features"

    def score(cfg, split="test"):
        calls.append(("score", split))
        h, settings = ledger.scoring_hash(cfg, split, {"features": "features"})
        questions = [p.question for p in tree_problems(cfg, split)[1]]
        path = scores_path(cfg, split)
        jsonfile.write(path, {"hash": h, "test_set": ledger.test_set_key(questions), "p_value": 0.25})
        line = ledger.look(h, command="rsim study", scored="fake", p_value=0.25, problems=2, settings=settings)
        ledger.record_scoring(questions, line, own=ledger.study_folders(cfg), create_in=StudyPaths.of(cfg).trees)
        return Table(split, table.tasks, table.outcomes), modes

    def read_scores(path, hash_=None):
        data = jsonfile.read(path)
        return (table, modes) if hash_ in (None, data["hash"]) else None

    def build(test, modes, *, ledger, replication, meta, **kw):
        calls.append(("build", ledger["m"], replication is not None))
        return {"headline": {"m": ledger["m"], "p_holm": ledger["p_holm"]}, "meta": meta}

    def write(report, folder):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "report.json").write_text(json.dumps(report))
        return [Path(folder) / "report.json"]

    monkeypatch.setattr("algos.study.train.train", lambda cfg: calls.append(("train",)) or {"seeds": 1})
    monkeypatch.setattr("algos.study.score.score", score)
    monkeypatch.setattr("algos.study.score.features_digest", features_digest)
    monkeypatch.setattr("algos.study.score.read_scores", read_scores)
    monkeypatch.setattr("algos.study.tables.tree_problems", tree_problems)
    monkeypatch.setattr("algos.study.report.build", build)
    monkeypatch.setattr("algos.study.report.write", write)
    monkeypatch.setattr("algos.study.fill.run", lambda cfg: calls.append(("fill",)) or {"decoded": 0})


def test_stages_run_in_order_and_the_report_only_reads(tmp_path, monkeypatch):
    out = tmp_path / "study"
    _tree(out / "trees" / "study_test.tree.json.gz", {"p1": "a", "p2": "b"})
    calls: list = []
    _fakes(monkeypatch, calls)
    r = cli.main(["study", "--out", str(out), "--threads", "1"])
    assert [c[0] for c in calls] == ["fill", "train", "score", "build"]
    assert calls[-1] == ("build", 1, False) and r["report"]["ledger_count"] == 1
    assert json.loads((out / "report" / "report.json").read_text())["meta"]["test_tree"].endswith("study_test.tree.json.gz")
    calls.clear()
    cli.main(["study", "--out", str(out), "--stage", "report", "--threads", "1"])  # reads the scores: scores nothing
    assert calls == [("build", 1, False)]
    with pytest.raises(ValueError, match="stale; run rsim study --stage score"):  # another configuration: refused
        cli.main(["study", "--out", str(out), "--stage", "report", "--seeds", "3", "--threads", "1"])
    cli.main(["study", "--out", str(out), "--stage", "score", "--seeds", "3", "--threads", "1"])  # another look
    calls.clear()
    cli.main(["study", "--out", str(out), "--stage", "report", "--seeds", "3", "--threads", "1"])
    assert calls == [("build", 2, False)]
    with pytest.raises(ValueError, match="no test scores"):
        cli.main(["study", "--out", str(tmp_path / "empty"), "--stage", "report", "--threads", "1"])


def test_every_look_at_the_replication_tree_is_counted(tmp_path, monkeypatch):
    """Another configuration (or another draw) on the replication split is allowed: it is another look, counted."""
    out = tmp_path / "study"
    for split in ("test", "replication"):
        _tree(out / "trees" / f"study_{split}.tree.json.gz", {"p1": "a", "p2": "b"})
    calls: list = []
    _fakes(monkeypatch, calls)
    cli.main(["study", "--out", str(out), "--stage", "score", "--replicate", "--threads", "1"])
    assert ("score", "replication") in calls
    cli.main(["study", "--out", str(out), "--stage", "report", "--replicate", "--threads", "1"])
    assert calls[-1] == ("build", 1, True)

    def looks():
        questions = [f"replication question {p}" for p in ("p1", "p2")]
        return len(ledger.family(ledger.find(ledger.test_set_key(questions), ledger.study_folders(cfg))))

    cfg = StudyConfig(out=str(out))
    cli.main(["study", "--out", str(out), "--stage", "score", "--replicate", "--threads", "1"])  # the same scoring
    assert looks() == 1
    cli.main(["study", "--out", str(out), "--stage", "score", "--replicate", "--seeds", "2", "--threads", "1"])
    assert looks() == 2  # another configuration: allowed, and counted


def test_replicate_without_a_replication_tree_says_how_to_fill_it(tmp_path, monkeypatch):
    out = tmp_path / "study"
    _tree(out / "trees" / "study_test.tree.json.gz", {"p1": "a"})
    _fakes(monkeypatch, [])
    with pytest.raises(ValueError, match="--fill-splits replication"):
        cli.main(["study", "--out", str(out), "--stage", "score", "--replicate", "--threads", "1"])


def test_docs_rewrites_the_study_block_from_the_report(tmp_path, monkeypatch):
    from algos.study import docs_block

    out = tmp_path / "study"
    _tree(out / "trees" / "study_test.tree.json.gz", {"p1": "a"})
    calls: list = []
    _fakes(monkeypatch, calls)
    keys = ("headline", "seeds", "ceiling", "concentration", "within_task", "replication", "ledger")
    monkeypatch.setattr(sys.modules["algos.study.report"], "build", lambda test, modes, **kw: {
        "headline": {"sentences": {k: f"{k} {kw['ledger']['m']}" for k in keys}}})
    monkeypatch.chdir(tmp_path)
    begin, end = docs_block.markers("study")
    for page in docs_block.PAGES:
        Path(page).parent.mkdir(parents=True, exist_ok=True)
        Path(page).write_text(f"# page\n{begin}\nold answer\n{end}\nrest\n")
    cli.main(["study", "--out", str(out), "--stage", "score", "--threads", "1"])
    r = cli.main(["study", "--out", str(out), "--stage", "report", "--docs", "--threads", "1"])
    assert sorted(r["docs"]) == sorted(docs_block.PAGES)
    text = Path(docs_block.PAGES[0]).read_text()
    assert "old answer" not in text and "**headline 1**" in text and text.endswith(f"{end}\nrest\n")
    with pytest.raises(ValueError, match="--docs"):
        study_cli.parse(["--stage", "fill", "--docs"])


def test_a_preset_writes_under_runs_and_only_docs_writes_its_committed_folder():
    assert resolve("adaptive").out.startswith("runs/")
    assert study_cli.parse(["--preset", "adaptive"])[0].out.startswith("runs/")
    assert study_cli.parse(["--preset", "adaptive", "--stage", "report", "--docs"])[0].out == "docs/study_results/adaptive"
    assert study_cli.parse(["--preset", "adaptive", "--docs", "--out", "runs/x"])[0].out == "runs/x"


def test_stage_fill_fills_the_replication_tree_with_replicate(tmp_path, monkeypatch):
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    out = tmp_path / "study"
    r = cli.main(["study", "--preset", "tiny", "--out", str(out), "--stage", "fill", "--fill-splits", "test",
                  "--replicate"])
    assert sorted(r["fill"]["cost"]["splits"]) == ["replication", "test"] and r["fill"]["decoded"] == 2 * 4 * 17
    assert sorted(p.name for p in (out / "trees").glob("*.gz")) == ["study_replication.tree.json.gz",
                                                                     "study_test.tree.json.gz"]
    assert "train" not in r and "report" not in r  # one stage only


def test_the_tiny_study_runs_end_to_end_and_a_rerun_does_nothing_again(tmp_path, monkeypatch):
    """fill -> train -> score -> report on tiny models; the same command again decodes nothing, trains nothing and
    adds no ledger entry (every stage resumes from what is there)."""
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    argv = ["study", "--preset", "tiny", "--out", str(tmp_path / "study"), "--threads", "1"]
    first = cli.main(argv)
    assert first["fill"]["decoded"] == (6 + 4 + 4) * 17 and first["report"]["ledger_count"] == 1
    assert not any(r["reused"] for r in first["train"]["runs"])
    report = json.loads((tmp_path / "study" / "report" / "report.json").read_text())
    assert report["meta"]["problems"] == 4 and report["ledger"]["configurations_scored"] == 1
    again = cli.main(argv)
    assert again["fill"]["decoded"] == 0 and all(r["reused"] for r in again["train"]["runs"])
    assert again["report"]["ledger_count"] == 1 and len(ledger.family(ledger.read(report["ledger"]["path"]))) == 1
