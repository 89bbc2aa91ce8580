"""``agent.score`` (the learner interface of the LLM agents) and the trainer driving them (tiny random-init
Llama models, byte tokenizer)."""

import torch

from agents.hf.loading import tiny_model
from agents.planners.llm import Planner
from agents.reasoner import Reasoner, ReasonerConfig
from agents.hf.sampling import token_logprobs
from algos.grpo import GRPOConfig
from algos.stackelberg import StackelbergConfig, StackelbergGRPO
from algos.trainer import OptimConfig, TrainConfig, Trainer, make_accelerator
from rsim_env import rewards
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.problem import Problem

PROBLEMS = [Problem(id=f"p{i}", question=f"What is {i} + 1?", answer=str(i + 1)) for i in range(4)]


def _agents(step_tokens=3):
    causal, tok = tiny_model("causal", seed=0)
    backbone, _ = tiny_model("backbone", seed=1)
    reasoner = Reasoner(causal, tok, ReasonerConfig(max_step_tokens=step_tokens))
    planner = Planner(backbone, tok)
    return {"planner": planner, "reasoner": reasoner}


def _rollout(agents, n_groups=1, g=2, max_steps=2):
    group = EnvGroup(PROBLEMS[:n_groups], g, max_steps=max_steps)
    for a in agents.values():
        a.reset(len(group))
    group.reset(seed=0)
    with torch.no_grad():
        while not group.done:
            agent, ids, obs = group.observe()
            group.step(agents[agent].act(ids, obs))
    return group.results(), {r: a.records() for r, a in agents.items()}


def test_reasoner_mask_covers_generated_tokens_only():
    agents = _agents()
    _, records = _rollout(agents)
    recs = records["reasoner"]
    scored = agents["reasoner"].score(recs)
    for i, rec in enumerate(recs):
        generated = {j for s, e in rec.step_spans for j in range(s, e)}
        on = {j for j in range(scored.mask.shape[1]) if scored.mask[i, j] == 1}
        assert on == generated and on, "advantage must hit exactly the generated tokens"
        assert all(j >= rec.prompt_len for j in on)  # never the prompt
    # gradient flows only through masked positions' log-probs
    (scored.logp * scored.mask).sum().backward()
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in agents["reasoner"].module.parameters())


def test_planner_one_score_per_decision():
    agents = _agents()
    results, records = _rollout(agents)
    scored = agents["planner"].score(records["planner"])
    assert scored.mask.sum(1).tolist() == [float(len(r["info"]["strategies"])) for r in results]
    want = torch.tensor([r.logprobs + [0.0] * (scored.logp.shape[1] - len(r.logprobs)) for r in records["planner"]])
    torch.testing.assert_close(scored.logp.detach() * scored.mask, want * scored.mask, atol=1e-4, rtol=1e-4)


def test_stackelberg_with_llm_agents_updates_both(tmp_path, monkeypatch):
    # A random tiny reasoner earns no reward under the env's rules (no box, no contentful step that follows its
    # strategy), so every group would have zero variance and nothing to update. This test is about the update
    # plumbing, so it gives the reasoner a reward that varies with its text: R_format = length parity.
    monkeypatch.setattr(rewards, "r_format", lambda final: float(len(final) % 2))
    cfg = TrainConfig(steps=2, groups_per_step=2, output_dir=str(tmp_path), progress=False,
                      grpo=GRPOConfig(group_size=2, max_length=8), planner_optim=OptimConfig(lr=1e-2),
                      reasoner_optim=OptimConfig(lr=1e-2))
    agents = _agents()
    before = {r: [p.detach().clone() for p in a.module.parameters()] for r, a in agents.items()}
    tr = Trainer(cfg, StackelbergGRPO(StackelbergConfig(stage1_steps=1)), agents, PROBLEMS, make_accelerator(cfg),
                 env=EnvConfig(max_steps=2))
    out = tr.train()
    assert out["steps"] == 2
    updated = {r for r, a in agents.items() if any(not torch.equal(b, p) for b, p in zip(before[r], a.module.parameters()))}
    ran = {r for r in ("planner", "reasoner") if any(f"{r}/loss" in m for m in out["history"])}
    assert ran, "both steps had only zero-advantage groups; pick other seeds"
    assert updated == ran
    assert ran == {"planner", "reasoner"}


def test_reasoner_score_matches_full_sequence_logprobs():
    """Scoring only the generated positions equals the full-sequence recompute on generated tokens."""
    agents = _agents(step_tokens=4)
    _, records = _rollout(agents, n_groups=2)
    recs = records["reasoner"]
    scored = agents["reasoner"].score(recs)
    r = agents["reasoner"]
    full = token_logprobs(r.model, [x.input_ids for x in recs], r.record_temperature, r.suppressed_ids, r.pad_id)
    torch.testing.assert_close(scored.logp, full * scored.mask, atol=1e-5, rtol=1e-5)
    # and both match what was recorded while sampling
    rec_lp = torch.zeros_like(full)
    for i, r in enumerate(recs):
        rec_lp[i, : len(r.logprobs)] = torch.tensor(r.logprobs)
    torch.testing.assert_close(scored.logp.detach(), rec_lp * scored.mask, atol=1e-4, rtol=1e-4)
    assert (scored.entropy[scored.mask.bool()] > 0).all()


def test_masked_logprobs_temperature_one_is_the_plain_log_softmax():
    """T = 1 skips the divide (a full-vocabulary pass per decoded token): bit for bit the divided result, and
    the caller's logits are left as they were; other temperatures and suppressed ids still apply."""
    from agents.hf.sampling import masked_logprobs

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 50, generator=g) * 4
    before = logits.clone()
    assert torch.equal(masked_logprobs(logits, 1.0, None), torch.log_softmax(logits / 1.0, dim=-1))
    assert torch.equal(logits, before)
    assert torch.allclose(masked_logprobs(logits, 0.5, None), torch.log_softmax(logits / 0.5, dim=-1))
    sup = torch.tensor([1, 7])
    lp = masked_logprobs(logits, 1.0, sup)
    assert torch.isinf(lp[:, sup]).all() and torch.equal(logits, before)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(3))
