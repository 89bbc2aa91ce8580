"""Code problems in the env: loaders on fixtures, procedural tasks, HumanEval from its package,
and a mixed math + code EnvGroup episode with hand-computed rewards."""

from pathlib import Path

import pytest

from rsim_env import EnvGroup, Problem, kinds
from rsim_env.code import default_executor
from rsim_env.sources.humaneval import prompt_helpers
from rsim_env.sources.mbpp import main_function
from rsim_env.sources.data import load_problems
from rsim_env.sources.code_tasks import FAMILIES, code_tasks
from rsim_env.grading import grade
from rsim_env.kinds.code import pending_runs
from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")

FIX = Path(__file__).parent / "fixtures" / "datasets"


def _run_references(problems):
    jobs = [dict(program=p.answer, tests=p.tests, entry_point=p.entry_point, timeout_s=10) for p in problems]
    return default_executor().run_many(jobs)


def test_mbpp_full_layout_and_references_pass():
    ps = load_problems(str(FIX / "mbpp.jsonl"), kind="mbpp")
    assert [(p.id, p.entry_point) for p in ps] == [("mbpp/11", "remove_Occ"), ("mbpp/17", "square_perimeter")]
    assert 'assert remove_Occ("hello","l") == "heo"' in ps[0].question and ps[0].kind == "code"
    assert [r.reason for r in _run_references(ps)] == ["ok", "ok"]


def test_mbpp_sanitized_layout_keeps_test_imports():
    ps = load_problems(str(FIX / "mbpp_sanitized.json"), kind="mbpp")
    assert ps[1].tests.startswith("import heapq as hq\n")
    assert [r.reason for r in _run_references(ps)] == ["ok", "ok"]


def test_codealpaca_keeps_rows_with_a_function_and_says_its_tests_are_weak():
    ps = load_problems(str(FIX / "code_alpaca_20k.json"), kind="codealpaca")
    assert [p.entry_point for p in ps] == ["add", "reverse"]  # the HTML row has no function
    assert "Input: s = 'abc'" in ps[1].question and all(p.metadata["weak_tests"] for p in ps)
    assert [r.reason for r in _run_references(ps)] == ["ok", "ok"]


def test_humaneval_hub_layout_file():
    (p,) = load_problems(str(FIX / "humaneval.jsonl"), kind="humaneval")
    assert (p.id, p.entry_point, p.kind) == ("HumanEval/fixture-0", "twice", "code")
    assert [r.reason for r in _run_references([p])] == ["ok"]


def test_humaneval_ships_164_problems_and_sampled_references_pass():
    ps = load_problems("humaneval")
    assert len(ps) == 164 and len({p.id for p in ps}) == 164
    sample = [p for p in ps if p.id in {"HumanEval/0", "HumanEval/32", "HumanEval/38", "HumanEval/50",
                                         "HumanEval/100", "HumanEval/163"}]
    assert [r.reason for r in _run_references(sample)] == ["ok"] * 6
    for p in sample:
        wrong = f"def {p.entry_point}(*args, **kwargs):\n    return None\n"
        assert default_executor().execute(wrong, p.tests, p.entry_point, 10).reason == "failed", p.id


def test_prompt_helpers_drop_only_the_entry_point():
    prompt = "import math\n\ndef helper(x):\n    return x\n\n@staticmethod\ndef f(x):\n    \"\"\"doc\"\"\"\n"
    assert prompt_helpers(prompt, "f") == "import math\n\ndef helper(x):\n    return x\n\n"
    assert main_function("import os\ndef a(): pass\ndef b(): pass\n") == "b" and main_function("x = (") is None


def test_factory_specs_for_code_and_mixtures(tmp_path):
    assert [p.kind for p in load_problems("code_tasks", 3, seed=1)] == ["code"] * 3
    mixed = load_problems("mix:tiny,code_tasks", 2)
    assert [p.kind for p in mixed] == ["math", "code", "math", "code"]
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(__import__("json").dumps(p.to_dict()) + "\n" for p in mixed))
    assert load_problems(str(path)) == mixed  # code problems round-trip through the generic JSONL form
    with pytest.raises(ValueError, match="two comma-separated"):
        load_problems("mix:tiny")


@pytest.mark.parametrize("bad,match", [({"families": ("nope",)}, "unknown"), ({"size": 0}, "size")],
                         ids=["family", "size"])
def test_code_tasks_errors(bad, match):
    with pytest.raises(ValueError, match=match):
        code_tasks(**bad)


def test_code_tasks_are_deterministic_and_every_family_reference_passes():
    a, b = code_tasks(len(FAMILIES) * 2, seed=3), code_tasks(len(FAMILIES) * 2, seed=3)
    assert [p.tests for p in a] == [p.tests for p in b] and a[0].tests != code_tasks(1, seed=4)[0].tests
    assert {p.metadata["family"] for p in a} == set(FAMILIES)
    assert [r.reason for r in _run_references(a)] == ["ok"] * len(a)


@pytest.mark.parametrize("kind,kwargs,match", [
    ("code", {"tests": ""}, "check"), ("code", {"tests": "def check(c):\n    assert c\n", "entry_point": "a b"},
                                         "entry_point"), ("poem", {}, "kind")], ids=["no-tests", "entry", "kind"])
