"""rSIM as a verifiers v1 environment (integrations/verifiers_rsim): the env's turn logic, model-free.

The env is loaded through verifiers' own loader (``vf.resolve_env_config`` / ``vf.load_environment`` on the taskset
id) and its ``run`` / ``finalize`` are driven with scripted agents: each agent's "model" is a function of the chat
(:func:`tests.chat_server.scripted_reply` for the reasoner, the server's ``stop`` applied as a chat server applies
it), and each turn passes the model's response through the task's ``@vf.intercept`` hooks, as verifiers'
interception server does. ``rsim eval`` plays the same problems against the same scripted replies over HTTP
(:class:`tests.chat_server.ChatServer`), so equal rewards and components mean the env plays rSIM's episode: the same
chat per turn, the same cut of a reply into a step, the same score. The real thing -- verifiers' eval launching its
chat program against llama.cpp's server -- is tests/test_verifiers_llama.py (slow).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

vf = pytest.importorskip("verifiers.v1", reason="the verifiers environment is optional (make install builds it)")
pytest.importorskip("verifiers_rsim", reason="pip install -e integrations/verifiers_rsim")

from rsim_env.strategies import by_name  # noqa: E402
from tests import chat_server  # noqa: E402
from verifiers.v1.utils.decorators import discover_decorated  # noqa: E402

DATA, LIMIT = "curriculum:heldout", 6
COMPONENTS = ("acc", "format", "follow", "terminal", "penalty")


# ------------------------------------------------------------------------------------------ scripted agents


class FakeTrace:
    """What the env reads and writes of a v1 trace: id, agent name, messages, rewards, metrics."""

    def __init__(self, name: str) -> None:
        self.id, self.agent = uuid.uuid4().hex, SimpleNamespace(name=name)
        self.messages: list = []
        self.stop_condition, self.errors = None, []
        self.rewards: dict[str, float] = {}
        self.metrics: dict[str, float] = {}

    def record_reward(self, name: str, value: float, weight: float = 1.0) -> None:
        self.rewards[name] = value * weight

    def record_metric(self, name: str, value: float) -> None:
        self.metrics[name] = float(value)

    def record_metrics(self, values: dict[str, float]) -> None:
        for k, v in values.items():
            self.record_metric(k, v)


class ScriptedInteraction:
    """One turn: the user message joins the chat, the scripted model answers (cut at the role's stop strings, as a
    server cuts), the task's response interceptors run on the answer, and the (possibly rewritten) answer joins."""

    def __init__(self, task, reply, sampling, trace: FakeTrace) -> None:
        self.task, self.reply, self.sampling, self.trace = task, reply, sampling, trace

    async def turn(self, message: str):
        t = self.trace
        if not t.messages and self.task.data.system_prompt:
            t.messages.append(vf.SystemMessage(content=self.task.data.system_prompt))
        t.messages.append(vf.UserMessage(content=message))
        text = self.reply([{"role": m.role, "content": m.content} for m in t.messages])
        for stop in (self.sampling.model_extra or {}).get("stop") or []:
            text = text.split(stop)[0]
        response = vf.Response(id="r", created=0, model="scripted", message=vf.AssistantMessage(content=text),
                               finish_reason="stop")
        for hook in discover_decorated(self.task, "intercept"):
            response = await hook(response) or response
        t.messages.append(response.message)
        return vf.Segment(messages=[response.message])


class ScriptedAgent:
    def __init__(self, name: str, config, reply, traces: list) -> None:
        self.name, self.config, self.reply, self.traces, self.trainable = name, config, reply, traces, True

    @contextlib.asynccontextmanager
    async def interaction(self, task):
        trace = FakeTrace(self.name)
        self.traces.append(trace)
        yield ScriptedInteraction(task, self.reply, self.config.sampling, trace)


def load_env(**env):
    """The env verifiers' loader builds for ``verifiers-rsim`` with these ``[env]`` settings."""
    config = vf.resolve_env_config({"taskset": {"id": "verifiers-rsim", "data": DATA, "limit": LIMIT},
                                    "max_steps": 2, **env})
    return vf.load_environment(config)


