"""The sandbox's verdicts on ordinary programs, the wire format, and the extraction rule."""

import math

import pytest

from rsim_env.code import REASONS, Executor, SandboxConfig, execute, extract_program, pairs_to_check, program_parses
from rsim_env.code.harness_checker import instrument
from rsim_env.code.wire import WireError, decode, encode
from tests.sandbox import module_opt_in  # noqa: F401 - code problems: bubblewrap, else the explicit opt-in

pytestmark = pytest.mark.usefixtures("module_opt_in")

ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 4\n    assert candidate(0, 0) == 0\n"


@pytest.fixture(scope="module")
def ex():
    e = Executor(SandboxConfig(memory_mb=256))
    yield e
    e.close()


@pytest.mark.parametrize("program,reason,fraction", [
    ("def solution(a, b):\n    return a + b\n", "ok", 1.0),
    ("def solution(a, b):\n    return a * b\n", "failed", 2 / 3),  # 2*2 == 4 and 0*0 == 0 pass, 1*2 fails
    ("def solution(a, b):\n    raise ValueError('no')\n", "failed", 0.0),
    ("def other(a, b):\n    return a + b\n", "crashed", 0.0),
    ("raise RuntimeError('at import')\n", "crashed", 0.0),
    ("def solution(a, b) return a\n", "syntax_error", 0.0),
    ("", "no_program", 0.0),
    (None, "no_program", 0.0),
], ids=["correct", "partly-wrong", "raises", "no-entry-point", "raises-at-import", "syntax", "blank", "none"])
def test_verdicts(ex, program, reason, fraction):
    r = ex.execute(program, ADD_TESTS, timeout_s=5)
    assert (r.reason, r.passed) == (reason, reason == "ok")
    assert math.isclose(r.fraction, fraction)
    assert r.tests_total == 3 and r.reason in REASONS


def test_module_level_execute_uses_keyword_entry_point():
    r = execute("def add(a, b):\n    return a + b\n", ADD_TESTS, timeout_s=5, entry_point="add")
    assert r.passed and r.isolation in ("bwrap", "rlimits")


def test_mbpp_style_tests_call_the_function_by_name(ex):
    tests = "def check(candidate):\n    assert remove_Occ('hello', 'l') == 'heo'\n"
    prog = "def remove_Occ(s, ch):\n    return s.replace(ch, '')\n"
    assert ex.execute(prog, tests, entry_point="remove_Occ", timeout_s=5).passed


def test_io_pairs_and_types_survive_the_boundary(ex):
    pairs = [((1, 2), (2, 1)), (([3, 1],), [1, 3]), (({"a": 1},), {1: "a"}), (("x",), {"x"}), ((2.5,), None)]
    prog = """
def solution(*args):
    x = args[0]
    if len(args) == 2: return (args[1], args[0])
    if isinstance(x, list): return sorted(x)
    if isinstance(x, dict): return {v: k for k, v in x.items()}
    if isinstance(x, str): return {x}
    return None
"""
    r = ex.execute(prog, pairs, timeout_s=5)
    assert r.passed, r
    wrong = "def solution(*args):\n    return list(args[::-1]) if len(args) == 2 else None\n"  # list != tuple
    assert ex.execute(wrong, pairs[:1], timeout_s=5).reason == "failed"


def test_candidate_exceptions_arrive_as_the_same_builtin_type(ex):
    tests = ("def check(candidate):\n    try:\n        candidate(-1)\n        assert False\n"
             "    except ValueError:\n        pass\n")
    assert ex.execute("def solution(x):\n    raise ValueError('neg')\n", tests, timeout_s=5).passed
    assert ex.execute("def solution(x):\n    raise KeyError('neg')\n", tests, timeout_s=5).reason == "failed"


def test_setup_statement_failure_aborts_the_rest(ex):
    tests = "def check(candidate):\n    assert candidate(1) == 1\n    x = candidate(2)\n    assert x == 99\n"
    r = ex.execute("def solution(x):\n    return x\n", tests, timeout_s=5)
    assert (r.reason, r.tests_passed, r.tests_total) == ("failed", 1, 2)
    r = ex.execute("def solution(x):\n    if x == 2: raise ValueError\n    return x\n", tests, timeout_s=5)
    assert r.reason == "failed" and "ValueError" in r.detail


def test_run_many_returns_results_in_order(ex):
    jobs = [{"program": f"def solution(a, b):\n    return a + b + {k}\n", "tests": ADD_TESTS, "timeout_s": 5}
            for k in (0, 1, 0)]
    assert [r.passed for r in ex.run_many(jobs)] == [True, False, True]


