"""Exact replay of a frozen greedy reasoner (agents.replay.reasoner): same episodes, refusals, keys, concurrent writers."""

from __future__ import annotations

import json
import multiprocessing as mp

import pytest
import torch

from agents.hf.loading import tiny_model
from agents.reasoner import Reasoner, ReasonerConfig
from agents.registry import AgentContext, build_agent
from agents.replay.reasoner import ReplayReasoner, StepStore, weights_fingerprint
from agents.scripted.policies import FixedPlanner, RandomPlanner
from algos.rollout import rollout
from rsim_env import Problem
from rsim_env.group import EnvGroup

PROBLEMS = [Problem(id="a", question="What is 2+3?", answer="5"),
            Problem(id="b", question="What is 7*6?", answer="42"),
            Problem(id="c", question="What is 9-4?", answer="5")]


pytestmark = pytest.mark.usefixtures("single_thread")  # tests/conftest.py


def greedy_reasoner(**cfg) -> Reasoner:
    model, tok = tiny_model(seed=0)
    return Reasoner(model, tok, ReasonerConfig(**{"max_step_tokens": 6, "greedy": True, "seed": 0, **cfg}))


def episodes(reasoner, planner, group_size: int = 3, problems=PROBLEMS) -> list[str]:
    out = rollout(EnvGroup(problems, group_size, max_steps=3), reasoner, planner, seed=0)
    return [json.dumps({"info": t["info"], "rewards": t["rewards"]}, sort_keys=True) for t in out.trajectories]


def test_replayed_episodes_equal_live_byte_for_byte(tmp_path):
    live = episodes(greedy_reasoner(), RandomPlanner(seed=3))
    replay = ReplayReasoner(greedy_reasoner(), StepStore(tmp_path / "s.sqlite"))
    assert episodes(replay, RandomPlanner(seed=3)) == live  # cold: decoded through the wrapper
    cold = dict(replay.stats)
    assert cold["misses"] > 0 and cold["hits"] == 0
    assert episodes(replay, RandomPlanner(seed=3)) == live  # warm: read back, nothing decoded
    assert replay.stats["misses"] == cold["misses"] and replay.stats["hits"] == cold["misses"]
    assert all(all(r.replayed) for r in replay.records())


def test_partly_stored_episodes_catch_up_and_equal_live(tmp_path):
    """A store filled by other plans and batches: stored prefixes are read back, the rest decoded after a catch-up."""
    replay = ReplayReasoner(greedy_reasoner(), StepStore(tmp_path / "s.sqlite"))
    episodes(replay, FixedPlanner([1, 8]), group_size=2)
    assert replay.stats["hits"] == 0
    for plan, problems in (([1, 3, 8], PROBLEMS[:2]), ([1, 8], PROBLEMS), ([2, 8], PROBLEMS[1:])):
        live = episodes(greedy_reasoner(), FixedPlanner(plan), group_size=1, problems=problems)
        assert episodes(replay, FixedPlanner(plan), group_size=1, problems=problems) == live, plan
    assert replay.stats["catchup_steps"] > 0 and replay.stats["catchup_mismatch"] == 0
    assert replay.stats["hits"] > 0


def test_sampling_reasoner_is_refused(tmp_path):
    with pytest.raises(ValueError, match="samples"):
        ReplayReasoner(greedy_reasoner(greedy=False, temperature=0.7), StepStore(tmp_path / "s.sqlite"))


def test_registry_spec_wraps_any_reasoner_and_refuses_a_sampler(tmp_path, monkeypatch):
    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path))
    ctx = AgentContext("reasoner", config=ReasonerConfig(max_step_tokens=4, greedy=True))
    agent, info = build_agent("replay:tiny", ctx)
    assert isinstance(agent, ReplayReasoner) and info["kind"] == "replay" and info["loaded"] == {"kind": "tiny"}
    assert (tmp_path / "steps.sqlite").is_file()
    with pytest.raises(ValueError, match="samples"):
        build_agent("replay:tiny", AgentContext("reasoner", config=ReasonerConfig(greedy=False)))
    with pytest.raises(ValueError, match="reasoner"):
        build_agent("replay:tiny", AgentContext("planner"))


def test_changed_weights_miss_the_cache(tmp_path):
    store = StepStore(tmp_path / "s.sqlite")
    first = ReplayReasoner(greedy_reasoner(), store)
    episodes(first, FixedPlanner([3, 8]))
    changed = greedy_reasoner()
    with torch.no_grad():
        next(changed.model.parameters())[0, 0] += 1e-3
    assert weights_fingerprint(changed) != first.fingerprint
    second = ReplayReasoner(changed, store)
    episodes(second, FixedPlanner([3, 8]))
    assert second.stats["hits"] == 0 and second.stats["misses"] == first.stats["misses"]
    other_settings = ReplayReasoner(greedy_reasoner(max_step_tokens=5), store)
    episodes(other_settings, FixedPlanner([3, 8]))
    assert other_settings.stats["hits"] == 0
    other_temperature = ReplayReasoner(greedy_reasoner(temperature=0.7), store)  # argmax does not see it
    episodes(other_temperature, FixedPlanner([3, 8]))
    assert other_temperature.stats["misses"] == 0


