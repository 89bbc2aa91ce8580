"""The plan tree: every step a frozen greedy reasoner writes under every plan of <= L rounds, decoded once.

For a frozen greedy reasoner an episode is a function of (problem, plan): the whole game a planner plays
with ``max_steps = L`` is a finite tree (:func:`game_plans`: 73 plans, 81 distinct steps per problem for
L = 2). :func:`fill` plays it through a :class:`agents.replay.reasoner.ReplayReasoner` (every step decoded once into
the replay store, then read back) and keeps each step under its replay key in a :class:`PlanTree` file;
:class:`TreeReasoner` then plays any planner against the tree: each step is a dictionary lookup on the
same key chain :mod:`agents.replay.reasoner` uses (``first_key``/``next_key`` of the episode's observations and the
stored steps), so an episode on the tree is the episode of the live replay route byte for byte
(``tests/test_plan_tree.py``), without loading the reasoner.

Rules (documented contract):

* A step missing from the tree raises :class:`TreeMiss` naming the question, the plan prefix, the round and
  the fix (fill the tree for those problems and plans); the tree route never decodes.
* :func:`fill` is resumable twice over: the tree file is rewritten (atomically) after every rollout, and a
  rerun skips the (problem, plan) pairs it holds; every step also stays in the replay store, so an
  interrupted rollout is read back. Plans are played in *waves* (:func:`waves`) so that no two copies of one
  rollout decode the same new prefix (a KV cache cannot branch, so the replay wrapper would decode both).
* A tree belongs to one reasoner (its replay root: weights, decoding settings) and one env config; filling
  it with another raises.

File: gzip JSON (``format``, ``meta``, ``problems``, ``nodes`` = ``[problem_id, plan prefix, key]``,
``steps`` = ``{key: [text, tokens, ids]}``). ::

    tree = fill("tree.json.gz", problems, ReplayReasoner(reasoner, StepStore(path)), EnvConfig(max_steps=2))
    reasoner = TreeReasoner(PlanTree.load("tree.json.gz"))     # rollout(EnvGroup(...), reasoner, planner)
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rsim_env.strategies import TERMINATION, num_strategies

from ..base import check_act_args
from .reasoner import ReplayRecord, StoredStep, first_key, next_key

__all__ = ["FORMAT", "PlanTree", "TreeMiss", "TreeReasoner", "PlanPlayer", "game_plans", "terminal_plans", "waves",
           "env_differences", "fill", "planner_contexts", "warm_planner", "build"]

FORMAT = 1
"""Version of the tree file's layout."""

Plan = tuple[int, ...]


class TreeMiss(ValueError):
    """A step the episode needs is not in the plan tree (the message names it and the fix)."""


def game_plans(max_rounds: int) -> list[Plan]:
    """Every plan a planner can play with ``max_steps = max_rounds``, shortest first: termination (8) ends a
    plan early; a plan of ``max_rounds`` rounds may end on any strategy (the env truncates it)."""
    if max_rounds < 1:
        raise ValueError(f"max_rounds={max_rounds} must be >= 1.")
    body = [s for s in range(num_strategies()) if s != TERMINATION]
    short = [(*p, TERMINATION) for k in range(max_rounds - 1) for p in itertools.product(body, repeat=k)]
    return short + [(*p, s) for p in itertools.product(body, repeat=max_rounds - 1) for s in range(num_strategies())]


def terminal_plans(max_rounds: int) -> list[Plan]:
    """The plans of :func:`game_plans` that end in termination (the plan table's: 9 for L = 2, 73 for L = 3)."""
    return [p for p in game_plans(max_rounds) if p[-1] == TERMINATION]


