"""A hostile answer must not delay an innocent one; checker failures have reasons.

Scheduling is tested with a fake worker whose "bomb" blocks without using CPU (so the test is
cheap and exact); one test runs real sympy bombs through ``check``. Assertions are on outcomes
(which call finished while which was still running, and with what reason), never on wall times;
latency figures live in ``benchmarks/grading/answer_check.py``.
"""

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from rsim_env.answers import REASONS, CheckConfig, check, reason_counts
from rsim_env.answers.sandbox import PoolBusy, ProtocolError, WorkerCrashed, WorkerPool, WorkerTimeout

FAKE = (sys.executable, "-m", "tests.fake_answer_worker")


def _wait_busy(pool, n, limit_s=120.0):
    end = time.monotonic() + limit_s
    while pool.stats()["busy"] < n:
        assert time.monotonic() < end, f"bombs never occupied {n} workers: {pool.stats()}"
        time.sleep(0.01)


def test_bombs_do_not_delay_innocent_calls():
    pool = WorkerPool(max_workers=20, argv=FAKE)
    with ThreadPoolExecutor(max_workers=20) as ex:
        bombs = [ex.submit(pool.run, {"mode": "sleep"}, 600.0) for _ in range(12)]
        _wait_busy(pool, 12)
        innocent = [ex.submit(pool.run, {"mode": "ok"}, 600.0) for _ in range(6)]
        replies = [f.result(timeout=300) for f in innocent]
        still_running = [not b.done() for b in bombs]
        pool.close()  # end the bombs now instead of after their 600 s bound
        bomb_errors = [b.exception(timeout=60) for b in bombs]
    assert all(r["reason"] == "ok" for r in replies)
    assert all(still_running), "an innocent call waited until a bomb finished"
    assert all(isinstance(e, WorkerCrashed) for e in bomb_errors)  # killed by close(), said so


def test_queue_wait_counts_against_the_deadline_and_is_reported_as_overloaded():
    pool = WorkerPool(max_workers=1, argv=FAKE)
    with ThreadPoolExecutor(max_workers=2) as ex:
        bomb = ex.submit(pool.run, {"mode": "sleep"}, 600.0)
        _wait_busy(pool, 1)
        with pytest.raises(PoolBusy) as exc:
            pool.run({"mode": "ok"}, 0.2)
        assert not bomb.done()
        pool.close()
        assert isinstance(bomb.exception(timeout=60), WorkerCrashed)
    assert exc.value.reason == "overloaded"


@pytest.mark.parametrize("mode,error,reason", [
    ("sleep", WorkerTimeout, "timeout"), ("garbage", ProtocolError, "protocol_error"),
    ("die", WorkerCrashed, "worker_crashed"),
], ids=["timeout", "protocol", "crash"])
def test_each_failure_has_its_own_reason_and_the_pool_recovers(mode, error, reason):
    pool = WorkerPool(max_workers=2, argv=FAKE)
    try:
        with pytest.raises(error) as exc:
            pool.run({"mode": mode}, 0.5 if mode == "sleep" else 60.0)
        assert exc.value.reason == reason and reason in REASONS
        assert pool.run({"mode": "ok"}, 60.0)["reason"] == "ok"  # a fresh worker took its place
        assert pool.stats()["alive"] <= 2
    finally:
        pool.close()


def test_worker_that_cannot_start_is_a_crash_not_a_timeout():
    pool = WorkerPool(max_workers=1, argv=(sys.executable, "-c", "raise SystemExit(1)"))
    with pytest.raises(WorkerCrashed):
        pool.run({"mode": "ok"}, 5.0)
    assert pool.stats()["alive"] == 0


