"""Reasoner: stop handling, cache continuation == re-encoding, exact generated-token masks."""

from __future__ import annotations

import pytest
import torch

from agents.hf.loading import tiny_model
from agents.reasoner import Reasoner, ReasonerConfig
from agents.hf.sampling import token_logprobs
from rsim_env.render import STEP_DELIMITER, injection


@pytest.fixture(autouse=True, scope="module")
def _reasoner_tests_single_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def obs(question: str, round_index: int, strategy: int) -> dict:
    return {"question": question, "round": round_index, "strategy": strategy,
            "injected": injection(round_index, strategy), "steps": (), "strategies": (), "prompt": ""}


QUESTIONS = ["What is 2+3?", "Compute 12 * 7 and explain.", "x"]


def test_stop_at_delimiter_cap_and_leading_whitespace(scripted_lm):
    scripts = ["First part.\n\nignored", "abcdefghijklmnopqrstuvwxyz", "\n\nLead.\n\n"]
    model = scripted_lm(scripts)
    # the fake advances its script on every forward, so it needs round 0 in one forward (no prompt prefill)
    # (and maps batch rows to scripts, so no row compaction either: the dynamic cache never compacts)
    r = Reasoner(model, model.tok, ReasonerConfig(max_step_tokens=16, greedy=True, share_prefill=False,
                                                  cache="dynamic"))
    r.reset(3)
    texts = r.act([0, 1, 2], [obs(q, 0, 1) for q in QUESTIONS])
    assert texts == ["First part.", "abcdefghijklmnop", "Lead."]
    recs = r.records()
    gen = [[t for t, m in zip(rec.input_ids, rec.gen_mask) if m] for rec in recs]
    assert model.tok.decode(gen[0]) == "First part.\n\n"  # stops on the token completing the delimiter
    assert model.tok.decode(gen[1]) == "abcdefghijklmnop"  # capped at 16 tokens
    assert model.tok.decode(gen[2]) == "\n\nLead.\n\n"  # a leading blank line does not end the step
    # next turn: the capped copy gets the delimiter fed (not generated) before the injection
    model.scripts = [model.tok("Z\n\n", add_special_tokens=False)["input_ids"]] * 3
    model.cursor = [0, 0, 0]
    r.act([0, 1], [obs(QUESTIONS[0], 1, 3), obs(QUESTIONS[1], 1, 3)])
    recs = r.records()
    for c, needs_delim in [(0, False), (1, True)]:
        rec = recs[c]
        start, _ = rec.step_spans[1]
        fed = [t for t, m in zip(rec.input_ids[: start], rec.gen_mask[: start]) if not m][rec.prompt_len:]
        expected = injection(0, 1) + (STEP_DELIMITER if needs_delim else "") + injection(1, 3)
        assert model.tok.decode(fed) == expected
    assert len(recs[2].step_spans) == 1  # copy 2 was dropped: no second step


def reencode_greedy_check(model, rec):
    """Every generated token is the argmax of a from-scratch forward over its prefix."""
    ids = torch.tensor([rec.input_ids])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    suppressed = torch.tensor(rec.suppressed_ids)
    logits[:, suppressed] = float("-inf")
    for i, m in enumerate(rec.gen_mask):
        if m:
            assert logits[i - 1].argmax().item() == rec.input_ids[i], f"position {i}"


@pytest.mark.parametrize("cache", ["prealloc", "dynamic"])
@pytest.mark.parametrize("stop", [True, False], ids=["stop", "nostop"])
def test_cache_continuation_matches_reencoding_under_greedy(cache, stop):
    model, tok = tiny_model(seed=2)
    r = Reasoner(model, tok, ReasonerConfig(max_step_tokens=7, greedy=True, cache=cache, cache_capacity=16,
                                            stop_at_delimiter=stop))
    r.reset(3)
    plans = [[1, 3, 8], [0, 8], [5, 6, 7]]
    for rnd in range(3):
        live = [c for c in range(3) if rnd < len(plans[c])]
        r.act(live, [obs(QUESTIONS[c], rnd, plans[c][rnd]) for c in live])
    for rec in r.records():
        reencode_greedy_check(model, rec)


