"""A real OpenAI-compatible inference server in the loop: llama.cpp's server (``agents.llamacpp.server``).

Fast tests drive :class:`agents.llamacpp.server.LlamaServer` with a stand-in process (readiness poll, the log,
SIGKILL after an ignored SIGTERM, a failed start). The ``slow`` ones start ``python -m llama_cpp.server`` on the
embedded GGUF and run ``rsim eval`` through it under the default protocol, then break things: the server is
killed and restarted mid-evaluation (the client retries, the retries are counted, nothing is lost), killed
for good (the evaluation stops in one line; the rerun resumes from its journal), a client rendering with
another model's tokenizer (refused in one line by the server's own token counts) and a chat-only server
(refused in one line). Then the planner against the served model: ``rsim train --learner planner_only`` with the
served reasoner, and the Gymnasium planner view playing scripted plans through it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import sys
import threading
import time
from pathlib import Path

import pytest

from agents.llamacpp.server import LlamaServer, LlamaServerConfig, ServerStartError, free_port

# --------------------------------------------------------------------------- the process manager, no model

STANDIN = """
import json, signal, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a server that does not stop when asked
port = int(sys.argv[sys.argv.index("--port") + 1])
alias = sys.argv[sys.argv.index("--model_alias") + 1]
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        body = json.dumps({"data": [{"id": alias}]}).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
print("stand-in up", flush=True)
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


@pytest.fixture
def standin(tmp_path: Path) -> LlamaServerConfig:
    """A config whose "python" is a script that ignores ``-m llama_cpp.server`` and serves ``/v1/models`` only."""
    code = tmp_path / "standin.py"
    code.write_text(STANDIN)
    exe = tmp_path / "python"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {code} \"$@\"\n")
    exe.chmod(0o755)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    return LlamaServerConfig(model=str(gguf), python=str(exe), stop_timeout_s=0.5, startup_timeout_s=30,
                             log_path=str(tmp_path / "server.log"))


def test_start_waits_for_the_model_list_and_a_stubborn_server_is_killed(standin):
    server = LlamaServer(standin)
    with server:
        assert server.running() and server.models() == ["default"] and server.url.endswith(f":{server.port}/v1")
        cmd = server.command()
        assert cmd[1:3] == ["-m", "llama_cpp.server"] and cmd[cmd.index("--model_alias") + 1] == "default"
        assert cmd[cmd.index("--last_n_tokens_size") + 1] == "0"  # no repeat penalty: rSIM's reasoners apply none
        pid = server.proc.pid
    assert not server.running() and server.proc is None  # SIGTERM ignored: killed after stop_timeout_s
    with pytest.raises(ProcessLookupError):
        import os

        os.kill(pid, 0)
    assert "stand-in up" in Path(standin.log_path).read_text()


def test_restart_keeps_the_port(standin):
    with LlamaServer(standin) as server:
        port = server.port
        server.kill()
        assert server.models() is None
        server.start()
        assert server.port == port and server.models() == ["default"] and server.starts == 2


