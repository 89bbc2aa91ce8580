"""Replay catch-up by prefill (agents.replay.reasoner, Reasoner.prefill): a caught-up session holds exactly the stored steps.

A copy read back for rounds ``0..k-1`` that misses at round ``k`` starts a fresh session; the stored steps are given
to it as token ids (not decoded again), so the step it decodes is conditioned on exactly the stored history. The
fast tests use a decoder whose output is a pure function of what it has read (so it cannot depend on batching or on
prefill vs step-by-step decoding) to show read-back-then-decode equals decode-all byte for byte, and the tiny torch
model to show the session's conversation is the storing run's; the slow test does it on llama.cpp under other batch
shapes (the run that found 2 of 15 catch-up steps re-decoded differently).
"""

from __future__ import annotations

import copy
import hashlib
import json

import pytest

pytest.importorskip("transformers", reason="the turns render a chat template (the 'train' extra)")

from agents.base import Prefilling  # noqa: E402
from agents.decoding.turns import Turns  # noqa: E402
from agents.hf.loading import tiny_model, tiny_tokenizer  # noqa: E402
from agents.reasoner import Reasoner, ReasonerConfig  # noqa: E402
from agents.replay.reasoner import ReplayReasoner, StepStore  # noqa: E402
from agents.scripted.policies import FixedPlanner  # noqa: E402
from algos.rollout import rollout  # noqa: E402
from rsim_env import Problem  # noqa: E402
from rsim_env.game import EnvConfig  # noqa: E402
from rsim_env.group import EnvGroup  # noqa: E402

PROBLEMS = [Problem(id="a", question="What is 2+3?", answer="5"),
            Problem(id="b", question="What is 7*6?", answer="42"),
            Problem(id="c", question="What is 9-4?", answer="5"),
            Problem(id="d", question="What is 8+8?", answer="16")]

pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


class HistoryDecoder:
    """Writes the token ``f(every id it has read)``: a KV-free decoder whose output is a pure function of the
    history it was fed, so it does not depend on batching, nor on whether the history came as one prefill or token
    by token. It reads only ``turn.feed`` (never ``turn.conv``), so a conversation whose feed misses or repeats a
    token writes other steps. ``written`` (shared by copies) counts the tokens it wrote."""

    ALPHABET = "ab cd=+12"

    def __init__(self, tokenizer) -> None:
        self.eos = tokenizer.eos_token_id
        self.newline = tokenizer("\n", add_special_tokens=False)["input_ids"][0]
        self.letters = [tokenizer(ch, add_special_tokens=False)["input_ids"][0] for ch in self.ALPHABET]
        self.written = [0]
        self.read: dict[int, list[int]] = {}

    def __copy__(self) -> "HistoryDecoder":
        new = copy.deepcopy(self)
        new.written = self.written  # one count over every session
        return new

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self.read = {c: [] for c in range(num_copies)}

    def keep(self, copies) -> None:
        self.read = {c: h for c, h in self.read.items() if c in copies}

    def _next(self, history: list[int]) -> int:
        r = int(hashlib.sha256(json.dumps(history).encode()).hexdigest()[:8], 16)
        if r % 100 < 5:
            return self.eos
        return self.newline if r % 100 < 20 else self.letters[r % len(self.letters)]

    def decode(self, turns) -> None:
        for turn in turns:
            history = self.read[turn.copy]
            history.extend(turn.feed)
            while True:
                token = self._next(history)
                self.written[0] += 1
                if turn.write(token, 0.0):
                    break  # the last written token is read with the next turn's feed, as a KV decoder does
                history.append(token)


def history_reasoner() -> Reasoner:
    cfg = ReasonerConfig(max_step_tokens=10, greedy=True)
    turns = Turns(tiny_tokenizer(), cfg)
    return Reasoner(config=cfg, decoder=HistoryDecoder(turns.tokenizer), turns=turns)


def torch_reasoner() -> Reasoner:
    model, tok = tiny_model(seed=0)
    return Reasoner(model, tok, ReasonerConfig(max_step_tokens=6, greedy=True, seed=0))


def play(reasoner, plan, group_size: int, problems=PROBLEMS):
    env = EnvConfig(max_steps=3, protocol="chat+lead")
    return rollout(EnvGroup(problems, group_size, config=env), reasoner, FixedPlanner(plan), seed=0).trajectories


def episodes(trajectories) -> list[str]:
    return [json.dumps({"info": t["info"], "rewards": t["rewards"]}, sort_keys=True) for t in trajectories]


