"""The training loop end to end with tiny random-init agents (seconds, no downloads)."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from algos.cli import main
from algos.config import resolve


def _cfg(tmp_path, **over):
    base = {"train.output_dir": str(tmp_path), "train.progress": False}
    base.update(over)
    return resolve("tiny", base)


def _flat(module):
    return torch.cat([p.detach().flatten() for p in module.parameters()]).clone()


def _scalars(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tags = {}
    for ev in Path(run_dir, "tensorboard").rglob("events.out.tfevents*"):
        acc = EventAccumulator(str(ev)); acc.Reload()
        for t in acc.Tags()["scalars"]:
            tags[t] = [e.value for e in acc.Scalars(t)]
    return tags


def test_end_to_end_changes_params_and_logs_reward(tmp_path):
    from accelerate.utils import set_seed
    from algos.cli import build_agents, build_learner

    cfg = _cfg(tmp_path)
    set_seed(cfg.train.seed)
    before = {r: _flat(a.module) for r, a in build_agents(cfg, build_learner(cfg), "cpu").items()}
    out = main(cfg)
    for role, module in out["params"].items():
        assert not torch.equal(_flat(module), before[role]), f"{role} parameters did not change"
    tags = _scalars(tmp_path)
    for t in ("planner/reward", "reasoner/reward", "reasoner/reward_std", "reasoner/frac_reward_zero_std",
              "rewards/acc/mean", "rewards/follow/mean", "accuracy", "lambda", "stage", "planner/grad_norm",
              "reasoner/learning_rate", "planner/clip_ratio/region_mean", "reasoner/entropy", "step_time",
              "completions/mean_length", "num_tokens", "strategies/termination"):
        assert t in tags, f"{t} not logged; got {sorted(tags)}"
    assert len(tags["reasoner/reward"]) == cfg.train.steps
    from rsim_env.answers import REASONS

    per_step = [sum(tags[f"answers/reason/{r}"][i] for r in (*REASONS, "other")) for i in range(cfg.train.steps)]
    assert per_step == [per_step[0]] * cfg.train.steps and per_step[0] >= 2, per_step  # every episode counted once
    assert tags["lambda"][0] == pytest.approx(0.7) and tags["lambda"][-1] == pytest.approx(0.3)
    samples = [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]
    assert samples and {"strategies", "steps", "rewards"} <= set(samples[0])
    ckpt = Path(out["checkpoint"])
    assert json.loads((ckpt / "config.json").read_text())["learner"] == "stackelberg"


def test_resume_through_trainer_is_exact(tmp_path):
    straight = main(_cfg(tmp_path / "a", **{"train.steps": 4}))
    main(_cfg(tmp_path / "b", **{"train.steps": 2}))
    resumed = main(_cfg(tmp_path / "b", **{"train.steps": 4, "resume": str(tmp_path / "b")}))
    assert resumed["steps"] == 4 and len(resumed["history"]) == 2
    for role in ("planner", "reasoner"):
        assert torch.equal(_flat(straight["params"][role]), _flat(resumed["params"][role])), role
    assert straight["history"][-1]["reasoner/reward"] == resumed["history"][-1]["reasoner/reward"]


@pytest.mark.parametrize("learner,trained", [("grpo", {"reasoner"}), ("planner_only", {"planner"})],
                         ids=["grpo-baseline", "planner-only"])
def test_other_learners(tmp_path, learner, trained):
    out = main(_cfg(tmp_path, learner=learner, **{"train.steps": 2}))
    assert set(out["params"]) == trained
    if learner == "grpo":  # no planner in the environment
        assert "planner/reward" not in out["history"][0]


def test_alternating_schedule_updates_one_agent_per_step(tmp_path):
    out = main(_cfg(tmp_path, **{"schedule.schedule": "alternating", "schedule.follower_updates": 2, "train.steps": 3}))
    h = out["history"]
    assert ["planner/loss" in m for m in h] == [True, False, False]
    assert ["reasoner/loss" in m for m in h] == [False, True, True]


def test_zero_advantage_groups_are_skipped(tmp_path):
    """A batch whose groups all have equal rewards is never scored and changes nothing."""
    from accelerate.utils import set_seed
    from algos.cli import build_agents, build_learner
    from algos.trainer import Trainer, make_accelerator

    cfg = _cfg(tmp_path)
    acc = make_accelerator(cfg.train)
    set_seed(0)
    learner = build_learner(cfg)
    agents = build_agents(cfg, learner, acc.device)
    from algos.cli import build_problems

    tr = Trainer(cfg.train, learner, agents, build_problems(cfg), acc)
    results = [{"rewards": {"reasoner": 1.0, "planner": 0.0}} for _ in range(8)]
    before = _flat(agents["reasoner"].module)
    m = tr.update("reasoner", learner.plan(0), results, [None] * 8)  # records never touched: nothing scored
    assert m == {"skipped": 1.0}
    assert torch.equal(before, _flat(agents["reasoner"].module))


def test_groups_must_divide_by_processes(tmp_path):
    from algos.trainer import Trainer

    class FakeAcc:
        num_processes = 3
        process_index = 0

    cfg = _cfg(tmp_path)
    with pytest.raises(ValueError, match="groups_per_step=2 does not divide by the 3 processes"):
        from algos.cli import build_learner
        Trainer(cfg.train, build_learner(cfg), {"planner": object(), "reasoner": object()}, [], FakeAcc())


@pytest.mark.parametrize(
    "over,msg",
    [({"train.steps": "x"}, "expected a int"), ({"learner": "ppo"}, "RunConfig.learner='ppo'"),
     ({"train.grpo.loss_type": "sum"}, "GRPOConfig.loss_type='sum'"), ({"nope": 1}, "unknown config key"),
     ({"data.source": "gsm9k"}, "unknown data spec 'gsm9k'"),
     ({"train.mixed_precision": "fp8"}, "TrainConfig.mixed_precision='fp8'"),
     ({"env.weights.follow": "inf"}, "RewardWeights.follow=inf"),
     ({"env.check.timeout_s": "0"}, "CheckConfig.timeout_s=0"),
     ({"reasoner.max_step_tokens": "0"}, "max_step_tokens")],
    ids=["type", "learner", "loss", "unknown", "data-spec", "precision", "weight-inf", "timeout", "reasoner-cap"],
)
def test_config_errors(over, msg):
    with pytest.raises(ValueError, match=msg):
        resolve("tiny", over)


def test_two_processes_under_accelerate_launch(tmp_path):
    """Two gloo processes via torchrun (`--cpu --num_processes 2` starts one process without MPI).

    Each process rolls out its own group; the checkpoint holds both RNG streams, and save() checks
    that both replicas hold identical weights (gradients were all-reduced).
    """
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]), OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "algos.cli", "train", "--preset", "tiny",
           "--steps", "2", "--out", str(tmp_path), "--set", "train.progress=false"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    tags = _scalars(tmp_path)
    assert len(tags["reasoner/reward"]) == 2
    ckpt = tmp_path / "checkpoints" / "step_00000002"
    assert (ckpt / "rng.0.safetensors").is_file() and (ckpt / "rng.1.safetensors").is_file()
    assert json.loads((ckpt / "state.json").read_text())["num_processes"] == 2
    assert p.stdout.count("rsim train: 2 steps") == 1  # one main process printed the summary: a real 2-process group
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 2


def test_num_iterations_reuses_rollout_batch(tmp_path):
    out = main(_cfg(tmp_path, **{"train.grpo.num_iterations": 3, "train.steps": 1}))
    m = out["history"][0]
    # passes 2 and 3 see a ratio != 1 against the kept old log-probs, so approx_kl is positive
    assert m["reasoner/approx_kl"] > 0 and m["planner/approx_kl"] > 0


def test_kl_to_frozen_reference(tmp_path):
    out = main(_cfg(tmp_path, **{"train.grpo.kl_coef": 0.1, "train.steps": 2}))
    assert "reasoner/kl" in out["history"][0]
    assert out["history"][0]["reasoner/kl"] == pytest.approx(0.0, abs=1e-6)  # step 0: policy == reference
    assert out["history"][1]["reasoner/kl"] > 0


@pytest.mark.slow
def test_demo_preset_one_step(tmp_path):
    """The embedded SmolLM2-135M for both agents, the demo preset's every other setting: one group of two episodes
    (the preset's 2 x 4 cost minutes on a CPU and check nothing more)."""
    out = main(resolve("demo", {"train.output_dir": str(tmp_path), "train.steps": 1, "train.progress": False,
                                "train.groups_per_step": 1, "train.grpo.group_size": 2}))
    assert out["steps"] == 1 and "reasoner/reward" in _scalars(tmp_path)


def test_cli_print_config_and_flags():
    out = main(["train", "--preset", "paper", "--steps", "7", "--set", "train.grpo.clip_eps_high=0.3",
                "--set", "schedule.schedule=alternating", "--print-config"])
    c = out["config"]
    assert c["train"]["steps"] == 7 and c["train"]["grpo"]["clip_eps_high"] == 0.3
    assert c["model"]["reasoner"] == "Qwen/Qwen2.5-0.5B-Instruct" and c["schedule"]["schedule"] == "alternating"


@pytest.mark.parametrize("argv,msg", [
    (["--set", "train.grpo.group_size=1"], "GRPOConfig.group_size=1"),
    (["--set", "train.steps"], "expected KEY=VALUE"),
    (["--set", "train=3"], "is a section"),
    (["--set", "schedule.lambda_stage1=2"], "StackelbergConfig.lambda_stage1=2"),
], ids=["group-size", "no-equals", "section", "lambda"])
def test_cli_errors_name_the_field(argv, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        main(["train", "--preset", "tiny", *argv])


@pytest.mark.parametrize("loss_type,local,other,want", [("dapo", 10, 30, 0.5), ("grpo", 2, 6, 0.5), ("dr_grpo", 4, 4, 1.0)],
                         ids=["dapo-tokens", "grpo-rows", "even"])
def test_process_weight_makes_mean_of_processes_a_global_mean(loss_type, local, other, want):
    from algos.distributed import process_weight
    from algos.grpo import AGGREGATIONS

    class FakeAcc:
        num_processes, device = 2, "cpu"

        def reduce(self, t, op):
            return t + other

    mask = torch.ones(1, local) if loss_type == "dapo" else torch.ones(local, 3)
    units = AGGREGATIONS[loss_type].count(mask, local)  # tokens for dapo, sequences otherwise
    w = process_weight(FakeAcc(), units, 1.0)
    assert w == pytest.approx(want)
    # the all-reduced mean of the two weighted local means is the global mean
    a, b = 1.0, 3.0
    w_other = other * 2 / (local + other)
    assert (a * w + b * w_other) / 2 == pytest.approx((a * local + b * other) / (local + other))
    assert process_weight(FakeAcc(), units, 0.0) == 0.0  # a process with nothing to learn
