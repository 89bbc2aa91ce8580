"""studies.tree_baselines: the plan baselines of a held-out plan tree, computed from outcome rows (no model)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from algos.optimisation_gap import planner_reward_of
from studies.tree_baselines import compare, markdown

PLANS = [(8,), (0, 8), (3, 8)]


def _rows(split: str, n: int, right: dict[str, set[tuple[int, ...]]]) -> list[dict]:
    """n problems a task; task ``t``'s problems are right exactly under the plans ``right[t]``."""
    return [{"problem_id": f"{split}/{t}/{i}", "task": t, "plan": list(p), "correct": p in ok,
             "reward": planner_reward_of(p, p in ok)} for t, ok in right.items() for i in range(n) for p in PLANS]


RIGHT = {"copy": {(0, 8)}, "sum": {(3, 8)}, "hard": set()}


def test_baselines_score_each_policy_on_the_held_out_rows() -> None:
    train, held = _rows("train", 4, RIGHT), _rows("test", 3, RIGHT)
    trained = {s: {f"test/{t}/{i}": [3, 8] for t in RIGHT for i in range(3)} for s in (0, 1, 2)}
    b = compare(train, held, trained, episodes=3000)
    m = b["modes"]
    # the best single plan: (0, 8) and (3, 8) tie on reward; ties go to the smaller plan
    assert b["plans"]["best_fixed_exhaustive"] == [0, 8]
    assert m["best_fixed_exhaustive"]["accuracy"] == pytest.approx(1 / 3)
    assert b["plans"]["per_task"] == {"copy": [0, 8], "sum": [3, 8], "hard": [0, 8]}
    assert m["per_task"]["accuracy"] == pytest.approx(2 / 3)
    assert m["trained"]["accuracy"] == pytest.approx(1 / 3) and m["trained"]["headroom_captured_accuracy"] == 0.0
    # 3,000 Thompson pulls find the right plan of every task that has one
    for s in ("0", "1", "2"):
        assert b["plans"]["bandit"][s]["copy"] == [0, 8] and b["plans"]["bandit"][s]["sum"] == [3, 8]
    assert m["bandit"]["accuracy"] == pytest.approx(2 / 3)
    assert m["per_task"]["headroom_captured_reward"] == 1.0
    # random: the exact expectation over the 3 plans, and one draw per seed (seeded: the same every run)
    exp = b["random_expected"]
    assert exp["accuracy"] == pytest.approx(2 / 9)
    assert compare(train, held, trained, episodes=3000)["modes"]["random"] == m["random"]
    t = b["tests"]["trained_vs_per_task"]["seed_sign_accuracy"]
    assert (t["wins"], t["losses"]) == (0, 3)
    assert "| `bandit` |" in markdown(b) and "trained vs best_fixed_exhaustive" in markdown(b)


def test_baselines_choose_on_the_selection_rows_when_given() -> None:
    """Validation rows that disagree with training move the per-task choice (the test split's protocol)."""
    train, held = _rows("train", 2, RIGHT), _rows("test", 2, RIGHT)
    val = _rows("val", 6, {"copy": {(3, 8)}, "sum": {(3, 8)}, "hard": set()})
    trained = {0: {f"test/{t}/{i}": [0, 8] for t in RIGHT for i in range(2)}}
    b = compare(train, held, trained, episodes=100, select_rows=train + val)
    assert b["plans"]["per_task"]["copy"] == [3, 8]


def test_baselines_refuse_a_planner_without_plans_for_every_held_out_problem() -> None:
    train, held = _rows("train", 2, RIGHT), _rows("test", 2, RIGHT)
    with pytest.raises(ValueError, match="no plan for 1 held-out problems"):
        compare(train, held, {0: {f"test/{t}/{i}": [0, 8] for t in RIGHT for i in range(2) if (t, i) != ("hard", 1)}},
                episodes=10)
    with pytest.raises(ValueError, match="no trained planner"):
        compare(train, held, {}, episodes=10)
    with pytest.raises(ValueError, match="episodes=0"):
        compare(train, held, {0: {f"test/{t}/{i}": [0, 8] for t in RIGHT for i in range(2)}}, episodes=0)


