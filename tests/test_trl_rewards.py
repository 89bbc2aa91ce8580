"""TRL-style reward functions, called the way TRL's GRPOTrainer calls them: the env's own score of the same texts."""

import pytest

import rsim_env
from agents.scripted.policies import FixedPlanner
from algos.viewer.load import recompute
from rsim_env import Problem, render
from rsim_env.code import SandboxConfig, configure
from rsim_env.record import EpisodeRecord, from_outcome
from rsim_env.strategies import STRATEGIES
from rsim_env.integrations.trl_rewards import (accuracy_reward, completion_steps, completion_text, follow_reward, format_reward,
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


def test_an_unboxed_last_number_earns_nothing():
    # the env's default: last_number_fallback off (the old bridge turned it on and paid 1.0 here)
    assert call_like_trl(accuracy_reward, ["What is 2 + 3?"], ["2 + 3 = 5"], answer=["5"]) == [0.0]
    assert call_like_trl(accuracy_reward, ["What is 6 * 7?"], ["\\boxed{6 * 7}"], answer=["42"]) == [0.0]


def test_an_echoed_instruction_follows_nothing():
    # the old bridge ran raw detect() over the text: copying the instruction "followed" it
    for s in (1, 3, 4, 7):
        echoed = render.INSTRUCTIONS[s] + "\n\n\\boxed{42}"
        assert call_like_trl(follow_reward, ["What is 6 * 7?"], [echoed], strategies=[[s, 8]]) == [0.0], s
        header = f"Step 1 ({STRATEGIES[s].name}: {STRATEGIES[s].prompt})\n\n\\boxed{{42}}"
        assert call_like_trl(follow_reward, ["What is 6 * 7?"], [header], strategies=[[s, 8]]) == [0.0], s


def test_conversational_completions_use_the_assistant_turns():
    comps = [[{"role": "assistant", "content": "Let me check: 7 * 6 = 42. \\boxed{42}"}],
             [{"role": "assistant", "content": "\\boxed{41}"}]]
    prompts = [[{"role": "user", "content": "7*6?"}]] * 2
    assert call_like_trl(accuracy_reward, prompts, comps, answer=["42", "42"]) == [1.0, 0.0]
    assert call_like_trl(format_reward, prompts, comps, answer=["42", "42"]) == [1.0, 1.0]
    assert completion_text([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]) == "y"


def test_follow_scores_step_i_against_strategy_i():
    q = ["What is 6 * 7?"] * 3
    comps = ["Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.\n\nVerify: 30 + 12 = 42.\n\n\\boxed{42}",
             "Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.",  # validation step missing: scores 0 for it
             "Verify: 30 + 12 = 42.\n\nSplit it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.\n\n\\boxed{42}"]  # order
    plans = [[1, 3, 8], ["decomposition", "validation", "termination"], [1, 3, 8]]
    assert call_like_trl(follow_reward, q, comps, strategies=plans) == [1.0, 0.5, 0.0]
    # an announcement (no new number or expression) and a repeated step follow nothing
    assert call_like_trl(follow_reward, q[:1], ["Let me check 6 * 7 again."], strategies=[3]) == [0.0]
    assert call_like_trl(follow_reward, q[:1], ["Verify: 42 / 7 = 6."], strategies=[3]) == [1.0]
    again = "Verify: 42 / 7 = 6.\n\nVerify: 42 / 7 = 6.\n\n\\boxed{42}"
    assert call_like_trl(follow_reward, q[:1], [again], strategies=[[3, 3, 8]]) == [0.5]


def test_the_documented_example_prints_what_its_comment_says():
    """docs/environment.md's TRL example (run by tests/test_readme.py) computes what its comment says."""
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "environment.md").read_text()
    block = re.search(r"```python\n(from rsim_env.integrations.trl_rewards import .*?)```", doc, re.S).group(1)
    assert "# [1.0] [1.0] [1.0]" in block
    completions = [[{"role": "assistant", "content": "Verify: 5 - 3 = 2.\n\nSo the answer is \\boxed{5}."}]]
    assert completions[0][0]["content"].replace("\\", "\\\\").replace("\n", "\\n") in block
    assert (accuracy_reward(completions, answer=["5"]), format_reward(completions),
            follow_reward(completions, strategies=[["validation", "termination"]])) == ([1.0], [1.0], [1.0])


