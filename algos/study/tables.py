"""A filled plan tree read back as a :class:`algos.study.types.Table`: every plan's outcome on every problem.

A frozen greedy reasoner makes an episode a function of (problem, plan), so a split's table is one rollout of every
terminating plan of the game on every problem whose tree is complete, the reasoner reading its steps from the tree
(:class:`agents.replay.plan_tree.TreeReasoner`; nothing is decoded). The reward is the env's planner reward, the
tokens the reasoner tokens the tree's steps cost when they were decoded (tokens written: a tree does not keep what
the reasoner read).

A study's split (:func:`tree_problems`: its tree and complete problems) is read back once by :func:`split_table` and
kept beside the tree's fingerprint in the scores folder, for the train stage (the greedy curve) and the score stage
(every mode) alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from .config import StudyConfig
from .paths import StudyPaths
from .types import Outcome, Plan, Table, table_from_json, table_to_json

if TYPE_CHECKING:
    from agents.replay.plan_tree import PlanTree
    from rsim_env import EnvGroup, Problem
    from rsim_env.game import EnvConfig
    from rsim_env.grading import GradeCache

__all__ = ["game_env", "plans_of", "complete", "Groups", "read_table", "table_rows", "tree_problems", "split_table"]

CHUNK = 64
"""Problems per rollout (x the game's plans: the episodes of one batched rollout)."""


def game_env(tree: PlanTree) -> EnvConfig:
    """The :class:`rsim_env.game.EnvConfig` the tree was filled with (its header's ``env``): the only env whose
    observations its step keys answer."""
    from rsim_env.answers import CheckConfig
    from rsim_env.game import EnvConfig
    from rsim_env.rewards import RewardWeights

    env = dict(tree.meta["env"])
    env["weights"] = RewardWeights(**env.get("weights", {}))
    env["check"] = CheckConfig(**env.get("check", {}))
    env["components"] = tuple(env.get("components", ()))
    return EnvConfig(**env)


def plans_of(env: EnvConfig) -> list[Plan]:
    """The game's whole-episode plans: those ending in termination when the last round may only terminate (9 for two
    rounds), else every plan of at most ``env.max_steps`` rounds (the fill decodes them for
    :func:`algos.study.config.game`, the read-back plays them for a tree's :func:`game_env`)."""
    from agents.replay.plan_tree import game_plans, terminal_plans

    return terminal_plans(env.max_steps) if env.terminate_last_round else game_plans(env.max_steps)


def complete(tree: PlanTree, problems: Sequence[Problem]) -> list[Problem]:
    """The problems whose every plan of the tree's game is in the tree (in the given order)."""
    plans = plans_of(game_env(tree))
    return [p for p in problems if all(tree.has(p.id, plan) for plan in plans)]


class Groups:
    """Env groups of one env config by (problems, copies a problem), each built once and reset onto the next
    problems: building a copy's env (its spaces) costs far more than playing it on a tree."""

    def __init__(self, env: EnvConfig, grader: GradeCache | None = None) -> None:
        from rsim_env.grading import GradeCache

        self.env, self.grader = env, grader if grader is not None else GradeCache()
        self._by: dict[tuple[int, int], EnvGroup] = {}

    def get(self, problems: Sequence[Problem], group_size: int) -> EnvGroup:
        """An :class:`rsim_env.EnvGroup` of ``problems`` x ``group_size`` copies (problem-major)."""
        from rsim_env import EnvGroup

        key = (len(problems), group_size)
        if key not in self._by:
            self._by[key] = EnvGroup(list(problems), group_size, config=self.env, grader=self.grader)
        else:
            self._by[key].reset(problems=list(problems))
        return self._by[key]


def read_table(tree: PlanTree, problems: Sequence[Problem], split: str, task_of: Callable[[Problem], str],
               grader: GradeCache | None = None) -> Table:
    """The split's :class:`Table` on the complete problems of ``problems`` (every plan played from ``tree``).

    Args:
        tree: the split's filled :class:`agents.replay.plan_tree.PlanTree`.
        problems: the split's problems (incomplete ones are left out).
        split: the split's name (``train`` / ``val`` / ``test`` / ``replication``).
        task_of: a problem's task label.
        grader: a :class:`rsim_env.grading.GradeCache` shared across tables (default: a new one).
    """
    from agents.replay.plan_tree import PlanPlayer, TreeReasoner
    from algos.rollout import rollout

    env = game_env(tree)
    plans = plans_of(env)
    chosen = complete(tree, problems)
    if not chosen:
        raise ValueError(f"the {split} tree {tree.source} holds no complete problem of the {len(problems)} given: fill "
                         f"it first (rsim study --stage fill).")
    groups = Groups(env, grader)
    reasoner = TreeReasoner(tree)
    outcomes: dict[str, dict[Plan, Outcome]] = {}
    for i in range(0, len(chosen), CHUNK):
        chunk = chosen[i:i + CHUNK]
        out = rollout(groups.get(chunk, len(plans)), reasoner, PlanPlayer([pl for _ in chunk for pl in plans]), seed=0)
        for t, rec in zip(out.trajectories, reasoner.records()):
            info = t["info"]
            outcomes.setdefault(info["problem_id"], {})[tuple(int(s) for s in info["strategies"])] = Outcome(
                correct=bool(info["correct"]), reward=float(t["rewards"]["planner"]),
                tokens=float(reasoner.num_generated(rec)))
    return Table(split=split, tasks={p.id: task_of(p) for p in chosen}, outcomes=outcomes)


def table_rows(table: Table) -> list[dict[str, Any]]:
    """The table as rows (``problem_id, task, plan, correct, reward, tokens``): the form
    :mod:`algos.optimisation_gap` reads."""
    return [{"problem_id": p, "task": table.tasks[p], "plan": list(plan), "correct": o.correct, "reward": o.reward,
             "tokens": o.tokens} for p in table.ids() for plan, o in sorted(table.outcomes[p].items())]


def tree_problems(cfg: StudyConfig, split: str) -> tuple[PlanTree, list[Problem]]:
    """``split``'s filled plan tree and the problems of the split whose tree is complete."""
    from agents.replay.plan_tree import PlanTree

    from .splits import problems

    tree = PlanTree.load(StudyPaths.of(cfg).tree(split))
    return tree, complete(tree, problems(cfg, split))


def split_table(cfg: StudyConfig, split: str, grader: GradeCache | None = None) -> Table:
    """``split``'s read-back table (kept in ``<out>/scores/tables/<split>.json.gz`` beside its tree's fingerprint)."""
    from . import jsonfile
    from .ledger import tree_fingerprint
    from .splits import task_of

    paths = StudyPaths.of(cfg)
    cache = paths.table_cache(split)
    fingerprint = tree_fingerprint(paths.tree(split))
    if cache.is_file():
        data = jsonfile.read(cache)
        if data.get("tree") == fingerprint and data.get("per_task") == cfg.per_task(split):
            return table_from_json(data)
    tree, items = tree_problems(cfg, split)
    t = read_table(tree, items, split, task_of, grader)
    jsonfile.write(cache, {"tree": fingerprint, "per_task": cfg.per_task(split), **table_to_json(t)})
    return t
