"""The llama.cpp reasoner (``llamacpp:default`` / ``llamacpp:PATH.gguf``, agents/llamacpp/reasoner.py).

Spec errors need nothing installed; the rest needs llama-cpp-python (``rsim[llamacpp]``) and the
embedded GGUF (``python -m agents.embedded``), and is ``slow`` (it loads the real 98 MB model).
"""

from __future__ import annotations

import math

import pytest

from agents.registry import AgentContext, build_agent
from agents.reasoner import ReasonerConfig
from rsim_env import Problem
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.render import PROTOCOLS

PROBLEMS = [Problem(id="a", question="What is 17 * 23?", answer="391"),
            Problem(id="b", question="Solve for x: 3x + 7 = 25.", answer="6")]


def _ctx(**config) -> AgentContext:
    return AgentContext("reasoner", config=ReasonerConfig(**{"max_step_tokens": 24, "max_answer_tokens": 48,
                                                             "greedy": True, **config}))


@pytest.mark.parametrize("spec, match", [
    ("llamacpp:/no/such/model.gguf", "not an existing .gguf file"),
    ("llamacpp:pyproject.toml", "not an existing .gguf file"),
    ("llamacpp:default#n_ctx=big", "option 'n_ctx=big'"),
    ("llamacpp:default#colour=3", "option 'colour=3'"),
    ("llamacpp:default#threads=0", "option 'threads=0'"),
], ids=["missing", "not-gguf", "bad-value", "bad-key", "zero-threads"])
def test_spec_errors_name_the_problem(spec, match):
    with pytest.raises(ValueError, match=match):
        build_agent(spec, _ctx())


def test_planner_role_lora_and_frozen_are_refused(tmp_path):
    from dataclasses import replace

    from agents.hf.lora import LoraSpec

    with pytest.raises(ValueError, match="is a reasoner"):
        build_agent("llamacpp:default", AgentContext("planner"))
    other = tmp_path / "other.gguf"  # LoRA trains on llamacpp:default only (its torch twin is the embedded model)
    other.write_bytes(b"GGUF")
    with pytest.raises(ValueError, match="only llamacpp:default"):
        build_agent(f"llamacpp:{other}", replace(_ctx(), lora=LoraSpec(enabled=True)))
    with pytest.raises(ValueError, match="model.frozen=int8"):
        build_agent("llamacpp:default", replace(_ctx(), frozen="int8"))


# ----------------------------------------------------------------------------------- real model

@pytest.fixture(scope="module")
def engine(gguf):
    from agents.llamacpp.engine import Engine

    return Engine(gguf, n_ctx=1024)


@pytest.fixture(scope="module")
def torch_reasoner(gguf):
    from agents.reasoner import Reasoner

    return Reasoner.from_spec("default", _ctx(max_step_tokens=4).config)


def _reasoner(engine, **config):
    from agents.llamacpp.reasoner import LlamaCppReasoner, load_tokenizer

    return LlamaCppReasoner(engine, load_tokenizer(engine.path), _ctx(**config).config)


def _play(reasoner, plan: str, protocol: str = "chat+lead", group_size: int = 1, seed: int = 0):
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout

    planner = None if plan == "none" else FixedPlanner([int(s) for s in plan.split(",")])
    env = EnvConfig(max_steps=3, planner=planner is not None, protocol=protocol)
    return rollout(EnvGroup(PROBLEMS, group_size, config=env), reasoner, planner, seed=seed)


@pytest.mark.slow
@pytest.mark.parametrize("plan, protocol", [("1,3,8", p) for p in PROTOCOLS] + [("none", "chat+lead")],
                         ids=[f"fixed-{p}" for p in PROTOCOLS] + ["none"])
def test_greedy_episodes_write_steps_with_argmax_logprobs(engine, plan, protocol):
    reasoner = _reasoner(engine)
    out = _play(reasoner, plan, protocol, group_size=2)
    for traj in out.trajectories:
        rec, info = traj["reasoner"], traj["info"]
        assert info["steps"] and any(s.strip() for s in info["steps"])
        gen = [lp for lp, m in zip(rec.logprobs, rec.gen_mask) if m]
        assert gen and all(math.isfinite(x) and x <= 1e-6 for x in gen)
        assert len(rec.step_spans) == info["num_rounds"]
        usage = reasoner.token_usage(rec)
        assert usage["reasoner_written"] == len(gen) and usage["reasoner_read"] == len(rec.input_ids) - len(gen)
    # greedy and the G=2 copies of a problem share their prompt's KV: both copies wrote the same tokens
    ids = [t["reasoner"].input_ids for t in out.trajectories]
    assert ids[0] == ids[1] and ids[2] == ids[3] and ids[0] != ids[2]


@pytest.mark.slow
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_prompt_ids_equal_the_torch_reasoners(engine, torch_reasoner, protocol):
    """Round 0's fed ids (chat-template prompt + lead-in) are the torch reasoner's, token for token."""
    ours = _reasoner(engine, max_step_tokens=4)
    for r in (ours, torch_reasoner):
        _play(r, "3", protocol)
    for a, b in zip(ours.records(), torch_reasoner.records()):
        first = a.gen_mask.index(1)
        assert a.input_ids[:first] == b.input_ids[:b.gen_mask.index(1)]
        assert a.prompt_len == b.prompt_len


@pytest.mark.slow
def test_logprobs_match_torch_scoring_of_the_engines_tokens(engine, torch_reasoner):
    """Multi-turn KV continuation is right: torch fp32, reading each whole sequence from scratch, gives
    the engine's tokens nearly the engine's log-probs (the GGUF's 4-bit weights dequantised; llama.cpp
    rounds activations to 8 bits, so not exactly)."""
    ours = _reasoner(engine)
    _play(ours, "1,3,8", "chat+lead")
    recs = ours.records()
    logp = torch_reasoner.score(recs).logp.detach()
    diffs = []
    for r, rec in enumerate(recs):
        for i, m in enumerate(rec.gen_mask):
            if m:
                diffs.append(abs(float(logp[r, i]) - rec.logprobs[i]))
    assert len(diffs) > 30 and sum(diffs) / len(diffs) < 0.1


