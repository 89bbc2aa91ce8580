"""``rsim eval``'s configuration: :class:`EvalConfig` and the planner-mode grammar.

Modes (``--modes``, comma-separated; default: all that apply):

* ``none``          plain chain of thought: ``env(planner=False)``, one generation per sample;
* ``random``        a uniformly random planner (seeded);
* ``fixed:1,3,8``   a fixed strategy sequence, then termination (``--fixed`` adds sequences;
  ``fixed`` in ``--modes`` means every sequence given, or :data:`DEFAULT_FIXED`);
* ``trained``       the planner ``--planner SPEC`` (any agent spec: a saved planner, a trainer
  checkpoint or run dir, ``untrained:SPEC`` as a control, ...), run greedily (argmax).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from agents.reasoner import ReasonerConfig
from rsim_env.game import EnvConfig
from rsim_env.strategies import TERMINATION, by_name, num_strategies
from rsim_env.validation import check_finite

__all__ = ["EvalConfig", "DEFAULT_FIXED", "fixed_name", "parse_assignment", "parse_sequence", "split_modes"]


def _seq(*names: str) -> tuple[int, ...]:
    return tuple(by_name(n).index for n in names) + (TERMINATION,)


DEFAULT_FIXED: tuple[tuple[int, ...], ...] = (
    _seq(), _seq("continuation"), _seq("decomposition", "continuation"), _seq("sub-planning", "continuation"),
    _seq("decomposition", "validation"), _seq("deliberative thinking", "self-reflection"),
)
"""Fixed sequences evaluated by default (by strategy name): answer at once, continue, decompose,
plan, decompose+check, think+reflect — each followed by termination."""


def fixed_name(seq: Sequence[int]) -> str:
    return "fixed:" + ",".join(str(s) for s in seq)


def parse_sequence(text: str) -> tuple[int, ...]:
    """``"1,3,8"`` -> ``(1, 3, 8)``, with an error that names the bad item (and the spelling, for ``1-3-8``)."""
    if re.search(r"\d\s*-\s*\d", text):
        raise ValueError(f"fixed sequence {text!r}: separate strategy indices with commas, "
                         f"fixed:{text.replace(' ', '').replace('-', ',')} (the only spelling of a plan).")
    try:
        seq = tuple(int(x) for x in text.replace(" ", "").split(",") if x != "")
    except ValueError as e:
        raise ValueError(f"fixed sequence {text!r}: expected comma-separated strategy indices, e.g. 1,3,8.") from e
    if not seq or any(not 0 <= s < num_strategies() for s in seq):
        raise ValueError(f"fixed sequence {text!r}: use strategy indices in 0..{num_strategies() - 1}, e.g. 1,3,8.")
    return seq


def parse_assignment(text: str) -> tuple[str, str]:
    """``"env.max_steps=3"`` -> ``("env.max_steps", "3")`` (for ``--set``)."""
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. env.max_step_chars=500.")
    return key.strip(), value.strip()


def split_modes(text: str) -> tuple[str, ...]:
    """``"none,fixed:1,3,8,random"`` -> ``("none", "fixed:1,3,8", "random")`` (bare numbers extend the
    preceding fixed sequence); ``fixed:1-3-8`` raises ``ValueError`` naming the comma spelling."""
    out: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if item.isdigit() and out and out[-1].startswith("fixed:"):
            out[-1] += "," + item
        else:
            out.append(item)
    for item in out:
        if item.startswith("fixed:"):
            parse_sequence(item[len("fixed:"):])
    return tuple(out)


@dataclass(frozen=True)
class EvalConfig:
    """Everything ``rsim eval`` needs; saved verbatim into ``results.json``."""

    reasoner: str = "default"
    """Reasoner agent spec (the same as rsim train's model.reasoner; see agents.registry)."""
    planner: str = ""
    """Planner agent spec for mode "trained" (a saved planner, run or checkpoint dir, untrained:SPEC, ...)."""
    source: str = "curriculum:heldout"
    """Problems: a data spec, the same as rsim train's data.source (see rsim_env.data); default: the held-out curriculum."""
    split: str = ""
    """Dataset split of hub sets ("" = the loader's default)."""
    data_seed: int = 1000
    """Generator seed of procedural sources; rsim train's presets train on seed 0, so 1000 is held out."""
    limit: int = 100
    """Problems to evaluate (the first ``limit`` of the source)."""
    modes: tuple[str, ...] = field(default=(), metadata={"parse": split_modes})
    """Modes: comma list of none,random,fixed,fixed:1,3,8,trained; () = none, random, every fixed sequence, trained if --planner."""
    fixed: tuple[tuple[int, ...], ...] = field(default=DEFAULT_FIXED, metadata={"parse": parse_sequence, "append": True})
    """A fixed strategy sequence such as 1,3,8 (repeatable); the "fixed" mode expands to these."""
    k: int = 1
    """Samples per problem; 1 = greedy pass@1, > 1 = sampled pass@1 and pass@k."""
    temperature: float = 0.7
    """Reasoner sampling temperature when k > 1."""
    seed: int = 0
    """Seed of environments, random planner and sampling (each mode restarts from it)."""
    batch: int = 16
    """Problems per batched rollout."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """Episode rules (rounds, step and question caps, protocol, answer check, reward weights). Evaluating a run
    or checkpoint (--planner / --reasoner naming one), the run's saved env is the base instead of these defaults;
    fields set here to other than the default, the shorthands below and --set env.X=V override it."""
    reasoner_config: ReasonerConfig = field(default_factory=ReasonerConfig)
    """Reasoner decoding settings (max_step_tokens, stop_at_delimiter, cache, ...), taken from the evaluated run
    like ``env``; greedy, temperature and seed always come from this config (k, temperature, seed)."""
    set: tuple[tuple[str, str], ...] = field(default=(), metadata={"parse": parse_assignment, "append": True})
    """Override one setting of the run or the defaults, e.g. env.max_step_chars=500, env.check.timeout_s=5,
    reasoner_config.max_step_tokens=32 (repeatable; recorded in results.json under settings.overrides)."""
    from_run: bool = True
    """Start from the env and reasoner settings saved with the evaluated run (off: from the defaults)."""
    max_steps: int = 0
    """Planner rounds before truncation: = --set env.max_steps=N; 0 = the run's (else the default, 8)."""
    max_step_tokens: int = 0
    """Reasoner token cap per step: = --set reasoner_config.max_step_tokens=N; 0 = the run's (else 96)."""
    max_answer_tokens: int = 0
    """Token cap of the single no-planner generation; 0 = rounds * step tokens (the same budget)."""
    protocol: str = ""
    """Reasoner turn protocol: = --set env.protocol=P (rsim_env.render.PROTOCOLS); "" = the run's (else default)."""
    frozen: str = "same"
    """Weights the reasoner decodes with: "same" (as loaded), "bfloat16" or "int8" (dynamic quantisation of the
    linear layers), which read fewer bytes per token on a CPU, or "compile" (torch.compile: same weights, the
    first batches build kernels). docs/lean.md measures speed and accuracy of each.
    A LoRA run's reasoner refuses it (it decodes on its merged sampler): evaluate its ``rsim export`` instead."""
    last_number_fallback: bool = False
    """Grade the last number of a response that states no explicit answer: = --set
    env.check.last_number_fallback=true (off here leaves the run's or the default setting)."""
    resume: bool = True
    """With --out: continue an interrupted evaluation of the same settings from its journal.jsonl (off: start over)."""
    out: str = ""
    """Output directory for results.json, episodes.jsonl, table.md and plots ("" = print only)."""
    plots: bool = True
    """Write PNG plots into ``out``."""
    progress: bool = True
    """tqdm progress bar on stderr."""
    threads: int = 0
    """CPU threads for torch; 0 = OMP_NUM_THREADS if set, else the physical cores less those other jobs keep busy
    (algos/threads.py). results.json holds the count used."""

    def __post_init__(self) -> None:
        check_finite(self)
        for name in ("limit", "k", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"EvalConfig.{name}={v!r} is invalid: use an int >= 1.")
        for name in ("max_steps", "max_step_tokens", "max_answer_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"EvalConfig.{name}={v!r} is invalid: use 0 (the run's or the default) or an int >= 1.")
        if not self.temperature > 0:
            raise ValueError(f"EvalConfig.temperature={self.temperature!r} is invalid: use a positive float.")
        if not isinstance(self.env, EnvConfig) or not isinstance(self.reasoner_config, ReasonerConfig):
            raise TypeError("EvalConfig.env must be an EnvConfig and EvalConfig.reasoner_config a ReasonerConfig.")
        from rsim_env.render import protocol

        if self.protocol:
            protocol(self.protocol)
        env, rc = self.shorthand_applied()
        object.__setattr__(self, "env", env)
        object.__setattr__(self, "reasoner_config", rc)
        from agents.registry import FROZEN

        if self.frozen not in FROZEN:
            raise ValueError(f"EvalConfig.frozen={self.frozen!r} is invalid: use one of {FROZEN}.")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"EvalConfig.threads={self.threads!r} is invalid: use an int >= 1, or 0 to choose automatically.")
        for seq in self.fixed:
            if not seq or any(not isinstance(s, int) or not 0 <= s < num_strategies() for s in seq):
                raise ValueError(f"EvalConfig.fixed has sequence {seq!r}: use ints in 0..{num_strategies() - 1}, "
                                 "e.g. --fixed 1,3,8.")
        for m in self.resolved_modes():
            if m == "trained" and not self.planner:
                raise ValueError("mode 'trained' needs --planner SPEC (a saved planner, checkpoint or run dir).")

    def shorthands(self) -> dict[str, object]:
        """The shorthand flags and ``--set`` items given, as dotted ``env.*`` / ``reasoner_config.*`` keys."""
        out = {"env.max_steps": self.max_steps or None, "reasoner_config.max_step_tokens": self.max_step_tokens or None,
               "env.protocol": self.protocol or None, "env.check.last_number_fallback": self.last_number_fallback or None}
        out = {k: v for k, v in out.items() if v is not None}
        for key, value in self.set:
            if key.split(".", 1)[0] not in ("env", "reasoner_config") or "." not in key:
                raise ValueError(f"--set {key}={value}: only env.<field> and reasoner_config.<field> can be set here "
                                 "(e.g. env.max_step_chars=500, reasoner_config.max_step_tokens=32); the other "
                                 "settings are flags of rsim eval (see --help).")
            out[key] = value
        return out

    def shorthand_applied(self) -> tuple[EnvConfig, ReasonerConfig]:
        """``env`` and ``reasoner_config`` with :meth:`shorthands` applied (raises ValueError naming a bad key)."""
        from ..config import apply_overrides

        sections = {"env": self.env, "reasoner_config": self.reasoner_config}
        for name in sections:
            sub = {k.split(".", 1)[1]: v for k, v in self.shorthands().items() if k.startswith(name + ".")}
            sections[name] = apply_overrides(sections[name], sub, prefix=name + ".")
        return sections["env"], sections["reasoner_config"]

    def resolved_modes(self) -> list[str]:
        """Concrete mode names (``fixed`` expanded to one ``fixed:a,b,c`` per sequence)."""
        modes = list(self.modes) or ["none", "random", "fixed"] + (["trained"] if self.planner else [])
        out: list[str] = []
        for m in modes:
            if m == "fixed":
                out += [fixed_name(s) for s in self.fixed]
            elif m in ("none", "random", "trained") or m.startswith("fixed:"):
                if m.startswith("fixed:"):
                    parse_sequence(m[len("fixed:"):])
                out.append(m)
            else:
                raise ValueError(f"unknown mode {m!r}; use none, random, fixed, fixed:1,3,8 or trained.")
        return list(dict.fromkeys(out))

    @property
    def answer_tokens(self) -> int:
        """Token cap of the no-planner answer (after :func:`~.settings.resolve`: the same budget as the rounds)."""
        return self.max_answer_tokens or self.env.max_steps * self.reasoner_config.max_step_tokens
