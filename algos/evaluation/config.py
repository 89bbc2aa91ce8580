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
from rsim_env.strategies import NUM_STRATEGIES, TERMINATION, by_name
from rsim_env.validation import check_finite

__all__ = ["EvalConfig", "DEFAULT_FIXED", "fixed_name", "parse_sequence", "split_modes"]


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
    if not seq or any(not 0 <= s < NUM_STRATEGIES for s in seq):
        raise ValueError(f"fixed sequence {text!r}: use strategy indices in 0..{NUM_STRATEGIES - 1}, e.g. 1,3,8.")
    return seq


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
    max_steps: int = EnvConfig.max_steps
    """Planner rounds before truncation (env.max_steps)."""
    max_step_tokens: int = ReasonerConfig.max_step_tokens
    """Reasoner token cap per step (reasoner.max_step_tokens)."""
    max_answer_tokens: int = 0
    """Token cap of the single no-planner generation; 0 = max_steps * max_step_tokens (same budget)."""
    protocol: str = EnvConfig.protocol
    """Reasoner turn protocol (env.protocol; rsim_env.render.PROTOCOLS)."""
    frozen: str = "same"
    """Weights the reasoner decodes with: "same" (as loaded), "bfloat16" or "int8" (dynamic quantisation of the
    linear layers), which read fewer bytes per token on a CPU, or "compile" (torch.compile: same weights, the
    first batches build kernels). docs/lean.md measures speed and accuracy of each.
    A LoRA run's reasoner refuses it (it decodes on its merged sampler): evaluate its ``rsim export`` instead."""
    last_number_fallback: bool = False
    """Grade the last number of a response that states no explicit answer (env.check.last_number_fallback)."""
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
        for name in ("limit", "k", "batch", "max_steps", "max_step_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"EvalConfig.{name}={v!r} is invalid: use an int >= 1.")
        if self.max_answer_tokens < 0:
            raise ValueError(f"EvalConfig.max_answer_tokens={self.max_answer_tokens!r}: use 0 (auto) or a positive int.")
        if not self.temperature > 0:
            raise ValueError(f"EvalConfig.temperature={self.temperature!r} is invalid: use a positive float.")
        from rsim_env.render import protocol

        protocol(self.protocol)
        from agents.registry import FROZEN

        if self.frozen not in FROZEN:
            raise ValueError(f"EvalConfig.frozen={self.frozen!r} is invalid: use one of {FROZEN}.")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"EvalConfig.threads={self.threads!r} is invalid: use an int >= 1, or 0 to choose automatically.")
        for seq in self.fixed:
            if not seq or any(not isinstance(s, int) or not 0 <= s < NUM_STRATEGIES for s in seq):
                raise ValueError(f"EvalConfig.fixed has sequence {seq!r}: use ints in 0..{NUM_STRATEGIES - 1}, "
                                 "e.g. --fixed 1,3,8.")
        for m in self.resolved_modes():
            if m == "trained" and not self.planner:
                raise ValueError("mode 'trained' needs --planner SPEC (a saved planner, checkpoint or run dir).")

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
        return self.max_answer_tokens or self.max_steps * self.max_step_tokens
