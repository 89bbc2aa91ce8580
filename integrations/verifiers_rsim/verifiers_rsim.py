"""rSIM as a verifiers environment: ``load_environment(**kw)`` returns a ``vf.MultiTurnEnv`` (README.md).

The model verifiers drives is rSIM's reasoner under the ``chat`` protocol; rSIM's planner picks each next
strategy in :meth:`RsimEnv.env_response`. Each rollout is one real rSIM episode (:class:`rsim_env.group.EnvGroup`
of one copy) driven by the same reasoner code as ``rsim eval``'s served chat reasoner: a
:class:`agents.reasoner.Reasoner` whose decoder is :class:`agents.served.decoder.ChatDecoder`, except that the
reply it receives is the one verifiers already got from the model (:class:`_Reply`). So the messages sent, the
per-turn ``max_tokens`` and ``stop``, the cut of a reply into a step and the score are rSIM's own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import verifiers as vf
from datasets import Dataset
from verifiers.clients.openai_chat_completions_client import OpenAIChatCompletionsClient
from verifiers.utils.message_utils import concat_messages, normalize_messages

from agents.decoding.turns import Turns
from agents.hf.trl_rollout import build_planner
from agents.reasoner import Reasoner, ReasonerConfig
from agents.served.decoder import ChatDecoder
from rsim_env.sources.data import load_problems
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.render import CHAT_API_PROTOCOL, STEP_DELIMITER, reasoner_messages_from_observation, whole_answer_turn
from rsim_env.rewards import RewardWeights

__all__ = ["RsimEnv", "OmitNullsChatClient", "load_environment"]

COMPONENTS = ("acc", "format", "follow")
"""The reasoner's reward components, each a weight-0 metric beside the reward."""


def _plain(messages: Any) -> list[dict[str, str]]:
    """Messages as ``{"role", "content"}`` dicts (verifiers keeps pydantic message objects)."""
    out = []
    for m in messages:
        role, content = (m.get("role"), m.get("content")) if isinstance(m, dict) else (m.role, m.content)
        out.append({"role": str(role), "content": content if isinstance(content, str) else str(content or "")})
    return out


@dataclasses.dataclass
class _ReplyConfig:
    model: str = "verifiers"
    max_concurrency: int = 1
    stop_at_delimiter: bool = True


class _Reply:
    """The "server" of a :class:`ChatDecoder`: answers with the reply verifiers already got for these messages."""

    url = "verifiers"

    def __init__(self) -> None:
        self.cfg = _ReplyConfig()
        self.pending: tuple[list[dict[str, str]], str] | None = None

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int]]:
        sent, text = self.pending
        if messages != sent:  # rSIM would have asked something else: the episode and verifiers disagree
            raise RuntimeError("the rSIM episode's next messages differ from those verifiers sent; "
                               f"rSIM: {messages!r:.300} verifiers: {sent!r:.300}")
        self.pending = None
        return text, {}


@dataclasses.dataclass
class _Run:
    """One rollout's rSIM side: the episode, its planner and reasoner, and the messages of the open turn."""

    group: EnvGroup
    planner: Any
    reasoner: Reasoner
    reply: _Reply
    obs: dict[str, Any] | None = None
    messages: list[dict[str, str]] | None = None