@pytest.mark.slow
def test_sampling_is_seeded(engine):
    def tokens(seed):
        r = _reasoner(engine, greedy=False, temperature=1.0, top_p=0.9, seed=seed)
        return [t["reasoner"].input_ids for t in _play(r, "1,3,8", group_size=2, seed=seed).trajectories]

    a = tokens(1)
    assert a == tokens(1) and a != tokens(2)
    assert a[0] != a[1]  # copies of one problem sample independently after the shared prompt


@pytest.mark.slow
def test_another_models_tokenizer_is_refused(engine):
    from agents.llamacpp.reasoner import LlamaCppReasoner
    from agents.hf.loading import tiny_tokenizer

    with pytest.raises(ValueError, match="not this model's tokenizer"):
        LlamaCppReasoner(engine, tiny_tokenizer())


@pytest.mark.slow
def test_registry_builds_the_embedded_model(gguf):
    built = build_agent("llamacpp:default#n_ctx=512&threads=1&unified=1", _ctx())
    assert built.info["kind"] == "llamacpp" and built.info["n_ctx"] == 512 and built.info["threads"] == 1
    assert built.info["unified"] is True
    assert not hasattr(built.agent, "score")  # frozen: a trainer refuses to train it


def test_fingerprint_names_the_gguf_bytes_and_refuses_an_adapter(tmp_path):
    """The replay store keys llama.cpp steps by the GGUF's sha256 and engine settings; a synced adapter is refused."""
    pytest.importorskip("llama_cpp", reason="llama-cpp-python not installed (pip install 'rsim[llamacpp]')")
    from types import SimpleNamespace

    from agents.llamacpp.decoder import EngineDecoder
    from agents.decoding.turns import Turns
    from agents.reasoner import Reasoner, ReasonerConfig
    from agents.replay.reasoner import weights_fingerprint

    def reasoner(data: bytes) -> Reasoner:
        path = tmp_path / f"m{len(data)}.gguf"
        path.write_bytes(data)
        d = EngineDecoder.__new__(EngineDecoder)  # no model: only the fingerprint's inputs
        d.engine, d._adapted = SimpleNamespace(path=path, n_ctx=2048, unified=False, reset=lambda n: None), False
        d._live = set()
        return Reasoner(decoder=d, turns=Turns(None, ReasonerConfig()))

    a, b = reasoner(b"weights-a"), reasoner(b"weights-bb")
    from agents.replay.reasoner import replay_kind

    assert replay_kind(a) == "LlamaCppReasoner"  # the name replay keys were made with: stored engine steps stay valid
    assert a.fingerprint != b.fingerprint and a.fingerprint == reasoner(b"weights-a").fingerprint
    assert weights_fingerprint(a) != weights_fingerprint(b)
    a.decoder._adapted = True
    with pytest.raises(TypeError, match="adapter"):
        weights_fingerprint(a)


@pytest.mark.slow
def test_replay_sessions_on_one_engine_do_not_share_its_kv(engine, tmp_path):
    """A replayed llama.cpp reasoner decodes missed steps in sessions (copies of the reasoner). Sessions used to share
    the engine's one context, so a second session's reset wiped the first's KV: once a copy read round 0 back and
    decoded round 1 (a fresh session) while another decoded both rounds (the older one), decoding raised
    IndexError or wrote wrong steps. Each session now decodes on a fork (same weights, own KV): the steps of the
    mixed call are the steps a fresh store decodes live."""
    import sqlite3

    from agents.replay.reasoner import ReplayReasoner, StepStore
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout

    problems = PROBLEMS + [Problem(id="c", question="What is 9 + 16?", answer="25"),
                           Problem(id="d", question="What is 48 / 6?", answer="8")]

    def play(store, probs):
        rep = ReplayReasoner(_reasoner(engine), store)
        env = EnvConfig(max_steps=2, protocol="chat+lead")
        out = rollout(EnvGroup(probs, 1, config=env), rep, FixedPlanner([3, 8]), seed=0)
        return [t["info"]["steps"] for t in out.trajectories], rep

    engine.reset(1)  # the original holds a context of its own (whichever test used it first): forks must not free it
    own = engine.ctx
    live, _ = play(StepStore(tmp_path / "live.sqlite"), problems)
    store = StepStore(tmp_path / "mixed.sqlite")
    first, rep = play(store, problems[:2])  # problems a, b: both rounds stored
    assert len(store) == 4 and first == live[:2]
    db = sqlite3.connect(tmp_path / "mixed.sqlite")  # forget round 1 (the newest two steps)
    db.execute("DELETE FROM steps WHERE rowid IN (SELECT rowid FROM steps ORDER BY rowid DESC LIMIT 2)")
    db.commit()
    db.close()
    mixed, rep = play(store, problems)  # a, b: round 0 read back, round 1 decoded; c, d: both decoded
    assert rep.stats["sessions"] >= 2 and rep.stats["hits"] >= 1
    assert mixed == live
    sessions = {id(c.session): c.session for c in rep._copies if c.session is not None}.values()
    forks = [s.agent.decoder.engine for s in sessions]
    assert len(forks) >= 2 and all(f.ctx is not None and f is not engine for f in forks)
    rep.reset(1)  # a session's fork frees its context (~0.75 GB at 16 copies) when the rollout is over
    assert all(f.ctx is None for f in forks) and engine.ctx is own is not None