@pytest.mark.parametrize("cache", ["prealloc", "dynamic"])
def test_prefix_sharing_gives_the_same_tokens_as_separate_prefills(cache):
    """G copies of two questions: one prefill per distinct prompt, KV copied to the twins."""
    model, tok = tiny_model(seed=5)
    questions = [QUESTIONS[0]] * 3 + [QUESTIONS[1]] * 3
    plans = [[1, 3, 8], [0, 8], [5, 6, 7], [2, 2, 8], [1, 4, 8], [3, 8]]
    out = {}
    for share in (True, False):
        r = Reasoner(model, tok, ReasonerConfig(max_step_tokens=6, greedy=True, cache=cache, share_prefill=share))
        r.reset(6)
        for rnd in range(3):
            live = [c for c in range(6) if rnd < len(plans[c])]
            r.act(live, [obs(questions[c], rnd, plans[c][rnd]) for c in live])
        out[share] = r.records()
    assert [x.input_ids for x in out[True]] == [x.input_ids for x in out[False]]
    for a, b in zip(out[True], out[False]):
        assert a.gen_mask == b.gen_mask
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_masks_cover_exactly_the_generated_tokens_and_logprobs_recompute():
    model, tok = tiny_model(seed=4)
    r = Reasoner(model, tok, ReasonerConfig(max_step_tokens=6, seed=0, temperature=0.8, top_p=0.9))
    r.reset(2)
    plans = [[2, 8], [4, 1, 8]]
    for rnd in range(3):
        live = [c for c in range(2) if rnd < len(plans[c])]
        r.act(live, [obs(QUESTIONS[c], rnd, plans[c][rnd]) for c in live])
    records = r.records()
    for c, rec in enumerate(records):
        assert len(rec.input_ids) == len(rec.gen_mask) == len(rec.logprobs)
        in_spans = [0] * len(rec.input_ids)
        for s, e in rec.step_spans:
            in_spans[s:e] = [1] * (e - s)
        assert rec.gen_mask == in_spans
        assert len(rec.step_spans) == len(plans[c])
        # the non-generated tokens are exactly prompt + injections (+ delimiters of capped steps)
        expected = r.prompt_ids(QUESTIONS[c])
        for rnd, (s, e) in enumerate(rec.step_spans):
            text = tok.decode(rec.input_ids[s:e])
            if rnd and STEP_DELIMITER not in tok.decode(rec.input_ids[slice(*rec.step_spans[rnd - 1])]).lstrip():
                expected += r.delimiter_ids
            expected += tok(injection(rnd, plans[c][rnd]), add_special_tokens=False)["input_ids"]
            assert text  # something was generated
        assert [t for t, m in zip(rec.input_ids, rec.gen_mask) if not m] == expected
        assert all(lp == 0.0 for lp, m in zip(rec.logprobs, rec.gen_mask) if not m)
        assert all(lp < 0.0 for lp, m in zip(rec.logprobs, rec.gen_mask) if m)
    scored = r.score(records)  # the learner interface: generated positions only, gradients flow
    assert torch.isfinite(scored.logp).all()
    torch.testing.assert_close(scored.logp, recorded_logprobs(records, scored.logp) * scored.mask, atol=1e-4, rtol=0)
    (scored.logp * scored.mask).sum().backward()  # gradients reach the model
    assert model.model.embed_tokens.weight.grad.abs().sum() > 0


def recorded_logprobs(records, like):
    """The log-probs recorded while sampling, right-padded like ``like``."""
    out = torch.zeros_like(like)
    for i, rec in enumerate(records):
        out[i, : len(rec.logprobs)] = torch.tensor(rec.logprobs)
    return out