def test_code_problem_validation(kind, kwargs, match):
    problem = Problem("x", "q", "", kind=kind, **kwargs)  # plain data; the kind check is rsim_env.kinds.validate
    with pytest.raises(ValueError, match=match):
        kinds.validate(problem)


DOUBLE = Problem("double", "Write double(x).", "", kind="code", entry_point="double",
                 tests="def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(0) == 0\n"
                       "    assert candidate(-1) == -2\n")
SUM = Problem("sum", "What is 2 + 3?", "5", "number")


@pytest.mark.parametrize("final,acc,fmt,reason,fraction", [
    ("The answer is this program:\n```python\ndef double(x):\n    return 2 * x\n```", 1.0, 1.0, "ok", 1.0),
    ("```python\ndef double(x):\n    return x + 2\n```", 0.0, 1.0, "failed", 1 / 3),
    ("def double(x):\n    return x * 2", 1.0, 1.0, "ok", 1.0),  # no fence: the whole step
    ("The answer is: double each number.", 0.0, 0.0, "syntax_error", 0.0),  # prose does not parse
    ("```bash\necho 4\n```", 0.0, 0.0, "no_program", 0.0),
    ("```python\ndef double(x):\n    return x * 2\n```\nSo \\boxed{4}.", 1.0, 1.0, "ok", 1.0),
    ("```python\ndef double(x):\n    return x * 2\n``` \\boxed{4}", 0.0, 0.0, "syntax_error", 0.0),
], ids=["correct", "wrong", "bare-code", "prose", "other-language", "text-after-code", "text-on-fence-line"])
def test_code_grade(final, acc, fmt, reason, fraction):
    g = grade(DOUBLE, ["Plan first.", final])
    assert (float(g.correct), g.format, g.reason) == (acc, fmt, reason)
    assert g.fraction == pytest.approx(fraction)


def test_mixed_math_and_code_envgroup_episode_with_hand_computed_rewards():
    group = EnvGroup([SUM, DOUBLE], group_size=2, max_steps=4)
    group.reset(seed=0)
    script = [
        # copies: 0, 1 play SUM (math); 2, 3 play DOUBLE (code)
        ("planner", [8, 1, 8, 1]),
        ("reasoner", ["So the answer is \\boxed{5}.", "Break it into parts: 2 and 3, so 2 + 3 = 5.",
                      "The answer is this program:\n```python\ndef double(x):\n    return 2 * x\n```",
                      "First, break the task into sub-problems."]),
        ("planner", [8, 8]),
        ("reasoner", ["The answer is \\boxed{6}.",
                      "The answer is this program:\n```python\ndef double(x):\n    return x + 2\n```"]),
    ]
    for agent, actions in script:
        due, ids, _ = group.observe()
        assert due == agent and len(ids) == len(actions)
        group.step(actions)
    assert group.done
    res = group.results()
    # planner R_p = acc + terminal + penalty; reasoner R = acc + format + follow, where follow counts only the
    # steps before the answer step (which earns none of its own) that add content (rsim_env.novelty)
    # copy 0: plans [8]    -> terminal +1, penalty -1/1;  math right, boxed, no step to follow -> follow 0
    # copy 1: plans [1, 8] -> terminal +1, penalty -1/2;  math wrong (6), boxed, step 1 decomposes, adds 5 -> 1
    # copy 2: plans [8]    -> +1, -1;  all 3 tests pass, program parses, follow 0
    # copy 3: plans [1, 8] -> +1, -1/2;  1 of 3 tests pass (x + 2 is right only at 2), parses; step 1 only
    #         restates the decomposition instruction (no word the context lacks) -> vacuous, follow 0
    expected = [(1 + 1 - 1, 1 + 1 + 0), (0 + 1 - 0.5, 0 + 1 + 1), (1 + 1 - 1, 1 + 1 + 0), (0 + 1 - 0.5, 0 + 1 + 0)]
    got = [(r["rewards"]["planner"], r["rewards"]["reasoner"]) for r in res]
    assert [x for pair in got for x in pair] == pytest.approx([x for pair in expected for x in pair])
    assert [r["info"]["kind"] for r in res] == ["math", "math", "code", "code"]
    assert [r["info"]["correct"] for r in res] == [True, False, True, False]
    assert res[3]["info"]["tests_fraction"] == pytest.approx(1 / 3) and res[0]["info"]["tests_fraction"] is None
    assert res[3]["info"]["reason"] == "failed" and res[3]["info"]["extracted"].startswith("def double")
    assert pending_runs() == 0  # every prefetched sandbox run was consumed by its episode


def test_group_runs_each_distinct_program_once_and_grades_every_copy(monkeypatch):
    ex = default_executor()
    submitted = []
    real = ex.submit
    monkeypatch.setattr(ex, "submit", lambda *a, **k: (submitted.append(a[0]), real(*a, **k))[1])
    group = EnvGroup([DOUBLE], group_size=4, max_steps=2)
    group.reset(seed=0)
    group.step([8] * 4)
    right, wrong = "def double(x):\n    return 2 * x", "def double(x):\n    return x"
    group.step([f"```python\n{p}\n```" for p in (right, wrong, right, right)])
    assert sorted(submitted) == sorted([right, wrong])
    assert [r["info"]["correct"] for r in group.results()] == [True, False, True, True]
    assert pending_runs() == 0
