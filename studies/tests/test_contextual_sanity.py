"""studies/contextual_sanity.py: the tiny LM planner learns a plan per task family (where the margins hold across the
committed seed sweep), and the committed sweep meets every margin those tests assert."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py, through studies/tests/conftest.py


# ------------------------------------------------------------------------------ the benchmark, end to end

def test_benchmark_reports_diversity_and_mutual_information(tmp_path):
    from studies.contextual_sanity import Config, main

    out = tmp_path / "r.json"
    r = main(Config(model="tiny", steps=2, eval_every=1, eval_problems=8, train_problems=8, groups_per_step=2,
                    group_size=2, output_dir=str(tmp_path / "run"), out=str(out)))
    assert set(r["families"]) == {"add", "mul"} and all(f["n"] == 4 for f in r["families"].values())
    assert set(r["heldout"]) == {"distinct", "entropy", "mutual_info", "mi_fraction"}
    row = r["curve"][-1]
    assert {"plans/distinct", "plans/entropy", "plans/mutual_info", "planner/entropy", "heldout_mutual_info"} <= set(row)
    assert r["wall_seconds"] > 0 and out.is_file()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = set()
    for ev in (tmp_path / "run").rglob("events.out.tfevents*"):
        acc = EventAccumulator(str(ev))
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    assert {"plans/distinct", "plans/entropy", "plans/mutual_info", "planner/entropy", "heldout/mutual_info",
            "heldout/distinct", "heldout/accuracy_add", "heldout/accuracy_mul"} <= tags, sorted(tags)


def test_benchmark_config_rejects_bad_values():
    from studies.contextual_sanity import Config

    with pytest.raises(ValueError, match="eval_problems"):
        Config(eval_problems=1)
    with pytest.raises(ValueError, match="family set"):
        Config(families="nope")
    with pytest.raises(ValueError, match="head_only=True .* lora=False"):
        Config(head_only=True)  # a head-only planner has no adapter


# ------------------------------------------------------------------------------ the fix: the planner conditions

def _tiny_run(tmp_path, **kw):
    from studies.contextual_sanity import Config, main

    return main(Config(**{"model": "tiny", "output_dir": str(tmp_path), "eval_every": 20, **kw}))


# Where a training run ends moves with the seed and with the float kernels a CPU selects (vector width, threads):
# these tests assert what every run of the committed seed sweep met with a margin, on the seeds SEEDS unless said
# (docs/contextual_results/seed_sweep.jsonl, written by studies/seed_sweep.py under AVX-512, AVX2 and scalar kernels).
SEEDS = (0, 1)


def _seed_runs(tmp_path, seeds=SEEDS, **kw):
    return [_tiny_run(tmp_path / f"seed{seed}", seed=seed, **kw) for seed in seeds]


def _summary(runs):
    return [{n: (f["accuracy"], f["plan"]) for n, f in r["families"].items()} | {"mi": r["heldout"]["mutual_info"]}
            for r in runs]


@pytest.mark.training_outcome
def test_the_lm_planner_learns_the_right_plan_for_each_family(tmp_path):
    """The contextual sanity case: tiny random-init LM planner (LoRA + head), families solved only under
    [3, 8] / [1, 8]. Every run of the sweep reached >= 95 % greedy on the held-out problems of each family in
    80-100 of the 160 updates allowed, with the plan naming the family; asserted on two seeds with >= 90 %."""
    runs = _seed_runs(tmp_path, families="two_step", lr=3e-3, entropy_coef=0.1, steps=160, groups_per_step=4,
                      eval_problems=64)
    for r in runs:
        assert all(f["accuracy"] >= 0.9 for f in r["families"].values()), _summary(runs)
        assert r["families"]["add"]["plan"] == ["validation", "termination"]
        assert r["families"]["mul"]["plan"] == ["decomposition", "termination"]
        assert r["heldout"]["mutual_info"] >= 0.8


@pytest.mark.training_outcome
def test_at_a_large_logit_step_the_lm_planner_does_not_learn_both_plans(tmp_path):
    """lr 1e-2 on the tiny model moves the logits as far per step as the study's 1e-3 on SmolLM2 (lr * |h|_1):
    in 80 updates no run of the sweep solved both families (the worse family at 0.0 in every run, where lr 3e-3
    solves both). Where the plans end -- one plan for all, or two wrong ones -- differs by seed and CPU, so it
    is not asserted. Under torch's scalar kernels (``make test-float``) on one machine the second seed did solve
    both (1.0 / 1.0, mutual information 1.0) while the first stayed at one plan, so the claim holds as "not
    reliably", not "never": asserted is that at least one of the two runs leaves a family at <= 0.5."""
    runs = _seed_runs(tmp_path, families="two_step", lr=1e-2, entropy_coef=0.1, steps=80, eval_every=80,
                      groups_per_step=4, eval_problems=64)
    assert any(min(f["accuracy"] for f in r["families"].values()) <= 0.5 for r in runs), _summary(runs)