def test_docs_copy_the_committed_baselines() -> None:
    """docs/training.md's baselines table is the one the committed standardised run's JSON holds."""
    root = Path(__file__).resolve().parents[1]
    result = json.loads((root / "docs/training_results/tree_learner_adaptive_12_std.json").read_text())
    text = (root / "docs" / "training.md").read_text()
    block = re.search(r"<!-- tree baselines: python -m studies.tree_baselines -->\n(.*?)\n<!-- /tree baselines -->",
                      text, re.S)
    assert block and block.group(1) == markdown(result["baselines"]["last_round"]), \
        "docs/training.md: the tree baselines table is stale"


PARAGRAPH = "**A planner trained on the frozen reasoner's whole plan tree**"


@pytest.mark.parametrize("doc", ["README.md", "docs/results.md"])
def test_the_in_progress_paragraph_copies_the_committed_files(doc: str) -> None:
    """Every figure of the README's tree-learner paragraph, recomputed from the committed result and episodes."""
    import gzip

    root = Path(__file__).resolve().parents[1]
    text = (root / doc).read_text()
    assert PARAGRAPH in text
    para = " ".join(text[text.index(PARAGRAPH):].split("\n\n")[0].split())
    result = json.loads((root / "docs/training_results/tree_learner_adaptive_12_std.json").read_text())
    c, s, b = result["config"], result["summary"]["last_round"], result["baselines"]["last_round"]
    fixed, bandit = b["tests"]["trained_vs_best_fixed_exhaustive"], b["tests"]["trained_vs_bandit"]
    boot = fixed["bootstrap_accuracy"]
    held = result["tables"]["test"]
    figures = [f"With {c['per_task']} training problems a task ({result['tables']['train']['problems']})",
               f"lr {c['lr']:g}", f"{c['groups_per_step']} problems a step", f"reaches {s['train_ratio']:.3f} of the",
               f"({c['seeds']} seeds)", f"On {held['problems']} validation problems",
               f"above `{held['best_single']['plan']}` on {fixed['seed_sign_reward']['wins']} of {c['seeds']} seeds",
               f"({100 * boot['difference']:+.1f} points, 95 % CI {100 * boot['ci95'][0]:.1f}, {100 * boot['ci95'][1]:+.1f})",
               f"the same {b['episodes']:,} episodes ({bandit['seed_sign_reward']['wins']} of {c['seeds']} seeds above)"]
    rows = [json.loads(line) for line in gzip.open(root / "docs/training_results/eval_checks/"
                                                   "tree_adaptive_12_std_s0_test60_replay.episodes.jsonl.gz", "rt")]
    acc = {m: [r["correct"] for r in rows if r["mode"] == m] for m in ("trained", "fixed:3,8")}
    figures.append(f"A first check on {len(acc['trained'])} test problems (seed 0) has it at "
                   f"{100 * sum(acc['trained']) / len(acc['trained']):.1f} % against "
                   f"{100 * sum(acc['fixed:3,8']) / len(acc['fixed:3,8']):.1f} % for `[3, 8]`")
    for f in figures:
        assert f in para, f"{doc}: {f!r} is not what the committed files say"


def test_replayed_eval_pairs_the_modes_and_live_llamacpp_does_not() -> None:
    """The committed check behind the kept planners' replayed eval command: on the problems where both modes play
    [3, 8], live llama.cpp decoded 3 of 24 differently (the batch differs), the replayed reasoner none."""
    import gzip

    root = Path(__file__).resolve().parents[1] / "docs/training_results/eval_checks"

    def differing(name: str) -> tuple[int, int]:
        by: dict[str, dict[str, dict]] = {}
        for line in gzip.open(root / f"tree_adaptive_12_std_s0_test60_{name}.episodes.jsonl.gz", "rt"):
            r = json.loads(line)
            by.setdefault(r["problem_id"], {})[r["mode"]] = r
        same = [m for m in by.values() if m["trained"]["strategies"] == m["fixed:3,8"]["strategies"]]
        return sum(m["trained"]["steps"] != m["fixed:3,8"]["steps"] for m in same), len(same)

    assert differing("live") == (3, 24) and differing("replay") == (0, 24)


