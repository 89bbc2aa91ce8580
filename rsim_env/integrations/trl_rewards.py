"""rSIM's rewards as TRL-style reward functions, for a single-agent ``GRPOTrainer`` run.

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)`` where ``columns`` are the dataset's other columns (one value per completion) plus a
few trainer extras (``trainer_state``, ``log_metric``, ...), and expects one float per completion.
Completions are strings (standard datasets) or message lists (conversational datasets: the
assistant turns are used). No TRL import here; these are plain callables::

    from trl import GRPOTrainer
    from rsim_env.integrations.trl_rewards import accuracy_reward, format_reward, follow_reward
    trainer = GRPOTrainer(model=..., reward_funcs=[accuracy_reward, format_reward, follow_reward],
                          train_dataset=ds)   # ds columns: prompt, answer (+ strategies, kind, ...)

**One score.** Each function replays the completion as an episode of :class:`rsim_env.game.Episode`
and returns one of the env's own components (:func:`rsim_env.scoring.score`, which the viewer calls
too), so a TRL run is rewarded exactly as the env rewards the same texts (``tests/test_trl_rewards.py``
checks it for every protocol and kind): the answer check
with ``last_number_fallback`` off and ``require_evaluated`` on (an unboxed last number earns nothing,
nor does ``\\boxed{6 * 7}``), echo-aware detection (a copied instruction follows nothing), and
:func:`rsim_env.rewards.r_follow`'s rules (the answer step, announcement-only and self-repeating steps
earn no follow). Only the length caps differ from :class:`rsim_env.EnvConfig`'s defaults
(:data:`BRIDGE_CONFIG`: TRL bounds a completion by its own ``max_completion_length``).

Dataset columns (one value per completion; names configurable through the ``make_*`` functions):

* ``answer`` — the gold (accuracy; a code problem's reference solution or "").
* ``strategies`` (optional for accuracy and format, required for follow) — the plan the prompt asked
  for: strategy indices or names, one per step, or one. With it the completion is that many steps
  (one per assistant message, or split at the first ``len(plan) - 1`` blank lines of a string, so a final
  program keeps its own blank lines); without it the completion is one whole answer (no-planner mode).
* ``protocol`` (default ``"chat"``: a completion holds only generated text) — the turn protocol whose
  lead-ins the prompt injected (``"lead"``/``"chat+lead"`` when the prompt's open assistant text ends in
  a lead-in, e.g. ``The final answer is \\boxed{``, which the completion continues).
* ``kind`` (``"math"``), ``answer_type`` (``"auto"``), ``tests`` and ``entry_point`` (code problems).
* ``question`` (default: the prompt's text) — the context that decides what is new in a step.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any, Callable, Sequence

from .. import kinds
from ..game import EnvConfig, Episode
from ..problem import ANSWER_TYPES, Problem
from ..render import PROTOCOLS, STEP_DELIMITER
from ..strategies import by_name, num_strategies

__all__ = ["accuracy_reward", "format_reward", "follow_reward", "make_accuracy_reward", "make_format_reward",
           "make_follow_reward", "completion_text", "completion_steps", "components", "BRIDGE_CONFIG"]

RewardFn = Callable[..., list[float]]

BRIDGE_CONFIG = EnvConfig(max_step_chars=20_000, max_question_chars=20_000)
"""The env's default rules (answer check, weights, echo and novelty); longer caps than the env's spaces need."""
_NO_QUESTION = "(no prompt given)"
"""Question text when neither a ``question`` column nor a prompt is passed (novelty then sees no question)."""
_EXTRAS = ("trainer_state", "log_metric", "log_extra", "completion_ids")


def _messages(completion: Any) -> list[str] | None:
    if isinstance(completion, (list, tuple)) and all(isinstance(m, dict) and "content" in m for m in completion):
        return [str(m["content"]) for m in completion if m.get("role", "assistant") == "assistant"]
    return None


def completion_text(completion: Any) -> str:
    """The generated text of one completion: a ``str``, or the assistant contents of a message list."""
    if isinstance(completion, str):
        return completion
    msgs = _messages(completion)
    if msgs is None:
        raise TypeError(f"completion {completion!r:.80} is neither a str nor a list of chat messages "
                        "({'role': ..., 'content': ...}); pass what TRL's GRPOTrainer passes.")
    return STEP_DELIMITER.join(msgs)


def completion_steps(completion: Any, n: int) -> list[str]:
    """The completion as ``n`` steps (see module docstring); missing steps are ``""``.

    Several assistant messages are one step each (the last takes any surplus); a string or a single
    message (what TRL passes) is split at its first ``n - 1`` blank lines.
    """
    msgs = _messages(completion) if not isinstance(completion, str) else None
    if msgs is None or len(msgs) < 2:
        parts = completion_text(completion).split(STEP_DELIMITER, max(0, n - 1))
    else:
        parts = msgs[: n - 1] + ([STEP_DELIMITER.join(msgs[n - 1:])] if len(msgs) >= n else [])
    return parts + [""] * (n - len(parts))


def _plan(value: Any) -> tuple[int, ...]:
    items = [value] if isinstance(value, (int, str)) else list(value)
    out = []
    for s in items:
        if isinstance(s, str):
            out.append(int(s) if s.strip().isdigit() else by_name(s).index)
        elif isinstance(s, int) and not isinstance(s, bool):
            out.append(s)
        else:
            raise TypeError(f"strategy {s!r} must be an index 0..{num_strategies() - 1} or a strategy name.")
        if not 0 <= out[-1] < num_strategies():
            raise ValueError(f"strategy index {out[-1]} is out of range; use 0..{num_strategies() - 1}.")
    return tuple(out)


def _prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, (list, tuple)):
        return "\n\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict) and m.get("role") == "user")
    return ""


@lru_cache(maxsize=4096)
def _components(question: str, steps: tuple[str, ...], plan: tuple[int, ...], protocol: str, kind: str, answer: str,
                answer_type: str, tests: str, entry_point: str, cfg: EnvConfig) -> tuple[tuple[str, float], ...]:
    problem = Problem(id="trl", question=question, answer=answer, answer_type=answer_type, source="trl", kind=kind,
                      tests=tests, entry_point=entry_point)
    ep = Episode(problem, replace(cfg, protocol=protocol, planner=bool(plan), max_steps=max(1, len(plan))))
    for i, step in enumerate(steps):
        if ep.done:
            break
        if plan:
            ep.plan(plan[i])
        ep.write(step)
    return tuple(ep.outcome()["info"]["components"].items())


def components(prompt: Any, completion: Any, row: dict[str, Any], cfg: EnvConfig = BRIDGE_CONFIG,
               strategies_column: str = "strategies", answer_column: str = "answer") -> dict[str, float]:
    """Every env reward component of one completion, ``row`` holding its dataset columns (see module docstring)."""
    kind = str(row.get("kind") or "math")
    if kind not in kinds.KINDS:
        raise ValueError(f"kind {kind!r} is not one of {kinds.names()}; set the dataset's 'kind' column.")
    answer_type = str(row.get("answer_type") or "auto")
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"answer_type {answer_type!r} is not one of {ANSWER_TYPES}.")
    protocol = str(row.get("protocol") or "chat")
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} is not one of {sorted(PROTOCOLS)}; set the dataset's 'protocol' column.")
    plan = _plan(row[strategies_column]) if row.get(strategies_column) not in (None, "", [], ()) else ()
    steps = tuple(completion_steps(completion, len(plan))) if plan else (completion_text(completion),)
    question = (str(row["question"]) if row.get("question") else _prompt_text(prompt)).strip() or _NO_QUESTION
    return dict(_components(question, steps, plan, protocol, kind, str(row.get(answer_column, "")), answer_type,
                            str(row.get("tests") or ""), str(row.get("entry_point") or ""), cfg))


def _rows(completions: Sequence[Any], kwargs: dict[str, Any], fn: str, required: Sequence[tuple[str, str]]):
    n = len(completions)
    for name, maker in required:
        if name not in kwargs:
            raise ValueError(f"{fn} needs the dataset column {name!r} (one value per completion) but got columns "
                             f"{sorted(k for k in kwargs if k not in _EXTRAS)}; add the column, or build the reward "
                             f"with {maker}(...column=...).")
    columns = {k: list(v) for k, v in kwargs.items() if k not in _EXTRAS and k != "prompts" and isinstance(v, (list, tuple))}
    for k, v in columns.items():
        if len(v) != n:
            raise ValueError(f"{fn}: column {k!r} has {len(v)} values for {n} completions; pass one per completion.")
    prompts = list(kwargs.get("prompts") or [""] * n)
    return [(prompts[i] if i < len(prompts) else "", {k: v[i] for k, v in columns.items()}) for i in range(n)]


def _make(component: str, fn: str, required: Sequence[tuple[str, str]], cfg: EnvConfig,
          strategies_column: str = "strategies", answer_column: str = "answer") -> RewardFn:
    def reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        return [components(p, c, row, cfg, strategies_column, answer_column)[component]
                for c, (p, row) in zip(completions, _rows(completions, kwargs, fn, required))]

    reward.__name__ = reward.__qualname__ = fn
    return reward


def make_accuracy_reward(answer_column: str = "answer", strategies_column: str = "strategies",
                         cfg: EnvConfig = BRIDGE_CONFIG) -> RewardFn:
    """``R_acc`` reading the gold from ``answer_column`` (the plan, if any, from ``strategies_column``)."""
    return _make("acc", "accuracy_reward", [(answer_column, "make_accuracy_reward")], cfg, strategies_column,
                 answer_column)


def make_format_reward(strategies_column: str = "strategies", cfg: EnvConfig = BRIDGE_CONFIG) -> RewardFn:
    """``R_format``: a closed, non-empty ``\\boxed{}`` ending the answer (math), a program that parses (code)."""
    return _make("format", "format_reward", [], cfg, strategies_column)


def make_follow_reward(strategies_column: str = "strategies", cfg: EnvConfig = BRIDGE_CONFIG) -> RewardFn:
    """``R_follow`` of the plan in ``strategies_column`` (:func:`rsim_env.rewards.r_follow`)."""
    return _make("follow", "follow_reward", [(strategies_column, "make_follow_reward")], cfg, strategies_column)


accuracy_reward = make_accuracy_reward()
format_reward = make_format_reward()
follow_reward = make_follow_reward()
