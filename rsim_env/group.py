"""G copies of the environment over the same problem (a GRPO group), stepped in lockstep.

Several groups (a batch of problems) are one :class:`EnvGroup` too: copy ``c`` plays
``problems[c // group_size]``. Because both agents alternate in every copy and a copy can only
finish after the reasoner's move, all live copies always wait for the same agent, so one batched
model call per agent per round drives the whole batch::

    group = EnvGroup(problems, group_size=8, max_steps=6)
    group.reset(seed=0)
    while not group.done:
        agent, copy_ids, observations = group.observe()
        group.step(policy[agent].act(copy_ids, observations))
    results = group.results()   # one dict per copy: rewards, info, problem_index

Each copy is a real :func:`rsim_env.env` driven through the standard AEC API; finished copies
drop out of ``observe()`` and their dead steps are drained here.
"""

from __future__ import annotations

from typing import Any, Sequence

from .env import env as make_env
from .game import is_int_action
from .problem import Problem


class EnvGroup:
    """A batch of ``len(problems) * group_size`` environment copies.

    Args:
        problems: One problem per group (a single :class:`Problem` is one group).
        group_size: Copies per problem (G); at least 1.
        **env_kwargs: Passed to :func:`rsim_env.env`: ``config=EnvConfig(...)`` and/or its fields
            (``max_steps``, ``planner``, ...).
    """

    def __init__(self, problems: Problem | Sequence[Problem], group_size: int, **env_kwargs: Any) -> None:
        if isinstance(problems, Problem):
            problems = [problems]
        problems = list(problems)
        if not problems or not all(isinstance(p, Problem) for p in problems):
            raise ValueError("problems must be a Problem or a non-empty sequence of Problem.")
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise ValueError(f"group_size={group_size!r} must be an int >= 1 (GRPO needs >= 2 to compare).")
        self.problems = problems
        self.group_size = group_size
        env_kwargs.setdefault("problems", problems)
        self.envs = [make_env(**env_kwargs) for _ in range(len(problems) * group_size)]
        self._results: list[dict[str, Any] | None] = [None] * len(self.envs)
        self._started = False

    def __len__(self) -> int:
        return len(self.envs)

    def problem_index(self, copy_id: int) -> int:
        """Which problem (group) copy ``copy_id`` plays."""
        return copy_id // self.group_size

    def reset(self, seed: int | None = None, problems: Sequence[Problem] | None = None) -> None:
        """Reset every copy onto its group's problem (``seed + copy_id`` seeds each copy).

        Args:
            seed: Base seed; copy ``c`` is reset with ``seed + c``.
            problems: New problems, one per group (same number of groups), to reuse the copies
                for the next batch without rebuilding them.
        """
        if problems is not None:
            problems = list(problems)
            if len(problems) != len(self.problems) or not all(isinstance(p, Problem) for p in problems):
                raise ValueError(f"reset(problems=...) needs {len(self.problems)} Problem objects, one per group.")
            self.problems = problems
        for c, e in enumerate(self.envs):
            e.reset(seed=None if seed is None else seed + c, options={"problem": self.problems[self.problem_index(c)]})
        self._results = [None] * len(self.envs)
        self._started = True

    @property
    def live(self) -> list[int]:
        """Copy ids whose episode is still running."""
        return [c for c, r in enumerate(self._results) if r is None]

    @property
    def done(self) -> bool:
        self._require_started()
        return not self.live

    def observe(self) -> tuple[str, list[int], list[dict[str, Any]]]:
        """The agent that is due, the live copy ids, and one observation per live copy."""
        self._require_started()
        ids = self.live
        if not ids:
            raise RuntimeError("All copies are finished; call results() or reset().")
        agent = self.envs[ids[0]].agent_selection
        return agent, ids, [self.envs[c].observe(agent) for c in ids]

    def step(self, actions: Sequence[Any]) -> None:
        """Apply one action per live copy (in ``observe()`` order) for the agent that is due.

        All actions are validated first, so a bad one raises with no copy having moved.
        """
        ids = self._live_ids(actions)
        if len(actions) != len(ids):
            raise ValueError(f"step() got {len(actions)} actions for {len(ids)} live copies; pass one per copy.")
        self.validate(actions)
        self._prefetch(ids, actions)
        for c, a in zip(ids, actions):
            e = self.envs[c]
            e.step(a)
            if all(e.terminations[x] or e.truncations[x] for x in e.agents):
                self._finish(c)

    def validate(self, actions: Sequence[Any]) -> None:
        """Raise, changing nothing, if any action is not valid for the agent that is due."""
        ids = self._live_ids(actions)
        agent = self.envs[ids[0]].agent_selection
        space = self.envs[ids[0]].action_space(agent)
        for c, a in zip(ids, actions):
            if agent == "planner":
                if not is_int_action(a) or not 0 <= int(a) < space.n:
                    raise ValueError(f"copy {c}: planner action {a!r:.60} invalid; expected an int in 0..{space.n - 1}.")
                legal = self.envs[c].unwrapped.episode.plan_mask(space.n)
                if not legal[int(a)]:
                    raise ValueError(f"copy {c}: planner action {int(a)} is not allowed by its action_mask "
                                     f"(legal: {[int(i) for i in legal.nonzero()[0]]}); sample from the mask.")
            elif not isinstance(a, str):
                raise TypeError(f"copy {c}: reasoner action must be str, got {type(a).__name__}.")

    def _prefetch(self, ids: Sequence[int], actions: Sequence[Any]) -> None:
        """Start the grading work of every episode this step will finish (``Kind.prefetch``: code's sandbox
        runs), so it runs in parallel."""
        for c, a in zip(ids, actions):
            ep = self.envs[c].unwrapped.episode
            final = ep.finishes_with(a)
            if final is not None:
                ep.kind.prefetch(ep.problem, final)

    def _finish(self, c: int) -> None:
        e = self.envs[c]
        rewards = {a: float(r) for a, r in e.rewards.items()}  # final rewards, before dead steps clear them
        info = e.infos[e.agents[0]]
        while e.agents:  # drain the dead steps the AEC API requires
            e.step(None)
        self._results[c] = {"copy_id": c, "problem_index": self.problem_index(c), "rewards": rewards, "info": info}

    def results(self) -> list[dict[str, Any]]:
        """Per copy: ``rewards`` (per agent), final ``info``, ``problem_index``. Needs ``done``."""
        if not self.done:
            raise RuntimeError(f"{len(self.live)} copies are still running; keep stepping until done.")
        return list(self._results)  # type: ignore[arg-type]

    def _live_ids(self, actions: Sequence[Any]) -> list[int]:
        self._require_started()
        ids = self.live
        if not ids:
            raise RuntimeError(f"got {len(actions)} action(s) but all {len(self.envs)} copies are finished; "
                               "call results(), or reset() for the next batch.")
        return ids

    def _require_started(self) -> None:
        if not self._started:
            raise RuntimeError("Call reset() before observe()/step().")
