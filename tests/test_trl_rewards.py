"""TRL-style reward functions, called the way TRL's GRPOTrainer calls them."""

import pytest

from rsim_env.trl_rewards import (accuracy_reward, completion_text, follow_reward, format_reward,
                                  make_accuracy_reward, make_follow_reward)

TRL_EXTRAS = {"trainer_state": None, "log_extra": lambda *a, **k: None, "log_metric": lambda *a, **k: None}


def call_like_trl(fn, prompts, completions, **columns):
    """GRPOTrainer._calculate_rewards (trl 1.16): keyword call, columns repeated per completion."""
    return fn(prompts=prompts, completions=completions, completion_ids=[[1, 2]] * len(completions),
              **columns, **TRL_EXTRAS)


def test_plain_text_completions():
    comps = ["So 2 + 3 = 5.\n\nThe answer is \\boxed{5}.", "I get \\boxed{6}", "no answer", "\\boxed{1/2}"]
    cols = {"answer": ["5", "5", "5", "0.5"], "answer_type": ["number", "number", "number", "auto"]}
    assert call_like_trl(accuracy_reward, ["q"] * 4, comps, **cols) == [1.0, 0.0, 0.0, 1.0]
    assert call_like_trl(format_reward, ["q"] * 4, comps, **cols) == [1.0, 1.0, 0.0, 1.0]


def test_conversational_completions_use_the_assistant_turns():
    comps = [[{"role": "assistant", "content": "Let me check: 7 * 6 = 42. \\boxed{42}"}],
             [{"role": "assistant", "content": "\\boxed{41}"}]]
    prompts = [[{"role": "user", "content": "7*6?"}]] * 2
    assert call_like_trl(accuracy_reward, prompts, comps, answer=["42", "42"]) == [1.0, 0.0]
    assert call_like_trl(format_reward, prompts, comps, answer=["42", "42"]) == [1.0, 1.0]
    assert completion_text([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]) == "y"


def test_follow_scores_step_i_against_strategy_i():
    comps = ["Let me break it into smaller sub-problems.\n\nLet me check the last result by substituting it back.",
             "Let me break it into smaller sub-problems.",  # second step missing: scores 0 for it
             "Let me check the result.\n\nLet me break it down into parts."]  # wrong order
    plans = [[1, 3], ["decomposition", "validation"], [1, 3]]
    assert call_like_trl(follow_reward, ["q"] * 3, comps, strategies=plans) == [1.0, 0.5, 0.0]
    assert call_like_trl(follow_reward, ["q"], ["Let me check the answer again."], strategies=[3]) == [1.0]


def test_column_names_are_configurable():
    acc = make_accuracy_reward(answer_column="solution")
    fol = make_follow_reward(strategies_column="plan")
    assert call_like_trl(acc, ["q"], ["\\boxed{3}"], solution=["3"]) == [1.0]
    assert call_like_trl(fol, ["q"], ["To recap what we know so far"], plan=["summarization"]) == [1.0]


def test_missing_or_bad_inputs_are_named():
    with pytest.raises(ValueError, match="column 'answer'.*make_accuracy_reward"):
        call_like_trl(accuracy_reward, ["q"], ["\\boxed{1}"])
    with pytest.raises(ValueError, match="2 values for 1 completions"):
        call_like_trl(accuracy_reward, ["q"], ["\\boxed{1}"], answer=["1", "2"])
    with pytest.raises(TypeError, match="neither a str nor"):
        call_like_trl(format_reward, ["q"], [123])
    with pytest.raises(KeyError, match="valid names"):
        call_like_trl(follow_reward, ["q"], ["x"], strategies=[["guessing"]])
    with pytest.raises(ValueError, match="out of range"):
        call_like_trl(follow_reward, ["q"], ["x"], strategies=[[9]])


def test_hostile_completion_is_bounded():
    evil = "\\boxed{" + "(" * 5000 + "__import__('os')" + ")" * 5000 + "}"
    assert call_like_trl(accuracy_reward, ["q"], [evil], answer=["1"]) == [0.0]


@pytest.mark.slow
def test_real_grpo_trainer_calls_them(tmp_path):
    trl = pytest.importorskip("trl", reason="TRL is optional (extra 'trl')")
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.loading import resolve
    from rsim_env.render import no_planner_chat

    seen = {}

    def spy(fn):
        def wrapped(completions, **kw):
            out = fn(completions, **kw)
            seen[fn.__name__] = (completions, kw, out)
            return out
        wrapped.__name__ = fn.__name__
        return wrapped

    rows = [{"prompt": no_planner_chat("What is 2 + 3?"), "answer": "5", "strategies": [1]}] * 4
    path = resolve("default")
    args = trl.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2, num_generations=2,
                          max_completion_length=8, max_steps=1, report_to="none", use_cpu=True, bf16=False,
                          save_strategy="no", seed=0, beta=0.0, disable_tqdm=True, logging_steps=1)
    trainer = trl.GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32),
                              reward_funcs=[spy(accuracy_reward), spy(format_reward), spy(follow_reward)],
                              args=args, train_dataset=Dataset.from_list(rows),
                              processing_class=AutoTokenizer.from_pretrained(path))
    trainer.train()
    assert set(seen) == {"accuracy_reward", "format_reward", "follow_reward"}
    comps, kw, out = seen["accuracy_reward"]
    assert isinstance(comps[0], list) and comps[0][0]["role"] == "assistant"  # conversational dataset
    assert kw["answer"] == ["5", "5"] and all(v in (0.0, 1.0) for v in out)
    logged = {k for h in trainer.state.log_history for k in h}
    assert {"rewards/accuracy_reward/mean", "rewards/follow_reward/mean"} <= logged
