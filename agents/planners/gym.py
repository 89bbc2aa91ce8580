"""A single-agent Gymnasium view of the planner: the reasoner lives inside the environment.

``gymnasium.make("rsim/Planner-v0", reasoner=...)`` (registered by ``import rsim_env``) builds
:class:`PlannerEnv`. One ``step(action)`` is one plan (a strategy index 0..8) followed by the
reasoner's step; the reward is the planner's reward ``R_acc + R_terminal + R_penalty``, given when
the episode ends (0 before). The reasoner is any :class:`agents.base.Policy` with role
``"reasoner"`` (a scripted one, an LLM :class:`agents.reasoner.Reasoner`, or a served model via
the OpenAI-compatible reasoner, ``reasoner="openai:MODEL@URL"``, which takes the default lead-in
protocol through the server's completions endpoint, see :mod:`agents.served.completions`).

By default the plan decides the outcome: the problems are the task families of
:mod:`agents.scripted.families` ("Add a and b." is solved only after validation, "Multiply a by b." only
after decomposition then prioritization) and the reasoner is their :class:`FamilyReasoner`, which boxes
the right answer only after its family's plan. So a planner earns R_acc only by playing a family's
plan (and on every question only by reading it), and an RL run on the defaults learns something a
random planner does not (``tests/test_gym_planner.py`` trains PPO on it and checks that it beats a random
policy). The default game has 64 training problems; ``problems=family_split()[1]`` plays its 64 held-out ones
(:func:`agents.scripted.families.family_split`: disjoint by question text).

Observations are the planner's AEC observation (a ``Dict`` of text and numbers). Standard RL
libraries need numbers: wrap with :class:`TextFeatures`, which turns the observation into a
``Box`` from a hashed bag of words (or from any ``encoder(text) -> vector`` you pass, e.g. a
sentence embedding) plus the strategy histogram and the round::

    import gymnasium, rsim_env
    from agents.planners.gym import TextFeatures
    env = TextFeatures(gymnasium.make("rsim/Planner-v0", max_steps=4))

This module lives in ``agents/`` (not ``rsim_env``) because it holds a reasoner; it imports no
torch unless the reasoner you pass does.
"""

from __future__ import annotations

import re
import zlib
from typing import Any, Callable, Sequence

import gymnasium
import numpy as np
from gymnasium import spaces

from rsim_env.env import raw_env
from rsim_env.problem import Problem
from rsim_env.sources.problems import default_source
from rsim_env.strategies import num_strategies

from ..scripted.families import DEFAULT_FAMILIES, FamilyReasoner, family_split

__all__ = ["PlannerEnv", "TextFeatures", "hashed_bag_of_words", "DEFAULT_PROBLEMS"]

DEFAULT_PROBLEMS = 64
"""How many task-family problems the default env plays: the training split of :func:`family_split` (half add,
half multiply)."""


