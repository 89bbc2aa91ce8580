"""``rsim study --arms``: the report's statistics on injected outcomes whose answer is known, the equal-budget
contract, the arms' settings and presets, and the refusal of trained arms of an untrainable reasoner. No model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from algos.study.arms import report as rep
from algos.study.arms.spec import ARMS, ArmSettings, budget, check_arms, check_equal_budget, parse_arms, route_reasoner
from algos.study.config import PRESETS, resolve

IDS = [f"p{i:02d}" for i in range(40)]
TASKS = {p: ("add" if i % 2 else "mul") for i, p in enumerate(IDS)}


def _rows(correct, strategies=(), tokens=10.0):
    """One look's compact episodes: ``correct[i]`` on problem i; each answer performs its injected strategies and
    one more (``detected`` per step)."""
    return [{"problem_id": p, "correct": bool(c), "strategies": list(strategies),
             "detected": [[s, 6] for s in strategies] or [[6]], "tokens": {"reasoner_read": tokens,
                                                                          "reasoner_written": tokens,
                                                                          "planner_read": 0.0}}
            for p, c in zip(IDS, correct)]


def _record(arm, seed, problems=None, episodes_per_step=4, steps=2):
    problems = problems if problems is not None else [[IDS[2 * k], IDS[2 * k + 1]] for k in range(steps)]
    rows = [{"step": k + 1, "problems": problems[k], "episodes": episodes_per_step, "reasoner_reward": 0.1 * k,
             "reasoner_tokens_trained": 5.0, "reasoner_skipped": 0.0} for k in range(steps)]
    settings = ArmSettings(steps=steps, groups_per_step=2, group_size=episodes_per_step // 2)
    totals = {"steps": steps, "episodes": episodes_per_step * steps, "reasoner_tokens_decoded": 100.0,
              "reasoner_tokens_read": 50.0, "reasoner_tokens_trained": 10.0, "planner_tokens_read": 0.0,
              "planner_token_share": 0.0, "groups_with_signal": 0.5, "steps_with_signal": 1.0,
              "effective_lr": {"reasoner_lr": [2e-4], "planner_lr": []}, "problems": [p for ps in problems for p in ps]}
    from dataclasses import asdict

    return {"arm": arm, "seed": seed, "complete": True, "settings": asdict(settings), "fixed_plan": None,
            "rows": rows, "wall_s": 3.0, "cpu_s": 2.5, "totals": totals}


def test_identical_arms_have_an_interval_around_zero_and_no_measurable_difference():
    correct = [i % 3 == 0 for i in range(40)]
    looks = {"rsim": {0: _rows(correct), 1: _rows(correct)}, "grpo": {0: _rows(correct), 1: _rows(correct)}}
    r = rep.compare("rsim", "grpo", looks, IDS, rounds=2000, seed=0)
    assert r["difference"] == 0 and r["ci95"][0] <= 0 <= r["ci95"][1] and r["p_value"] == 1.0
    assert r["verdict"].startswith("no measurable difference between rsim and grpo")
    assert r["mdd"] > 0  # identical arms still have a finite detectable difference (one discordant problem's)


def test_an_arm_right_on_every_problem_the_other_misses_is_significantly_above_by_the_known_size():
    b = [i < 20 for i in range(40)]  # grpo right on half
    looks = {"rsim": {0: _rows([True] * 40)}, "grpo": {0: _rows(b)}}
    r = rep.compare("rsim", "grpo", looks, IDS, rounds=4000, seed=0)
    assert r["difference"] == pytest.approx(0.5) and r["sum"] == 20
    assert r["ci95"][0] > 0 and r["p_value"] < 0.001
    assert r["verdict"].startswith("rsim is above grpo (+50.0 points")
    down = rep.compare("grpo", "rsim", looks, IDS, rounds=4000, seed=0)
    assert down["difference"] == pytest.approx(-0.5) and down["ci95"][1] < 0 and "below" in down["verdict"]


def test_holm_step_down_and_the_minimum_detectable_difference():
    assert rep.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert rep.holm([0.5, None, 0.01]) == [pytest.approx(0.5), None, pytest.approx(0.02)]
    d = np.array([1, -1, 0, 0] * 10, dtype=float)
    assert rep.mdd(d) == pytest.approx((rep.Z_ALPHA + rep.Z_POWER) * d.std(ddof=1) / np.sqrt(40))
    assert rep.mdd(np.tile(d, 4)) < rep.mdd(d)  # more problems, a smaller detectable difference


def test_the_report_json_has_what_a_reader_needs_per_trained_arm_and_the_headline():
    looks = {"base": {0: _rows([False] * 40)}, "grpo": {s: _rows([i < 10 for i in range(40)]) for s in range(3)},
             "rsim": {s: _rows([i < 30 for i in range(40)], strategies=(3, 8)) for s in range(3)}}
    records = {"grpo": [_record("grpo", s) for s in range(3)], "rsim": [_record("rsim", s) for s in range(3)]}
    out = rep.build(looks, IDS, TASKS, records, rounds=2000)
    h = out["headline"]
    assert h["a"] == "rsim" and h["b"] == "grpo" and h["difference"] == pytest.approx(0.5)
    assert h["p_corrected"] is None and h["seeds"]["above"] == 3  # the report stage fills it from the ledger
    corr = {"p_holm": min(1.0, 4 * h["p_value"]), "m": 4, "p_as_one": 3}
    assert rep.build(looks, IDS, TASKS, records, correction=corr, rounds=2000)["headline"]["p_corrected"] == corr["p_holm"]
    for arm in ("grpo", "rsim"):
        a = out["arms"][arm]
        assert a["seeds"] == 3 and a["training"]["episodes"] == [8, 8, 8]
        assert a["training"]["reasoner_tokens_decoded"] == 100 and a["training"]["wall_s"] == 3.0
        assert a["accuracy"] is not None and a["strategies_per_answer"] is not None
    assert out["arms"]["rsim"]["injected_performed"] == 1.0 and out["arms"]["grpo"]["injected_performed"] is None
    assert out["arms"]["rsim"]["strategies_per_answer"] == 3.0 and out["arms"]["grpo"]["strategies_per_answer"] == 1.0
    names = [(c["a"], c["b"]) for c in out["comparisons"]]
    assert names == [("grpo", "base"), ("rsim", "base")] and all(c["p_holm"] >= c["p_value"] for c in out["comparisons"])
    md = rep.markdown(out)
    assert md.index("Headline (rsim vs grpo") < md.index("| arm |") and "rsim is above grpo" in md
    json.dumps(out)
    # the block rsim study --docs writes into docs/results.md: the headline first, from these numbers
    from algos.study.docs_block import arms_markdown

    block = arms_markdown(rep.build(looks, IDS, TASKS, records, correction=corr, rounds=2000), "r.md")
    first, *rest = block.splitlines()
    assert first.startswith("**`rsim` (reasoner trained with a planner) vs `grpo` (trained alone) at equal episodes: "
                            "rsim is above grpo (+50.0 points, 95 % CI")
    assert "on 40 test problems of 2 tasks (75.0 % vs 25.0 %" in first and "over the 4 looks" in first
    assert rest[0] == "* Seeds (secondary): `rsim` above `grpo` in 3, below in 0, tied in 0 (sign p 0.250); " \
                      "the seeds share one test set."
    assert "`base` 0.0 %, `grpo` 25.0 %, `rsim` 75.0 %" in block and "`rsim` 8 episodes x 3 seeds" in block
    assert "* Plans the planners played: `rsim` 1 distinct, [3, 8] on 100.0 % of episodes (one plan everywhere is a " \
           "fixed plan in effect)." in rest
    assert rest[-1] == "* Full report: [r.md](r.md)."
    with pytest.raises(ValueError, match="no headline"):
        arms_markdown(rep.build({"base": looks["base"]}, IDS, TASKS, {}, rounds=100), "r.md")


def test_a_resampled_p_below_its_floor_is_printed_as_below_a_thousandth_never_as_zero():
    assert [rep.p_text(x) for x in (None, 0.0, 9.999e-05, 0.001, 0.0344, 1.0)] == [
        "--", "< 0.001", "< 0.001", "0.001", "0.034", "1.000"]
    assert rep.p_is(1e-4) == "< 0.001" and rep.p_is(0.25) == "= 0.250"
    b = [i < 20 for i in range(40)]
    out = rep.build({"rsim": {0: _rows([True] * 40)}, "grpo": {0: _rows(b)}}, IDS, TASKS, {}, rounds=4000)
    assert "p < 0.001" in rep.markdown(out) and "p = 0.000" not in rep.markdown(out)


def test_the_concentration_sentence_says_how_much_of_the_gain_the_largest_tasks_carry():
    conc = rep._concentration(np.array([1.0] * 6 + [0.0] * 4), np.array([0.0] * 5 + [1.0] * 5),
                              [f"q{i}" for i in range(10)], {f"q{i}": "abcdefghij"[i // 2] for i in range(10)})
    assert conc["gain_problems"] == 1.0 and conc["by_task"] == {"a": 2.0, "b": 2.0, "c": 1.0, "d": -2.0, "e": -2.0}
    assert conc["tasks_carrying"] == ["a"]
    got = rep.concentration_sentence(conc, top=2)
    assert got == ("The headline's net gain is 1.0 problems (seeds averaged) over 5 tasks; the 2 largest gains, "
                   "a (+2.0), b (+2.0), are 400 % of it; 1 task(s) are needed to reach it; 2 task(s) lose problems "
                   "(-4.0).")
    assert rep.concentration_sentence({"gain_problems": -1.0, "by_task": {}, "tasks_carrying": None}) == \
        "The headline has no net gain to place."


def test_the_scaffold_control_is_read_out_by_its_outcome_with_its_replication():
    """The block says what ``rsim`` vs ``grpo_fixed`` means for each outcome (a learned plan adds to the scaffold /
    the data cannot separate them / the scaffold alone trains better), with the replication's figure beside it."""
    from algos.study.docs_block import arms_markdown

    half = [i < 20 for i in range(40)]
    records = {a: [_record(a, 0)] for a in ("grpo", "grpo_fixed", "rsim")}

    def block(rsim, fixed):
        looks = {"grpo": {0: _rows([False] * 40)}, "grpo_fixed": {0: _rows(fixed)}, "rsim": {0: _rows(rsim)}}
        rep_ = rep.build(looks, IDS, TASKS, records, rounds=2000, replication=rep.build(looks, IDS, TASKS, records,
                                                                                          rounds=2000))
        return next(x for x in arms_markdown(rep_, "r.md").splitlines() if x.startswith("* `rsim` vs `grpo_fixed`"))

    assert "a learned plan adds to the scaffold of the planner's game. On replication: +50.0 points (95 % CI +" in \
        block([True] * 40, half)
    assert "the data do not separate a learned plan from the scaffold" in block(half, half)
    assert "the fixed plan's scaffold trains the reasoner better than a learned plan" in block(half, [True] * 40)