class RsimEnv(vf.MultiTurnEnv):
    """rSIM's game with the model as the reasoner (module docstring).

    Args:
        problems: The rSIM problems (any data spec's :func:`rsim_env.sources.data.load_problems`).
        planner: ``fixed:1,3,8``, ``random`` or a planner agent spec (built once per rollout).
        env_config: The episode's rules; its protocol must be ``chat`` (each strategy a user turn).
        reasoner_config: Per-turn token caps (``max_step_tokens``, ``max_answer_tokens``) and the stop rule.
        seed: Seed of the episodes and the random planner (rollout of problem ``i``: ``seed + i``).
    """

    def __init__(self, problems: list, planner: str = "fixed:1,8", env_config: EnvConfig | None = None,
                 reasoner_config: ReasonerConfig | None = None, seed: int = 0, **kwargs: Any) -> None:
        self.env_config = env_config or EnvConfig(protocol=CHAT_API_PROTOCOL, max_steps=4)
        if self.env_config.protocol != CHAT_API_PROTOCOL or not self.env_config.planner:
            raise ValueError(f"env_config.protocol={self.env_config.protocol!r}: a chat API cannot continue an open "
                             f"assistant message, so only protocol={CHAT_API_PROTOCOL!r} with a planner plays here.")
        self.problems, self.planner_spec, self.seed = list(problems), planner, seed
        self.reasoner_config = reasoner_config or ReasonerConfig(greedy=True)
        self._runs: dict[str, _Run] = {}
        build_planner(planner, self.env_config.max_steps, seed)  # a bad spec fails here, not in a rollout
        rows = [{"prompt": [{"role": "user", "content": p.question}], "answer": p.answer,
                 "info": {"index": i, "problem_id": p.id, "kind": p.kind}} for i, p in enumerate(self.problems)]
        rubric = vf.Rubric(funcs=[rsim_reward, *[_metric(n) for n in COMPONENTS], planner_reward],
                           weights=[1.0] + [0.0] * (len(COMPONENTS) + 1))
        super().__init__(dataset=Dataset.from_list(rows), rubric=rubric, max_turns=self.env_config.max_steps + 1,
                         **kwargs)

    # ----------------------------------------------------------------------------- the rSIM side of a rollout

    def _advance(self, run: _Run) -> bool:
        """Let the planner move until the reasoner is due; False when the episode is over."""
        while not run.group.done:
            agent, ids, obs = run.group.observe()
            if agent == "reasoner":
                run.obs, run.messages = obs[0], reasoner_messages_from_observation(obs[0])
                return True
            run.group.step(run.planner.act(ids, obs))
        return False

    async def setup_state(self, state: Any) -> Any:
        index = int(state["info"]["index"])
        seed = self.seed + index
        problem = self.problems[index]
        reply = _Reply()
        reasoner = Reasoner(config=self.reasoner_config, decoder=ChatDecoder(reply, "verifiers drives the model"),
                            turns=Turns(None, self.reasoner_config))
        run = _Run(EnvGroup([problem], 1, config=self.env_config),
                   build_planner(self.planner_spec, self.env_config.max_steps, seed), reasoner, reply)
        run.group.reset(seed=seed)
        run.planner.reset(1, seed=seed)
        reasoner.reset(1)
        self._advance(run)
        self._runs[state["trajectory_id"]] = run
        state["prompt"] = normalize_messages(run.messages, field_name="prompt")
        return state

    async def get_prompt_messages(self, state: Any) -> Any:
        """rSIM's own chat for the next turn (its history holds each step as rSIM cut it, not the raw reply)."""
        if not state["trajectory"]:
            return state["prompt"]
        last = state["trajectory"][-1]
        messages = concat_messages([last["prompt"], last["completion"]])
        await self.env_response(messages, state)
        if state.get("final_env_response") is not None:
            return messages
        return normalize_messages(self._runs[state["trajectory_id"]].messages, field_name="prompt")

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """The model's reply becomes the reasoner's step; the planner then picks the next strategy (a user turn)."""
        run = self._runs[state["trajectory_id"]]
        run.reply.pending = (run.messages, _plain(messages)[-1]["content"])
        run.group.step(run.reasoner.act([0], [run.obs]))
        if self._advance(run):
            return normalize_messages([run.messages[-1]], field_name="env_response")
        result = run.group.results()[0]
        state["rsim"] = {"rewards": dict(result["rewards"]), "components": dict(result["info"]["components"]),
                         "strategies": list(result["info"]["strategies"]), "steps": list(result["info"]["steps"]),
                         "correct": bool(result["info"]["correct"])}
        state["final_env_response"] = []
        del self._runs[state["trajectory_id"]]
        return []

    async def get_model_response(self, state: Any, prompt: Any, *args: Any, sampling_args: Any = None,
                                 **kwargs: Any) -> Any:
        """The request rSIM's served chat reasoner sends: its ``max_tokens`` and ``stop`` for this turn."""
        whole = whole_answer_turn(_plain(prompt))
        cfg = self.reasoner_config
        turn = dict(sampling_args or state["sampling_args"] or {})
        turn["max_tokens"] = cfg.max_answer_tokens if whole else cfg.max_step_tokens
        if cfg.stop_at_delimiter and not whole:
            turn["stop"] = [STEP_DELIMITER]
        else:
            turn.pop("stop", None)
        return await super().get_model_response(state, prompt, *args, sampling_args=turn, **kwargs)


def _outcome(state: Any) -> dict[str, Any]:
    if "rsim" not in state:  # a rollout that ended early (an error, a timeout) has no rSIM score: never a silent 0
        raise ValueError(f"the rollout ended before its rSIM episode did (stop condition "
                         f"{state.get('stop_condition')!r}, error {state.get('error')!r}); it has no rSIM reward.")
    return state["rsim"]


async def rsim_reward(state: Any) -> float:
    """The env's reasoner reward of the episode (``R_acc + R_format + R_follow`` under its weights)."""
    return float(_outcome(state)["rewards"]["reasoner"])


async def planner_reward(state: Any) -> float:
    """The planner's reward of the episode (logged only: nothing here trains the planner)."""
    return float(_outcome(state)["rewards"]["planner"])


def _metric(name: str) -> Any:
    async def metric(state: Any) -> float:
        return float(_outcome(state)["components"][name])

    metric.__name__ = metric.__qualname__ = name
    return metric


class OmitNullsChatClient(OpenAIChatCompletionsClient):
    """verifiers' chat-completions client, without the ``null`` fields it writes into every assistant message.

    verifiers sends each earlier assistant turn with ``"tool_calls": null`` (and ``"reasoning_content": null``);
    llama.cpp's server (llama-cpp-python 0.3.36) refuses that with HTTP 500, so every second turn of a multi-turn
    environment fails there. This client leaves the null keys out; servers that accept them see the same chat.
    Use it as ``env.evaluate_sync(OmitNullsChatClient(ClientConfig(...)), ...)``.
    """

    async def to_native_prompt(self, messages: Any) -> Any:
        native, extra = await super().to_native_prompt(messages)
        return [{k: v for k, v in m.items() if v is not None} for m in native], extra


def load_environment(data: str = "curriculum:heldout", limit: int = 100, data_seed: int = 1000, split: str | None = None,
                     planner: str = "fixed:1,8", max_steps: int = 4, max_step_tokens: int = 96,
                     max_answer_tokens: int = 256, seed: int = 0, weights: dict[str, float] | None = None,
                     **kwargs: Any) -> RsimEnv:
    """rSIM's game as a ``vf.MultiTurnEnv`` (README.md lists the arguments; the defaults are ``rsim eval``'s data)."""
    problems = load_problems(data, limit=limit, seed=data_seed, split=split or None)
    env = EnvConfig(protocol=CHAT_API_PROTOCOL, max_steps=max_steps, weights=RewardWeights(**(weights or {})))
    reasoner = ReasonerConfig(greedy=True, max_step_tokens=max_step_tokens, max_answer_tokens=max_answer_tokens)
    return RsimEnv(problems, planner=planner, env_config=env, reasoner_config=reasoner, seed=seed, **kwargs)