def test_real_bombs_and_innocent_checks_from_threads():
    # Real sympy bombs (each holds its worker until its own 10 s bound) next to ordinary checks.
    bomb_cfg, cfg = CheckConfig(timeout_s=10.0), CheckConfig(timeout_s=60.0)
    bombs = ["\\boxed{((a+b)(a-b))^{300}}", "\\boxed{((a+b+c)(a-b-c))^{300}}", "\\boxed{((a+b)(a+c))^{200}}"]
    gold = {0: "(a^2-b^2)^{300}", 1: "(a^2-(b+c)^2)^{300}", 2: "(a^2+ab+ac+bc)^{200}"}
    innocent = [("\\boxed{2\\sqrt{2}}", "\\sqrt{8}", True), ("\\boxed{(x+1)^2}", "x^2+2x+1", True),
                ("\\boxed{\\sqrt{3}}", "\\sqrt{2}", False), ("\\boxed{1-\\cos^2 x}", "\\sin^2 x", True)]
    check("\\boxed{\\sqrt2}", "\\sqrt2")  # start the pool
    order, lock = [], threading.Lock()

    def run(tag, *args):
        result = check(*args)
        with lock:
            order.append(tag)
        return result

    with ThreadPoolExecutor(max_workers=8) as ex:
        fb = [ex.submit(run, ("bomb", i), b, gold[i], "auto", bomb_cfg) for i, b in enumerate(bombs)]
        fi = [ex.submit(run, ("innocent", i), r, g, "auto", cfg) for i, (r, g, _) in enumerate(innocent)]
        results, bomb_results = [f.result() for f in fi], [f.result() for f in fb]
    assert [(r.correct, r.reason) for r in results] == [(e, "ok") for _, _, e in innocent]
    # each bomb is an equal-valued pair, so a worker fast enough to finish within the bound may prove
    # it (correct, "ok"); otherwise it times out — never a wrong verdict either way
    assert all((r.correct and r.reason == "ok") or (not r.correct and r.reason in ("timeout", "sympy_error"))
               for r in bomb_results), bomb_results
    timed_out = [("bomb", i) for i, r in enumerate(bomb_results) if r.reason == "timeout"]
    assert timed_out, "no bomb ran to its bound; the test proves nothing"
    last_innocent = max(order.index(("innocent", i)) for i in range(len(innocent)))
    assert all(order.index(t) > last_innocent for t in timed_out), f"an innocent check waited for a bomb: {order}"


def test_reason_counts_has_fixed_keys():
    infos = [{"reason": "ok"}, {"reason": "timeout"}, {"reason": "ok"}, {"reason": "code_error"}, {}]
    counts = reason_counts(infos)
    assert list(counts) == [*REASONS, "other"]
    assert (counts["ok"], counts["timeout"], counts["other"], counts["overloaded"]) == (2, 1, 2, 0)


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_pool_size_env_var_is_validated(monkeypatch, value):
    from rsim_env.answers import sandbox

    monkeypatch.setattr(sandbox, "_POOL", None)
    monkeypatch.setenv(sandbox.POOL_SIZE_ENV, value)
    with pytest.raises(ValueError, match="RSIM_ANSWER_WORKERS"):
        sandbox.default_pool()


@pytest.mark.skipif(not hasattr(__import__("os"), "getpriority"), reason="needs Unix priorities")
def test_long_request_is_demoted_then_retired():
    import os

    from rsim_env.answers import sandbox

    pool = WorkerPool(max_workers=2, argv=FAKE)
    try:
        reply = pool.run({"mode": "slow"}, 60.0)
        assert reply["reason"] == "ok" and reply["nice"] >= sandbox.DEMOTED_NICE
        with pytest.raises(ProcessLookupError):  # the demoted worker was killed, not reused
            os.kill(reply["pid"], 0)
        assert pool.run({"mode": "ok"}, 60.0)["pid"] != reply["pid"]
    finally:
        pool.close()


def test_the_worker_warms_up_on_a_check_that_runs_the_whole_path():
    """A new worker decides WARM_UP before it says ready, so its first real check is not charged for the lazy
    imports (about 0.5 s, past the pool's demotion threshold). The warm-up must run the full symbolic path:
    an equal pair the parser and sympy both decide, not one refused early."""
    from rsim_env.answers import worker

    assert [worker.handle(dict(req)) for req in worker.WARM_UP] == [{"correct": True, "reason": "ok"}] * len(worker.WARM_UP)
