"""Reasoning-gym tasks graded by their generators' own ``score_answer`` (the ``rg`` kind).

Model-free: scripted agents play the episodes; the generators' scorers run in the kind's worker pool.
Hostile answers are bounded by outcome (a reason and a generous wall-clock ceiling), never by a timing assert.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from agents.scripted.policies import FixedPlanner, TemplateReasoner
from rsim_env import EnvGroup, Problem, answers, kinds
from rsim_env.answers.sandbox import WorkerPool
from rsim_env.kinds import rgym
from rsim_env.kinds.rg_worker import literal_only
from rsim_env.sources.problems import DEFAULT_TASKS, reasoning_gym_problems
from rsim_env.strategies import TERMINATION

reasoning_gym = pytest.importorskip("reasoning_gym")
RG = kinds.get("rg")
BOUND_S = 60.0
"""Ceiling for a hostile answer's grade (the check's own bound is ``CheckConfig.timeout_s``, 3 s)."""


def problem(task: str, index: int = 0, size: int = 4) -> Problem:
    return reasoning_gym_problems((task,), size=size, seed=0, grading="rg")[index]


def boxed(answer: str) -> list[str]:
    return [f"The final answer is \\boxed{{{answer}}}."]


def entry(p: Problem) -> dict:
    rg = p.metadata["rg"]
    return reasoning_gym.create_dataset(rg["dataset"], size=rg["size"], seed=rg["seed"], **rg["config"])[rg["index"]]


# -- routing ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("task,kind", [("number_sorting", "rg"), ("word_sorting", "rg"), ("spell_backward", "rg"),
                                       ("syllogism", "rg"), ("letter_counting", "math"), ("chain_sum", "math"),
                                       ("countdown", "math"), ("gsm_symbolic", "math")],
                         ids=lambda x: x if isinstance(x, str) else "")
def test_tasks_with_non_number_golds_get_the_rg_kind_and_numeric_ones_stay_math(task, kind):
    ps = reasoning_gym_problems((task,), size=6, seed=0)
    assert {p.kind for p in ps} == {kind}
    if kind == "math":  # exactly as before this kind: no metadata, the old answer types
        assert all(p.metadata == {} and p.answer_type == ("number" if task in DEFAULT_TASKS else "auto") for p in ps)


def test_the_default_source_is_unchanged_and_grading_is_validated():
    assert {p.kind for p in reasoning_gym_problems(size=20)} == {"math"}
    assert {p.kind for p in reasoning_gym_problems(("word_sorting",), size=3, grading="math")} == {"math"}
    with pytest.raises(ValueError, match="grading='sympy'"):
        reasoning_gym_problems(("word_sorting",), size=3, grading="sympy")


def test_a_problem_is_plain_json_and_grades_the_same_after_a_round_trip():
    p = problem("word_sorting", 1)
    back = Problem(**json.loads(json.dumps(p.to_dict())))
    assert back == p and back.metadata == p.metadata and back.kind == "rg"
    assert RG.grade(back, boxed(p.answer)).correct


def test_problems_that_cannot_be_graded_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"needs metadata\['rg'\]"):
        kinds.validate(Problem("x", "Sort these words: b, a", "a, b", kind="rg"))  # plain data: checked here
    with pytest.raises(ValueError, match="sympy.parse_expr"):
        problem("countdown")
    with pytest.raises(ValueError, match="not JSON data"):
        rgym.spec("word_sorting", {"bad": {1, 2}}, 0, 4, 0)
    p = problem("word_sorting")
    drifted = Problem(p.id, p.question + " (edited)", p.answer, kind="rg", metadata=p.metadata)
    with pytest.raises(RuntimeError, match="entry_mismatch"):
        RG.grade(drifted, boxed(p.answer))


# -- the generator's own rules --------------------------------------------------------------------------
def _reverse_items(gold: str) -> str:
    if gold.startswith("["):
        return str(json.loads(gold.replace("'", '"'))[::-1])
    return ", ".join(gold.split(", ")[::-1])


PERTURB = {
    "reversed": _reverse_items,
    "swapped": lambda g: ", ".join([*g.split(", ")[1::-1], *g.split(", ")[2:]]),
    "dropped_char": lambda g: g[:-1],
    "lower": str.lower,
    "upper": str.upper,
    "in_sentence": lambda g: f"it is {g}",
}


@pytest.mark.parametrize("task,how", [
    ("number_sorting", "reversed"), ("number_filtering", "reversed"), ("word_sorting", "reversed"),
    ("word_sorting", "swapped"), ("word_sorting", "upper"), ("spell_backward", "dropped_char"),
    ("spell_backward", "upper"), ("letter_counting", "in_sentence"), ("syllogism", "lower"),
    ("syllogism", "upper"), ("family_relationships", "upper"), ("word_sequence_reversal", "reversed"),
], ids=lambda x: x)
def test_gold_gets_full_credit_and_a_perturbation_exactly_what_score_answer_gives(task, how):
    for index in range(2):
        p = problem(task, index)
        e = entry(p)
        gold = RG.grade(p, boxed(p.answer))
        assert (gold.correct, gold.fraction, gold.reason) == (True, 1.0, "ok")
        answer = PERTURB[how](p.answer)
        want = float(reasoning_gym.create_dataset(task, size=4, seed=0).score_answer(answer, e))
        got = RG.grade(p, boxed(answer))
        assert got.fraction == want and got.correct == (want == 1.0) and got.reason == "ok", (answer, want, got)


@pytest.mark.parametrize("task", ["word_sorting", "word_sequence_reversal"])
def test_a_reversed_list_that_math_accepts_is_not_correct_here(task):
    """The math checker compares lists as sets (full credit for the reversed list); the task's own scorer does not."""
    p = problem(task, 1)
    step = boxed(_reverse_items(p.answer))
    assert _reverse_items(p.answer) != p.answer
    assert answers.check(step[0], p.answer).correct  # how every reasoning-gym task was graded before
    grade = RG.grade(p, step)
    assert not grade.correct and grade.reason == "ok" and grade.fraction < 1.0


