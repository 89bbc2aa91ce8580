"""studies.adaptive_tree and studies.tree_learner on the tiny models: the fill grows a balanced tree an increment at
a time (17 steps a problem in the 9-plan game), a rerun decodes nothing, and the learner study reads the trees."""

import json

import pytest

from studies import adaptive_tree, tree_baselines, tree_learner


def _fill(tmp_path, split, per_task=2):
    return adaptive_tree.main(adaptive_tree.Config(
        split=split, per_task=per_task, increment=1, reasoner="tiny", planner="tiny", tasks=2, max_step_tokens=4,
        max_answer_tokens=6, out_dir=str(tmp_path / "tree")))


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adaptive_tree")
    mp = pytest.MonkeyPatch()
    mp.setenv("RSIM_REPLAY_DIR", str(tmp / "replay"))
    try:
        infos = {s: _fill(tmp, s) for s in ("train", "val")}
        again = _fill(tmp, "train")
    finally:
        mp.undo()
    return tmp, infos, again


def test_fill_grows_a_balanced_tree_and_resumes(trees):
    tmp, infos, again = trees
    for split, info in infos.items():
        assert info["problems"] == 4 and info["steps"] == 4 * 17, info  # [8] and 8 x [s, 8]: 1 + 8 * 2 steps
        assert [r["per_task"] for r in info["increments"]] == [1, 2] and info["config"]["split"] == split
        assert all(r["replay"]["catchup_mismatch"] == 0 for r in info["increments"])
        assert info["meta"]["env"]["terminate_last_round"] is True and info["meta"]["env"]["max_steps"] == 2
    assert again["steps"] == 4 * 17 and len(again["increments"]) == 2  # nothing new was decoded
    on_disk = json.loads((tmp / "tree" / "adaptive_train.tree.json").read_text())
    assert on_disk["per_task"] == 2 and on_disk["config"]["split"] == "train"


def test_config_refuses_bad_values():
    with pytest.raises(ValueError, match="split"):
        adaptive_tree.Config(split="dev")
    with pytest.raises(ValueError, match="increment"):
        adaptive_tree.Config(increment=0)
    with pytest.raises(ValueError, match="9-plan tree"):
        tree_learner.Config(variants="default")


def test_learner_study_reads_the_trees_and_reports_the_gap(trees):
    tmp, _, _ = trees
    r = tree_learner.main(tree_learner.Config(
        tree_dir=str(tmp / "tree"), tasks=2, planner="tiny", variants="last_round", seeds=1, steps=2,
        groups_per_step=2, group_size=4, eval_every=1, output_dir=str(tmp / "runs"), planners_dir=str(tmp / "kept"),
        out=str(tmp / "kept.json")))
    assert r["tables"]["train"]["problems"] == 4 and r["tables"]["test"]["problems"] == 4
    assert r["features"]["contexts"] > 0
    run = r["runs"][0]
    assert len(run["curve"]) == 2 and run["gap"]["train"]["trained"]["reward"] is not None
    best = r["tables"]["train"]["per_task_best"]["reward"]
    assert best >= r["tables"]["train"]["best_single"]["reward"]
    per_task = r["tables"]["train"]["per_task_best"]["plans"]
    assert set(per_task) == {"base_conversion", "basic_arithmetic"}, per_task  # tasks read from the adaptive ids
    plans = run["plans"]["train"]
    assert len(plans) == 4 and all(len(p) in (1, 2) and p[-1] == 8 for p in plans.values())
    reading = r["reading"]["last_round_s0/train"]
    assert len(reading) == sum(tuple(p) != tree_learner.REFERENCE for p in plans.values())
    for x in reading:
        assert x["trained"]["plan"] == plans[x["problem_id"]] and x["reference"]["plan"] == [3, 8]
        assert len(x["reference"]["steps"]) == 2 and x["task"] in per_task
    # the plan baselines on the held-out tree: the trained planner's own numbers, and the same from the JSON alone
    b = r["baselines"]["last_round"]
    assert b["modes"]["trained"]["reward"] == pytest.approx(run["gap"]["test"]["trained"]["reward"])
    assert b["modes"]["best_fixed_exhaustive"]["reward"] == pytest.approx(r["tables"]["test"]["best_single"]["reward"])
    assert b["modes"]["per_task"]["reward"] == pytest.approx(r["tables"]["test"]["per_task_best"]["reward"])
    assert b["episodes"] == 2 * 2 * 4 and b["select"] == ["train"]
    again = tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json")))
    assert json.loads(json.dumps(again)) == json.loads(json.dumps(r["baselines"]))


def test_learner_study_without_a_held_out_tree_reports_the_optimisation_gap_alone(trees):
    tmp, _, _ = trees
    r = tree_learner.main(tree_learner.Config(
        tree_dir=str(tmp / "tree"), test_split="", tasks=2, planner="tiny", variants="both", seeds=1, steps=1,
        groups_per_step=2, group_size=4, eval_every=1, output_dir=str(tmp / "runs_train_only")))
    assert set(r["tables"]) == {"train"} and set(r["runs"][0]["gap"]) == {"train"}
    assert "test_reward" not in r["summary"]["both"] and r["summary"]["both"]["train_reward"] is not None