def test_plans_played_counts_what_the_planner_chose_per_episode_and_per_seed():
    """A planner that plays one plan on every problem shows as one distinct plan at 100 % (a fixed plan in effect);
    a mixture is counted per seed and over seeds; a look without a planner has none."""
    one = {0: _rows([True] * 40, strategies=(1, 8)), 1: _rows([False] * 40, strategies=(1, 8))}
    assert rep.plans_played(one) == {"distinct": 1, "modal": [1, 8], "modal_share": 1.0, "by_seed": [
        {"seed": 0, "distinct": 1, "modal": [1, 8], "modal_share": 1.0},
        {"seed": 1, "distinct": 1, "modal": [1, 8], "modal_share": 1.0}]}
    mixed = {0: _rows([True] * 30, strategies=(3, 8)) + _rows([True] * 10, strategies=(1, 8)),
             1: _rows([True] * 40, strategies=(1, 8))}
    got = rep.plans_played(mixed)
    assert got["distinct"] == 2 and got["modal"] == [1, 8] and got["modal_share"] == pytest.approx(50 / 80)
    assert [(b["distinct"], b["modal"], b["modal_share"]) for b in got["by_seed"]] == [(2, [3, 8], 0.75), (1, [1, 8], 1.0)]
    assert rep.plans_played({0: _rows([True] * 40)}) is None
    looks = {"rsim": one, "grpo": {0: _rows([False] * 40)}}
    out = rep.build(looks, IDS, TASKS, {}, rounds=100)
    assert out["arms"]["rsim"]["plans"]["modal"] == [1, 8] and out["arms"]["grpo"]["plans"] is None
    assert "| 1 ([1, 8], 100.0) |" in rep.markdown(out)  # the table's percentages carry no sign


