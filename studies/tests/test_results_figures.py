"""Every figure docs/results.md and the README quote from a study is the committed result file's (and the few that
docs/lean.md and docs/training.md keep from studies whose scripts are gone).

Each test builds the sentences' figures from the JSON the page names and asserts that the page (whitespace
folded) says exactly that, so a page cannot drift from its result file. The adaptive study's block is checked by
its own generator's test.
"""

import gzip
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/results.md")


def _page(name: str) -> str:
    return " ".join((ROOT / name).read_text(encoding="utf-8").split())


def _json(path: str) -> dict:
    return json.loads((ROOT / path).read_text(encoding="utf-8"))


def _pts(x: float) -> str:
    return f"{100 * x:+.1f}"


def _assert_in(page: str, figures: list[str]) -> None:
    text = _page(page)
    missing = [f for f in figures if f not in text]
    assert not missing, f"{page} does not say what its result file says: {missing}"


@pytest.mark.parametrize("page", PAGES)
def test_plan_table_and_atlas_headroom(page):
    cur, held = _json("docs/plan_table_results/curriculum_L2.json"), _json("docs/plan_table_results/heldout_L2.json")
    for t in (cur, held):
        assert t["best_fixed"]["plan"] == [3, 8] and t["headroom"]["per_task_minus_best_fixed"] == 0.0
    a = _json("docs/atlas_results/atlas_restated.json")
    acc, rew = a["accuracy"], a["reward"]
    assert acc["best_fixed"]["plan"] == [3, 8] == rew["best_fixed"]
    lo, hi = acc["headroom"]["ci95"]
    figures = ["(`[3, 8]`), is the best plan for every task",
               f"{len(a['tasks'])} tasks", f"{_pts(acc['headroom']['point'])} points (95 % CI {_pts(lo)}, {_pts(hi)})",
               f"{a['n_test']} test problems",
               f"+{rew['point']:.3f} (CI {rew['ci95'][0]:.3f}, +{rew['ci95'][1]:.3f})"]
    _assert_in(page, figures)


def test_plan_table_details_on_the_results_page():
    cur, held = _json("docs/plan_table_results/curriculum_L2.json"), _json("docs/plan_table_results/heldout_L2.json")
    mix = _json("docs/plan_table_results/math_code_L2.json")
    a = _json("docs/atlas_results/atlas_restated.json")["accuracy"]
    lo, hi = mix["headroom"]["ci95"]
    figures = [f"gains {100 * cur['headroom']['per_task_minus_best_fixed']:.1f} points over it "
               f"(95 % CI {100 * cur['headroom']['ci95'][0]:.1f}, {100 * cur['headroom']['ci95'][1]:.1f}",
               f"gains {100 * cur['headroom']['oracle_minus_best_fixed']:.1f} points on the training split and "
               f"{100 * held['headroom']['oracle_minus_best_fixed']:.1f} on the held-out split",
               f"loses {-100 * mix['headroom']['per_task_minus_best_fixed']:.1f} points (CI {100 * lo:.1f}, {100 * hi:.1f})",
               f"({100 * a['per_task_test']:.1f} % against {100 * a['best_fixed']['test_accuracy']:.1f} %;"]
    assert mix["best_fixed"]["plan"] == [3, 8]
    _assert_in("docs/results.md", figures)


@pytest.mark.parametrize("page", PAGES)
def test_contextual_planner(page):
    best = _json("docs/contextual_results/embedded_two_step_lr3e-4.json")
    c = best["config"]
    assert best["passed"] and c["families"] == "two_step" and c["lora"] and c["model"] == "default"
    assert all(f["accuracy"] == 1.0 for f in best["families"].values())
    three = _json("docs/contextual_results/embedded_default_lr3e-4.json")
    assert three["config"]["families"] == "default" and three["families"]["mul"]["accuracy"] == 0.0
    heads = sorted(ROOT.glob("docs/contextual_results/*two_step_head_only*.json.gz"))  # gzip JSON: their curves
    assert all(not json.loads(gzip.decompress(p.read_bytes()))["passed"] for p in heads)
    figures = [f"lr {c['lr']:.0e}".replace("e-0", "e-"), f"in {best['updates']} updates", f"not found in {three['updates']} updates",
               f"two-round case in {'any of ' if page.endswith('results.md') else ''}{len(heads)} runs"]
    _assert_in(page, figures)
    if page.endswith("results.md"):
        _assert_in(page, [f"100 % of {best['eval_problems']} held-out problems", f"({best['episodes']} episodes)",
                          f"carries {best['heldout']['mutual_info']:.1f} bit", f"entropy bonus {c['entropy_coef']:g}"])