def test_tree_learner_curves_plot_from_a_result(tmp_path: Path) -> None:
    """The docs' curve figures are drawn from the committed JSON alone (no trees, no model)."""
    from studies.tree_learner import plot_curves

    root = Path(__file__).resolve().parents[1]
    result = json.loads((root / "docs/training_results/tree_learner_adaptive_12_raw.json").read_text())
    out = plot_curves(result, tmp_path / "c.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "training_results/tree_learner_adaptive_12_raw.png" in (root / "docs" / "training.md").read_text()


def test_docs_copy_the_committed_test_tree_baselines() -> None:
    """docs/training.md's test-tree table and the README's test figures are the committed JSON's ``baselines_test``."""
    root = Path(__file__).resolve().parents[1]
    b = json.loads((root / "docs/training_results/tree_learner_adaptive_12_std.json").read_text())["baselines_test"]
    b = b["last_round"]
    assert b["heldout"] == "test" and b["select"] == ["train", "val"] and b["planners"]
    text = (root / "docs" / "training.md").read_text()
    block = re.search(r"<!-- tree baselines test: [^\n]*-->\n(.*?)\n<!-- /tree baselines test -->", text, re.S)
    assert block and block.group(1) == markdown(b), "docs/training.md: the test-tree baselines table is stale"
    m, t = b["modes"], b["tests"]["trained_vs_best_fixed_exhaustive"]["seed_sign_reward"]
    figure = (f"On the whole test tree ({b['problems']} problems) it scores {100 * m['trained']['accuracy']:.1f} % "
              f"against {100 * m['best_fixed_exhaustive']['accuracy']:.1f} %, {t['wins']} of 6 seeds above")
    for doc in ("README.md", "docs/results.md"):
        assert figure in " ".join((root / doc).read_text().split()), doc


def test_docs_copy_the_powered_study_baselines() -> None:
    """docs/training.md's powered table (40 training problems a task, test tree, plans chosen on train + the full
    validation tree) is the committed JSON's ``baselines``, and the headline figures are its."""
    root = Path(__file__).resolve().parents[1]
    result = json.loads((root / "docs/training_results/tree_learner_adaptive_40_std.json").read_text())
    b = result["baselines"]["last_round"]
    assert b["heldout"] == "test" and b["select"] == ["train", "val"] and result["config"]["per_task"] == 40
    text = (root / "docs" / "training.md").read_text()
    block = re.search(r"<!-- tree baselines powered: [^\n]*-->\n(.*?)\n<!-- /tree baselines powered -->", text, re.S)
    assert block and block.group(1) == markdown(b), "docs/training.md: the powered baselines table is stale"
    wins = b["tests"]["trained_vs_best_fixed_exhaustive"]["seed_sign_reward"]["wins"]
    assert f"{wins} of 6 seeds above `[3, 8]`" in text
    assert result["tables"]["train"]["problems"] == 1122


def test_readme_states_the_powered_figures() -> None:
    """The README's and results page's powered sentence is the committed 40-a-task JSON's."""
    root = Path(__file__).resolve().parents[1]
    b = json.loads((root / "docs/training_results/tree_learner_adaptive_40_std.json").read_text())["baselines"]
    b = b["last_round"]
    m, t = b["modes"], b["tests"]["trained_vs_best_fixed_exhaustive"]
    boot = t["bootstrap_accuracy"]
    figure = (f"six seeds score {100 * m['trained']['accuracy']:.1f} % against "
              f"{100 * m['best_fixed_exhaustive']['accuracy']:.1f} %, {t['seed_sign_reward']['wins']} of 6 seeds above "
              f"`[3, 8]` (sign p {t['seed_sign_reward']['p_value']:.3f})")
    ci = (f"+{100 * boot['difference']:.1f} points, has a 95 % CI of {100 * boot['ci95'][0]:.1f}, "
          f"+{100 * boot['ci95'][1]:.1f}")
    for doc in ("README.md", "docs/results.md"):
        text = " ".join((root / doc).read_text().split())
        assert figure in text and ci in text, doc