def test_seeded_sampling_is_reproducible():
    model, tok = tiny_model(seed=5)
    outs = []
    for _ in range(2):
        r = Reasoner(model, tok, ReasonerConfig(max_step_tokens=5, seed=11))
        r.reset(2)
        outs.append(r.act([0, 1], [obs(q, 0, 2) for q in QUESTIONS[:2]]))
    assert outs[0] == outs[1]


def test_token_logprobs_skips_padding_and_suppressed():
    model, tok = tiny_model()
    out = token_logprobs(model, [[1, 2, 3, 4], [5, 6]], suppressed_ids=[3], pad_id=tok.pad_token_id)
    assert out.shape == (2, 4)
    assert out[0, 0] == 0 and out[0, 2] == 0 and out[1, 2:].eq(0).all() and out[0, 1] < 0


@pytest.mark.parametrize("kwargs,field", [({"max_step_tokens": 0}, "max_step_tokens"), ({"temperature": 0}, "temperature"),
                                          ({"top_p": 0}, "top_p"), ({"cache": "paged"}, "cache")],
                         ids=["cap", "temperature", "top_p", "cache"])
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ReasonerConfig(**kwargs)


def test_misuse_raises():
    model, tok = tiny_model()
    r = Reasoner(model, tok, ReasonerConfig(max_step_tokens=3, greedy=True))
    r.reset(2)
    with pytest.raises(ValueError, match="round"):
        r.act([0], [obs("q", 1, 2)])
    r.reset(2)
    r.act([0], [obs("q", 0, 2)])  # copy 1 did not appear: it is finished for good
    with pytest.raises(ValueError, match="dropped"):
        r.act([0, 1], [obs("q", 1, 2), obs("q", 1, 2)])


@pytest.mark.parametrize("proto", ["chat+lead", "chat", "lead", "inline", "chat+lead:action", "chat+lead:exemplar"])
def test_protocol_conversation_is_exactly_the_chat_template_of_the_episode(proto, scripted_lm):
    """Fed + generated ids == the chat template of the finished episode's chat (KV cache reused)."""
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout
    from rsim_env import EnvGroup, Problem
    from rsim_env.render import reasoner_chat

    prob = Problem(id="p", question="What is 6 * 7?", answer="42", source="t")
    space = " " if "lead" in proto else ""  # a lead-in is continued after a space; a new turn starts bare
    first = space + ("6 * 7 = 42.<|im_end|>" if proto.startswith("chat") else "6 * 7 = 42.\n\n")
    last = "42}" if "lead" in proto else "So \\boxed{42}"
    model = scripted_lm([first + last + "<|im_end|>"])
    # the fake advances its script on every forward: round 0 in one forward (no prompt prefill sharing)
    reasoner = Reasoner(model, model.tok, ReasonerConfig(max_step_tokens=40, greedy=True, share_prefill=False,
                                                         cache="dynamic"))
    out = rollout(EnvGroup([prob], 1, protocol=proto), reasoner, FixedPlanner([3]), seed=0)
    info, rec = out.trajectories[0]["info"], out.trajectories[0]["reasoner"]
    assert info["steps"] == ["6 * 7 = 42.", last] and info["correct"] and info["components"]["format"] == 1.0
    chat = reasoner_chat(prob.question, info["steps"], info["strategies"], None, proto)
    want = model.tok.apply_chat_template(chat, continue_final_message=True, tokenize=False)
    got = model.tok.decode(rec.input_ids)
    if proto == "inline":  # the inline chat string carries no delimiter after a step that wrote its own
        want = want.replace("42.\nStep 2", "42.\n\nStep 2")
    assert got == want
    generated = model.tok.decode([t for t, m in zip(rec.input_ids, rec.gen_mask) if m])
    assert generated == first.replace("<|im_end|>", "<|im_end|>" if proto.startswith("chat") else "") + last