def test_continual():
    rows = {r["set"]: r for r in _json("docs/continual_results/continual.json")["rows"]}
    m, c = rows["math"], rows["code"]
    n = {r[k]["problems"] for r in rows.values() for k in ("none", "A", "B")}
    assert n == {50}
    figures = ["on 50 held-out problems a set",
               f"math {100 * m['none']['accuracy']:.0f} % (reasoner alone), {100 * m['A']['accuracy']:.0f} % (A), "
               f"{100 * m['B']['accuracy']:.0f} % (B)",
               f"code {100 * c['none']['accuracy']:.0f} %, {100 * c['A']['accuracy']:.0f} %, {100 * c['B']['accuracy']:.0f} %"]
    _assert_in("docs/results.md", figures)


def test_echo_and_follow():
    files = _json("docs/rewards_results/audit.json")["files"]
    after, before = files["docs/interaction_results/after2.json.gz"], files["docs/interaction_results/before.json.gz"]
    assert after["protocol"] == "chat+lead" and before["protocol"] == "inline" and after["steps"] == before["steps"]
    figures = [f"{100 * after['echo']:.1f} % of the embedded reasoner's steps", f"against {100 * before['echo']:.1f} %",
               f"({after['steps']:,} steps each)", f"mean `R_follow` is {after['follow_new']:.2f} "
               f"({after['follow_old']:.2f} when", f"{100 * after['vacuous']:.0f} % of its steps are vacuous"]
    _assert_in("docs/results.md", figures)


def test_bf16_sampling_copy_on_the_lean_page():
    """docs/lean.md's table of the efficacy study trained on a bf16 sampling copy (the study is gone; this file is
    what is left of it) and the summary row above it."""
    d = _json("docs/lean_results/bf16_tis_2026-11-30.json")["vs_fp32_study"]
    figures, lower = [], 0
    for name, key in (("Stackelberg", "stackelberg"), ("GRPO", "grpo")):
        fp, bf, sec = d[key]["fp32"], d[key]["bf16_tis"], d[key]["train_seconds"]
        assert sum(fp["per_seed"]) / fp["n"] == pytest.approx(fp["accuracy"])
        assert sum(bf["per_seed"]) / bf["n"] == pytest.approx(bf["accuracy"])
        lower += sum(b < f for f, b in zip(fp["per_seed"], bf["per_seed"]))
        figures += [f"| {name} | {' / '.join(map(str, fp['per_seed']))} ({100 * fp['accuracy']:.1f} %) | "
                    f"{' / '.join(map(str, bf['per_seed']))} ({100 * bf['accuracy']:.1f} %) | "
                    f"{min(sec['fp32'])}–{max(sec['fp32'])} s → {min(sec['bf16_tis'])}–{max(sec['bf16_tis'])} s |",
                    f"{name} {100 * bf['accuracy']:.1f} % vs {100 * fp['accuracy']:.1f} %"]
    _assert_in("docs/lean.md", figures + [f"scored lower in {lower} of 6 seed pairs"])


def test_tree_learner_on_the_training_page():
    """docs/training.md's train-tree figures of the committed heads, from the run's compact summary."""
    d = json.loads(gzip.decompress((ROOT / "docs/training_results/tree_learner_adaptive_40_std.json.gz").read_bytes()))
    s, t = d["summary"]["last_round"], d["tables"]["train"]
    by_seed = s["train_rewards_by_seed"]
    assert by_seed == [r["gap"]["train"]["trained"]["reward"] for r in d["runs"]] and t["best_single"]["plan"] == [3, 8]
    _assert_in("docs/training.md", [f"the powered seeds reach {s['train_ratio']:.3f} of the per-task best policy's "
                                    f"planner reward ({min(by_seed):.3f}-{max(by_seed):.3f} vs "
                                    f"{t['per_task_best']['reward']:.3f}; `[3, 8]` {t['best_single']['reward']:.3f};"])
