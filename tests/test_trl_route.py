"""TRL's own GRPOTrainer trains the reasoner under rSIM's strategy injection (agents.hf.trl_rollout).

What the loss sees is captured from the trainer itself (the batch ``_generate_and_score_completions`` hands to
the loss): its loss mask covers only tokens the reasoner sampled, its sampled log-probs are TRL's own
recomputation of those tokens, and each completion's reward is the env's ``score`` of its episode.
"""

from __future__ import annotations

import os

import pytest

from rsim_env import EnvConfig, Problem
from rsim_env.record import from_outcome
from rsim_env.scoring import score
from rsim_env.strategies import STRATEGIES

trl = pytest.importorskip("trl", reason="TRL is optional (extra 'trl')")
torch = pytest.importorskip("torch")

from agents.hf.loading import tiny_model  # noqa: E402
from agents.hf.trl_rollout import (InjectionConfig, StrategyInjection, outputs, problem_dataset,  # noqa: E402
                                   reasoner_reward)

ENV = EnvConfig(max_steps=4)
PROBLEMS = [Problem(f"p{i}", f"What is {i} + {4 - i}?", "4", "number", "test") for i in range(4)]


def writer_of_fours(seed: int = 0):
    """A tiny random-init Llama (byte tokenizer) whose last MLP bias pins the final hidden state, so that it writes
    mostly ``4`` and ``}`` (and sometimes end-of-turn): under the ``\\boxed{`` lead-in some episodes are right and
    some are not, so a GRPO group's rewards differ and the update is not zero. Every weight still trains."""
    model, tok = tiny_model(seed=seed, mlp_bias=True, tie_word_embeddings=False)
    with torch.no_grad():
        bias = model.model.layers[-1].mlp.down_proj.bias
        bias.zero_()
        bias[0] = 100.0
        model.lm_head.weight.zero_()
        for token, w in (("4", 1.6), ("}", 1.5), (tok.eos_token, 1.0)):
            model.lm_head.weight[tok.convert_tokens_to_ids(token), 0] = w
    return model, tok