def test_the_equal_budget_contract_fails_on_more_episodes_other_problems_or_another_order():
    s = ArmSettings(steps=2, groups_per_step=2, group_size=4)
    a, b = budget("grpo", s, ["p1", "p2", "p3", "p4"], 0), budget("rsim", s, ["p1", "p2", "p3", "p4"], 0)
    check_equal_budget([a, b])
    with pytest.raises(ValueError, match="episodes"):
        check_equal_budget([a, b | {"episodes": 32}])
    with pytest.raises(ValueError, match="other problems or another order"):
        check_equal_budget([a, b | {"problems": ["p1", "p2", "p3", "p5"]}])
    with pytest.raises(ValueError, match="other problems or another order"):
        check_equal_budget([a, b | {"problems": ["p2", "p1", "p3", "p4"]}])
    with pytest.raises(ValueError, match="reasoner_lr"):
        check_equal_budget([a, b | {"reasoner_lr": 1e-3}])
    check_equal_budget([a, budget("rsim", s, ["p9", "p8", "p7", "p6"], 1)])  # another seed: another order is fine
    # the report checks what the runs recorded, not what they were told
    looks = {"grpo": {0: _rows([True] * 40)}, "rsim": {0: _rows([True] * 40)}}
    other = _record("rsim", 0, problems=[[IDS[5], IDS[6]], [IDS[7], IDS[8]]])
    with pytest.raises(ValueError, match="unequal budget at seed 0"):
        rep.build(looks, IDS, TASKS, {"grpo": [_record("grpo", 0)], "rsim": [other]}, rounds=200)
    with pytest.raises(ValueError, match="unequal budget"):
        rep.build(looks, IDS, TASKS, {"grpo": [_record("grpo", 0)], "rsim": [_record("rsim", 0, episodes_per_step=8)]},
                  rounds=200)