@pytest.mark.parametrize("tests,match", [
    ("assert True\n", "no top-level"),
    ("def check(candidate):\n    pass\n", "no assert"),
    ("def check(candidate) pass", "parse"),
    ([], "non-empty"),
    ([((1,), object())], "literal"),
], ids=["no-check", "no-assert", "syntax", "no-pairs", "non-literal-pair"])
def test_bad_tests_raise_clear_errors(ex, tests, match):
    with pytest.raises(ValueError, match=match):
        ex.execute("def solution(): pass\n", tests)


@pytest.mark.parametrize("kwargs,match", [
    ({"timeout_s": 0}, "timeout_s"), ({"entry_point": "not valid"}, "identifier"),
], ids=["timeout", "entry-point"])
def test_bad_arguments_raise(ex, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ex.execute("def solution(): pass\n", ADD_TESTS, **kwargs)


@pytest.mark.parametrize("field,value", [("memory_mb", 0), ("max_parallel", -1), ("isolation", "docker"),
                                         ("uid_count", 2)], ids=["memory", "parallel", "isolation", "uids"])
def test_config_validation(field, value):
    with pytest.raises(ValueError, match=field):
        SandboxConfig(**{field: value})


def test_instrument_counts_test_statements():
    src = "def check(candidate):\n    x = 1\n    assert candidate(x)\n    for i in range(3):\n        assert candidate(i)\n"
    assert instrument(src)[1] == 2
    assert pairs_to_check([((1, [2]), 3), ("x", None)]) == (
        "def check(candidate):\n    assert candidate(1, [2]) == 3\n    assert candidate('x') == None\n")


@pytest.mark.parametrize("value", [None, True, 3, -2.5, float("inf"), "é\n", b"\x00\xff", 1 + 2j, [1, (2, 3)],
                                   {"a": {1: frozenset({2})}}, {(1, 2): [set()]}, 10**40],
                         ids=lambda v: type(v).__name__)
def test_wire_round_trip_keeps_exact_types(value):
    back = decode(encode(value))
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value", [object(), type("S", (str,), {})("x"), [[[[[]]]]] * 1], ids=["object", "str-sub", "ok"])
def test_wire_refuses_non_plain_data(value):
    if isinstance(value, list):
        assert decode(encode(value)) == value
        return
    with pytest.raises(WireError):
        encode(value)


def test_wire_refuses_too_deep_and_malformed():
    deep = []
    for _ in range(200):
        deep = [deep]
    with pytest.raises(WireError):
        encode(deep)
    for bad in ('{"zz": 1}', '{"a": 1, "b": 2}', "[", '{"d": [1]}', "[" * 5000 + "]" * 5000):
        with pytest.raises(WireError):
            decode(bad)


EXTRACT = [
    ("```python\ndef f():\n    return 1\n```", "def f():\n    return 1"),
    ("Here:\n```py\nx = 1\n```\nand finally\n```python\ny = 2\n```\n", "y = 2"),
    ("```\nz = 3\n```", "z = 3"),
    ("```python\ndef f(): pass\n```\n```text\noutput\n```", "def f(): pass"),
    ("```bash\nls\n```", None),
    ("def f():\n    return 2\n", "def f():\n    return 2"),
    ("~~~python\na = 1\n~~~", "a = 1"),
    ("So:\n```python\ndef f():\n    return 3", "def f():\n    return 3"),
    ("````python\ns = '```'\n````", "s = '```'"),
    ("   ", None),
    ("```python\n\n```", None),
]


@pytest.mark.parametrize("step,program", EXTRACT, ids=[
    "python-fence", "last-python-block", "untagged", "ignores-other-language", "only-other-language",
    "no-fence-whole-step", "tilde", "unclosed", "longer-fence", "blank", "empty-block"])
def test_extract_program(step, program):
    assert extract_program(step) == program


@pytest.mark.parametrize("text,ok", [
    ("def f():\n    return 1\n", True), ("The answer is 42.", False), ("def f(:", False), ("", False),
    (None, False), ("(" * 10000, False), ("x = 1\x00", False),
], ids=["function", "prose", "broken", "empty", "none", "nesting-bomb", "nul"])
def test_program_parses_never_executes(text, ok):
    assert program_parses(text) is ok


def test_configure_replaces_the_default_executor():
    from rsim_env.code import configure, default_executor

    before = default_executor()
    try:
        new = configure(SandboxConfig(isolation="rlimits", max_parallel=1))
        assert default_executor() is new and new.mode == "rlimits"
        assert execute("def solution(a, b):\n    return a + b\n", ADD_TESTS, timeout_s=5).isolation == "rlimits"
    finally:
        configure(before.cfg)
    with pytest.raises(TypeError, match="SandboxConfig"):
        configure({"isolation": "rlimits"})