def _check_plans(plans: Sequence[Sequence[int]], max_rounds: int) -> list[Plan]:
    out = [tuple(int(s) for s in p) for p in plans]
    for p in out:
        complete = 1 <= len(p) <= max_rounds and TERMINATION not in p[:-1] and (
            p[-1] == TERMINATION or len(p) == max_rounds) and all(0 <= s < num_strategies() for s in p)
        if not complete:
            raise ValueError(f"plan {list(p)} is not a whole episode with max_steps={max_rounds}: a plan ends in "
                             f"termination ({TERMINATION}) or has exactly {max_rounds} rounds, with strategies in "
                             f"0..{num_strategies() - 1} and no termination before its end (use game_plans).")
    if len(set(out)) != len(out):
        raise ValueError("plans must be distinct; pass each plan once.")
    return out


def waves(pairs: Sequence[tuple[Any, Plan]], done: set[tuple[Any, Plan]] = frozenset()) -> list[list[int]]:
    """Split ``(context, plan)`` pairs (indices returned) into waves in which no two pairs decode the same new
    ``(context, prefix)``: a prefix decoded by one wave is read back by the later ones. ``done``: prefixes stored."""
    seen, left, out = set(done), list(range(len(pairs))), []
    while left:
        wave, claimed, rest = [], set(), []
        for i in left:
            ctx, plan = pairs[i]
            new = {(ctx, plan[:r + 1]) for r in range(len(plan))} - seen
            if new & claimed:
                rest.append(i)
            else:
                wave.append(i)
                claimed |= new
        out.append(wave)
        seen |= claimed
        left = rest
    return out


def _question_key(problem: Any) -> str:
    """What a reasoner's observations say of a problem: its question and kind (never its id or answer)."""
    return hashlib.sha256(json.dumps([problem.question, problem.kind]).encode()).hexdigest()[:16]