def play(env, planner_reply=None, reasoner_reply=chat_server.scripted_reply) -> dict[str, dict]:
    """Every task's episode through ``run`` and ``finalize``: ``{problem_id: {role: trace}}``."""

    async def one(task):
        traces: list[FakeTrace] = []
        agents = SimpleNamespace(reasoner=ScriptedAgent("reasoner", env.config.reasoner, reasoner_reply, traces),
                                 planner=ScriptedAgent("planner", env.config.planner, planner_reply, traces))
        await env.setup(agents)
        await env.run(task, agents)
        await env.finalize(task, SimpleNamespace(traces=traces))
        return {t.agent.name: t for t in traces}

    return {task.data.problem_id: asyncio.run(one(task)) for task in env.taskset}


def rsim_eval(plan: str, out: Path) -> dict[str, dict]:
    """``rsim eval`` of the served chat reasoner (scripted server) on the same problems and plan, by problem id."""
    from algos.evaluation import main as evaluate

    server = chat_server.ChatServer()
    try:
        evaluate(["--reasoner", f"openai:default@{server.url}#endpoint=chat", "--data", DATA, "--limit", str(LIMIT),
                  "--set", "data.seed=1000", "--modes", plan, "--set", "env.protocol=chat", "--set", "env.max_steps=2",
                  "--set", "reasoner.max_step_tokens=96", "--out", str(out), "--no-plots", "--no-progress"])
    finally:
        server.close()
    rows = [json.loads(x) for x in (out / "episodes.jsonl").read_text().splitlines()]
    return {r["problem_id"]: r for r in rows}


def assert_equal_to_rsim_eval(played: dict, reference: dict, trained: str) -> None:
    assert set(played) == set(reference) and len(reference) == LIMIT
    for pid, traces in played.items():
        ref = reference[pid]
        trace = traces[trained]
        assert trace.rewards == {trained: ref["rewards"][trained]}, pid
        assert {n: trace.metrics[n] for n in COMPONENTS} == {n: ref["components"][n] for n in COMPONENTS}, pid
        for t in traces.values():  # every trace carries both rewards and every component as metrics
            assert t.metrics["reasoner_reward"] == ref["rewards"]["reasoner"], pid
            assert t.metrics["planner_reward"] == ref["rewards"]["planner"], pid
            assert t.metrics["invalid_plan"] == 0.0


# ------------------------------------------------------------------------------------------ discovery


def test_the_taskset_id_resolves_through_verifiers_loader_to_one_taskset_and_one_env():
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    from verifiers_rsim import RsimEnv, RsimEnvConfig, RsimTaskset

    for ident in ("verifiers-rsim", "verifiers_rsim"):
        assert taskset_class(ident) is RsimTaskset and environment_class(ident) is RsimEnv
    env = load_env(plan="fixed:6,8")
    assert isinstance(env, RsimEnv) and isinstance(env.config, RsimEnvConfig)
    tasks = list(env.taskset)
    assert [t.data.idx for t in tasks] == list(range(LIMIT))
    from rsim_env.sources.data import load_problems

    problems = load_problems(DATA, limit=LIMIT, seed=1000)
    assert [t.data.problem() for t in tasks] == problems  # the whole problem travels as task data
    assert [t.key for t in tasks] == [p.id for p in problems]


# ------------------------------------------------------------------------------------------ fixed planner


@pytest.mark.parametrize("plan", ["fixed:6,8", "fixed:3,8"])
def test_fixed_planner_episodes_equal_rsim_eval(plan, tmp_path):
    env = load_env(plan=plan)
    played = play(env)
    assert_equal_to_rsim_eval(played, rsim_eval(plan, tmp_path / "eval"), "reasoner")
    for traces in played.values():
        assert set(traces) == {"reasoner"}  # the fixed planner runs inside the env: no planner role turns
        chat = [(m.role, m.content) for m in traces["reasoner"].messages]
        assert [r for r, _ in chat] == ["system", "user", "assistant", "user", "assistant"]
        assert chat[2][1] == "Let me check the numbers: substitute them back."  # the step, not the second paragraph
        assert traces["reasoner"].metrics["rewritten_steps"] == 0  # the stop already cut each reply to its step
    assert {t["reasoner"].metrics["format"] for t in played.values()} == {1.0}  # the scripted reply boxes its answer