def test_steps_split_only_as_often_as_the_plan_needs():
    program = "```python\ndef f(x):\n\n    return x\n```"
    assert completion_steps("a\n\nb\n\n" + program, 3) == ["a", "b", program]
    assert completion_steps("a", 3) == ["a", "", ""]
    msgs = [{"role": "assistant", "content": t} for t in ("a", "b\n\nc", "d")]
    assert completion_steps(msgs, 2) == ["a", "b\n\nc\n\nd"] and completion_steps(msgs, 3) == ["a", "b\n\nc", "d"]
    one = [{"role": "assistant", "content": "a\n\nb\n\nc"}]  # what TRL passes: one message holding every step
    assert completion_steps(one, 2) == ["a", "b\n\nc"] and completion_steps(one, 3) == ["a", "b", "c"]


def test_column_names_are_configurable():
    acc = make_accuracy_reward(answer_column="solution")
    fol = make_follow_reward(strategies_column="plan")
    assert call_like_trl(acc, ["q"], ["\\boxed{3}"], solution=["3"]) == [1.0]
    assert call_like_trl(fol, ["What is 2 + 3?"], ["To recap, 2 + 3 = 5 so far."], plan=["summarization"]) == [1.0]


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
    with pytest.raises(ValueError, match="protocol 'nope'"):
        call_like_trl(follow_reward, ["q"], ["x"], strategies=[[8]], protocol=["nope"])
    with pytest.raises(ValueError, match="kind 'poetry'"):
        call_like_trl(format_reward, ["q"], ["x"], kind=["poetry"])


def test_hostile_completion_is_bounded():
    evil = "\\boxed{" + "(" * 5000 + "__import__('os')" + ")" * 5000 + "}"
    assert call_like_trl(accuracy_reward, ["q"], [evil], answer=["1"]) == [0.0]


# -- the same texts through the env and through the bridge ----------------------------------------------------------

MATH = Problem("m", "What is 6 * 7?", "42", "number")
CODE = Problem("double", render.code_question("`double(x)` returns twice `x`.", "double"), "", kind="code",
               entry_point="double", tests="def check(candidate):\n    assert candidate(2) == 4\n"
                                           "    assert candidate(-1) == -2\n")
PROGRAM = "def double(x):\n\n    return 2 * x"  # a blank line inside: the split must keep the final step whole
MATH_STEPS = {0: "Wait, is 7 * 6 the same? Yes, 7 * 6 = 42.", 1: "Split it into sub-problems: 6 * 5 = 30 and 6 * 2 = 12.",
              2: "Let me think about 6 * 7.", 3: render.INSTRUCTIONS[3], 4: "To recap, 6 * 7 = 42 so far.",
              5: "Focus on the key step first: 6 * 7 = 6 * 5 + 6 * 2.", 6: "Then 6 * 7 = 42.", 7: "Plan: add 30 and 12."}
CODE_STEPS = {1: "Split it into sub-problems: read x, then return x + x.", 3: "Check: double(2) should be 4.",
              6: "Next, return 2 * x.", 7: render.INSTRUCTIONS[7]}
PLANS = {"math": ([8], [1, 3, 8], [0, 2, 4, 8], [5, 6, 7, 8], [6, 6, 8], [2, 3]),
         "code": ([8], [1, 3, 8], [6, 7, 8], [3, 3, 8])}


