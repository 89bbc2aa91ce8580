"""rSIM's two-agent game as a verifiers v1 ``Env``: a ``planner`` role and a ``reasoner`` role taking turns.

Each episode plays one real rSIM episode (:class:`verifiers_rsim.episode.RsimEpisode`) of the task's problem under
rSIM's ``chat`` protocol: every strategy reaches the reasoner as its own user turn, with rSIM's own texts
(:func:`rsim_env.render.reasoner_messages`). Before each step the strategy comes from

* a fixed rSIM planner run inside the env (``plan="fixed:1,8"``, ``"random"``, or a saved planner dir), or
* the ``planner`` role (``plan="model"``): it reads rSIM's planner context and answers with a strategy name
  (:mod:`verifiers_rsim.planner_turns`); a name the action mask does not allow ends the episode as a recorded
  failure (metric ``invalid_plan`` 1, the planner's reward ``invalid_plan_reward``), not a crash.

The reasoner role is one v1 interaction: each step is one ``turn()`` whose user message is rSIM's instruction
for the planned strategy. The reply becomes rSIM's step through the same code as ``rsim eval``'s served chat
reasoner (cut at the first blank line when the role's sampling stops there), and a response interceptor puts
that step -- not a raw reply with whitespace around it -- into the conversation, so every request the reasoner
sends is exactly the chat ``rsim eval`` sends; the env checks this after every turn. :meth:`RsimEnv.finalize`
records the reasoner's reward on its trace and the planner's on the planner's (when a model plans), and every
reward component (:func:`rsim_env.scoring.score`, via the episode) as a metric on each trace, with
``rewritten_steps``: how many replies the interceptor replaced by rSIM's step.

What it does not do: problems whose termination answer is whole (code) need another token cap and no stop on
that one turn, and a v1 agent's sampling is fixed per role, so such tasks are refused.
"""

from __future__ import annotations

import contextlib
from typing import Any

import verifiers.v1 as vf
from pydantic import Field

from rsim_env import kinds
from rsim_env.game import EnvConfig as RsimRules
from rsim_env.render import CHAT_API_PROTOCOL, STEP_DELIMITER
from rsim_env.rewards import RewardWeights

from .episode import MODEL_PLANNER, RsimEpisode
from .planner_turns import PLANNER_SYSTEM, parse_strategy, planner_turn
from .taskset import RsimTask

__all__ = ["RsimEnvConfig", "RsimEnv"]

_LOCAL = {"harness": {"id": "null"}, "runtime": {"type": "subprocess"}}
"""Both roles default to verifiers' tool-less chat harness in a local subprocess (no sandbox, no tools)."""


class RsimEnvConfig(vf.EnvConfig):
    """The env's roles and rules (``--env.*``)."""

    reasoner: vf.AgentConfig = vf.AgentConfig(**_LOCAL, sampling={"max_tokens": 96, "stop": [STEP_DELIMITER]})
    """Writes each step. Its sampling is ``rsim eval``'s served chat reasoner's: ``max_tokens`` is
    ``reasoner.max_step_tokens``, ``stop=["\\n\\n"]`` its ``stop_at_delimiter`` (drop the stop to take whole replies)."""
    planner: vf.AgentConfig = vf.AgentConfig(**_LOCAL, sampling={"max_tokens": 16})
    """Names each strategy when ``plan="model"`` (unused otherwise)."""
    plan: str = "fixed:1,8"
    """``fixed:1,3,8`` (strategy indices, the last repeated), ``random``, a planner agent spec (a ``rsim train`` run
    or checkpoint), or ``model``: the planner role chooses."""
    max_steps: int = Field(4, ge=1)
    """rSIM's ``env.max_steps``: the episode ends after this many steps."""
    terminate_last_round: bool = False
    """rSIM's ``env.terminate_last_round``: the last round allows only termination."""
    seed: int = 0
    """Seed of the episode and a random planner (task ``idx`` is added)."""
    weights: dict[str, float] = Field(default_factory=dict)
    """rSIM's reward weights (:class:`rsim_env.rewards.RewardWeights`: acc, format, follow, terminal, penalty)."""
    invalid_plan_reward: float = 0.0
    """The planner role's reward when its answer names no strategy it may choose (the episode ends there)."""


class _ReasonerTask(vf.Task):
    """The reasoner's side of one episode: no prompt (the env opens each turn), rSIM's system prompt."""

    def __init__(self, data: vf.TaskData, episode: RsimEpisode) -> None:
        super().__init__(data)
        self._episode = episode

    @vf.intercept
    async def rsim_step(self, response: vf.Response) -> vf.Response | None:
        """Make the reply rSIM's next step; the conversation keeps the step as rSIM stored it."""
        text = vf.types.content_text(response.message.content)
        step = self._episode.write(text)
        if step == text:
            return None
        self._episode.rewritten += 1
        return response.model_copy(update={"message": response.message.model_copy(update={"content": step})})


def _failure(trace: vf.Trace) -> str:
    """Why an agent's run ended: its stop condition and the end of each error (where the cause is)."""
    errors = "; ".join(f"{e.type}: ...{e.message[-300:]}" for e in trace.errors) or "none"
    return f"stop condition {trace.stop_condition!r}, errors: {errors}"


def _chat(trace: vf.Trace) -> list[dict[str, str]]:
    return [{"role": m.role, "content": vf.types.content_text(m.content)} for m in trace.messages]