def test_a_random_planner_plays_inside_the_env_and_every_episode_is_scored():
    played = play(load_env(plan="random", seed=3))
    for traces in played.values():
        reasoner = traces["reasoner"]
        assert set(traces) == {"reasoner"} and reasoner.metrics["steps"] in (1.0, 2.0)  # termination may come first
        assert reasoner.rewards == {"reasoner": reasoner.metrics["reasoner_reward"]}
        assert reasoner.metrics["reasoner_reward"] == sum(reasoner.metrics[n] for n in ("acc", "format", "follow"))


def test_a_reply_with_whitespace_around_it_enters_the_chat_as_rsims_step(tmp_path, monkeypatch):
    """rSIM strips a reply before it cuts it; the env's interceptor puts that step, not the raw reply, into the chat."""

    scripted = chat_server.scripted_reply

    def padded(messages):
        return "  " + scripted(messages) + "\n"

    monkeypatch.setattr(chat_server, "scripted_reply", padded)  # both sides: the env's agent and rsim eval's server
    env = load_env(plan="fixed:6,8")
    played = play(env, reasoner_reply=padded)
    assert_equal_to_rsim_eval(played, rsim_eval("fixed:6,8", tmp_path / "eval"), "reasoner")
    for traces in played.values():
        steps = [m.content for m in traces["reasoner"].messages if m.role == "assistant"]
        assert steps[0] == "Let me check the numbers: substitute them back."
        assert traces["reasoner"].metrics["rewritten_steps"] == 2


# ------------------------------------------------------------------------------------------ model planner


def test_model_planner_naming_strategies_equals_rsim_eval_of_that_plan(tmp_path):
    seen: list[str] = []

    def planner(messages):
        seen.append(messages[-1]["content"])
        return "Validation" if "strategy of step 1" in messages[-1]["content"] else "- termination: Conclude."

    env = load_env(plan="model")
    played = play(env, planner_reply=planner)
    plan = f"fixed:{by_name('validation').index},{by_name('termination').index}"
    assert_equal_to_rsim_eval(played, rsim_eval(plan, tmp_path / "eval"), "planner")
    for traces in played.values():
        assert set(traces) == {"planner", "reasoner"}
        assert traces["reasoner"].rewards["reasoner"] == traces["reasoner"].metrics["reasoner_reward"]
    # the planner reads rSIM's planner text: the question first, then each step as rSIM's planner segment
    assert seen[0].startswith("Question: ") and "- validation: " in seen[0]
    assert seen[1].startswith("Step 1 [validation]: Let me check the numbers") and seen[1].count("\n- ") == 9


@pytest.mark.parametrize("answers, why", [(["banana"], "unknown"), (["self-reflection and validation"], "unknown"),
                                          (["validation", "validation"], "illegal")],
                         ids=["not-a-name", "two-names", "not-allowed-in-the-last-round"])
def test_a_planner_answer_naming_no_legal_strategy_is_a_recorded_failure(answers, why):
    replies = iter(answers * LIMIT)
    env = load_env(plan="model", invalid_plan_reward=-1.0, terminate_last_round=True)
    played = play(env, planner_reply=lambda messages: next(replies))
    for traces in played.values():
        assert traces["planner"].rewards == {"planner": -1.0}
        assert traces["planner"].metrics == {"invalid_plan": 1.0}
        if len(answers) == 1:  # the first decision failed: the reasoner never wrote
            assert set(traces) == {"planner"}
        else:
            assert traces["reasoner"].rewards == {} and traces["reasoner"].metrics == {"invalid_plan": 1.0}
    assert not env._outcomes  # finalize took every episode's outcome