@pytest.mark.training_outcome
@pytest.mark.parametrize("entropy_coef", [0.2, 0.0], ids=["bonus", "no-bonus"])
def test_at_a_large_logit_step_the_three_decision_plan_is_never_found(tmp_path, entropy_coef):
    """Default families at lr 1e-2: mul needs [1, 5, 8], three exact decisions (1/729 under a uniform planner);
    in 60 updates no run of the sweep found it, with the entropy bonus or without (mul 0.0 in every run: seeds 0-4
    under AVX-512, 0-2 under AVX2, 0-1 under scalar kernels). Whether the plans carry the family there depends on the
    seed, with or without the bonus, so that is not asserted (docs/contextual.md). Asserted on seed 0 (each run goes
    the full 60 updates, as nothing is learned; the sweep holds the other seeds): mul <= 0.25."""
    runs = _seed_runs(tmp_path, seeds=(0,), families="default", lr=1e-2, entropy_coef=entropy_coef, groups_per_step=4,
                      score_flat_groups=entropy_coef > 0, steps=60, eval_every=60, eval_problems=64)
    assert all(r["families"]["mul"]["accuracy"] <= 0.25 for r in runs), _summary(runs)


def test_the_committed_sweep_meets_every_margin_the_outcome_tests_assert():
    """The margins above are read off docs/contextual_results/seed_sweep.jsonl: every run there, on every seed and
    under each float configuration, meets the bound its test asserts (and the sweep covers two or more)."""
    from pathlib import Path

    rows = [json.loads(line) for line in (Path(__file__).parents[2] / "docs/contextual_results/seed_sweep.jsonl")
            .read_text().splitlines() if line.strip()]
    by = {name: [r for r in rows if r["config"] == name] for name in
          ("learn", "collapse", "bonus", "nobonus", "learning_sanity")}
    assert all(len(rs) >= 4 and len({r["capability"] for r in rs}) >= 2 for rs in by.values()), \
        {k: len(v) for k, v in by.items()}
    assert all(min(r["accuracy"].values()) >= 0.95 and r["mutual_info"] >= 0.9 for r in by["learn"])
    assert all(min(r["accuracy"].values()) <= 0.0 for r in by["collapse"])  # the test's bound: <= 0.5
    assert all(r["accuracy"]["mul"] <= 0.0 for r in by["bonus"] + by["nobonus"])  # the test's bound: <= 0.25
    for cap in {r["capability"] for r in by["learning_sanity"]}:  # the test's bound: 2 of its seeds 0-2
        runs = {r["seed"]: r["success_after"] for r in by["learning_sanity"] if r["capability"] == cap}
        assert all(runs[s] >= 1.0 for s in (0, 1, 2)) and sum(v >= 1.0 for v in runs.values()) >= len(runs) - 1
