"""LoRA adapters on the llama.cpp engine (Engine.load_adapter, LlamaCppReasoner.sync_adapter, the
trainable llamacpp:default reasoner), checked against torch's LoRA on the same (dequantised) weights.

Most tests are ``slow``: they load the embedded model twice (llama.cpp's 4-bit GGUF and its fp32 torch twin); needs
llama-cpp-python (``rsim[llamacpp]``) and the embedded GGUF (``python -m agents.embedded``).
"""

# ruff: noqa: F811 - pytest injects the imported `gguf` fixture by argument name
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from agents.llamacpp.decoder import EngineDecoder
from agents.hf.lora import LoraSpec

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def engine(gguf):
    from agents.llamacpp.engine import Engine

    return Engine(gguf, n_ctx=256, threads=1)


@pytest.fixture(scope="module")
def lora(gguf):
    from agents.hf.loading import load_causal_lm
    from agents.hf.lora import SharedBase

    model, tok = load_causal_lm("default")
    slot = SharedBase(model, "default").add("reasoner", LoraSpec(enabled=True, rank=8, alpha=16.0))
    return model, tok, slot


def _set(slot, b_std: float, seed: int = 1) -> None:
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in slot.parameters().items():
            p.normal_(0, b_std) if "lora_B" in name else p.normal_(0, 0.05)


