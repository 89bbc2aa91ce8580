"""rsim_env.kinds.scorer_check: a reasoning-gym task whose scorer gives full credit to a known-wrong answer is refused,
by rule (not by name), in the ``rg`` data source and in the atlas's catalogue; ordinary tasks pass.

Deterministic: the check scores the first entries of seed 0, made under ``PYTHONHASHSEED=0`` (in a worker when this
process was started without it).
"""

from __future__ import annotations

import pytest

from rsim_env.kinds.scorer_check import check, failures, require_sound, wrong_answers

pytest.importorskip("reasoning_gym")


def test_wrong_answers_are_another_gold_the_opposite_boolean_and_empty():
    assert wrong_answers(["False", "False", "True"], 0) == [("another entry's gold", "True"),
                                                           ("the opposite boolean", "True"), ("the empty answer", "")]
    assert wrong_answers(["yes", "no"], 1) == [("another entry's gold", "yes"), ("the opposite boolean", "yes"),
                                               ("the empty answer", "")]
    assert wrong_answers(["7", "7"], 0) == [("the empty answer", "")]  # no different gold, no boolean


@pytest.mark.parametrize("scorer, bad", [
    (lambda a, e: float(bool(a) == bool(e["answer"])), True),  # game_of_life_halting's rule: bool("False") is true
    (lambda a, e: 1.0, True),
    (lambda a, e: float(a.strip().lower() == e["answer"].lower()), False),
    (lambda a, e: 1 / 0, False),  # a scorer that raises on an answer gives it no credit
], ids=["bool-of-text", "always-one", "exact", "raises"])
def test_the_rule_on_fake_scorers(scorer, bad):
    entries = [{"answer": "False"}, {"answer": "True"}, {"answer": "False"}]
    assert bool(failures(entries, scorer)) == bad


def test_game_of_life_halting_is_refused_by_rule_in_the_source_and_the_catalogue():
    from benchmarks.plans.atlas_tasks import _rule
    from rsim_env.sources.problems import reasoning_gym_problems

    why = check("game_of_life_halting")
    assert "full credit" in why and "the opposite boolean" in why
    with pytest.raises(ValueError, match=r"'game_of_life_halting' is refused: .*full credit.*leave it out"):
        reasoning_gym_problems(("game_of_life_halting",), size=4)
    assert _rule("game_of_life_halting", {}, 24, 600).startswith("scorer check failed: its score_answer gives")


@pytest.mark.parametrize("task, options", [
    ("chain_sum", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 1}),
    ("basic_arithmetic", {}), ("syllogism", {}), ("course_schedule", {}), ("word_sorting", {}),
    ("isomorphic_strings", {"min_string_length": 2, "max_string_length": 3}),
], ids=lambda x: x if isinstance(x, str) else "")
def test_ordinary_tasks_pass(task, options):
    assert check(task, options) == ""
    require_sound(task, options)


def test_a_generator_that_refuses_its_options_raises_its_own_error():
    with pytest.raises(ValueError, match="not registered"):
        check("no_such_generator")