def test_a_turn_that_ends_without_a_reply_fails_the_episode_naming_why():
    """An agent's run that ends instead of answering (a provider error, a limit) has no step: the episode fails
    (verifiers records the error on it) rather than scoring a half-played game."""

    class Ended(ScriptedInteraction):
        async def turn(self, message):
            self.trace.stop_condition = "provider_error"
            self.trace.errors.append(SimpleNamespace(type="ProviderError", message="upstream said no"))
            return vf.Segment(messages=[], terminated=True)

    class EndingAgent(ScriptedAgent):
        @contextlib.asynccontextmanager
        async def interaction(self, task):
            trace = FakeTrace(self.name)
            self.traces.append(trace)
            yield Ended(task, self.reply, self.config.sampling, trace)

    env = load_env(plan="fixed:6,8")
    task = next(iter(env.taskset))
    agents = SimpleNamespace(reasoner=EndingAgent("reasoner", env.config.reasoner, None, []))
    with pytest.raises(RuntimeError, match="wrote no step.*provider_error.*upstream said no"):
        asyncio.run(env.run(task, agents))
    assert not env._outcomes


# ------------------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize("env, match", [({"plan": "fixed:x"}, "fixed"), ({"weights": {"accuracy": 1.0}}, "accuracy"),
                                        ({"plan": "no/such/run"}, "no/such/run")],
                         ids=["bad-fixed-plan", "unknown-weight", "missing-planner-dir"])
def test_bad_env_settings_raise_naming_the_setting(env, match):
    with pytest.raises((ValueError, FileNotFoundError), match=match):
        load_env(**env)


def test_a_code_problem_is_refused_with_the_reason():
    from verifiers_rsim import RsimTask, RsimTaskData

    env = load_env(plan="fixed:6,8")
    task = RsimTask(RsimTaskData(idx=0, problem_id="c/0", question="Write f.", answer="", kind="code",
                                 entry_point="f", tests="def check(candidate):\n    assert candidate(1) == 1\n"))
    with pytest.raises(ValueError, match="whole"):
        asyncio.run(env.run(task, SimpleNamespace()))


@pytest.mark.parametrize("reply, legal, expected", [
    ("validation", range(9), (3, "ok")), ("  **Termination**.\n", [8], (8, "ok")),
    ("- self-reflection: Look back at the reasoning", range(9), (0, "ok")), ("validation", [8], (None, "illegal")),
    ("I would validate.", range(9), (None, "unknown")), ("", range(9), (None, "unknown")),
], ids=["name", "markdown-and-case", "copied-menu-line", "not-legal-now", "sentence", "empty"])
def test_parse_strategy(reply, legal, expected):
    from verifiers_rsim.planner_turns import parse_strategy

    assert parse_strategy(reply, list(legal)) == expected


# ------------------------------------------------------------------------------------------ prime-rl configs


def test_the_prime_rl_configs_name_this_env_with_the_right_role_trained():
    """Each TOML's source ``env`` table resolves through verifiers' loader to this env's config, with the trained role
    unpinned and the other fixed; docs/trainers.md shows the reasoner one as it is."""
    import tomllib

    from verifiers_rsim import RsimEnvConfig

    root = Path(__file__).resolve().parent.parent
    configs = root / "integrations" / "verifiers_rsim" / "configs"
    envs = {}
    for name in ("prime-rl-reasoner", "prime-rl-planner"):
        raw = tomllib.loads((configs / f"{name}.toml").read_text())["orchestrator"]["train"]["source"][0]["env"]
        envs[name] = vf.resolve_env_config(raw)
        assert isinstance(envs[name], RsimEnvConfig) and envs[name].taskset.id == "verifiers-rsim"
    reasoner, planner = envs["prime-rl-reasoner"], envs["prime-rl-planner"]
    assert reasoner.plan.startswith("fixed:") and reasoner.reasoner.model is None
    assert planner.plan == "model" and planner.planner.model is None and planner.reasoner.model
    assert planner.reasoner.client.base_url.startswith("http://")
    for env in envs.values():  # the reasoner samples as rsim eval's served chat reasoner
        assert env.reasoner.sampling.model_extra["stop"] == ["\n\n"] and env.reasoner.sampling.max_tokens == 96
    text = (configs / "prime-rl-reasoner.toml").read_text()
    assert text[text.index("max_steps = 200"):].rstrip() in (root / "docs" / "trainers.md").read_text()