def train(tmp_path, steps: int = 2, planner: str = "fixed:1", env: EnvConfig = ENV):
    """Run GRPOTrainer for ``steps`` steps under injection; return the model, the injection and per-step captures."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tok = writer_of_fours()
    injection = StrategyInjection(PROBLEMS, InjectionConfig(planner=planner, env=env, max_step_tokens=6,
                                                            max_answer_tokens=6, seed=0))
    funcs, weights = injection.reward_funcs()
    args = trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, num_generations=4, max_steps=steps,
                          learning_rate=1e-2, logging_steps=1, report_to=[], save_strategy="no", seed=0, use_cpu=True,
                          reward_weights=weights, temperature=1.0, bf16=False)
    trainer = trl.GRPOTrainer(model=model, processing_class=tok, reward_funcs=funcs, args=args,
                              train_dataset=problem_dataset(PROBLEMS), rollout_func=injection)
    captured = []
    generate = trainer._generate_and_score_completions

    def capture(inputs):
        out = generate(inputs)
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        mask = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        with torch.no_grad():  # TRL's own log-probs of these tokens, before this step's update
            trl_logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, ids, mask,
                                                                          out["completion_ids"].size(1))
        rewards = {name: list(v) for name, v in trainer._logs["rewards"].items()}
        captured.append({"out": out, "trajectories": injection.last, "trl_logps": trl_logps, "rewards": rewards,
                         "weights": dict(zip([f.__name__ for f in funcs], weights))})
        return out

    trainer._generate_and_score_completions = capture
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainer.train()
    return model, tok, before, captured


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    torch.set_num_threads(1)
    return train(tmp_path_factory.mktemp("trl_route"))


def test_grpo_trainer_runs_two_steps_and_changes_the_reasoner(run):
    model, _, before, captured = run
    assert len(captured) == 2  # one generation per optimizer step
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert len(changed) >= len(before) // 2, changed
    assert any(max(c["rewards"]["reasoner_reward"]) > min(c["rewards"]["reasoner_reward"]) for c in captured)


def test_no_injected_token_is_in_the_loss_mask(run):
    _, tok, _, captured = run
    check_masks(tok, captured)


def check_masks(tok, captured):
    for c in captured:
        out = c["out"]
        loss_mask = out["completion_mask"] * out["tool_mask"]  # what GRPOTrainer._compute_loss masks with
        for row, traj in enumerate(c["trajectories"]):
            rec, info = traj["reasoner"], traj["info"]
            n = len(rec.input_ids) - rec.prompt_len
            ids = out["completion_ids"][row, :n].tolist()
            assert ids == rec.input_ids[rec.prompt_len:]  # the very ids the reasoner's context held
            trained = [t for t, m in zip(ids, loss_mask[row, :n].tolist()) if m]
            fed = [t for t, m in zip(ids, loss_mask[row, :n].tolist()) if not m]
            assert loss_mask[row, n:].sum() == 0
            assert loss_mask[row, :n].tolist() == rec.gen_mask[rec.prompt_len:]
            trained_text, fed_text = tok.decode(trained), tok.decode(rec.input_ids[:rec.prompt_len] + fed)
            # every round's injection (a lead-in, a user turn's instruction or an inline header, whichever the
            # protocol uses) is in the prompt or the fed part, and no injected text is in the trained part
            assert len(info["strategies"]) >= 2
            for r, s in enumerate(info["strategies"]):
                row_ = STRATEGIES[s]
                markers = [m.strip() for m in (info["injected"][r], row_.instruction, row_.lead, row_.prompt) if m.strip()]
                assert any(m in fed_text for m in markers), (r, markers)
                assert not any(m[:12] in trained_text for m in markers)
            # the trained tokens are exactly what the reasoner wrote, step by step
            assert "".join("".join(s.split()) for s in info["steps"]) == "".join(
                tok.decode(trained, skip_special_tokens=True).split())


def test_each_completion_is_rewarded_with_the_env_score_of_its_episode(run):
    check_rewards(run[3], ENV)


def check_rewards(captured, env):
    for c in captured:
        total = [sum(c["weights"][name] * c["rewards"][name][i] for name in c["weights"])
                 for i in range(len(c["trajectories"]))]
        for i, traj in enumerate(c["trajectories"]):
            scored = score(from_outcome(traj), rubric=env.rubric)
            assert total[i] == pytest.approx(scored.rewards(env.rubric)["reasoner"])
            assert c["rewards"]["reasoner_reward"][i] == pytest.approx(traj["rewards"]["reasoner"])
            for name in ("acc", "format", "follow"):
                assert c["rewards"][f"rsim_{name}"][i] == scored.values[name]


def test_trl_scores_the_sampled_tokens_with_the_sampling_distribution(run):
    _, _, _, captured = run
    first = captured[0]  # before any update: TRL's recomputation must equal the sampling-time log-probs
    out = first["out"]
    mask = (out["completion_mask"] * out["tool_mask"]).bool()
    sampled = out["sampling_per_token_logps"][mask]
    assert torch.allclose(first["trl_logps"][mask], sampled, atol=1e-4), (first["trl_logps"][mask] - sampled).abs().max()


def test_the_rollout_refuses_what_would_break_it():
    with pytest.raises(ValueError, match="fixed:1,3,8"):
        InjectionConfig(planner="fixed:1-3")
    twins = [Problem("a", "q?", "1"), Problem("b", "q?", "2")]
    with pytest.raises(ValueError, match="same question"):
        StrategyInjection(twins)
    with pytest.raises(ValueError, match="problem_dataset"):
        StrategyInjection(PROBLEMS).problem([{"role": "user", "content": "another question"}])
    with pytest.raises(ValueError, match="rollout_func=StrategyInjection"):
        reasoner_reward(["x"])
    from types import SimpleNamespace

    for trainer, match in ((SimpleNamespace(args=SimpleNamespace(mask_truncated_completions=True)), "mask_truncated"),
                           (SimpleNamespace(args=SimpleNamespace(), use_vllm=True), "use_vllm=False")):
        with pytest.raises(ValueError, match=match):
            StrategyInjection(PROBLEMS)([PROBLEMS[0].question], trainer)
    assert outputs([]) == {k: [] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "rsim_reward",
                                          "rsim_components", "rsim_strategies")}


def test_the_demo_runs_both_routes_and_only_the_injected_one_injects(tmp_path, capsys):
    from agents.hf.trl_demo import DemoConfig, main

    cfg = DemoConfig(model="tiny", problems=2, steps=1, num_generations=2, max_step_tokens=4, max_completion_length=8,
                     out=str(tmp_path))
    rows = {r["route"]: r for r in main(cfg)["rows"]}
    assert set(rows) == {"injected", "plain"} and all(r["steps"] == 1 for r in rows.values())
    assert rows["injected"]["injected_tokens"] > 0 and rows["plain"]["injected_tokens"] == 0
    assert rows["plain"]["follow"] is None and rows["injected"]["follow"] is not None
    assert "| injected |" in capsys.readouterr().out


def test_a_saved_llm_planner_injects_while_trl_trains(tmp_path):
    """The planner may be any planner agent spec: here a saved LLM planner directory (what ``rsim train`` leaves)."""
    from agents.registry import AgentContext, build_agent

    saved = build_agent("tiny", AgentContext("planner", seed=0, max_rounds=ENV.max_steps)).agent.save_pretrained(
        tmp_path / "planner")
    model, _, before, captured = train(tmp_path / "trl", steps=1, planner=str(saved))
    assert len(captured) == 1
    for traj in captured[0]["trajectories"]:
        assert 1 <= len(traj["info"]["strategies"]) <= ENV.max_steps
        assert traj["rewards"]["reasoner"] == pytest.approx(score(from_outcome(traj), rubric=ENV.rubric)
                                                            .rewards(ENV.rubric)["reasoner"])


@pytest.mark.parametrize("protocol", ["chat", "lead", "inline"])
def test_every_turn_protocol_keeps_its_injections_out_of_the_loss(tmp_path, protocol):
    """Injected text as a user turn (chat), as a lead-in the assistant continues (lead) or as an inline header."""
    env = EnvConfig(max_steps=4, protocol=protocol)
    _, tok, _, captured = train(tmp_path, steps=1, env=env)
    check_masks(tok, captured)
    check_rewards(captured, env)