def test_a_server_left_running_dies_with_its_owner(standin):
    """Its own session keeps the terminal's Ctrl-C away from the server, so the owner's exit must stop it."""
    import os
    import subprocess

    prog = ("import sys; from agents.llamacpp.server import LlamaServer, LlamaServerConfig\n"
            f"s = LlamaServer(LlamaServerConfig(model={standin.model!r}, python={standin.python!r})).start()\n"
            "print(s.proc.pid, flush=True)\n")  # exits without stop()
    out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    pid = int(out.stdout.split()[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_served_counts_answered_requests_in_the_access_log(tmp_path):
    """The server's own count of what it answered: uvicorn's access lines for the path with status 200."""
    log = tmp_path / "s.log"
    log.write_text('INFO:     127.0.0.1:1 - "GET /v1/models HTTP/1.1" 200 OK\n'
                   'INFO:     127.0.0.1:2 - "POST /v1/completions HTTP/1.1" 200 OK\n'
                   'INFO:     127.0.0.1:3 - "POST /v1/completions HTTP/1.1" 500 Internal Server Error\n'
                   'INFO:     127.0.0.1:4 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                   'INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK\n')
    server = LlamaServer(LlamaServerConfig(log_path=str(log)))
    assert server.served() == 2 and server.served("/v1/chat/completions") == 1
    assert LlamaServer(LlamaServerConfig(log_path=str(tmp_path / "none.log"))).served() == 0


def test_a_server_that_exits_names_its_log(tmp_path):
    exe = tmp_path / "python"
    exe.write_text("#!/bin/sh\necho 'error loading model: bad magic' >&2\nexit 3\n")
    exe.chmod(0o755)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    server = LlamaServer(LlamaServerConfig(model=str(gguf), python=str(exe), log_path=str(tmp_path / "s.log")))
    with pytest.raises(ServerStartError, match=r"exited with code 3(.|\n)*bad magic") as e:
        server.start()
    assert str(tmp_path / "s.log") in str(e.value)


@pytest.mark.parametrize("kw,match", [({"port": 70000}, "port"), ({"n_ctx": 0}, "n_ctx"),
                                      ({"startup_timeout_s": 0}, "startup_timeout_s"), ({"repeat_window": -1}, "repeat_window"),
                                      ({"model": "/nowhere/x.gguf"}, "not an existing .gguf")],
                         ids=["port", "n_ctx", "timeout", "repeat", "model"])
def test_config_errors_name_the_field(kw, match):
    with pytest.raises(ValueError, match=match):
        LlamaServer(LlamaServerConfig(**kw)).command()


def test_free_port_is_bindable():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))


# --------------------------------------------------------------------------- the real server (slow)

EVAL_ARGS = ["--data", "curriculum:heldout", "--limit", "4", "--batch", "2", "--modes", "fixed:3,8",
             "--set", "env.max_steps=2", "--set", "reasoner.max_step_tokens=48", "--max-answer-tokens", "144", "--no-plots", "--no-progress"]
"""Four held-out problems under the plan fixed:3,8 (two rounds), the default protocol chat+lead: two batches."""


def _real_config(tmp: Path) -> LlamaServerConfig:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    for mod in ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        pytest.importorskip(mod, reason="llama_cpp.server's dependencies are not installed (pip install 'rsim[server]')")
    from agents.embedded import fetched_gguf_path

    if not fetched_gguf_path().is_file():
        pytest.skip("embedded GGUF not fetched (python -m agents.embedded)")
    return LlamaServerConfig(n_threads=1, log_path=str(tmp / "llama_server.log"))


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    with LlamaServer(_real_config(tmp_path_factory.mktemp("server"))) as server:
        yield server


@pytest.fixture(scope="module")
def served_eval(real, tmp_path_factory):
    """``rsim eval`` through the real server, uninterrupted: the reference of the fault tests."""
    from algos.evaluation import main as evaluate

    out = tmp_path_factory.mktemp("eval") / "served"
    t0 = time.perf_counter()
    res = evaluate(["--reasoner", f"openai:default@{real.url}", *EVAL_ARGS, "--out", str(out)])
    return res, out, time.perf_counter() - t0


def _episodes(out: Path) -> list[dict]:
    rows = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    return sorted(rows, key=lambda r: (r["mode"], r["problem_id"]))


def _played(out: Path) -> list[tuple]:
    """Which episodes were played to the end, not what they wrote: llama_cpp.server's greedy text is not
    reproducible across restarts. It reuses the previous request's KV prefix, so a prompt is read in other chunks
    after a restart, and the changed floating-point order flips near-tie digits of this 4-bit model (seen:
    ``30}.`` vs ``6}.``; docs/serving.md)."""
    return [(r["problem_id"], len(r["steps"]), r["rounds"]) for r in _episodes(out)]


def _journaled(out: Path) -> list[dict]:
    from algos.evaluation.journal import NAME

    return [row for line in (out / NAME).read_text().splitlines()[1:] for row in json.loads(line)["rows"]]


@pytest.mark.slow
def test_rsim_eval_default_protocol_through_llama_cpp_server(served_eval):
    res, out, wall = served_eval
    assert res["reasoner"]["kind"] == "openai" and res["reasoner"]["endpoint"] == "auto"
    assert (out / "results.json").is_file() and (out / "table.md").is_file()
    rows = _episodes(out)
    assert len(rows) == 4 and all(len(r["steps"]) == 2 for r in rows)
    assert all(r["tokens"]["reasoner_read"] > 0 and r["tokens"]["reasoner_written"] > 0 for r in rows)
    # the default protocol's lead-in reached the server: every final step states a boxed answer
    assert sum(r["extracted"] is not None for r in rows) >= 3, [r["steps"] for r in rows]
    usage = res["reasoner"]["usage"]
    assert usage["requests"] == 8 and usage["retries"] == 0 and usage["prompt_tokens"] > 0
    print(f"served eval: {wall:.1f} s", [r["steps"] for r in rows])


def _when_batches(out: Path, n: int, action, timeout_s: float = 300.0) -> threading.Thread:
    """Run ``action()`` in a thread once the evaluation under ``out`` has journaled ``n`` finished batches."""
    from algos.evaluation.journal import NAME

    def wait() -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if (out / NAME).is_file() and len((out / NAME).read_bytes().splitlines()) > n:
                action()
                return
            time.sleep(0.02)

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    return t


@pytest.mark.slow
def test_server_killed_and_restarted_mid_eval_the_client_retries(served_eval, tmp_path, caplog):
    from algos.evaluation import main as evaluate

    _, reference, _ = served_eval
    out = tmp_path / "ev"
    with LlamaServer(_real_config(tmp_path)) as server:
        def crash() -> None:
            server.kill()  # SIGKILL mid-batch: requests in flight die with their connection
            time.sleep(1.0)
            server.start()

        killer = _when_batches(out, 1, crash)
        with caplog.at_level(logging.WARNING, logger="agents.served.reasoner"):
            res = evaluate(["--reasoner", f"openai:default@{server.url}#max_retries=8", *EVAL_ARGS, "--out", str(out)])
        killer.join(60)
        assert server.starts == 2
    retries = [r for r in caplog.records if "retry" in r.getMessage()]
    assert retries and res["reasoner"]["usage"]["retries"] == len(retries)
    assert _played(out) == _played(reference)  # nothing lost
    print(f"{len(retries)} retries:", retries[0].getMessage())


@pytest.mark.slow
def test_server_gone_for_good_stops_the_eval_and_the_rerun_resumes(served_eval, tmp_path, capsys):
    from algos import cli, console

    _, reference, _ = served_eval
    out = tmp_path / "ev"
    with LlamaServer(_real_config(tmp_path)) as server:
        argv = ["eval", "--reasoner", f"openai:default@{server.url}#max_retries=1&backoff_s=0.1", *EVAL_ARGS,
                "--out", str(out)]
        killer = _when_batches(out, 1, server.kill)
        assert console.run(cli._run, argv) == 1
        killer.join(60)
        err = capsys.readouterr().err.strip().splitlines()
        assert "gave up after 2 attempts" in err[-1] and err[-1].startswith("rsim: error:")
        print(err[-1])
        assert not (out / "results.json").exists()
        kept = _journaled(out)
        server.start()
        assert console.run(cli._run, argv) == 0
    assert "1 finished batches kept" in capsys.readouterr().err
    assert _played(out) == _played(reference)
    final = {r["problem_id"]: r["steps"] for r in _episodes(out)}
    assert len(kept) == 2 and all(final[r["problem_id"]] == r["steps"] for r in kept)  # kept, not played again


@pytest.mark.slow
def test_a_server_serving_another_model_is_refused_in_one_line(tmp_path, capsys):
    """The server runs another model (a tiny random one with a byte-level vocabulary, ``tests/tiny_gguf.py``) under
    the name ``default``; the client renders SmolLM2's chat template: the server's ``usage.prompt_tokens``
    disagrees with the client's count on the first reply and the evaluation stops there."""
    from algos import cli, console
    from tests.tiny_gguf import write_tiny_gguf

    cfg = dataclasses.replace(_real_config(tmp_path), model=str(write_tiny_gguf(tmp_path / "other.gguf")))
    with LlamaServer(cfg) as server:
        argv = ["eval", "--reasoner", f"openai:default@{server.url}", *EVAL_ARGS, "--out", str(tmp_path / "ev")]
        assert console.run(cli._run, argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rsim: error:") and "prompt tokens" in err[-1] and "#tokenizer=" in err[-1], err
    assert sum(line.startswith("rsim: error") for line in err) == 1
    print(err[-1])


@pytest.mark.slow
def test_token_id_prompts_stop_the_eval_in_one_line(real, tmp_path, capsys):
    """``#token_ids=1`` sends prompts as token ids; llama_cpp.server 0.3.36 accepts only text and answers HTTP 500
    (a validation error), which the client does not retry: one line carries the server's message and says to drop
    ``#token_ids=1``. (It would not send the sampled ids back either.)"""
    from algos import cli, console

    argv = ["eval", "--reasoner", f"openai:default@{real.url}#token_ids=1&max_retries=1&backoff_s=0.1", *EVAL_ARGS,
            "--out", str(tmp_path / "ev")]
    assert console.run(cli._run, argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rsim: error:") and "HTTP 500" in err[-1] and "valid string" in err[-1], err
    assert "not retried" in err[-1] and "drop #token_ids=1" in err[-1], err
    print(err[-1])


@pytest.mark.slow
def test_a_chat_only_server_is_refused_in_one_line(tmp_path, capsys):
    """No ``/v1/completions`` (a hosted chat API): the default protocol's lead-in cannot reach it."""
    from algos import cli, console
    from tests.chat_server import ChatServer

    server = ChatServer()
    try:
        argv = ["eval", "--reasoner", f"openai:default@{server.url}", *EVAL_ARGS, "--out", str(tmp_path / "ev")]
        assert console.run(cli._run, argv) == 1
    finally:
        server.close()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("rsim: error:") and "HTTP 404" in err[-1] and "env.protocol=chat" in err[-1], err
    assert sum(line.startswith("rsim: error") for line in err) == 1
    print(err[-1])



# --------------------------------------------------------------------------- the planner against the served model

PLANNER_ONLY = ["--learner", "planner_only", "--planner", "tiny", "--data", "curriculum", "--set", "data.size=8",
                "--set", "env.max_steps=2", "--set", "train.groups_per_step=1",
                "--set", "train.grpo.group_size=4", "--set", "train.planner_optim.lr=1e-2", "--set", "reasoner.greedy=true",
                "--set", "reasoner.max_step_tokens=32", "--set", "reasoner.max_answer_tokens=48",
                "--set", "train.progress=false", "--steps", "3"]
"""Plug-in training as ``rsim train`` runs it: a tiny random planner learns, the served SmolLM2 (greedy, frozen)
writes every step; 3 steps of one group of 4 episodes of at most 2 rounds: at most 24 requests, under the default
protocol (the completions endpoint, the chat template rendered by the client)."""


@pytest.mark.slow
def test_planner_only_training_against_the_served_reasoner(real, tmp_path, capsys):
    """The plug-in route with a real server: ``rsim train --learner planner_only --reasoner openai:default@URL``.
    Only the planner's parameters change, the run writes its checkpoint, samples and summary, and every reasoner
    step of training was a request the server answered."""
    import torch
    from accelerate.utils import set_seed

    from algos.cli import build_agents, build_learner, main
    from algos.config import resolve

    spec = f"openai:default@{real.url}"
    argv = ["train", *PLANNER_ONLY, "--reasoner", spec, "--out", str(tmp_path / "po")]
    cfg = resolve(None, {"learner": "planner_only", "model.planner": "tiny", "model.reasoner": "template"})
    set_seed(cfg.train.seed)  # the tiny planner's initial weights, as the run builds them (same seed, same spec)
    before = torch.cat([p.detach().flatten() for p in
                        build_agents(cfg, build_learner(cfg), "cpu")["planner"].module.parameters()]).clone()
    served_before, t0 = real.served("/v1/completions"), time.perf_counter()
    out = main(argv)
    wall, served = time.perf_counter() - t0, real.served("/v1/completions") - served_before
    assert out["steps"] == 3 and set(out["params"]) == {"planner"}  # the served reasoner is frozen
    after = torch.cat([p.detach().flatten() for p in out["params"]["planner"].parameters()])
    assert not torch.equal(before, after), "the planner's parameters did not change"
    assert any(h.get("planner/grad_norm", 0) > 0 for h in out["history"])
    run = tmp_path / "po"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 3 and Path(out["checkpoint"]).is_dir()
    saved = json.loads((Path(out["checkpoint"]) / "config.json").read_text())
    assert saved["learner"] == "planner_only" and saved["model"]["reasoner"] == spec
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert samples and all(s["steps"] and all(isinstance(t, str) for t in s["steps"]) for s in samples)
    # 3 steps x 4 episodes x 1 or 2 rounds: each round is one request the server logged as answered
    assert 12 <= served <= 24, served
    assert f"rsim eval --planner {run} --reasoner" in capsys.readouterr().out  # the plug-in evaluation, next
    print(f"planner-only training against the served reasoner: {wall:.1f} s, {served} requests;",
          [(s["strategies"], s["steps"]) for s in samples[:2]])


@pytest.mark.slow
def test_a_reply_opening_with_a_blank_line_and_a_digit_is_not_a_tokenizer_mismatch(real):
    """The default protocol, plan (sub-planning, termination) on the first curriculum problem: after "Here is my plan:"
    the served model writes "\n\n1. 0 - 4 = ...", and the second request carries it. Same tokenizer (the GGUF's own
    vocabulary, the same chat template), one token apart: llama.cpp's 'smollm' pre-tokenizer reads a blank line before
    a digit as one token where the HF tokenizer reads two. Only a conversation's first prompt (no model text) must
    count the same; this one holds the model's reply, so the episode goes on."""
    import gymnasium

    import rsim_env  # noqa: F401
    from rsim_env.sources.data import load_problems
    from rsim_env.strategies import TERMINATION

    problem = load_problems("curriculum", limit=1, seed=0)[0]
    env = gymnasium.make("rsim/Planner-v0", reasoner=f"openai:default@{real.url}#max_step_tokens=32",
                         problems=[problem], max_steps=3)
    env.reset(options={"problem": problem})
    *_, info = env.step(7)  # sub-planning: "Here is my plan:"
    if not re.match(r"\d", info["step"]):  # the step is shown stripped; the reply opened with "\n\n" before it
        pytest.skip(f"the served model did not open with a numbered list this time: {info['step'][:40]!r}")
    *_, info = env.step(TERMINATION)  # counted 155 by the server, 156 here: logged once, not refused
    assert len(info["steps"]) == 2


GYM_PLANS = [(1, 8), (3, 8), (8,), (4, 6, 8)]
"""Scripted plans, one per episode (8 = termination: the final-answer round); the longest fills max_steps=3."""


@pytest.mark.slow
def test_gymnasium_planner_view_on_the_served_reasoner(real):
    """``gymnasium.make("rsim/Planner-v0", reasoner="openai:default@URL")``: the planner is the agent, the served
    model writes each step. Every observation lies in the declared space (raw and featurised), the reward is 0
    until the end and then the planner's ``R_acc + R_terminal + R_penalty``, and each step was one answered request."""
    import gymnasium
    import numpy as np

    import rsim_env  # noqa: F401  (registers rsim/Planner-v0)
    from agents.planners.gym import TextFeatures
    from rsim_env.sources.data import load_problems
    from rsim_env.strategies import TERMINATION

    problems = load_problems("curriculum:heldout", limit=len(GYM_PLANS), seed=1000)
    env = gymnasium.make("rsim/Planner-v0", reasoner=f"openai:default@{real.url}#max_step_tokens=48",
                         problems=problems, max_steps=3)
    feats = TextFeatures(env, dim=64)
    served_before, played = real.served(), []
    for problem, plan in zip(problems, GYM_PLANS):
        obs, _ = feats.reset(options={"problem": problem})
        raw = env.unwrapped.aec.observe("planner")
        assert env.observation_space.contains(raw) and raw["question"] == problem.question and raw["round"] == 0
        for i, action in enumerate(plan):
            obs, reward, terminated, truncated, info = feats.step(np.int64(action))  # numpy ints are actions too
            raw = env.unwrapped.aec.observe("planner")
            assert feats.observation_space.contains(obs) and np.isfinite(obs).all()
            assert env.observation_space.contains(raw) and raw["strategies"] == tuple(plan[:i + 1])
            if i < len(plan) - 1:
                assert (reward, terminated, truncated) == (0.0, False, False)
                assert info["round"] == i + 1 and isinstance(info["step"], str) and info["step"].strip()
        assert terminated and not truncated and plan[-1] == TERMINATION
        c = info["components"]
        assert np.isfinite(reward) and reward == pytest.approx(c["acc"] + c["terminal"] + c["penalty"])
        assert info["strategies"] == list(plan) and len(info["steps"]) == len(plan) and all(info["steps"])
        assert isinstance(info["correct"], bool) and info["problem_id"] == problem.id
        played.append((problem.id, plan, info["steps"], info["extracted"], problem.answer, info["correct"], reward))
    requests = sum(map(len, GYM_PLANS))
    assert env.unwrapped.reasoner.usage()["requests"] == requests == real.served() - served_before
    for row in played:
        print(*row, sep="  |  ")