class PlannerEnv(gymnasium.Env):
    """The planner's decision problem as a Gymnasium env (reasoner inside).

    Args:
        reasoner: Any reasoner policy (``role == "reasoner"``, ``reset(n)``, ``act(ids, obs)``), or
            an agent spec string (:mod:`agents.registry`: ``"openai:MODEL@URL"``, ``"default"``,
            ``"template:0.5"``, ...); ``None``: the :class:`FamilyReasoner` of the task families, right
            only after each family's plan (see module docstring).
        problems: The problems; default: the :data:`DEFAULT_PROBLEMS` training problems of
            :func:`~agents.scripted.families.family_split` with the default reasoner (``family_split()[1]`` are
            the held-out ones), else the embedded reasoning-gym source. Problems of your own need a ``reasoner``
            (the default reasoner knows only the families' problems).
        render_mode: ``None`` or ``"ansi"``.
        **env_kwargs: Passed to :class:`rsim_env.env.raw_env` (``max_steps``, ``weights``, ...).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, reasoner: Any = None, problems: Sequence[Problem] | None = None,
                 render_mode: str | None = None, **env_kwargs: Any) -> None:
        if env_kwargs.get("planner", True) is False:
            raise ValueError("PlannerEnv needs the planner; planner=False leaves it nothing to decide.")
        if problems is None:  # the families go with their reasoner; any other reasoner gets the embedded source
            problems = family_split(DEFAULT_FAMILIES, DEFAULT_PROBLEMS)[0] if reasoner is None else default_source()
        problems = list(problems)
        if reasoner is None:
            try:
                reasoner = FamilyReasoner(problems, DEFAULT_FAMILIES)
            except ValueError as e:
                raise ValueError(f"{e} The default reasoner plays only the task families' problems "
                                 "(agents.scripted.families.family_split); for problems of your own pass reasoner=, "
                                 "e.g. reasoner='template:0.5'.") from None
        elif isinstance(reasoner, str):
            from ..registry import AgentContext, build_agent

            reasoner = build_agent(reasoner, AgentContext("reasoner", problems=problems)).agent
        if getattr(reasoner, "role", None) != "reasoner" or not callable(getattr(reasoner, "act", None)):
            raise TypeError(f"reasoner={reasoner!r} is not a reasoner policy; pass an object with role='reasoner', "
                            "reset(n) and act(copy_ids, observations) (see agents/base.py), or None.")
        self.reasoner = reasoner
        self.render_mode = render_mode
        self.aec = raw_env(problems=problems, render_mode=render_mode, **env_kwargs)
        self.observation_space = self.aec.observation_space("planner")
        self.action_space = self.aec.action_space("planner")

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        self.reasoner.reset(1)
        return self.aec.observe("planner"), {}

    def step(self, action: Any):
        e = self.aec
        if e.episode is None or e.episode.done:
            raise RuntimeError("The episode is over (or never started); call reset().")
        if not self.action_space.contains(action):
            raise ValueError(f"action={action!r} is not a strategy index; pass an int in 0..{self.action_space.n - 1}.")
        e.step(int(action))
        step_text = self.reasoner.act([0], [e.observe("reasoner")])[0]
        e.step(step_text)
        terminated, truncated = bool(e.terminations["planner"]), bool(e.truncations["planner"])
        done = terminated or truncated
        reward = float(e.rewards["planner"]) if done else 0.0
        info = dict(e.infos["planner"]) if done else {"round": e.episode.round, "step": step_text}
        return e.observe("planner"), reward, terminated, truncated, info

    def render(self) -> str | None:
        return self.aec.render() if self.render_mode == "ansi" else None


_WORD = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def hashed_bag_of_words(text: str, dim: int = 256) -> np.ndarray:
    """L2-normalised counts of ``text``'s words hashed (crc32, stable across runs) into ``dim`` bins."""
    v = np.zeros(dim, dtype=np.float32)
    for w in _WORD.findall(text.lower()[:100_000]):
        v[zlib.crc32(w.encode()) % dim] += 1.0
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


class TextFeatures(gymnasium.ObservationWrapper, gymnasium.utils.RecordConstructorArgs):
    """Turn the planner's ``Dict`` observation into a ``Box`` of numbers.

    Features: ``encoder(obs["prompt"])`` (default :func:`hashed_bag_of_words` with ``dim`` bins),
    then the share of each strategy among the plans so far (9 numbers), then ``round / max_steps``.

    Args:
        env: A :class:`PlannerEnv` (possibly wrapped).
        encoder: ``text -> 1-D array`` of a fixed length (e.g. a sentence embedding); ``None`` for
            the hashed bag of words.
        dim: Bins of the default encoder.
        bound: Features are clipped to ``[-bound, bound]`` (an encoder's values must fit).
    """

    def __init__(self, env: gymnasium.Env, encoder: Callable[[str], Any] | None = None, dim: int = 256,
                 bound: float = 10.0) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, encoder=encoder, dim=dim, bound=bound)
        gymnasium.ObservationWrapper.__init__(self, env)
        self.encoder = encoder or (lambda text: hashed_bag_of_words(text, dim))
        probe = np.asarray(self.encoder(""), dtype=np.float32)
        if probe.ndim != 1 or probe.size == 0:
            raise ValueError(f"encoder('') returned shape {probe.shape}; it must return a non-empty 1-D vector.")
        self.text_dim = probe.size
        self.bound = bound
        self.max_steps = env.unwrapped.aec.cfg.max_steps
        self.n_strategies = num_strategies()  # rows of the strategy table when built
        size = self.text_dim + self.n_strategies + 1
        self.observation_space = spaces.Box(-bound, bound, shape=(size,), dtype=np.float32)

    def observation(self, obs: dict[str, Any]) -> np.ndarray:
        text = np.asarray(self.encoder(obs["prompt"]), dtype=np.float32)
        if text.shape != (self.text_dim,):
            raise ValueError(f"encoder returned shape {text.shape}, expected ({self.text_dim},) as on the first call.")
        hist = np.bincount(np.asarray(obs["strategies"], dtype=np.int64), minlength=self.n_strategies).astype(np.float32)
        hist /= max(1, len(obs["strategies"]))
        feats = np.concatenate([text, hist, [obs["round"] / self.max_steps]]).astype(np.float32)
        return np.clip(feats, -self.bound, self.bound)
