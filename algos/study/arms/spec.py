"""The arms of ``rsim study --arms``, their settings, who can train them, and the equal-budget contract.

* :data:`ARMS` / :data:`TRAINED`: the six arm names and the four that train the reasoner;
* :class:`ArmSettings`: how every trained arm trains (``--set arm.KEY=VALUE``): seeds, steps, problems a step, G,
  the reasoner's base learning rate, LoRA rank, KL, the route the reasoner decodes on, the decode batch of the live
  scoring;
* :func:`check_arms`: refuses, before anything runs, a trained arm of a reasoner that cannot be trained (a plan tree,
  a replayed or a frozen GGUF reasoner, a scripted plug-in), naming the arms it can have;
* :func:`budget` / :func:`check_equal_budget`: the contract every trained arm of one seed meets -- the same train
  problems in the same order, the same episodes (problems x G), optimizer steps, LoRA, KL and base learning rate.
  Each run records the problems it actually trained on (:mod:`.train`), and the report refuses runs that differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

__all__ = ["ARMS", "TRAINED", "ROUTES", "ArmSettings", "parse_arms", "untrainable", "check_arms", "route_reasoner",
           "budget", "check_equal_budget"]

ARMS = ("base", "planner", "grpo", "grpo_fixed", "rsim", "rsim_warm")
"""Every arm, in the report's order."""
TRAINED = ("grpo", "grpo_fixed", "rsim", "rsim_warm")
"""The arms that train the reasoner (each needs a trainable reasoner)."""
ROUTES = ("torch", "llamacpp")
"""How the trained reasoner rolls out: in torch (the learner's own weights), or on llama.cpp with the adapter synced
each step and truncated importance sampling (``train.grpo.tis_cap``) for the engine's log-prob drift."""