def _writer(path: str, start: int, n: int) -> None:
    store = StepStore(path, timeout_s=120)
    for i in range(start, start + n, 5):  # many small transactions, interleaving with the other process
        store.put_many([(f"k{j}", f"text {j}", j) for j in range(i, i + 5)])


def test_two_processes_write_one_store(tmp_path):
    path = str(tmp_path / "s.sqlite")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, start, 400)) for start in (0, 200)]  # 200 keys overlap
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    store = StepStore(path)
    assert len(store) == 600
    assert store.get_many(["k0", "k599", "k300"]) == {"k0": ("text 0", 0, None), "k599": ("text 599", 599, None),
                                                       "k300": ("text 300", 300, None)}


def test_store_is_capped_by_evicting_the_oldest(tmp_path):
    store = StepStore(tmp_path / "s.sqlite", max_mb=0.01, check_every=1)  # ~10 kB
    with pytest.warns(UserWarning, match="evicted"):
        for i in range(40):
            store.put_many([(f"k{i}", "x" * 1000, 1)])
    assert store.size_bytes() <= 0.01 * 2**20 and store.evicted > 0
    assert "k39" in store.get_many(["k39"]) and not store.get_many(["k0"])
    with pytest.raises(ValueError, match="max_mb"):
        StepStore(tmp_path / "t.sqlite", max_mb=0)


def test_planner_only_training_and_eval_on_the_replay(tmp_path, monkeypatch):
    """The second identical run reads every step back (the store does not grow) and learns the same."""
    from algos.cli import main as rsim

    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    args = ["train", "--learner", "planner_only", "--planner", "toy", "--reasoner", "replay:tiny", "--data", "tiny",
            "--steps", "2", "--set", "reasoner.greedy=true", "--set", "train.groups_per_step=2",
            "--set", "train.grpo.group_size=4", "--set", "env.max_steps=3", "--set", "reasoner.max_step_tokens=4",
            "--set", "train.progress=false"]
    first = rsim([*args, "--out", str(tmp_path / "a")])
    size = len(StepStore(tmp_path / "replay" / "steps.sqlite"))
    second = rsim([*args, "--out", str(tmp_path / "b")])
    assert size > 0 and len(StepStore(tmp_path / "replay" / "steps.sqlite")) == size
    def learned(run):  # everything but timings
        return [{k: v for k, v in h.items() if "time" not in k and "per_s" not in k} for h in run["history"]]

    assert learned(first) == learned(second)
    with pytest.raises(ValueError, match="samples"):
        sampled = [a for a in args if a != "reasoner.greedy=true"]
        sampled.remove("--set")
        rsim([*sampled, "--out", str(tmp_path / "c")])
    ev = ["eval", "--reasoner", "replay:tiny", "--data", "tiny", "--limit", "3", "--set", "env.max_steps=2",
          "--set", "reasoner.max_step_tokens=4", "--modes", "fixed:1,8", "--no-progress"]
    assert rsim(ev)["per_problem"] == rsim(ev)["per_problem"]


def test_replay_benchmark_smoke_plays_the_same_episodes(tmp_path):
    from benchmarks.runtime.replay import Config, main

    res = main(Config(planner="toy", reasoner="tiny", source="tiny", steps=2, max_step_tokens=4, max_answer_tokens=6,
                      out=str(tmp_path / "r.json")))
    assert res["same_episodes"] and res["rows"]["replay_warm"]["replay"]["misses"] == 0
    assert res["rows"]["replay_cold"]["replay"]["hits"] == 0 and res["rows"]["live"]["episodes"] == 2 * 2 * 4
    assert json.loads((tmp_path / "r.json").read_text())["speedup"] > 0


def test_planner_only_reasoner_is_its_base_model_so_eval_replays_its_steps(tmp_path, monkeypatch):
    """A preset with reasoner LoRA on (study, demo) run as planner_only: the reasoner is never trained, so it is built
    as its base model; an adapter would change its weights' fingerprint and no step of training would be shared
    with `rsim eval --reasoner replay:SPEC` or the plan table (a study once decoded everything twice)."""
    from algos import cli
    from algos.config import resolve
    from algos.evaluation import EvalConfig
    from algos.evaluation.run import build_reasoner

    monkeypatch.setenv("RSIM_REPLAY_DIR", str(tmp_path / "replay"))
    sets = {"learner": "planner_only", "model.planner": "toy", "model.reasoner": "replay:tiny", "reasoner.greedy": "true",
            "env.max_steps": "2", "reasoner.max_step_tokens": "4", "reasoner.max_answer_tokens": "6", "data.size": "2"}
    roots = {}
    for lora in ("true", "false"):
        cfg = resolve("tiny", {**sets, "model.reasoner_lora.enabled": lora})
        agents = cli.build_agents(cfg, cli.build_learner(cfg), "cpu", cli.build_problems(cfg))
        assert getattr(agents["reasoner"].inner, "lora", None) is None
        roots[lora] = agents["reasoner"].root
    ecfg = EvalConfig(set=(("model.reasoner", "replay:tiny"), ("data.source", "tiny"), ("data.size", "2"),
                           ("env.max_steps", "2"), ("reasoner.max_step_tokens", "4")), max_answer_tokens=6)
    assert roots["true"] == roots["false"] == build_reasoner("replay:tiny", ecfg, []).agent.root
