"""What the training and evaluation code may use of an agent, a decoder and a record beyond
:class:`agents.base.Policy` / :class:`agents.base.Trainable`: each optional capability is a named
protocol here, tested with ``isinstance`` where it is used, never found by probing attribute names.

An agent that lacks one still plays; what the capability adds is then left out (a metric, a token
count, a usage line). What every trained agent must have is :class:`agents.base.Trainable`,
checked once when the trainer is built (:func:`agents.base.check_trainable`); what every learner
must have is :class:`algos.learner_base.Learner`, checked when it is built.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

__all__ = ["CountsGenerated", "CountsTokens", "ReportsUsage", "HasAdapter", "RepeatsFinalTexts", "DecisionRecord",
           "GeneratedRecord", "SampledRecord"]


@runtime_checkable
class CountsGenerated(Protocol):
    """A reasoner that says how many tokens it wrote in one record (``completions/mean_length``)."""

    def num_generated(self, record: Any) -> int: ...


@runtime_checkable
class CountsTokens(Protocol):
    """An agent that says what one episode cost (``planner_read``, ``planner_context``, ``reasoner_read``,
    ``reasoner_written``); ``rsim eval`` reports it."""

    def token_usage(self, record: Any) -> dict[str, int]: ...


@runtime_checkable
class ReportsUsage(Protocol):
    """A served reasoner whose client counts requests, retries and tokens (recorded in ``results.json``)."""

    def usage(self) -> dict[str, Any]: ...


@runtime_checkable
class HasAdapter(Protocol):
    """An agent that may run as a LoRA adapter on a shared frozen base (``lora`` is None when it does not)."""

    lora: Any


@runtime_checkable
class RepeatsFinalTexts(Protocol):
    """A reasoner whose copies come back with the same final texts (a plan tree): grading is cached."""

    grades_repeat: bool


@runtime_checkable
class DecisionRecord(Protocol):
    """A record of discrete decisions (a planner's strategies): one scored position each."""

    actions: Sequence[int]


@runtime_checkable
class GeneratedRecord(Protocol):
    """A record of generated tokens: ``gen_mask[i]`` is 1 where the agent wrote token ``i``."""

    gen_mask: Sequence[int]


@runtime_checkable
class SampledRecord(Protocol):
    """A record that keeps the log-prob each chosen token had when it was sampled (truncated importance sampling)."""

    logprobs: Sequence[float] | None