@dataclass
class PlanTree:
    """The steps of a frozen reasoner under every (problem, plan prefix) filled so far (module docstring)."""

    meta: dict[str, Any]
    """``root`` (the replay key chain's root), ``fingerprint``, ``settings``, ``kind`` (the reasoner), ``env``."""
    problems: dict[str, str] = field(default_factory=dict)
    """problem id -> what the reasoner sees of it (:func:`_question_key`)."""
    nodes: dict[tuple[str, Plan], str] = field(default_factory=dict)
    """(problem id, plan prefix) -> key of the step written after that prefix."""
    steps: dict[str, StoredStep] = field(default_factory=dict)
    """key -> the stored step."""
    source: str = "<memory>"
    """Where it was loaded from (error messages)."""

    def has(self, problem_id: str, plan: Plan) -> bool:
        return all((problem_id, plan[:r + 1]) in self.nodes for r in range(len(plan)))

    def add(self, problem: Any, plan: Plan, history: Sequence[tuple[str, StoredStep]]) -> None:
        """Keep the steps ``history`` (key, step per round) of ``problem`` played under ``plan``."""
        qk = _question_key(problem)
        if self.problems.setdefault(problem.id, qk) != qk:
            raise ValueError(f"plan tree {self.source}: problem id {problem.id!r} is in the tree with another "
                             "question; give each problem a unique id or fill another tree.")
        if len(history) != len(plan):
            raise AssertionError(f"{problem.id} {plan}: {len(history)} steps for {len(plan)} rounds")
        for r, (key, step) in enumerate(history):
            self.nodes[(problem.id, plan[:r + 1])] = key
            self.steps[key] = step

    def summary(self) -> dict[str, Any]:
        return {"problems": len(self.problems), "nodes": len(self.nodes), "steps": len(self.steps),
                "max_rounds": self.meta.get("env", {}).get("max_steps")}

    def save(self, path: str | os.PathLike) -> Path:
        """Write gzip JSON to a temporary sibling, then rename it into place (a crash leaves the old file)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": FORMAT, "meta": self.meta, "problems": self.problems,
                "nodes": [[pid, list(plan), key] for (pid, plan), key in self.nodes.items()],
                "steps": {k: [s.text, s.tokens, None if s.ids is None else list(s.ids)] for k, s in self.steps.items()}}
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
                f.write(json.dumps(data, ensure_ascii=False).encode())
            os.chmod(tmp, 0o644)  # mkstemp makes it private; a tree is data like the replay store
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PlanTree":
        path = Path(path)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"no plan tree at {path}; fill one first (agents.replay.plan_tree.fill, or "
                                    "python -m benchmarks.plans.tree --tree PATH).") from None
        except (OSError, EOFError, json.JSONDecodeError) as e:
            raise ValueError(f"{path} is not a plan tree (gzip JSON) ({e}); delete it and fill it again.") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError(f"{path}: plan tree format {data.get('format') if isinstance(data, dict) else None!r}, "
                             f"this code reads {FORMAT}; fill it again.")
        steps = {k: StoredStep(t, int(n), None if ids is None else tuple(ids)) for k, (t, n, ids) in data["steps"].items()}
        nodes = {(pid, tuple(plan)): key for pid, plan, key in data["nodes"]}
        return cls(data["meta"], dict(data["problems"]), nodes, steps, str(path))


class PlanPlayer:
    """A planner that plays ``plans[copy]`` (one plan per copy of the rollout)."""

    role = "planner"

    def __init__(self, plans: Sequence[Plan]) -> None:
        self.plans = [tuple(p) for p in plans]

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        if num_copies != len(self.plans):
            raise ValueError(f"PlanPlayer has {len(self.plans)} plans for {num_copies} copies; give one per copy.")
        self.num_copies = num_copies

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[int]:
        return [self.plans[c][int(o["round"])] for c, o in zip(copy_ids, observations)]

    def records(self) -> list[None]:
        return [None] * self.num_copies


def _meta(reasoner: Any, env: Any) -> dict[str, Any]:
    return {"root": reasoner.root, "fingerprint": reasoner.fingerprint, "settings": reasoner.settings,
            "kind": type(reasoner.inner).__name__, "catch_up": reasoner.catch_up,
            "env": json.loads(json.dumps(asdict(env), default=str))}


def env_differences(stored: dict[str, Any], env: Any) -> list[str]:
    """How the env config a tree was filled with (``stored``, its JSON) differs from ``env``, one ``key: was -> now``
    string a field. A field the tree's JSON lacks (added to :class:`rsim_env.game.EnvConfig` after the tree was
    filled) matches when ``env`` holds that field's default: the episodes it scored are the ones it scores now."""
    from rsim_env.game import EnvConfig

    now = json.loads(json.dumps(asdict(env), default=str))
    default = json.loads(json.dumps(asdict(EnvConfig()), default=str))
    return [f"{k}: {stored.get(k, '(absent)')!r} -> {now.get(k, '(absent)')!r}" for k in sorted(set(stored) | set(now))
            if stored.get(k, default.get(k)) != now.get(k)]


