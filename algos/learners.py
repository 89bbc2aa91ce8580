"""What a learner is: who updates, when, with what weight — and how its update scores the rollouts.

A learner is a small frozen dataclass that satisfies :class:`Learner`: ``name``, ``env_planner``
(does the environment run the planner), ``trained`` (roles it optimises), ``plan(step) ->
UpdateSchedule`` (:mod:`algos.update_schedule`), ``advantages(rewards, group_size, cfg)`` and
``loss(logp, old_logp, advantages, mask, cfg, ref_logp, entropy)``. Subclassing
:class:`algos.learner_base.SharedObjective` gives the last two as the shared GRPO ones (:mod:`algos.grpo`);
override one to change it.

``rsim train --learner NAME`` picks a factory of :data:`LEARNERS`; ``--learner package.module:factory``
imports ``factory`` and calls it with the run config, so a learner outside this package needs no
edit here (the same spelling as agent specs, :mod:`agents.registry`). Either way the result is
checked against :class:`Learner` once, by :func:`build_learner`, with an error naming what is missing.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Callable

from .learner_base import Learner, SharedObjective, check_learner
from .update_schedule import UpdateSchedule

__all__ = ["LEARNERS", "Learner", "SharedObjective", "UpdateSchedule", "build_learner", "check_learner",
           "check_learner_spec"]


def _stackelberg(cfg: Any) -> Learner:
    from .stackelberg import StackelbergGRPO

    return StackelbergGRPO(cfg.schedule)


def _grpo(cfg: Any) -> Learner:
    from .grpo_baseline import GRPOBaseline

    return GRPOBaseline()


def _planner_only(cfg: Any) -> Learner:
    from .planner_only import PlannerOnly

    return PlannerOnly()


LEARNERS: dict[str, Callable[[Any], Learner]] = {
    "stackelberg": _stackelberg, "grpo": _grpo, "planner_only": _planner_only,
}
"""``name -> factory(run_config)``: the built-in learners."""

_SPEC = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def check_learner_spec(spec: str) -> None:
    """Raise ``ValueError`` unless ``spec`` is a name in :data:`LEARNERS` or ``package.module:factory``."""
    if spec not in LEARNERS and not _SPEC.match(spec):
        raise ValueError(f"RunConfig.learner={spec!r} is invalid: choose one of {tuple(LEARNERS)}, or name your own as "
                         "package.module:factory (a factory taking the run config, on the Python path).")


def _factory(spec: str) -> Callable[[Any], Any]:
    if spec in LEARNERS:
        return LEARNERS[spec]
    check_learner_spec(spec)
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"learner {spec!r}: cannot import {name!r} from module {module!r} ({e}); a learner spec "
                         "is package.module:factory with the module on the Python path.") from e


def build_learner(cfg: Any) -> Learner:
    """The learner ``cfg.learner`` names (a :data:`LEARNERS` name or ``package.module:factory``), checked."""
    return check_learner(_factory(cfg.learner)(cfg), cfg.learner)
