"""Self-consistency at equal tokens on a held-out tree's problems (studies/tree_sc.py): majority scoring, the
equal-token k, and the refusals. The sampling itself is ``rsim eval --k``'s (tested with it)."""

from __future__ import annotations

import pytest

from studies.tree_sc import Config, episode_tokens, majority_at, summarise


def _row(pid: str, sample: int, extracted: str | None, correct: bool, read: int | None = 100,
         written: int = 50) -> dict:
    return {"problem_id": pid, "mode": "none", "sample": sample, "extracted": extracted, "correct": correct,
            "tokens": {"reasoner_read": read, "reasoner_written": written}}


def test_majority_of_the_first_k_samples_decides() -> None:
    rows = [_row("a", 0, "1", False), _row("a", 1, "2", True), _row("a", 2, "2", True),
            _row("b", 2, "7", True), _row("b", 0, "5", False), _row("b", 1, "5", False)]
    assert majority_at(rows, 1) == {"a": False, "b": False}
    assert majority_at(rows, 2) == {"a": False, "b": False}  # a tie goes to the answer seen first
    assert majority_at(rows, 3) == {"a": True, "b": False}


def test_samples_without_an_answer_do_not_vote() -> None:
    rows = [_row("a", 0, None, False), _row("a", 1, "4", True), _row("a", 2, None, False)]
    assert majority_at(rows, 3) == {"a": True}
    assert majority_at(rows, 1) == {"a": False}


def test_majority_refuses_fewer_samples_than_k() -> None:
    with pytest.raises(ValueError, match="fewer than k=3"):
        majority_at([_row("a", 0, "1", True), _row("a", 1, "1", True)], 3)


def test_equal_tokens_k_is_the_budget_over_one_sample() -> None:
    rows = [_row(p, s, "7" if s == 0 else "1", s == 0, read=100, written=50) for p in ("a", "b") for s in range(3)]
    got = summarise(rows, ["a", "b"], budget=310.0, k_max=3)
    assert got["tokens_per_sample"] == 150.0 and got["k_equal_tokens"] == 2 and got["k_equal_drawn"]
    assert got["majority"]["1"]["accuracy"] == 1.0 and got["majority"]["3"]["accuracy"] == 0.0
    assert got["sample_accuracy"] == pytest.approx(1 / 3)
    cheap = summarise(rows, ["a", "b"], budget=40.0, k_max=3)
    assert cheap["k_equal_tokens"] == 1  # a planner cheaper than one sample still leaves self-consistency one


def test_only_the_trees_problems_are_scored() -> None:
    rows = [_row(p, 0, "1", p == "a") for p in ("a", "b", "c")]
    got = summarise(rows, ["a", "b"], budget=150.0, k_max=1)
    assert got["problems"] == 2 and got["majority"]["1"]["correct"] == [True, False]


def test_a_replayed_episode_cannot_set_the_budget() -> None:
    with pytest.raises(ValueError, match="live run"):
        episode_tokens(_row("a", 0, "1", True, read=None))
    assert episode_tokens(_row("a", 0, "1", True, read=120, written=30)) == 150.0


@pytest.mark.parametrize("bad", [{"k": 0}, {"temperature": 0.0}])
def test_config_refuses_bad_sampling(bad: dict) -> None:
    with pytest.raises(ValueError, match="Config"):
        Config(**bad)


def test_docs_copy_the_committed_self_consistency() -> None:
    """docs/training.md's self-consistency sentence is the committed tree_sc JSON's."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = json.loads((root / "docs/training_results/tree_sc_test.json").read_text())
    text = " ".join((root / "docs" / "training.md").read_text().split())
    assert (f"cost {r['budget_tokens_per_problem']:.0f} reasoner tokens a problem, one no-planner sample "
            f"{r['tokens_per_sample']:.0f}, so equal tokens buy k = {r['k_equal_tokens']}: "
            f"{100 * r['majority'][str(r['k_equal_tokens'])]['accuracy']:.1f} % (majority of 2 samples: "
            f"{100 * r['majority']['2']['accuracy']:.1f} %)") in text