def test_arms_are_validated_and_the_arms_preset_has_the_committed_floors():
    assert parse_arms("rsim, base") == ("base", "rsim") and parse_arms("") == ()
    with pytest.raises(ValueError, match="unknown arm"):
        resolve("tiny", {"arms": "base,ppo"})
    with pytest.raises(ValueError, match="arm.route"):
        resolve("tiny", {"arm.route": "vllm"})
    cfg = resolve("arms")
    assert parse_arms(cfg.arms) == ARMS and cfg.data == "adaptive" and cfg.reasoner.startswith("llamacpp:default")
    assert cfg.arm.seeds >= 3 and cfg.arm.episodes >= 384 and (cfg.arm.steps, cfg.arm.groups_per_step,
                                                                 cfg.arm.group_size) == (24, 2, 8)
    assert "arms" in PRESETS and PRESETS["arms"]["arm.lambda1"] == 0.7 and PRESETS["arms"]["arm.lambda2"] == 0.3


def test_print_config_of_the_arms_preset(capsys):
    from algos import cli

    r = cli.main(["study", "--preset", "arms", "--print-config"])
    printed = json.loads(capsys.readouterr().out)
    assert printed["arms"] == "base,planner,grpo,grpo_fixed,rsim,rsim_warm" and printed["arm"]["seeds"] == 3
    assert printed["arm"]["steps"] * printed["arm"]["groups_per_step"] * printed["arm"]["group_size"] == 384
    assert r["config"] == printed


@pytest.mark.parametrize("reasoner", ["tree:runs/x.tree.json.gz", "replay:default", "llamacpp:/models/other.gguf",
                                      "template:0.5"])
def test_a_trained_arm_of_an_untrainable_reasoner_is_refused_naming_the_arms_it_can_have(reasoner):
    with pytest.raises(ValueError, match="cannot be trained .*it can have the arms base, planner"):
        check_arms(("base", "grpo", "rsim"), reasoner)
    check_arms(("base", "planner"), reasoner)  # the untrained arms need no training


def test_the_refusal_comes_before_anything_runs(tmp_path):
    from algos import cli

    out = tmp_path / "study"
    with pytest.raises(ValueError, match="cannot be trained"):
        cli.main(["study", "--preset", "tiny", "--out", str(out), "--reasoner", "llamacpp:/x/other.gguf",
                  "--arms", "base,grpo_fixed"])
    assert not out.exists()


def test_trainable_reasoners_and_the_route_spec():
    for spec in ("default", "tiny", "llamacpp:default#threads=1", "openai:m@http://h:8000/v1", "Qwen/Qwen2.5-0.5B-Instruct"):
        check_arms(ARMS, spec)
    assert route_reasoner("llamacpp:default#threads=1", "torch") == "default"
    assert route_reasoner("llamacpp:default#threads=1", "llamacpp") == "llamacpp:default#threads=1"
    assert route_reasoner("tiny", "torch") == "tiny"
    with pytest.raises(ValueError, match="arm.route=torch"):
        route_reasoner("llamacpp:/m/x.gguf", "torch")
    with pytest.raises(ValueError, match="arm.route=llamacpp"):
        route_reasoner("tiny", "llamacpp")