def _number(name: str, value: Any, low: float, high: float | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (high is not None and
                                                                                        value >= high):
        where = f">= {low}" if high is None else f"in [{low}, {high})"
        raise ValueError(f"arm.{name}={value!r} is invalid: use a number {where}.")


@dataclass(frozen=True)
class ArmSettings:
    """How every trained arm trains and how every arm is scored (the same for all arms: the equal budget)."""

    seeds: int = 3
    """Seeds per trained arm (seed k of every arm sees the same problems in the same order)."""
    steps: int = 24
    """Optimizer steps per run."""
    groups_per_step: int = 2
    """Train problems per step."""
    group_size: int = 8
    """G: episodes per problem (episodes a run = steps x groups_per_step x G)."""
    lr: float = 2e-4
    """The reasoner's base learning rate (LoRA adapter); Stackelberg scales it by 1 - lambda (the paper's schedule)."""
    planner_lr: float = 1e-3
    """The planner head's base learning rate (rsim, rsim_warm; scaled by lambda)."""
    lora_rank: int = 16
    """LoRA rank of the reasoner's adapter."""
    kl: float = 0.0
    """KL coefficient to the frozen reference (k3)."""
    temperature: float = 0.7
    """The reasoner's sampling temperature in training rollouts (scoring is greedy)."""
    lambda1: float = 0.7
    """Stackelberg lambda of stage 1 (planner emphasis)."""
    lambda2: float = 0.3
    """Stackelberg lambda of stage 2 (reasoner emphasis)."""
    stage1_share: float = 0.5
    """Share of the steps in stage 1 (stage1_steps = round(steps x share))."""
    route: str = "torch"
    """How the trained reasoner rolls out and every arm is scored: ``torch`` or ``llamacpp`` (:data:`ROUTES`; chosen
    by measurement on val: ``rsim study --arms grpo --stage route``)."""
    tis_cap: float = 2.0
    """Truncated importance-sampling cap of the llamacpp route (ignored on torch)."""
    batch: int = 16
    """Problems per batched greedy decode in the live scoring (fixed: llama.cpp's greedy output depends on it)."""

    def __post_init__(self) -> None:
        for name, low in (("seeds", 1), ("steps", 1), ("groups_per_step", 1), ("group_size", 2), ("lora_rank", 1),
                          ("batch", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"arm.{name}={v!r} is invalid: use an int >= {low}.")
        _number("lr", self.lr, 1e-12, 1)
        _number("planner_lr", self.planner_lr, 1e-12, 1)
        _number("kl", self.kl, 0)
        _number("temperature", self.temperature, 1e-6)
        for name in ("lambda1", "lambda2", "stage1_share"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
                raise ValueError(f"arm.{name}={v!r} is invalid: use a number in [0, 1] (paper: 0.7 / 0.3, half the "
                                 "steps in stage 1).")
        if self.route not in ROUTES:
            raise ValueError(f"arm.route={self.route!r} is invalid: use one of {ROUTES}.")
        if not (self.tis_cap == 0 or (isinstance(self.tis_cap, (int, float)) and self.tis_cap >= 1)):
            raise ValueError(f"arm.tis_cap={self.tis_cap!r} is invalid: use 0 (off) or a cap >= 1 such as 2.")

    @property
    def episodes(self) -> int:
        """Episodes a run: steps x problems a step x G."""
        return self.steps * self.groups_per_step * self.group_size

    @property
    def stage1_steps(self) -> int:
        """Stackelberg steps in stage 1."""
        return int(self.steps * self.stage1_share + 0.5)


def parse_arms(text: str) -> tuple[str, ...]:
    """``"base,grpo"`` -> ``("base", "grpo")`` in :data:`ARMS` order; "" -> (). Unknown or repeated names raise."""
    names = [s.strip() for s in str(text).split(",") if s.strip()]
    bad = [n for n in names if n not in ARMS]
    if bad:
        raise ValueError(f"StudyConfig.arms={text!r}: unknown arm(s) {bad}; use a comma list of {', '.join(ARMS)}.")
    if len(set(names)) != len(names):
        raise ValueError(f"StudyConfig.arms={text!r} names an arm twice; name each once.")
    return tuple(a for a in ARMS if a in names)


def _base_spec(spec: str) -> str:
    return spec.split("#", 1)[0].strip()


def untrainable(spec: str) -> str | None:
    """Why the reasoner ``spec`` cannot be trained (None if it can), read from the spec alone: nothing is loaded
    (a ``package.module:factory`` plug-in is built, cheaply, to see if it is :class:`agents.base.Trainable`)."""
    s = spec.strip()
    head, sep, rest = s.partition(":")
    if head in ("tree", "replay"):
        return f"{head}: reads back a frozen reasoner's steps"
    if head == "template" or s == "template":
        return "a scripted reasoner has no weights"
    if head == "llamacpp":
        if _base_spec(rest) not in ("default", "q8_0"):
            return ("a GGUF reasoner other than the embedded one has no torch twin to learn on (only llamacpp:default "
                    "trains); give its hub id or model dir to train it in torch")
        return None
    if head == "openai":
        return None  # trains through the served LoRA route (agents/served/train.py) when the server is vLLM
    import re

    if sep and re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$", head) and rest.isidentifier():
        from agents.base import Trainable
        from agents.registry import AgentContext, build_agent

        agent = build_agent(s, AgentContext(role="reasoner")).agent
        return None if isinstance(agent, Trainable) else f"the plug-in {s!r} is not an agents.base.Trainable"
    return None


def check_arms(arms: Sequence[str], reasoner: str) -> None:
    """Refuse a trained arm of an untrainable ``reasoner`` before anything runs, naming the arms it can have."""
    trained = [a for a in arms if a in TRAINED]
    if not trained:
        return
    why = untrainable(reasoner)
    if why is not None:
        can = ", ".join(a for a in ARMS if a not in TRAINED)
        raise ValueError(f"--arms {','.join(trained)}: the reasoner {reasoner!r} cannot be trained ({why}); it can "
                         f"have the arms {can}. Train a torch, llamacpp:default or vLLM-served (openai:) reasoner "
                         "for the others.")


def route_reasoner(reasoner: str, route: str) -> str:
    """The reasoner spec every arm decodes with on ``route``: on ``torch`` the embedded GGUF's torch twin
    (``default``) for ``llamacpp:default``, any other spec as given; on ``llamacpp`` the study's llama.cpp spec."""
    s = reasoner.strip()
    if s.startswith("replay:"):
        s = s[len("replay:"):]
    head, _, rest = s.partition(":")
    if route == "torch":
        if head == "llamacpp":
            if _base_spec(rest) in ("default", "q8_0"):
                return "default"
            raise ValueError(f"arm.route=torch: the reasoner {reasoner!r} is a GGUF file with no torch twin; use "
                             "arm.route=llamacpp (frozen arms only) or give its hub id.")
        return s
    if head != "llamacpp":
        if s == "default":
            return "llamacpp:default"
        raise ValueError(f"arm.route=llamacpp: the reasoner {reasoner!r} is not a llama.cpp spec; use arm.route=torch.")
    return s


def budget(arm: str, settings: ArmSettings, problem_ids: Sequence[str], seed: int) -> dict[str, Any]:
    """What a trained ``arm``'s seed-``seed`` run is promised (the contract :func:`check_equal_budget` compares):
    its train problems in the order it sees them, episodes, steps, G, LoRA rank, KL and the reasoner's base lr."""
    if arm not in TRAINED:
        raise ValueError(f"budget: {arm!r} trains nothing; trained arms are {TRAINED}.")
    return {"arm": arm, "seed": seed, "problems": list(problem_ids), "episodes": settings.episodes,
            "steps": settings.steps, "groups_per_step": settings.groups_per_step, "group_size": settings.group_size,
            "lora_rank": settings.lora_rank, "kl": settings.kl, "reasoner_lr": settings.lr}


CONTRACT = ("problems", "episodes", "steps", "groups_per_step", "group_size", "lora_rank", "kl", "reasoner_lr")
"""The keys of a budget that must be equal across the trained arms of one seed."""


def check_equal_budget(budgets: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``ValueError`` unless every trained run of the same seed has the same :data:`CONTRACT` (the problems it
    trained on, in order, its episodes, steps, G, LoRA, KL, base lr) and every seed the same episodes."""
    by_seed: dict[int, list[Mapping[str, Any]]] = {}
    for b in budgets:
        by_seed.setdefault(int(b["seed"]), []).append(b)
    episodes = {int(b["episodes"]) for b in budgets}
    if len(episodes) > 1:
        raise ValueError(f"unequal budget: the trained runs have {sorted(episodes)} episodes; every arm trains on the "
                         "same episodes (arm.steps x arm.groups_per_step x arm.group_size).")
    for seed, rows in sorted(by_seed.items()):
        first = rows[0]
        for b in rows[1:]:
            for key in CONTRACT:
                if b[key] != first[key]:
                    what = ("other problems or another order" if key == "problems" else f"{key} {b[key]!r} vs "
                            f"{first[key]!r}")
                    raise ValueError(f"unequal budget at seed {seed}: arm {b['arm']!r} trained on {what} than arm "
                                     f"{first['arm']!r}; retrain it (delete its run dir) with the study's arm "
                                     "settings.")
