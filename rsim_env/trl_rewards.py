"""rSIM's rewards as TRL-style reward functions, for a single-agent ``GRPOTrainer`` run.

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=...,
**columns)`` where ``columns`` are the dataset's other columns (one value per completion) plus a
few trainer extras (``trainer_state``, ``log_metric``, ...), and expects one float per completion.
Completions are strings (standard datasets) or message lists (conversational datasets: the
assistant turns are used). No TRL import here; these are plain callables::

    from trl import GRPOTrainer
    from rsim_env.trl_rewards import accuracy_reward, format_reward, follow_reward
    trainer = GRPOTrainer(model=..., reward_funcs=[accuracy_reward, format_reward, follow_reward],
                          train_dataset=ds)   # ds columns: prompt, answer (+ answer_type, strategies)

* :func:`accuracy_reward` — ``R_acc``: :func:`rsim_env.answers.check` against the ``answer``
  column (``answer_type`` column optional, default ``auto``). Hostile completions are safe: the
  check is bounded in time and never evaluates the text.
* :func:`format_reward` — ``R_format``: 1.0 when the completion has ``\\boxed{...}``.
* :func:`follow_reward` — ``R_follow``: the ``strategies`` column holds the strategies the prompt
  asked for (indices or names, one per step, or a single one); the completion is split into steps
  at blank lines and step *i* is scored against strategy *i* with :func:`rsim_env.detect`
  (a missing step scores 0). Only generated text is scored: TRL's completions exclude the prompt,
  so copying an injected instruction from the prompt earns nothing.

Other column names: :func:`make_accuracy_reward` / :func:`make_follow_reward`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .answers import CheckConfig, check
from .problems import ANSWER_TYPES
from .render import STEP_DELIMITER
from .rewards import r_follow, r_format
from .strategies import NUM_STRATEGIES, by_name, detect

__all__ = ["accuracy_reward", "format_reward", "follow_reward", "make_accuracy_reward", "make_follow_reward",
           "completion_text"]

RewardFn = Callable[..., list[float]]


def completion_text(completion: Any) -> str:
    """The generated text of one completion: a ``str``, or the assistant contents of a message list."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and all(isinstance(m, dict) and "content" in m for m in completion):
        return STEP_DELIMITER.join(str(m["content"]) for m in completion if m.get("role", "assistant") == "assistant")
    raise TypeError(f"completion {completion!r:.80} is neither a str nor a list of chat messages "
                    "({'role': ..., 'content': ...}); pass what TRL's GRPOTrainer passes.")


def _column(kwargs: dict[str, Any], name: str, n: int, fn: str, maker: str) -> list[Any]:
    if name not in kwargs:
        raise ValueError(f"{fn} needs the dataset column {name!r} (one value per completion) but got columns "
                         f"{sorted(k for k in kwargs if k not in ('trainer_state', 'log_metric', 'log_extra'))}; "
                         f"add the column, or build the reward with {maker}(...column=...).")
    values = list(kwargs[name])
    if len(values) != n:
        raise ValueError(f"{fn}: column {name!r} has {len(values)} values for {n} completions; pass one per completion.")
    return values


_REWARD_CHECK = CheckConfig(require_evaluated=True)
"""A reward must not pay for the question's own expression (``\\boxed{6 * 7}`` for 42); see CheckConfig."""


def make_accuracy_reward(answer_column: str = "answer", answer_type_column: str = "answer_type") -> RewardFn:
    """``R_acc`` reading the gold from ``answer_column`` (and the type from ``answer_type_column`` if present)."""

    def accuracy_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        n = len(completions)
        golds = _column(kwargs, answer_column, n, "accuracy_reward", "make_accuracy_reward")
        types = list(kwargs[answer_type_column]) if answer_type_column in kwargs else ["auto"] * n
        out = []
        for c, gold, t in zip(completions, golds, types):
            t = t or "auto"
            if t not in ANSWER_TYPES:
                raise ValueError(f"accuracy_reward: answer_type {t!r} is not one of {ANSWER_TYPES}.")
            out.append(1.0 if check(completion_text(c), str(gold), t, _REWARD_CHECK).correct else 0.0)
        return out

    return accuracy_reward


def format_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
    """``R_format``: 1.0 when the completion contains ``\\boxed{...}``, else 0.0."""
    return [r_format(completion_text(c)) for c in completions]


def _plan(value: Any) -> list[int]:
    items = [value] if isinstance(value, (int, str)) else list(value)
    out = []
    for s in items:
        if isinstance(s, str):
            out.append(int(s) if s.strip().isdigit() else by_name(s).index)
        elif isinstance(s, int) and not isinstance(s, bool):
            out.append(s)
        else:
            raise TypeError(f"strategy {s!r} must be an index 0..{NUM_STRATEGIES - 1} or a strategy name.")
        if not 0 <= out[-1] < NUM_STRATEGIES:
            raise ValueError(f"strategy index {out[-1]} is out of range; use 0..{NUM_STRATEGIES - 1}.")
    return out


def make_follow_reward(strategies_column: str = "strategies") -> RewardFn:
    """``R_follow`` reading the requested strategies from ``strategies_column``."""

    def follow_reward(completions: Sequence[Any], **kwargs: Any) -> list[float]:
        plans = _column(kwargs, strategies_column, len(completions), "follow_reward", "make_follow_reward")
        out = []
        for c, plan in zip(completions, plans):
            planned = _plan(plan)
            steps = [s for s in completion_text(c).split(STEP_DELIMITER) if s.strip()]
            detected = [detect(s) for s in steps[: len(planned)]]
            detected += [set()] * (len(planned) - len(detected))
            out.append(r_follow(planned, detected))
        return out

    return follow_reward


accuracy_reward = make_accuracy_reward()
follow_reward = make_follow_reward()