def test_case_counts_where_the_scorer_says_so():
    yes = problem("syllogism", 0)
    assert RG.grade(yes, boxed(yes.answer)).correct
    assert not RG.grade(yes, boxed(yes.answer.swapcase())).correct  # the default scorer compares exactly
    word = problem("spell_backward", 0)
    assert RG.grade(word, boxed(word.answer.upper())).correct  # this scorer lower-cases both sides


# -- played through the env ------------------------------------------------------------------------------
class ReversingReasoner(TemplateReasoner):
    """Answers the oracle's list in reverse order."""

    def _final(self, obs):
        gold = self.oracle[obs["question"]]
        return kinds.get(obs["kind"]).final_step(str(obs.get("injected", "")), _reverse_items(gold))


@pytest.mark.parametrize("protocol", ["inline", "chat+lead"])
def test_a_list_task_played_through_the_env_is_graded_by_its_own_scorer(protocol):
    p = problem("word_sorting", 2)
    oracle = {p.question: p.answer}
    results = {}
    for name, reasoner in (("right", TemplateReasoner(oracle)), ("reversed", ReversingReasoner(oracle))):
        group = EnvGroup([p], 2, protocol=protocol)
        planner = FixedPlanner([1, TERMINATION])
        group.reset(seed=0)
        planner.reset(len(group))
        reasoner.reset(len(group))
        while not group.done:
            agent, ids, observations = group.observe()
            assert agent == "planner" or all(o["kind"] == "rg" for o in observations)
            group.step((planner if agent == "planner" else reasoner).act(ids, observations))
        results[name] = [r["info"] for r in group.results()]
    for info in results["right"]:
        assert info["correct"] and info["reason"] == "ok" and info["tests_fraction"] == 1.0
        assert info["extracted"] == p.answer and info["components"]["acc"] == 1.0
    for info in results["reversed"]:
        assert not info["correct"] and info["reason"] == "ok" and info["tests_fraction"] < 1.0
        assert info["extracted"] == _reverse_items(p.answer) and info["components"]["acc"] == 0.0