def _logp(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return x - (x.max() + np.log(np.exp(x - x.max()).sum()))


def _engine_logp(engine, ids) -> np.ndarray:
    engine.reset(1)
    return _logp(engine.feed({0: ids})[0])


def _torch_logp(model, slot, ids, adapter: bool = True) -> np.ndarray:
    with torch.no_grad(), (slot.active() if adapter else slot.disabled()):
        return _logp(model(torch.tensor([ids])).logits[0, -1].numpy())


def _load(engine, slot, tmp_path, name="a.gguf") -> dict:
    from agents.llamacpp.gguf_lora import write_adapter

    return engine.load_adapter(write_adapter(tmp_path / name, slot.parameters(), 16.0, engine.base_tensors, "reasoner"))


@pytest.mark.slow
def test_adapter_moves_the_engine_like_torchs_lora(engine, lora, tmp_path):
    """A non-zero adapter changes the greedy token of the prompt (France -> another), on both sides alike.

    Tolerance: on the bare base the engine's log-probs of torch's top-20 tokens already differ by up to
    0.27 (measured on 3 prompts: 4-bit weights dequantised for torch, 8-bit activations in llama.cpp);
    with this adapter the difference stays there (measured 0.27) while the adapter moves them by 1.2 on
    average, so 0.4 separates "same update, other arithmetic" from a mis-laid adapter (rows not
    permuted: mean |delta logit| 5.3)."""
    model, tok, slot = lora
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    engine.clear_adapter()
    base_engine, base_torch = _engine_logp(engine, ids), _torch_logp(model, slot, ids, adapter=False)
    _set(slot, b_std=0.04)
    summary = _load(engine, slot, tmp_path)
    assert summary == {"tensors": 30 * 7, "ranks": [8], "alpha": 16.0}
    ours, theirs = _engine_logp(engine, ids), _torch_logp(model, slot, ids)
    assert ours.argmax() == theirs.argmax() != base_torch.argmax() == base_engine.argmax()
    top = np.argsort(-theirs)[:20]
    assert np.abs(ours - theirs)[top].max() < 0.4
    assert np.abs(theirs - base_torch)[top].mean() > 3 * np.abs(ours - theirs)[top].mean()
    assert np.corrcoef(ours - base_engine, theirs - base_torch)[0, 1] > 0.95


@pytest.mark.slow
def test_zero_adapter_changes_nothing_and_clear_restores_the_base(engine, lora, tmp_path):
    model, tok, slot = lora
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    engine.clear_adapter()
    base = _engine_logp(engine, ids)
    _set(slot, b_std=0.0)  # PEFT's init: B = 0
    _load(engine, slot, tmp_path, "zero.gguf")
    np.testing.assert_allclose(_engine_logp(engine, ids), base, atol=1e-5)
    _set(slot, b_std=0.04)
    _load(engine, slot, tmp_path, "one.gguf")  # replaces (and frees) the zero adapter
    assert np.abs(_engine_logp(engine, ids) - base).max() > 0.5
    engine.clear_adapter()
    np.testing.assert_array_equal(_engine_logp(engine, ids), base)


@pytest.mark.slow
def test_a_grown_context_keeps_the_adapter(gguf, lora, tmp_path):
    """reset() with more copies than the context holds builds a new context: the adapter is attached to it."""
    from agents.llamacpp.engine import Engine

    model, tok, slot = lora
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    engine = Engine(gguf, n_ctx=64, threads=1)
    try:
        _set(slot, b_std=0.04)
        _load(engine, slot, tmp_path)
        one = _engine_logp(engine, ids)
        engine.reset(3)
        grown = engine.feed({2: ids})[2]
        assert engine.capacity == 3
        np.testing.assert_allclose(_logp(grown), one, atol=1e-4)
        assert _logp(grown).argmax() == _torch_logp(model, slot, ids).argmax()
    finally:
        engine.close()


@pytest.mark.slow
def test_foreign_files_are_refused_and_the_loaded_adapter_stays(engine, lora, tmp_path, gguf):
    from agents.llamacpp.gguf_lora import BaseTensors, write_adapter
    from tests.test_gguf_lora import _adapter, _base_gguf

    model, tok, slot = lora
    ids = tok(PROMPT, add_special_tokens=False)["input_ids"]
    _set(slot, b_std=0.04)
    _load(engine, slot, tmp_path)
    before = _engine_logp(engine, ids)
    tiny, tiny_slot = _adapter()
    other = write_adapter(tmp_path / "tiny.gguf", tiny_slot.parameters(), 8.0,
                          BaseTensors.from_gguf(_base_gguf(tmp_path / "tiny-base.gguf", tiny)))
    with pytest.raises(ValueError, match="do not fit the base weight .* another model"):
        engine.load_adapter(other)
    with pytest.raises(ValueError, match="not a LoRA adapter"):
        engine.load_adapter(gguf)  # the model file itself
    with pytest.raises(ValueError, match="does not exist"):
        engine.load_adapter(tmp_path / "missing.gguf")
    cut = tmp_path / "cut.gguf"  # a copy of the loaded adapter, cut in its tensor data
    cut.write_bytes((tmp_path / "a.gguf").read_bytes()[:-1000])
    with pytest.raises(ValueError, match="truncated"):
        engine.load_adapter(cut)
    np.testing.assert_array_equal(_engine_logp(engine, ids), before)
    engine.clear_adapter()


@pytest.mark.slow
def test_trainable_engine_reasoner_syncs_after_each_update(gguf, tmp_path):
    """llamacpp:default + reasoner LoRA: rollouts on the engine, scoring in torch, the adapter re-sent after
    an in-place change (what an optimizer step does) and only then."""
    from agents.registry import AgentContext, build_agent
    from agents.reasoner import ReasonerConfig
    from tests.test_llamacpp import _play

    ctx = AgentContext("reasoner", config=ReasonerConfig(max_step_tokens=16, max_answer_tokens=32, greedy=True),
                       lora=LoraSpec(enabled=True, rank=4, alpha=8.0))
    built = build_agent("llamacpp:default#n_ctx=512&threads=1", ctx)
    agent = built.agent
    assert built.info["lora"] and hasattr(agent, "score") and agent.lora is not None
    roller = agent.decoder
    first = _play(agent, "1,3,8")
    assert roller.adapter_syncs == 1 and roller.engine.adapter is not None
    _play(agent, "1,3,8")
    assert roller.adapter_syncs == 1  # unchanged weights: nothing re-sent
    recs = [t["reasoner"] for t in first.trajectories]
    scored = agent.score(recs)
    logp = scored.logp.detach()
    diffs = [abs(float(logp[r, i]) - rec.logprobs[i]) for r, rec in enumerate(recs)
             for i, m in enumerate(rec.gen_mask) if m]
    assert len(diffs) > 10 and sum(diffs) / len(diffs) < 0.1  # the engine's log-probs, rescored in torch
    with torch.no_grad():
        for name, p in agent.lora.parameters().items():
            if "lora_B" in name:
                p.add_(0.05)
    second = _play(agent, "1,3,8")
    assert roller.adapter_syncs == 2
    assert [t["reasoner"].input_ids for t in second.trajectories] != [t["reasoner"].input_ids for t in first.trajectories]
    link = tmp_path / "other.gguf"  # a GGUF without a torch twin
    link.symlink_to(gguf)
    with pytest.raises(ValueError, match="only llamacpp:default"):
        build_agent(f"llamacpp:{link}", replace(ctx, shared={}))


class _FakeEngine(EngineDecoder):
    """Stands in for the llama.cpp decoder: records what the reasoner's scorer sends it (its sync rule is the real one)."""

    def __init__(self) -> None:
        self.synced: list[tuple[dict, float, str]] = []
        self.resets: list[int] = []
        self._synced = None

    def sync_adapter(self, weights, alpha=None, name=None):
        self.synced.append(({k: v.detach().clone() for k, v in weights.items()}, alpha, name))

    def reset(self, n, seed=None):
        self.resets.append(n)


def test_engine_reasoner_syncs_only_changed_weights_and_delegates_learning():
    """Model-free of llama.cpp: the sync rule (tensor versions) and what goes where."""
    from agents.reasoner import Reasoner
    from agents.registry import AgentContext, build_agent

    learner = build_agent("tiny", AgentContext("reasoner", lora=LoraSpec(enabled=True, rank=2, alpha=4.0))).agent
    roller = _FakeEngine()
    agent = Reasoner(config=learner.config, decoder=roller, scorer=learner.scorer, turns=learner.turns)
    assert agent.module is learner.module and agent.lora is learner.lora and agent.tokenizer is learner.tokenizer
    agent.reset(3)
    agent.reset(3)
    assert len(roller.synced) == 1 and roller.resets == [0, 3, 3]  # built, then two rollouts
    weights, alpha, name = roller.synced[0]
    assert alpha == 4.0 and name == "reasoner" and set(weights) == set(learner.lora.parameters())
    optimizer = torch.optim.AdamW(agent.module.parameters(), lr=0.1)
    loss = sum((p ** 2).sum() for p in agent.module.parameters()) + sum(p.sum() for p in agent.module.parameters())
    loss.backward()
    optimizer.step()
    agent.reset(2)
    assert len(roller.synced) == 2
    changed = [k for k in weights if not torch.equal(weights[k], roller.synced[1][0][k])]
    assert changed  # the optimizer step reached the engine
    assert agent.decoder.sync(agent.scorer, force=True) and len(roller.synced) == 3
    with agent.reference():
        assert learner.scorer._reference
    full = build_agent("tiny", AgentContext("reasoner")).agent
    with pytest.raises(ValueError, match="needs a LoRA learner"):
        Reasoner(config=full.config, decoder=roller, scorer=full.scorer, turns=full.turns)