def session_records(rep: ReplayReasoner) -> dict[int, object]:
    """Each copy's record in the session that decoded its last step (None for a copy read back to the end)."""
    out = {}
    for c, cp in enumerate(rep._copies):
        s = cp.session
        out[c] = s.agent.records()[s.local[c]] if s is not None and c in s.local else None
    return out


def test_every_llm_reasoner_prefills_and_scripted_ones_do_not(tmp_path):
    from agents.scripted.toy import ToyReasoner

    assert isinstance(history_reasoner(), Prefilling) and isinstance(torch_reasoner(), Prefilling)
    assert ReplayReasoner(history_reasoner(), StepStore(tmp_path / "s.sqlite"), fingerprint="h").prefills
    assert not isinstance(ToyReasoner(), Prefilling)


def test_read_back_then_decode_equals_decode_all_byte_for_byte(tmp_path):
    """[3, 8] stored in batches of 2 copies per problem, then [3, 4, 8] replayed one copy per problem: round 0 is read
    back, the session is caught up by prefill (the decoder writes no catch-up token), and every episode and every
    record equals a live reasoner that decoded all three rounds itself."""
    rep = ReplayReasoner(history_reasoner(), StepStore(tmp_path / "s.sqlite"), fingerprint="history")
    play(rep, [3, 8], group_size=2)
    assert rep.stats["hits"] == 0 and rep.stats["catchup_steps"] == 0

    live_reasoner = history_reasoner()
    live = play(live_reasoner, [3, 4, 8], group_size=1)
    before = rep.inner.decoder.written[0]
    replayed = play(rep, [3, 4, 8], group_size=1)
    assert episodes(replayed) == episodes(live)
    stats = rep.stats
    assert stats["hits"] == len(PROBLEMS) and stats["catchup_steps"] == len(PROBLEMS) and stats["catchup_mismatch"] == 0
    decoded = sum(n for r in rep.records() for n, back in zip(r.tokens, r.replayed) if not back)
    assert rep.inner.decoder.written[0] - before == decoded  # catch-up wrote nothing: the stored steps were fed
    for c, rec in session_records(rep).items():
        assert rec == live[c]["reasoner"]  # ids, mask, spans, log-probs: the conversation of the live run


def test_caught_up_torch_session_holds_the_stored_tokens(tmp_path):
    """On the tiny torch model: the caught-up session's round-0 tokens are the storing session's (prefilled: log-prob
    0, never decoded again), its texts are the stored texts, and what follows is decoded."""
    rep = ReplayReasoner(torch_reasoner(), StepStore(tmp_path / "s.sqlite"))
    stored = play(rep, [3, 8], group_size=2)
    storing = {}  # problem id -> (its first copy's step 0, that copy's record in the session that wrote it)
    for c, rec in session_records(rep).items():
        storing.setdefault(stored[c]["info"]["problem_id"], (rep.records()[c].steps[0], rec))
    replayed = play(rep, [3, 4, 8], group_size=1, problems=PROBLEMS[:3])
    assert rep.stats["hits"] == 3 and rep.stats["catchup_steps"] == 3 and rep.stats["catchup_mismatch"] == 0
    for c, rec in session_records(rep).items():
        step0, first = storing[replayed[c]["info"]["problem_id"]]
        _, end = first.step_spans[0]
        assert rec.input_ids[:end] == first.input_ids[:end] and rec.step_spans[0] == first.step_spans[0]
        assert rep.records()[c].steps[0] == step0 and rep.records()[c].replayed == [True, False, False]
        assert all(lp == 0.0 for lp in rec.logprobs[:end])  # prefilled, not decoded
        start1, end1 = rec.step_spans[1]
        assert all(lp < 0.0 for lp in rec.logprobs[start1:end1])  # decoded after the prefill


def test_prefill_refuses_a_step_that_does_not_end_where_the_stop_rules_end_it():
    r = history_reasoner()
    r.reset(1)
    obs = {"question": "Q?", "round": 0, "strategy": 3, "injected": "", "instruction": "Q?"}
    ids = r.turns.encode("ab\n\ncd")  # the delimiter ends the step at token 4; two tokens follow
    with pytest.raises(ValueError, match="ends after token 4"):
        r.prefill([0], [obs], [ids])
    r.reset(1)
    with pytest.raises(ValueError, match="goes on past token 2"):
        r.prefill([0], [obs], [r.turns.encode("ab")])  # neither cap, end-of-turn nor delimiter: the step is open
    r.reset(1)
    with pytest.raises(ValueError, match="no token ids"):
        r.prefill([0], [obs], [[]])
    r.reset(1)
    assert r.prefill([0], [obs], [r.turns.encode("ab\n\n")]) == ["ab"]
    assert r.step_ids(0) == r.turns.encode("ab\n\n")