# -- hostile answers ---------------------------------------------------------------------------------------
def _timed(p: Problem, steps: list[str], check: answers.CheckConfig | None = None):
    """The grade of ``steps`` and its wall time, with a worker already started: the bound is on the hostile
    answer, not on a cold start (importing reasoning-gym in a fresh worker, which a loaded machine makes slow)."""
    RG.grade(p, boxed(p.answer), answers.CheckConfig(timeout_s=BOUND_S))
    t0 = time.monotonic()
    grade = RG.grade(p, steps, check)
    return grade, time.monotonic() - t0


def test_a_huge_answer_is_not_scored():
    p = problem("word_sorting")
    grade, elapsed = _timed(p, boxed("a, " * 10_000))
    assert (grade.correct, grade.reason, grade.fraction) == (False, "too_long", None)
    assert len(grade.extracted) < 300 and elapsed < BOUND_S
    # megabytes: only the response's tail is scanned (rsim_env.answers.extract.MAX_SCAN), where no box opens
    grade, elapsed = _timed(p, boxed("a, " * 2_000_000))
    assert (grade.correct, grade.reason) == (False, "no_answer") and elapsed < BOUND_S


def test_deeply_nested_brackets_crash_the_scorer_not_the_caller():
    p = problem("propositional_logic")
    grade, elapsed = _timed(p, boxed("(" * 2000 + "P" + ")" * 2000))
    assert not grade.correct and grade.reason == "scorer_error" and elapsed < BOUND_S
    assert RG.grade(p, boxed("P")).reason == "ok"  # the pool still works


def test_python_code_never_reaches_a_scorer_that_evals_the_answer(tmp_path):
    marker = tmp_path / "ran"
    p = problem("spiral_matrix")
    grade = RG.grade(p, boxed(f"__import__('pathlib').Path({str(marker)!r}).touch()"))
    assert (grade.correct, grade.reason) == (False, "refused") and not marker.exists()
    as_list = "[" + ", ".join(p.answer.split()) + "]"  # a literal: eval is harmless, the scorer's 0.1 is paid
    assert RG.grade(p, boxed(as_list)).fraction == 0.1


@pytest.mark.parametrize("text,safe", [
    ("[1, -2.5, 'a', (3,)]", True), ("1 2 3", True), ("{'a': [1]}", True), ("not python (", True),
    ("__import__('os')", False), ("[x for x in ()]", False), ("9**9**9", False), ("  (lambda: 1)()", False),
    ("\n[].__class__", False), ("f'{1}'", False),
], ids=lambda x: repr(x)[:24])
def test_the_eval_guard_passes_only_literals_and_non_python(text, safe):
    assert literal_only(text) is safe


def test_a_scorer_that_hangs_is_cut_off_with_timeout(monkeypatch):
    pool = WorkerPool(max_workers=2, argv=(sys.executable, "-m", "tests.fake_rg_worker"))
    monkeypatch.setattr(rgym, "_POOL", pool)
    try:
        p = problem("word_sorting")
        grade, elapsed = _timed(p, boxed("SLOW"), answers.CheckConfig(timeout_s=1.0))
        assert (grade.correct, grade.reason, grade.fraction) == (False, "timeout", None) and elapsed < BOUND_S
        assert RG.grade(p, boxed(p.answer)).correct  # a fresh worker took over
    finally:
        pool.close()


def test_no_answer_is_no_answer():
    p = problem("word_sorting")
    for steps in ([], ["I think the words are sorted."], ["\\boxed{}"]):
        assert (RG.grade(p, steps).reason, RG.grade(p, steps).correct) == ("no_answer", False)


@pytest.mark.parametrize("response,want", [
    ("so \\boxed{\\text{Yes}}.", "Yes"), ("<answer> a, b </answer>", "a, b"), ("The answer is No.", "No"),
    ("\\boxed{\\text{a} and \\text{b}}", "\\text{a} and \\text{b}"), ("no answer here", None),
], ids=repr)
def test_extraction_takes_the_final_slot_and_drops_only_a_whole_text_wrapper(response, want):
    assert rgym.extract(response) == want
