"""rsim study: its grammar (--help, --print-config, presets, --set, --stage), its config's checks, the ledger's
semantics (one entry per distinct configuration, beside the test tree), and the stage order with stand-in stages."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from algos import cli
from algos.study import cli as study_cli
from algos.study import ledger
from algos.study.config import PRESETS, StudyConfig, resolve
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
    assert printed["tree_dir"] == "docs/efficacy_results/tree" and printed["max_step_tokens"] == 48
    assert printed["head_name"] == "last_round_s{seed}" and printed["learner"]["steps"] == 200


def test_the_adaptive_preset_points_at_committed_trees_and_heads():
    cfg = resolve("adaptive")
    for split in ("train", "val", "test"):
        assert (ROOT / cfg.tree_dir / f"adaptive_{split}.tree.json.gz").is_file()
    from algos.study.config import head_dir

    assert all((ROOT / head_dir(cfg, s)).is_dir() for s in range(cfg.learner.seeds))
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
    assert cli.main.__module__ == "algos.cli" and sorted(PRESETS) == ["adaptive", "tiny"]


def test_a_stage_that_is_not_installed_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "algos.study.train", None)
    with pytest.raises(RuntimeError, match="train stage is not available"):
        study_cli._stage("train")


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


def test_ledger_counts_distinct_configurations_beside_the_test_tree(tmp_path):
    cfg = StudyConfig(out=str(tmp_path / "study"))
    tree = _tree(tmp_path / "study" / "trees" / "study_test.tree.json.gz", {"a": "k1", "b": "k2"})
    fp = ledger.tree_fingerprint(tree)
    h1 = ledger.config_hash({"seeds": 6, "lr": 1e-3}, fp)
    assert h1 == ledger.config_hash({"lr": 1e-3, "seeds": 6}, fp)  # canonical: key order does not matter
    assert ledger.record(cfg, h1, scored="first") == 1
    assert ledger.record(cfg, h1, scored="again") == 1  # identical configuration: reused, no new entry
    h2 = ledger.config_hash({"seeds": 6, "lr": 3e-4}, fp)
    assert ledger.record(cfg, h2) == 2
    path = ledger.ledger_path(cfg)
    assert path.parent == tree.parent and len(path.read_text().splitlines()) == 2
    assert [r["scored"] for r in ledger.entries(cfg)] == ["first", ""] and ledger.count(cfg) == 2
    assert ledger.count(cfg, "replication") == 0  # each tree has its own ledger


def test_tree_fingerprint_follows_content_not_bytes(tmp_path):
    a = ledger.tree_fingerprint(_tree(tmp_path / "a.json.gz", {"a": "k1", "b": "k2"}))
    b = ledger.tree_fingerprint(_tree(tmp_path / "b.json.gz", {"b": "k2", "a": "k1"}))
    c = ledger.tree_fingerprint(_tree(tmp_path / "c.json.gz", {"a": "k1", "b": "k2", "c": "k3"}))
    assert a == b != c
    assert ledger.config_hash({}, a) != ledger.config_hash({}, c)


def test_a_broken_ledger_line_raises(tmp_path):
    path = tmp_path / "l.jsonl"
    path.write_text('{"hash": "abababababababab"}\nnot json\n')
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        ledger.count(path)
    with pytest.raises(ValueError, match="configuration hash"):
        ledger.record(tmp_path / "m.jsonl", "short")


def test_scoring_hash_changes_with_the_heads(tmp_path):
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


# ----------------------------------------------------------------------------------------------- stages


def _fakes(monkeypatch, calls):
    table = Table("test", {"p1": "t", "p2": "t"}, {p: {(8,): Outcome(True, 1.5, 10), (3, 8): Outcome(False, 0.5, 20)}
                                                   for p in ("p1", "p2")})
    modes = {"trained": ModeResult("trained", {0: {p: Outcome(True, 1.5, 10) for p in ("p1", "p2")}})}

    def score(cfg, split="test"):
        calls.append(("score", split))
        return Table(split, table.tasks, table.outcomes), modes

    def build(test, modes, *, ledger_count, replication, meta):
        calls.append(("build", ledger_count, replication is not None))
        return {"headline": {"n": ledger_count}, "meta": meta}

    def write(report, folder):
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / "report.json").write_text(json.dumps(report))
        return [Path(folder) / "report.json"]

    fakes = {"train": types.SimpleNamespace(train=lambda cfg: calls.append(("train",)) or {"seeds": 1}),
             "score": types.SimpleNamespace(score=score), "report": types.SimpleNamespace(build=build, write=write)}
    for name, module in fakes.items():
        monkeypatch.setitem(sys.modules, f"algos.study.{name}", module)
    monkeypatch.setattr("algos.study.fill.run", lambda cfg: calls.append(("fill",)) or {"decoded": 0})


def test_stages_run_in_order_and_the_report_gets_the_ledger_count(tmp_path, monkeypatch):
    out = tmp_path / "study"
    _tree(out / "trees" / "study_test.tree.json.gz", {"p1": "a", "p2": "b"})
    calls: list = []
    _fakes(monkeypatch, calls)
    r = cli.main(["study", "--out", str(out), "--threads", "1"])
    assert [c[0] for c in calls] == ["fill", "train", "score", "build"]
    assert calls[-1] == ("build", 1, False) and r["report"]["ledger_count"] == 1
    assert json.loads((out / "report" / "report.json").read_text())["meta"]["test_tree"].endswith("study_test.tree.json.gz")
    calls.clear()
    cli.main(["study", "--out", str(out), "--stage", "report", "--threads", "1"])  # the same configuration again: no new entry
    assert calls == [("score", "test"), ("build", 1, False)]
    cli.main(["study", "--out", str(out), "--stage", "report", "--seeds", "3", "--threads", "1"])  # another configuration: counted
    assert calls[-1] == ("build", 2, False) and ledger.count(StudyConfig(out=str(out))) == 2


def test_every_look_at_the_replication_tree_is_counted(tmp_path, monkeypatch):
    """Another configuration (or another draw) on the replication split is allowed: it is another look, counted."""
    out = tmp_path / "study"
    for split in ("test", "replication"):
        _tree(out / "trees" / f"study_{split}.tree.json.gz", {"p1": "a", "p2": "b"})
    calls: list = []
    _fakes(monkeypatch, calls)
    cli.main(["study", "--out", str(out), "--stage", "report", "--replicate", "--threads", "1"])
    assert ("score", "replication") in calls and calls[-1] == ("build", 1, True)
    cli.main(["study", "--out", str(out), "--stage", "report", "--replicate", "--threads", "1"])  # the same scoring: reused
    assert ledger.count(StudyConfig(out=str(out)), "replication") == 1
    cli.main(["study", "--out", str(out), "--stage", "report", "--replicate", "--seeds", "2", "--threads", "1"])
    assert ledger.count(StudyConfig(out=str(out)), "replication") == 2


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
        "headline": {"sentences": {k: f"{k} {kw['ledger_count']}" for k in keys}}})
    monkeypatch.chdir(tmp_path)
    begin, end = docs_block.markers("study")
    for page in docs_block.PAGES:
        Path(page).parent.mkdir(parents=True, exist_ok=True)
        Path(page).write_text(f"# page\n{begin}\nold answer\n{end}\nrest\n")
    r = cli.main(["study", "--out", str(out), "--stage", "report", "--docs", "--threads", "1"])
    assert sorted(r["docs"]) == sorted(docs_block.PAGES)
    text = Path(docs_block.PAGES[0]).read_text()
    assert "old answer" not in text and "**headline 1**" in text and text.endswith(f"{end}\nrest\n")
    with pytest.raises(ValueError, match="--docs"):
        study_cli.parse(["--stage", "fill", "--docs"])


def test_the_committed_test_tree_ledger_counts_its_earlier_scorings():
    """The adaptive test tree was scored before rsim study existed (12-a-task heads, standardised and raw; the
    Stackelberg arm): those looks are in its ledger, so the report's count starts from them."""
    cfg = resolve("adaptive")
    rows = ledger.entries(ROOT / ledger.ledger_path(cfg))
    assert len({r["hash"] for r in rows}) >= 3 and all(r.get("scored") and r.get("time") for r in rows)


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
    assert again["report"]["ledger_count"] == 1 and ledger.count(resolve("tiny", {"out": str(tmp_path / "study")})) == 1