def test_no_planner_turn_stops_at_the_closed_boxed_answer(scripted_lm):
    from algos.rollout import rollout
    from rsim_env import EnvGroup, Problem

    prob = Problem(id="p", question="What is 6 * 7?", answer="42", source="t")
    model = scripted_lm(["6 * 7 = 42, so \\boxed{42}. Also 17 and more rambling 99 99 99"])
    reasoner = Reasoner(model, model.tok, ReasonerConfig(max_answer_tokens=80, greedy=True, share_prefill=False,
                                                         cache="dynamic"))
    out = rollout(EnvGroup([prob], 1, planner=False), reasoner, None, seed=0)
    info = out.trajectories[0]["info"]
    assert info["steps"] == ["6 * 7 = 42, so \\boxed{42}"] and info["correct"]
    assert info["components"]["format"] == 1.0
@pytest.mark.parametrize("kind", ["prealloc", "dynamic"])
def test_rows_fed_nothing_leave_the_forward_and_logits_stay_exact(kind):
    """Finished rows are skipped (prealloc: live rows swapped to the front); every live row's logits
    equal a from-scratch forward over its own tokens, through swaps, drops and cache growth."""
    from agents.hf.kv import KVBatch

    model, _ = tiny_model(seed=7)
    gen = torch.Generator().manual_seed(0)
    seqs = [[5, 9, 11], [7, 7, 7, 7, 1], [3], [8, 2]]
    kv = KVBatch(model, 4, pad_id=0, kind=kind, capacity=4, share_prefill=False)
    with torch.no_grad():
        out = kv.feed(seqs)
        for step in range(12):
            if step == 6:
                kv.keep([0, 2, 3])  # conversation 1 ends
                seqs = [seqs[0], seqs[2], seqs[3]]
            live = [r for r in range(len(seqs)) if torch.rand(1, generator=gen).item() < 0.6] or [0]
            new = [[int(torch.randint(1, 250, (1,), generator=gen))] if r in live else [] for r in range(len(seqs))]
            out = kv.feed(new)
            for r in live:
                seqs[r] = seqs[r] + new[r]
                want = model(input_ids=torch.tensor([seqs[r]])).logits[0, -1]
                assert torch.allclose(out[r], want, atol=1e-4), (step, r)


def test_shared_prefix_scoring_equals_plain_scoring_values_and_gradients():
    """Scoring G copies with their prompt encoded once gives the same log-probs and gradients."""
    from agents.hf.prefix import shared_prefix_logprobs
    from agents.hf.sampling import generated_logprobs

    model, _ = tiny_model(seed=9)
    model.train()
    prompts = [[5, 6, 7, 8, 9], [11, 12, 13]]
    seqs, masks, plens = [], [], []
    g = torch.Generator().manual_seed(1)
    for c in range(6):
        p = prompts[c // 3]
        n = 3 + c  # continuations of different lengths: injected (0) and generated (1) tokens mixed
        cont = torch.randint(1, 250, (n,), generator=g).tolist()
        seqs.append(p + cont); plens.append(len(p))
        masks.append([0] * len(p) + [int(i % 4 != 0) for i in range(n)])
    adv = torch.linspace(-1, 1, 6)[:, None]
    out = {}
    for name, fn in (("plain", lambda: generated_logprobs(model, seqs, masks, 0.9, [3], 0)),
                     ("shared", lambda: shared_prefix_logprobs(model, seqs, masks, plens, 0.9, [3], 0))):
        model.zero_grad()
        logp, mask, ent = fn()
        (logp * mask * adv).sum().backward()
        out[name] = (logp.detach(), mask, ent, [p.grad.clone() for p in model.parameters()])
    a, b = out["plain"], out["shared"]
    assert torch.equal(a[1], b[1])
    assert torch.allclose(a[0], b[0], atol=1e-5) and torch.allclose(a[2], b[2], atol=1e-4)
    for ga, gb in zip(a[3], b[3]):
        assert torch.allclose(ga, gb, atol=1e-5)
