"""studies/learning_sanity.py: the Stackelberg learner finds a three-step target plan by reward alone."""

import pytest

from studies.learning_sanity import Config, main


@pytest.mark.training_outcome
def test_stackelberg_planner_learns_target_sequence(tmp_path):
    """A three-step target (1 in 729 for a random planner) found by reward alone, in most seeds: at the study's
    lr, 5 of 6 seeds of docs/contextual_results/seed_sweep.jsonl ended at 100 % within 150 steps under AVX-512
    and under scalar kernels alike (seed 4 locks onto a wrong plan first, in both); asserted: 2 of 3 seeds."""
    found = []
    for seed in (0, 1, 2):
        r = main(Config(steps=150, eval_every=10, seed=seed, output_dir=str(tmp_path / str(seed)),
                        out=str(tmp_path / f"r{seed}.json")))
        assert r["success_before"] <= 0.1 and r["success_random"] <= 0.02
        assert (tmp_path / f"r{seed}.json").is_file()
        found.append(r["success_after"] >= 0.9 and r["greedy_plan_after"] == ["decomposition", "validation",
                                                                            "termination"])
    assert sum(found) >= 2, found