class Writer:
    """Writes the kind's step for each planned strategy; the answer (a box, or a program) on termination."""

    role = "reasoner"

    def __init__(self, kind, answer="42"):
        self.kind, self.answer = kind, answer

    def reset(self, n):
        pass

    def records(self):
        return []

    def act(self, ids, obs):
        out = []
        for o in obs:
            s, opened = int(o.get("strategy", 8)), str(o.get("injected", ""))
            if self.kind == "math":
                out.append(MATH_STEPS[s] if s != 8 else (f"{self.answer}}}." if opened.endswith("{")
                                                          else f"So \\boxed{{{self.answer}}}."))
            else:
                out.append(CODE_STEPS[s] if s != 8 else (f"{PROGRAM}\n```" if opened.endswith("```python\n")
                                                          else f"```python\n{PROGRAM}\n```"))
        return out


def env_episode(problem, plan, proto, planner=True, answer="42"):
    env = rsim_env.env(protocol=proto, planner=planner, max_steps=len(plan))
    env.reset(options={"problem": problem})
    planned, writer, info = FixedPlanner(plan), Writer(problem.kind, answer), None
    planned.reset(1)
    for agent in env.agent_iter():
        obs, _, term, trunc, info = env.last()
        env.step(None if term or trunc else (planned if agent == "planner" else writer).act([0], [obs])[0])
    return info


@pytest.fixture
def rlimits_sandbox():
    configure(SandboxConfig(isolation="rlimits"))  # tests opt in; bubblewrap is not on every machine
    yield
    configure(SandboxConfig())


def viewer_components(info, problem):
    """The viewer's recomputation of an env episode written as a record and read back (math regrades from the
    record alone; a code record carries no tests, so the viewer is given the problem)."""
    row = from_outcome({"info": info, "rewards": {}}).to_json()
    return recompute(EpisodeRecord.from_json(row), problem if problem.tests else None).values


def _columns(problem, plan, proto):
    return {"answer": [problem.answer], "kind": [problem.kind], "tests": [problem.tests],
            "entry_point": [problem.entry_point], "protocol": [proto], "question": [problem.question],
            **({"strategies": [plan]} if plan else {})}


@pytest.mark.parametrize("proto", sorted(render.PROTOCOLS))
@pytest.mark.parametrize("kind,plan", [(k, p) for k, plans in PLANS.items() for p in plans],
                         ids=lambda x: x if isinstance(x, str) else ",".join(map(str, x)))
def test_env_bridge_and_viewer_give_the_same_components(kind, plan, proto, rlimits_sandbox):
    problem = MATH if kind == "math" else CODE
    for answer in ("42", "41"):
        info = env_episode(problem, plan, proto, answer=answer)
        assert viewer_components(info, problem) == info["components"]
        cols = _columns(problem, plan, proto)
        as_text = [render.STEP_DELIMITER.join(info["steps"])]
        as_chat = [[{"role": "assistant", "content": s} for s in info["steps"]]]
        for completions in (as_text, as_chat):
            got = {"acc": call_like_trl(accuracy_reward, [problem.question], completions, **cols)[0],
                   "format": call_like_trl(format_reward, [problem.question], completions, **cols)[0],
                   "follow": call_like_trl(follow_reward, [problem.question], completions, **cols)[0]}
            assert got == {k: info["components"][k] for k in got}, (info["steps"], info["detected"])


@pytest.mark.parametrize("kind", ["math", "code"])
def test_env_bridge_and_viewer_agree_without_a_planner(kind, rlimits_sandbox):
    problem = MATH if kind == "math" else CODE
    info = env_episode(problem, [8], "chat", planner=False)
    assert viewer_components(info, problem) == info["components"]
    cols = _columns(problem, None, "chat")
    got = [call_like_trl(f, [problem.question], [info["steps"][0]], **cols)[0] for f in (accuracy_reward, format_reward)]
    assert got == [info["components"]["acc"], info["components"]["format"]] == [1.0, 1.0]


@pytest.mark.slow
def test_real_grpo_trainer_calls_them(tmp_path):
    trl = pytest.importorskip("trl", reason="TRL is optional (extra 'trl')")
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.hf.loading import resolve
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