def test_docs_copy_the_committed_tree_learner_results():
    """docs/training.md's tree-learner table is generated from the committed JSON files."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    files = sorted((root / "docs" / "training_results").glob("tree_learner_adaptive*.json"))
    results = [json.loads(f.read_text()) for f in files]
    assert results and all(r["tables"]["train"]["problems"] >= 60 for r in results)
    for r in results:
        for run in r["runs"]:
            g = run["gap"]["train"]
            assert g["trained"]["reward"] <= g["per_task_best"]["reward"] + 1e-9
    doc = (root / "docs" / "training.md").read_text()
    block = re.search(r"<!-- tree learner: python -m studies\.tree_learner -->\n(.*?)\n<!-- /tree learner -->", doc, re.S)
    assert block and block.group(1) == tree_learner.docs_table(results), "docs/training.md: the tree-learner table is stale"


def test_the_kept_planner_is_a_run_dir_that_evaluates(trees):
    """planners_dir keeps each seed's trained head as a small run dir; rsim eval loads it on the frozen base and
    plays it on problems of another split, and its head is the trained one."""
    from safetensors.torch import load_file

    from algos.cli import main as cli_main
    from algos.config import DataConfig
    from algos.evaluation import EvalConfig
    from algos.evaluation.run import load_planner

    tmp, _, _ = trees
    kept = tmp / "kept" / "last_round_s0"
    if not kept.exists():  # this test alone (the study test keeps it)
        tree_learner.main(tree_learner.Config(
            tree_dir=str(tmp / "tree"), tasks=2, planner="tiny", variants="last_round", seeds=1, steps=2,
            groups_per_step=2, group_size=4, eval_every=1, output_dir=str(tmp / "runs"), planners_dir=str(tmp / "kept"),
            out=str(tmp / "kept.json")))
    (ckpt,) = (kept / "checkpoints").iterdir()
    files = {f.name for f in ckpt.iterdir()}
    assert files == {"config.json", "state.json", "model.planner.safetensors"}, files  # no optimizer state
    assert sum(f.stat().st_size for f in ckpt.iterdir()) < 200_000
    config = json.loads((ckpt / "config.json").read_text())
    assert config["planner"]["head_only"] is True and config["env"]["terminate_last_round"] is True
    planner = load_planner(str(kept), EvalConfig(data=DataConfig(source="tiny", size=1))).agent
    saved = load_file(str(ckpt / "model.planner.safetensors"))
    assert planner.config.head_only and (planner.head.weight == saved["weight"]).all()
    # the head standardises by the training tree's features (Config.standardize), and the checkpoint carries them
    assert (planner.head.feature_mean == saved["feature_mean"]).all() and saved["feature_mean"].abs().sum() > 0
    assert (planner.head.feature_scale == saved["feature_scale"]).all() and not (saved["feature_scale"] == 1).all()
    run = next(x for x in json.loads((tmp / "kept.json").read_text())["runs"] if x["variant"] == "last_round")
    argv = run["planner"]["eval"].split()
    assert argv[:2] == ["rsim", "eval"] and argv[argv.index("--planner") + 1] == str(kept)
    # replayed: live llama.cpp steps depend on the batch, so only a replayed reasoner pairs the modes exactly
    assert argv[argv.index("--reasoner") + 1] == "replay:llamacpp:default"
    argv[argv.index("--reasoner") + 1] = "tiny"  # the committed command, on the tiny reasoner and two problems
    argv[argv.index("--out") + 1] = str(tmp / "eval_kept")
    r = cli_main(argv[1:] + ["--limit", "2", "--no-progress", "--no-plots"])
    assert {m: r["modes"][m]["problems"] for m in r["modes"]} == {"trained": 2, "fixed:3,8": 2}
    env = r["config"]["env"]
    assert env["terminate_last_round"] is True and env["max_steps"] == 2  # the game, from the run


def test_kept_planners_replay_their_held_out_plans_and_play_another_tree(trees):
    """tree_baselines --planners loads the kept heads and plays them greedily on a tree: on the study's held-out
    tree it reproduces the plans (and so every figure) the study recorded; it plays the training tree too."""
    tmp, _, _ = trees
    if not (tmp / "kept.json").exists():  # this test alone
        test_the_kept_planner_is_a_run_dir_that_evaluates(trees)
    result = json.loads((tmp / "kept.json").read_text())
    played = tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json"), planners=str(tmp / "kept")))
    recorded = tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json")))
    assert played["last_round"]["modes"] == recorded["last_round"]["modes"]
    assert played["last_round"]["planners"] == str(tmp / "kept") and played["last_round"]["heldout"] == "val"
    out = tmp / "kept_train.json"
    on_train = tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json"), planners=str(tmp / "kept"),
                                                         heldout="train", out=str(out)))
    run = result["runs"][0]
    assert on_train["last_round"]["modes"]["trained"]["reward"] == pytest.approx(run["gap"]["train"]["trained"]["reward"])
    assert "baselines_train" in json.loads(out.read_text())
    with pytest.raises(ValueError, match="give --planners"):
        tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json"), heldout="train"))
    with pytest.raises(ValueError, match="no <variant>_s<seed> planner dirs"):
        tree_baselines.main(tree_baselines.Config(result=str(tmp / "kept.json"), planners=str(tmp / "runs" / "nothing")))