def fill(path: str | os.PathLike, problems: Sequence[Any], reasoner: Any, env: Any,
         plans: Sequence[Sequence[int]] | None = None, max_copies: int = 64,
         log: Callable[[str], None] | None = None) -> PlanTree:
    """Play every ``plan`` (default :func:`game_plans` of ``env.max_steps``) on every problem through the replay
    reasoner ``reasoner``; keep the steps in the tree at ``path`` (loaded and extended if it exists).

    Args:
        path: the tree file (gzip JSON), rewritten after every rollout.
        problems: the problems (unique ids).
        reasoner: an :class:`agents.replay.reasoner.ReplayReasoner` (decodes misses into its store).
        env: the :class:`rsim_env.game.EnvConfig` of every episode (``planner=True``).
        plans: whole-episode plans (:func:`game_plans`, :func:`terminal_plans`, or your own).
        max_copies: most episodes per rollout (the reasoner's batch).
        log: called with one line per rollout.
    """
    from rsim_env.group import EnvGroup

    from .reasoner import ReplayReasoner

    if not isinstance(reasoner, ReplayReasoner):
        raise TypeError(f"fill() needs an agents.replay.reasoner.ReplayReasoner (steps keyed as the tree reads them), got "
                        f"{type(reasoner).__name__}; wrap it: ReplayReasoner(reasoner, StepStore(path)).")
    if not env.planner:
        raise ValueError("fill(): the plan tree is the planner's game; use an EnvConfig with planner=True.")
    if max_copies < 1:
        raise ValueError(f"max_copies={max_copies} must be >= 1.")
    plans = _check_plans(plans if plans is not None else game_plans(env.max_steps), env.max_steps)
    meta = _meta(reasoner, env)
    tree = PlanTree.load(path) if Path(path).exists() else PlanTree(meta, source=str(path))
    if tree.meta["root"] != meta["root"]:
        raise ValueError(f"plan tree {path} was filled with another reasoner (root {tree.meta['root']!r} vs now "
                         f"{meta['root']!r}); fill another path.")
    differ = env_differences(tree.meta["env"], env)
    if differ:
        raise ValueError(f"plan tree {path} was filled with another env config ({'; '.join(differ)}); fill another "
                         "path.")
    pairs = [(p, plan) for p in problems for plan in plans if not tree.has(p.id, plan)]
    done = {(tree.problems[pid], plan) for pid, plan in tree.nodes}
    played = 0
    for wave in waves([(_question_key(p), plan) for p, plan in pairs], done):
        for i in range(0, len(wave), max_copies):
            chunk = [pairs[j] for j in wave[i:i + max_copies]]
            group = EnvGroup([p for p, _ in chunk], group_size=1, config=env)
            group.reset(seed=0)
            player = PlanPlayer([plan for _, plan in chunk])
            reasoner.reset(len(chunk))
            player.reset(len(chunk))
            while not group.done:
                agent, ids, obs = group.observe()
                group.step((player if agent == "planner" else reasoner).act(ids, obs))
            for c, (p, plan) in enumerate(chunk):
                tree.add(p, plan, reasoner.history(c))
            tree.save(path)
            played += len(chunk)
            if log:
                log(f"{played}/{len(pairs)} episodes, tree {tree.summary()}, replay {reasoner.stats}")
    if not pairs:
        tree.save(path)
    return tree


class TreeReasoner:
    """A reasoner that reads every step from a :class:`PlanTree` (module docstring); it never decodes.

    Args:
        tree: the filled tree.
    """

    role = "reasoner"
    deterministic = True
    grades_repeat = True
    """Episodes repeat the same final texts: ``rsim train`` grades through a :class:`rsim_env.grading.GradeCache`."""

    def __init__(self, tree: PlanTree) -> None:
        self.tree = tree
        self.root = tree.meta["root"]
        self.fingerprint = tree.meta.get("fingerprint", "")
        self.stats = {"hits": 0, "misses": 0}
        self.reset(0)

    def reset(self, num_copies: int, seed: int | None = None) -> None:
        self.num_copies = num_copies
        self._last: list[tuple[str, StoredStep] | None] = [None] * num_copies
        self._records = [ReplayRecord() for _ in range(num_copies)]

    def act(self, copy_ids: Sequence[int], observations: Sequence[dict[str, Any]]) -> list[str]:
        check_act_args(copy_ids, observations, self.num_copies)
        steps = self.tree.steps
        out = []
        for c, obs in zip(copy_ids, observations):
            last = self._last[c]
            key = first_key(self.root, obs) if last is None else next_key(last[0], last[1], obs)
            step = steps.get(key)
            if step is None:
                self.stats["misses"] += 1
                raise self._miss(obs, key)
            self.stats["hits"] += 1
            self._last[c] = (key, step)
            rec = self._records[c]
            rec.steps.append(step.text)
            rec.tokens.append(step.tokens)
            rec.replayed.append(True)
            out.append(step.text)
        return out

    def _miss(self, obs: dict[str, Any], key: str) -> TreeMiss:
        prefix = [*obs.get("strategies", ()), obs.get("strategy")]
        s = self.tree.summary()
        return TreeMiss(f"plan tree {self.tree.source}: no step for the question {obs.get('question', '')!r:.80} under "
                        f"the plan prefix {prefix} (round {obs.get('round')}, key {key[:16]}); the tree holds "
                        f"{s['steps']} steps of {s['problems']} problems, plans of <= {s['max_rounds']} rounds, for "
                        "one env config. Fill the tree for these problems and plans (agents.replay.plan_tree.fill, or "
                        "python -m benchmarks.plans.tree), or train on the problems, env config and max_steps it was "
                        "filled with.")

    def records(self) -> list[ReplayRecord]:
        return list(self._records)

    def num_generated(self, record: ReplayRecord) -> int:
        """Tokens the reasoner wrote for this episode when its steps were decoded."""
        return int(sum(record.tokens))

    def token_usage(self, record: ReplayRecord) -> dict[str, int]:
        return {"reasoner_written": self.num_generated(record)}