LLAMA_PROBLEMS = [Problem(id="a", question="What is 17 * 23?", answer="391"),
                  Problem(id="b", question="Solve for x: 3x + 7 = 25.", answer="6"),
                  Problem(id="c", question="What is 9 + 16?", answer="25"),
                  Problem(id="d", question="What is 48 / 6?", answer="8"),
                  Problem(id="e", question="What is 12 squared?", answer="144"),
                  Problem(id="f", question="What is 100 - 37?", answer="63")]


@pytest.mark.slow
def test_llamacpp_session_caught_up_under_other_batch_shapes_holds_the_stored_steps(gguf, tmp_path):
    """llamacpp:default: [3, 8] stored with two copies of each of 6 problems in one batch of 12, then [3, 4, 8]
    replayed one copy per problem in batches of 3. Every caught-up session holds exactly the stored round-0 tokens
    (the store's ids, and the storing session's whole conversation up to there), and no catch-up step mismatches
    (re-decoding them differed in 2 of 15 steps on this model)."""
    from agents.llamacpp.reasoner import LlamaCppReasoner, load_tokenizer
    from agents.llamacpp.engine import Engine

    engine = Engine(gguf, n_ctx=1024)
    cfg = ReasonerConfig(max_step_tokens=24, max_answer_tokens=48, greedy=True)
    store = StepStore(tmp_path / "s.sqlite")
    rep = ReplayReasoner(LlamaCppReasoner(engine, load_tokenizer(gguf), cfg), store)
    stored = play(rep, [3, 8], group_size=2, problems=LLAMA_PROBLEMS)
    storing = {}  # problem id -> the record of its first copy in the session that decoded it
    for c, rec in session_records(rep).items():
        storing.setdefault(stored[c]["info"]["problem_id"], rec)
    assert len(storing) == len(LLAMA_PROBLEMS) and rep.stats["hits"] == 0

    caught_up = 0
    for lo in range(0, len(LLAMA_PROBLEMS), 3):
        replayed = play(rep, [3, 4, 8], group_size=1, problems=LLAMA_PROBLEMS[lo:lo + 3])
        for c, rec in session_records(rep).items():
            first = storing[replayed[c]["info"]["problem_id"]]
            start, end = rec.step_spans[0]
            key = rep._copies[c].keys[0]
            assert tuple(rec.input_ids[start:end]) == store.get_many([key])[key].ids  # the stored step's tokens
            assert rec.input_ids[:end] == first.input_ids[:end] and rec.step_spans[0] == first.step_spans[0]
            assert all(lp == 0.0 for lp in rec.logprobs[start:end])  # fed, not decoded again
            assert rep.records()[c].replayed == [True, False, False]
            caught_up += 1
        rep.reset(0)  # close the sessions' forked contexts
    assert caught_up == len(LLAMA_PROBLEMS)
    assert rep.stats["catchup_steps"] == len(LLAMA_PROBLEMS) and rep.stats["catchup_mismatch"] == 0
    assert rep.stats["hits"] == len(LLAMA_PROBLEMS)
    engine.close()


def test_prefill_benchmark_smoke_on_the_tiny_model(tmp_path):
    """benchmarks/runtime/replay_prefill.py runs its four arms and counts what it compares (the figure is on llama.cpp)."""
    from benchmarks.runtime.replay_prefill import Config, main

    res = main(Config(reasoner="tiny", source="tiny", problems=3, max_step_tokens=4, out=str(tmp_path / "p.json")))
    rows = res["rows"]
    assert res["compared"] == rows["prefill_vs_decode"]["of"] == rows["prefill_vs_batched_decode"]["of"] > 0
    assert all(0 <= r["differ"] <= r["of"] for r in rows.values())
    assert json.loads((tmp_path / "p.json").read_text())["rows"] == rows
    with pytest.raises(ValueError, match="cannot prefill"):
        main(Config(reasoner="toy", source="tiny", problems=1))


def test_a_chat_server_reasoner_prefills_its_step_texts():
    """Through a chat endpoint no token ids are kept (the server renders the chat from the observations): a prefilled
    step is its text, and the conversation records the round."""
    cfg = ReasonerConfig(greedy=True)
    r = Reasoner(config=cfg, decoder=HistoryDecoder(tiny_tokenizer()), turns=Turns(None, cfg))
    r.reset(1)
    obs = {"question": "Q?", "round": 0, "strategy": 3, "injected": "", "instruction": "Q?"}
    assert r.prefill([0], [obs], [[]], ["First, add."]) == ["First, add."]
    assert r.step_ids(0) == [] and len(r.records()[0].step_spans) == 1
