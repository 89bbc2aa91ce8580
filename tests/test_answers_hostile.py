"""Hostile inputs: no hang, no crash, no code execution, from any thread, within the time bound."""

import builtins
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from benchmarks.grading.answer_check import HOSTILE
from rsim_env.answers import REASONS, CheckConfig, check

CANARY = "/tmp/rsim_answers_canary"


@pytest.mark.parametrize("name,response,gold", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_input_is_rejected(name, response, gold):
    result = check(response, gold)
    assert result.correct is False
    assert result.reason in ("no_answer", "unparsable", "too_large", "timeout", "hedged", "ok", "sympy_error")
    assert result.reason in REASONS


def test_injection_canary_never_fires():
    builtins._rsim_canary = False
    if os.path.exists(CANARY):
        os.remove(CANARY)
    payloads = [f"__import__('os').system('touch {CANARY}')", "setattr(__builtins__, '_rsim_canary', True)",
                f"open('{CANARY}', 'w')", "exec('import builtins; builtins._rsim_canary = True')"]
    for p in payloads:
        for gold in ("0", "x", "\\sqrt{2}"):
            assert check(f"\\boxed{{{p}}}", gold).correct is False
            assert check(f"The answer is {p}", gold).correct is False
    assert not os.path.exists(CANARY)
    assert builtins._rsim_canary is False


def test_sympy_part_times_out_and_worker_recovers():
    # A tiny bound forces the worker path to time out; the next check must still work.
    slow = check("\\boxed{\\sin(x)^2+\\cos(x)^2}", "1", config=CheckConfig(timeout_s=0.001))
    assert (slow.correct, slow.reason) == (False, "timeout")
    assert check("\\boxed{\\sin(x)^2+\\cos(x)^2}", "1").correct


def test_checks_from_thread_pool():
    cases = [("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True), ("\\boxed{9^9^9^9}", "1", False),
             ("\\boxed{(x+1)^2}", "x^2+2x+1", True), ("\\boxed{72}", "71", False)] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda c: check(c[0], c[1]).correct, cases))
    assert results == [c[2] for c in cases]


def test_rsim_env_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['transformers'] = None\n"
            "import rsim_env.answers, rsim_env.sources.loaders\n"
            "from rsim_env.answers import check\n"
            "assert check('\\\\boxed{\\\\sqrt{8}}', '2\\\\sqrt{2}').correct\n"
            "assert 'datasets' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