def planner_contexts(tree: PlanTree, problems: Sequence[Any]) -> list[tuple[str, list[tuple[int, str]]]]:
    """Every context a planner sees on the tree: per problem and plan prefix of non-terminal strategies one
    ``(question, [(strategy, step)...])`` as the env shows them (cut to the tree's ``max_question_chars`` and
    ``max_step_chars``), the longest first-in-line: each context is a prefix of the paths below it."""
    env = tree.meta["env"]
    rounds, q_max, z_max = int(env["max_steps"]), int(env["max_question_chars"]), int(env["max_step_chars"])
    body = [s for s in range(num_strategies()) if s != TERMINATION]
    out = []
    for p in problems:
        for path in itertools.product(body, repeat=rounds - 1):
            keys = [tree.nodes.get((p.id, path[:i + 1])) for i in range(len(path))]
            if all(k is not None for k in keys):
                out.append((p.question[:q_max], [(s, tree.steps[k].text[:z_max]) for s, k in zip(path, keys)]))
    return out


def warm_planner(planner: Any, tree: PlanTree, problems: Sequence[Any], batch: int = 16) -> int:
    """Compute a head-only planner's feature of every context on the tree now, in batched forwards (the feature
    cache keys them by their exact token ids, so a context built differently from the planner's own only misses
    later; it never changes a decision). A forced decision's context (the last round's under
    ``env.terminate_last_round``) is skipped: the planner never encodes it. Returns the contexts computed."""
    import torch

    from rsim_env.render import planner_header, planner_segment

    if not getattr(getattr(planner, "config", None), "head_only", False):
        raise ValueError("warm_planner() fills a head-only planner's feature cache (planner.head_only=true); a LoRA "
                         "or fully trained planner's features change as it trains, so they cannot be kept.")
    env = tree.meta["env"]
    # the planner never encodes a forced decision's context (env.terminate_last_round: the last round's)
    forced = int(env["max_steps"]) - 1 if env.get("terminate_last_round") else None
    rows, seen = [], set()
    for question, path in planner_contexts(tree, problems):
        ids = planner.encode(planner_header(question))
        positions = [len(ids) - 1]
        for i, (s, text) in enumerate(path):
            if i + 1 == forced:
                break
            ids = ids + planner.encode(planner_segment(i, s, text))
            positions.append(len(ids) - 1)
        if tuple(ids) not in seen:
            seen.add(tuple(ids))
            rows.append((ids, positions))
    before = planner.feature_stats["misses"]
    with torch.no_grad():
        for i in range(0, len(rows), batch):
            chunk = rows[i:i + batch]
            planner.strategy_logits([r[0] for r in chunk], [r[1] for r in chunk])
    return planner.feature_stats["misses"] - before


def build(rest: str, ctx: Any) -> Any:
    """Registry builder of ``tree:PATH``: a :class:`TreeReasoner` on the tree file PATH."""
    from ..registry import Built

    if ctx.role != "reasoner":
        raise ValueError("spec 'tree:' is a reasoner (the plan tree's steps); a planner is trained, not read back.")
    if not rest:
        raise ValueError("spec 'tree:' needs the tree file after the colon, e.g. tree:runs/tree.json.gz.")
    tree = PlanTree.load(rest)
    return Built(TreeReasoner(tree), {"kind": "tree", "path": rest, **tree.summary(),
                                      "fingerprint": tree.meta.get("fingerprint")})
