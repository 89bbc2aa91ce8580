"""The rSIM side of one verifiers episode: a real rSIM episode that the env steps with the agents' replies.

:class:`RsimEpisode` is an :class:`rsim_env.group.EnvGroup` of one copy. The planner moves through a fixed rSIM
planner (:func:`agents.hf.trl_rollout.build_planner`: ``fixed:...``, ``random``, a saved planner) or through
:meth:`RsimEpisode.plan` with the index the planner role named. The reasoner's step is written by
:class:`agents.reasoner.Reasoner` whose decoder is :class:`agents.served.decoder.ChatDecoder` -- the same code as
``rsim eval``'s served chat reasoner -- except that its "server" (:class:`_Reply`) answers with the reply the
verifiers agent already got. So each step is cut from a reply exactly as ``rsim eval`` cuts it, and the rewards are
the env's own (:func:`rsim_env.scoring.score`, through :meth:`rsim_env.game.Episode.outcome`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from agents.decoding.turns import Turns
from agents.hf.trl_rollout import build_planner
from agents.reasoner import Reasoner, ReasonerConfig
from agents.served.decoder import ChatDecoder
from rsim_env.game import EnvConfig
from rsim_env.group import EnvGroup
from rsim_env.render import reasoner_messages_from_observation
from rsim_env.problem import Problem

__all__ = ["RsimEpisode", "MODEL_PLANNER"]

MODEL_PLANNER = "model"
"""The ``plan`` value that hands every strategy choice to the env's ``planner`` role."""


@dataclasses.dataclass
class _ReplyConfig:
    """What :class:`ChatDecoder` reads of its client's config."""

    stop_at_delimiter: bool
    model: str = "verifiers"
    max_concurrency: int = 1


class _Reply:
    """The "server" of a :class:`ChatDecoder`: answers with the reply the verifiers agent got for these messages."""

    url = "verifiers"

    def __init__(self, stop_at_delimiter: bool) -> None:
        self.cfg = _ReplyConfig(stop_at_delimiter)
        self.pending: tuple[list[dict[str, str]], str] | None = None

    def complete(self, messages: list[dict[str, str]]) -> tuple[str, dict[str, int]]:
        if self.pending is None:
            raise RuntimeError("the rSIM reasoner asked for a reply that no agent turn delivered")
        sent, text = self.pending
        if messages != sent:  # rSIM would have asked something else: the episode and the agent disagree
            raise RuntimeError(f"the rSIM episode's messages differ from the agent's; rSIM: {messages!r:.300} "
                               f"agent: {sent!r:.300}")
        self.pending = None
        return text, {}


class RsimEpisode:
    """One rSIM episode stepped from outside (module docstring).

    Args:
        problem: The problem to play.
        env_config: The episode's rules (protocol ``chat``: every strategy its own user turn).
        plan: ``fixed:1,3,8``, ``random``, a planner agent spec, or :data:`MODEL_PLANNER`.
        seed: Seed of the episode and of a random planner.
        stop_at_delimiter: Cut each reply at the first blank line, as ``rsim eval``'s chat reasoner does when it
            sends ``stop=["\\n\\n"]``.
    """

    def __init__(self, problem: Problem, env_config: EnvConfig, plan: str, seed: int,
                 stop_at_delimiter: bool) -> None:
        self.group = EnvGroup([problem], 1, config=env_config)
        self.group.reset(seed=seed)
        self.planner = None if plan == MODEL_PLANNER else build_planner(plan, env_config.max_steps, seed)
        if self.planner is not None:
            self.planner.reset(1, seed=seed)
        self.reply = _Reply(stop_at_delimiter)
        rc = ReasonerConfig(greedy=True)  # the decoder is the agent: only the turn rules are read
        self.reasoner = Reasoner(config=rc, decoder=ChatDecoder(self.reply, "a verifiers agent writes the steps"),
                                 turns=Turns(None, rc))
        self.reasoner.reset(1)
        self.steps_written = 0
        self.rewritten = 0
        """Replies whose conversation turn the env replaced by rSIM's step (whitespace around them, a second step)."""

    @property
    def episode(self) -> Any:
        """The :class:`rsim_env.game.Episode` being played."""
        return self.group.envs[0].unwrapped.episode

    def due(self) -> str | None:
        """``"planner"`` or ``"reasoner"``: who moves next; None once the episode is over."""
        if self.group.done:
            return None
        return self.group.observe()[0]

    def legal(self) -> list[int]:
        """The strategy indices the planner may pick now (the observation's action mask)."""
        return [int(i) for i in self.episode.plan_mask(self.episode.num_strategies).nonzero()[0]]

    def plan_fixed(self) -> int:
        """Let the fixed rSIM planner choose the next strategy; return it."""
        agent, ids, obs = self.group.observe()
        assert agent == "planner" and self.planner is not None, (agent, self.planner)
        (action,) = self.planner.act(ids, obs)
        self.group.step([action])
        return int(action)

    def plan(self, strategy: int) -> None:
        """Plan ``strategy`` (an index :meth:`legal` allows; the env validates the planner's answer first)."""
        self.group.step([strategy])

    def reasoner_messages(self) -> list[dict[str, str]]:
        """The chat ``rsim eval``'s chat reasoner sends for the next step (system, then user/assistant turns)."""
        agent, _, obs = self.group.observe()
        assert agent == "reasoner", agent
        return reasoner_messages_from_observation(obs[0])

    def write(self, reply: str) -> str:
        """Make ``reply`` the reasoner's next step (cut as rSIM cuts it); return the step the episode stored."""
        agent, ids, obs = self.group.observe()
        assert agent == "reasoner", agent
        self.reply.pending = (reasoner_messages_from_observation(obs[0]), reply)
        self.group.step(self.reasoner.act(ids, obs))
        self.steps_written += 1
        return self.episode.steps[-1]

    def outcome(self) -> dict[str, Any]:
        """The finished episode's rewards (per agent), components, strategies, steps and grade."""
        (result,) = self.group.results()
        info = result["info"]
        return {"rewards": dict(result["rewards"]), "components": dict(info["components"]),
                "strategies": [int(s) for s in info["strategies"]], "steps": list(info["steps"]),
                "correct": bool(info["correct"])}