class RsimEnv(vf.Env[RsimEnvConfig]):
    """rSIM's game on a :class:`verifiers_rsim.taskset.RsimTaskset` (module docstring)."""

    def __init__(self, config: RsimEnvConfig) -> None:
        super().__init__(config)
        try:
            weights = RewardWeights(**config.weights)
        except TypeError as e:
            raise ValueError(f"env.weights={config.weights!r}: {e}; the keys are RewardWeights' fields "
                             "(acc, format, follow, terminal, penalty).") from e
        self.rules = RsimRules(protocol=CHAT_API_PROTOCOL, max_steps=config.max_steps, weights=weights,
                               terminate_last_round=config.terminate_last_round)
        if config.plan != MODEL_PLANNER:
            from agents.hf.trl_rollout import build_planner

            build_planner(config.plan, config.max_steps, config.seed)  # a bad spec fails here, not in an episode
        self._outcomes: dict[str, dict[str, Any]] = {}

    async def setup(self, agents: vf.Agents) -> None:
        # A role pinned to a model of its own is a fixed opponent; the unpinned role is the policy being trained.
        for role in ("reasoner", "planner"):
            getattr(agents, role).trainable = getattr(self.config, role).model is None

    async def run(self, task: RsimTask, agents: vf.Agents) -> None:
        data = task.data
        if kinds.get(data.kind).whole_answer:
            raise ValueError(f"task {data.problem_id!r} is a {data.kind!r} problem, whose final answer is one whole "
                             "reply with its own token cap and no stop: a verifiers agent samples every turn alike. "
                             "Evaluate it with rsim eval, or pick a data spec of math problems.")
        sampling = agents.reasoner.config.sampling
        stop = (sampling.model_extra or {}).get("stop") if sampling is not None else None
        episode = RsimEpisode(data.problem(), self.rules, self.config.plan, self.config.seed + (data.idx or 0),
                              stop_at_delimiter=STEP_DELIMITER in (stop or []))
        record: dict[str, Any] = {}
        traces: list[str] = []
        async with contextlib.AsyncExitStack() as stack:
            reasoner = planner = None
            while (due := episode.due()) is not None:
                if due == "planner" and episode.planner is not None:
                    episode.plan_fixed()
                elif due == "planner":
                    if planner is None:
                        planner = await stack.enter_async_context(agents.planner.interaction(
                            vf.Task(vf.TaskData(idx=data.idx, prompt=None, system_prompt=PLANNER_SYSTEM))))
                        traces.append(planner.trace.id)
                    if not await self._plan(episode, planner, record):
                        break
                else:
                    messages = episode.reasoner_messages()
                    if reasoner is None:
                        system = messages[0]["content"] if messages[0]["role"] == "system" else None
                        reasoner = await stack.enter_async_context(agents.reasoner.interaction(
                            _ReasonerTask(vf.TaskData(idx=data.idx, prompt=None, system_prompt=system), episode)))
                        traces.append(reasoner.trace.id)
                    await self._write(episode, reasoner, messages)
        if not record:
            record.update(episode.outcome(), rewritten=episode.rewritten)
        for trace_id in traces:
            self._outcomes[trace_id] = record

    async def _plan(self, episode: RsimEpisode, planner: vf.Interaction, record: dict[str, Any]) -> bool:
        """One planner turn; False (and the failure in ``record``) when its answer names no legal strategy."""
        e, legal = episode.episode, episode.legal()
        segment = await planner.turn(planner_turn(e.question, e.steps, e.strategies, legal))
        if segment.terminated:
            raise RuntimeError(f"the planner's run ended before it named a strategy ({_failure(planner.trace)})")
        strategy, why = parse_strategy(segment.last_reply, legal)
        if strategy is None:
            record.update(invalid_plan=why, invalid_reply=segment.last_reply[:200], round=len(e.steps))
            return False
        episode.plan(strategy)
        return True

    async def _write(self, episode: RsimEpisode, reasoner: vf.Interaction, messages: list[dict[str, str]]) -> None:
        """One reasoner turn on rSIM's next instruction; its reply becomes the step (the interceptor writes it)."""
        written = episode.steps_written
        segment = await reasoner.turn(messages[-1]["content"])
        if segment.terminated or episode.steps_written != written + 1:
            raise RuntimeError(f"the reasoner's turn wrote no step ({_failure(reasoner.trace)})")
        # The request was the agent's conversation so far: it must be the chat rsim eval's reasoner sends.
        history, expected = _chat(reasoner.trace), [*messages, {"role": "assistant", "content": episode.episode.steps[-1]}]
        if history != expected:
            raise RuntimeError(f"the reasoner's conversation differs from rSIM's; agent: {history!r:.400} "
                               f"rSIM: {expected!r:.400}")

    async def finalize(self, task: RsimTask, episode: vf.Episode) -> None:
        """Record each role's reward on its own trace and every rSIM component as a metric on every trace."""
        records = [self._outcomes.pop(t.id) for t in episode.traces if t.id in self._outcomes]
        if not records:
            raise RuntimeError(f"episode of task {task.data.problem_id!r} has no rSIM outcome (did run() finish?)")
        record = records[0]
        for trace in episode.traces:
            role = trace.agent.name
            if "invalid_plan" in record:
                trace.record_metric("invalid_plan", 1.0)
                if role == "planner":
                    trace.record_reward("planner", self.config.invalid_plan_reward)
                continue
            if role in record["rewards"] and (role == "reasoner" or self.config.plan == MODEL_PLANNER):
                trace.record_reward(role, record["rewards"][role])
            trace.record_metric("invalid_plan", 0.0)
            trace.record_metrics({f"{name}_reward": value for name, value in record["rewards"].items()})
            trace.record_metrics(record["components"])
            trace.record_metric("correct", float(record["correct"]))
            trace.record_metric("steps", float(len(record["steps"])))
            trace.record_metric("rewritten_steps", float(record["rewritten"]))
