"""PettingZoo AEC adapter over :class:`rsim_env.game.Episode`.

Agents ``"planner"`` then ``"reasoner"`` alternate, one strategy and one step per round
(``raw_env(planner=False)`` leaves only the reasoner, answering in one turn). Rewards come at the
end; ``infos`` then carry every reward component, the extracted answer, correctness, the
detected strategies per step and character counts.

Use :func:`env` (wrapped, the PettingZoo convention) or :class:`raw_env`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from . import kinds, render
from .game import EnvConfig, Episode
from .problem import Problem
from .sources.problems import default_source
from .rewards import RewardWeights
from .strategies import TERMINATION, num_strategies


class AnyText(spaces.Text):
    """``Text`` space whose ``contains`` accepts any ``str`` up to ``max_length``.

    Stock ``Text`` only accepts its sampling charset (no spaces, newlines, ``\\`` or Unicode), so
    real LLM steps would fail ``contains``. Sampling is unchanged.
    """

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def env(
    problems: Sequence[Problem] | None = None,
    config: EnvConfig | None = None,
    render_mode: str | None = None,
    grader: Callable[..., Any] | None = None,
    **overrides: Any,
) -> AECEnv:
    """The rSIM environment (:class:`raw_env`) inside PettingZoo's ``OrderEnforcingWrapper``.

    Args:
        problems: Problem source (any sequence of :class:`Problem`); default: the embedded
            reasoning-gym source (:func:`rsim_env.sources.problems.default_source`).
        config: Limits, reward weights and answer-check settings (:class:`EnvConfig`).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints it).
        grader: Grades each episode's final answer instead of the problem's kind, called as
            ``grader(problem, graded_steps, check)``.
        **overrides: :class:`EnvConfig` fields (``max_steps=3``, ``planner=False``, ``weights=...``)
            applied on top of ``config``; an unknown name raises ``TypeError`` listing the fields.
    """
    e: AECEnv = raw_env(problems, config, render_mode, grader, **overrides)
    e = wrappers.OrderEnforcingWrapper(e)
    return e


class raw_env(AECEnv):  # noqa: N801 - PettingZoo naming convention
    """rSIM AEC environment.

    Args:
        problems: Problem source (any sequence of :class:`Problem`); default: the embedded
            reasoning-gym source (:func:`rsim_env.sources.problems.default_source`).
        config: Limits, reward weights and answer-check settings (:class:`EnvConfig`).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns text) or ``"human"`` (prints it).
        grader: Grades each episode's final answer instead of the problem's kind, called as
            ``grader(problem, graded_steps, check)`` (e.g. :class:`rsim_env.grading.GradeCache`).
        **overrides: :class:`EnvConfig` fields (``max_steps=3``, ``planner=False``, ``weights=...``)
            applied on top of ``config``.
    """

    metadata = {"name": "rsim_v0", "render_modes": ["ansi", "human"], "is_parallelizable": False}

    def __init__(
        self,
        problems: Sequence[Problem] | None = None,
        config: EnvConfig | None = None,
        render_mode: str | None = None,
        grader: Callable[..., Any] | None = None,
        **overrides: Any,
    ) -> None:
        super().__init__()
        if grader is not None and not callable(grader):
            raise TypeError(f"grader must be callable as grader(problem, steps, check), got {type(grader).__name__}.")
        self.grader = grader
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode={render_mode!r}; choose one of {self.metadata['render_modes']} or None.")
        if config is not None and not isinstance(config, EnvConfig):
            raise TypeError(f"config must be an rsim_env.EnvConfig, got {type(config).__name__}.")
        fields = {f.name for f in dataclasses.fields(EnvConfig)}
        unknown = sorted(set(overrides) - fields)
        if unknown:
            raise TypeError(f"raw_env got unknown arguments {unknown}; EnvConfig fields are {sorted(fields)}.")
        if overrides.get("weights", 0) is None:
            overrides["weights"] = RewardWeights()
        self.cfg = dataclasses.replace(config or EnvConfig(), **overrides)
        max_step_chars, planner = self.cfg.max_step_chars, self.cfg.planner
        self.problems = list(default_source() if problems is None else problems)
        if not self.problems or not all(isinstance(p, Problem) for p in self.problems):
            raise ValueError("problems must be a non-empty sequence of rsim_env.Problem (or None for the default).")
        self.render_mode = render_mode
        self.possible_agents = ["planner", "reasoner"] if planner else ["reasoner"]
        self._action_spaces = {"reasoner": AnyText(max_length=max_step_chars, min_length=0)}
        self.num_strategies = num_strategies()
        """Rows of the strategy table when this env was built (its spaces are sized by it)."""
        if planner:
            self._action_spaces["planner"] = spaces.Discrete(self.num_strategies)
        self._observation_spaces = {a: self._build_obs_space(a) for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.episode: Episode | None = None
        self._clear()

    def _clear(self) -> None:
        """No episode: step(), observe() and last() raise "call reset() first" (not AttributeError)."""
        self.episode = None
        self.agents = list(self.possible_agents)
        self.agent_selection = self.agents[0]
        for name in ("rewards", "_cumulative_rewards"):
            setattr(self, name, {a: 0.0 for a in self.agents})
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}

    # -- spaces (built once; no lru_cache, which would keep every env alive) ---------------------
    def _build_obs_space(self, agent: str) -> spaces.Dict:
        c, n = self.cfg, self.num_strategies
        bound = (render.max_planner_chars if agent == "planner" else render.max_reasoner_chars)(
            c.max_question_chars, c.max_steps, c.max_step_chars
        )
        d: dict[str, spaces.Space] = {
            "question": AnyText(max_length=c.max_question_chars, min_length=0),
            "steps": spaces.Sequence(AnyText(max_length=c.max_step_chars, min_length=0)),
            "strategies": spaces.Sequence(spaces.Discrete(n)),
            "round": spaces.Discrete(c.max_steps + 1),
            "prompt": AnyText(max_length=bound, min_length=0),
        }
        if agent == "planner":
            d["action_mask"] = spaces.Box(0, 1, shape=(n,), dtype=np.int8)
        else:
            d["strategy"] = spaces.Discrete(n)
            d["injected"] = AnyText(max_length=bound, min_length=0)
            d["instruction"] = AnyText(max_length=bound, min_length=0)
            d["system"] = AnyText(max_length=bound, min_length=0)
            d["protocol"] = AnyText(max_length=max(len(p) for p in (*render.PROTOCOLS, render.NO_PLANNER.name)),
                                    min_length=0)
            d["no_planner"] = spaces.Discrete(2)  # 1 in no-planner mode: write the whole answer in one turn
            d["kind"] = AnyText(max_length=max(len(k) for k in kinds.KINDS), min_length=0)  # the problem's kind
        return spaces.Dict(d)

    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.Space:
        return self._action_spaces[agent]

    # -- AEC API ----------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """Start an episode.

        Args:
            seed: Picks the problem deterministically (and reseeds the env's generator).
            options: ``{"problem": Problem}`` or ``{"question": str, "answer": str,
                "answer_type": str (optional)}`` to play that problem instead. Other keys are
                ignored.
        """
        self._clear()  # a reset that raises (bad options) leaves the env un-reset, never half-built
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        # plans are validated against the table this env's Discrete space was built with, not the live one
        self.episode = Episode(self._choose_problem(options), self.cfg, self.grader, self.num_strategies)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {"round": 0} for a in self.agents}
        self.agent_selection = self.episode.due

    def _choose_problem(self, options: dict[str, Any] | None) -> Problem:
        if not options:
            return self.problems[int(self._rng.integers(len(self.problems)))]
        if not isinstance(options, dict):
            raise TypeError(f"options must be a dict, got {type(options).__name__}.")
        if "problem" in options:
            if not isinstance(options["problem"], Problem):
                raise TypeError("options['problem'] must be an rsim_env.Problem.")
            return options["problem"]
        if "question" in options:
            if "answer" not in options:
                raise ValueError("options has 'question' but no 'answer'; pass both (the answer is the ground truth).")
            for key in ("question", "answer"):
                if not isinstance(options[key], str):  # str(None) / str(b"q") would silently become the text
                    raise TypeError(f"options[{key!r}] must be str, got {type(options[key]).__name__} "
                                    f"({options[key]!r:.60}); pass the text itself (decode bytes first).")
            return Problem(id="options", question=options["question"], answer=options["answer"],
                           answer_type=options.get("answer_type", "auto"), source="options")
        # Unknown keys are ignored (Gymnasium convention; PettingZoo's api_test passes some).
        return self.problems[int(self._rng.integers(len(self.problems)))]

    def observe(self, agent: str) -> dict[str, Any]:
        ep = self._require_episode()
        obs: dict[str, Any] = {
            "question": ep.question,
            "steps": tuple(ep.steps),
            "strategies": tuple(ep.strategies),
            "round": ep.round,
        }
        if agent == "planner":
            obs["prompt"] = render.planner_text(ep.question, ep.steps, ep.strategies)
            obs["action_mask"] = ep.plan_mask(self.num_strategies)  # all zeros while the planner waits
        else:
            obs.update(self._reasoner_turn(ep))
            obs["no_planner"] = int(not self.cfg.planner)
        return obs

    def _reasoner_turn(self, ep: Episode) -> dict[str, Any]:
        """The reasoner's view of this round, built by ``render`` for the configured protocol.

        ``instruction`` is the content of the user turn that opens this round ("" = continue the
        open assistant message), ``injected`` the lead-in the assistant text continues, ``system``
        the system prompt, ``protocol`` the protocol name ("none" in no-planner mode, where the
        single turn is the concluding one: strategy 8, the question as instruction, nothing
        injected). A dead observation reads strategy 0. ``kind`` is the problem's kind: every text here
        is built for it (code asks for a fenced program; see ``rsim_env.kinds``), and the reasoner's
        stop rule depends on it (a closed program block ends a code step as a closed box ends a math one).
        """
        kind, proto, live = ep.kind, ep.protocol, ep.pending is not None
        if not self.cfg.planner:  # the single turn is the concluding one
            chat = proto.chat(ep.question, [], [], None, kind)
            return {"prompt": render.chat_to_text(chat), "strategy": TERMINATION, "injected": "",
                    "instruction": ep.question if ep.round == 0 else "", "system": proto.system(kind),
                    "protocol": proto.name, "kind": kind.name}
        injected = ep.injected + ([ep.pending_injected] if live else [])  # stored once per step by the episode
        chat = proto.chat(ep.question, ep.steps, ep.strategies, ep.pending, kind, injected)
        return {"prompt": render.chat_to_text(chat), "strategy": ep.pending if live else 0,
                "injected": ep.pending_injected,
                "instruction": proto.instruction(ep.question, ep.round, ep.pending, kind) if live else "",
                "system": proto.system(kind), "protocol": proto.name, "kind": kind.name}

    def step(self, action: Any) -> None:
        ep = self._require_episode()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if agent == "planner":
            ep.plan(action)  # raises on bad input before any state changes
        else:
            ep.write(action)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self.infos[agent] = {"round": ep.round}
        if ep.done:
            out = ep.outcome()
            for a in self.agents:
                self.rewards[a] = out["rewards"][a]
                self.terminations[a] = ep.terminated
                self.truncations[a] = ep.truncated
                self.infos[a] = out["info"]
        self.agent_selection = ep.due if not ep.done else self._next_after(agent)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _next_after(self, agent: str) -> str:
        i = self.agents.index(agent)
        return self.agents[(i + 1) % len(self.agents)]

    def render(self) -> str | None:
        if self.render_mode is None:
            gymnasium.logger.warn("render() called with render_mode=None; pass render_mode='ansi' or 'human'.")
            return None
        ep = self._require_episode()
        text = render.transcript(ep.question, ep.steps, ep.strategies)
        if ep.done:
            info = ep.outcome()["info"]
            text += f"\n  => answer {info['extracted']!r} ({'correct' if info['correct'] else 'wrong'})"
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def _require_episode(self) -> Episode:
        if self.episode is None:
            raise RuntimeError("The environment has no episode: call reset() first (a reset() that raised "
                               "leaves it un-reset).")
        return self.episode
