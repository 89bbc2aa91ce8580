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

import dataclasses
import re
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from agents.reasoner import ReasonerConfig
from rsim_env.game import EnvConfig
from rsim_env.strategies import TERMINATION, by_name, num_strategies
from rsim_env.validation import check_finite

from ..config import DataConfig, ModelConfig

__all__ = ["EvalConfig", "DEFAULT_FIXED", "fixed_name", "TRAIN_ONLY", "parse_sequence", "split_modes"]


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


TRAIN_ONLY = ("model.dtype", "model.planner_lora", "model.reasoner_lora", "reasoner.greedy", "reasoner.temperature",
              "reasoner.seed", "reasoner.max_answer_tokens")
"""``--set`` keys (and sections) ``rsim eval`` refuses: training settings, or ones its own flags decide (``--k``,
``--temperature``, ``--seed``, ``--max-answer-tokens``). Every other key means what it means in ``rsim train``."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything ``rsim eval`` needs; saved verbatim into ``results.json``.

    Its sections are :class:`algos.config.RunConfig`'s, under the same names: ``--set KEY=VALUE`` and
    the flags ``--planner`` / ``--reasoner`` / ``--data`` mean in ``rsim eval`` what they mean in ``rsim train``.
    """

    FLAGS: ClassVar[dict[str, str]] = {"planner": "model.planner", "reasoner": "model.reasoner", "data": "data.source",
                                       "limit": "data.size"}
    """Flags for the most used nested fields (:mod:`algos.dataclass_cli`), named as in ``rsim train``."""

    model: ModelConfig = field(default_factory=lambda: ModelConfig(planner=""))
    """The reasoner spec, the planner spec for mode "trained" ("" = none) and the weights the reasoner decodes with
    (model.frozen); dtype and LoRA are training settings (TRAIN_ONLY)."""
    data: DataConfig = field(default_factory=lambda: DataConfig(source="curriculum:heldout", size=100, seed=1000))
    """Problems: the held-out curriculum by default, generator seed 1000 (rsim train's presets train on seed 0)."""
    env: EnvConfig = field(default_factory=EnvConfig)
    """Episode rules (rounds, step and question caps, protocol, answer check, reward weights). Evaluating a run
    or checkpoint (--planner / --reasoner naming one), the run's saved env is the base instead of these defaults;
    fields set here to other than the default and --set env.X=V override it."""
    reasoner: ReasonerConfig = field(default_factory=ReasonerConfig)
    """Reasoner decoding settings (max_step_tokens, stop_at_delimiter, cache, ...), taken from the evaluated run
    like ``env``; greedy, temperature and seed always come from this config (k, temperature, seed)."""
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
    set: tuple[tuple[str, str], ...] = field(default=(), metadata={"cli": False, "overrides": True})
    """The --set items given (applied here, and over the evaluated run's env and reasoner settings; recorded in
    results.json under settings.overrides)."""
    from_run: bool = True
    """Start from the env and reasoner settings saved with the evaluated run (off: from the defaults)."""
    max_answer_tokens: int = 0
    """Token cap of the single no-planner generation; 0 = rounds * step tokens (the same budget)."""
    resume: bool = True
    """With --out: continue an interrupted evaluation of the same settings from its journal.jsonl (off: start over)."""
    out: str = ""
    """Output directory for results.json, episodes.jsonl, table.md and plots ("" = print only)."""
    ledger_dir: str = ""
    """A folder of test-set ledgers searched first (:mod:`algos.study.ledger`): an evaluation that scores any problem
    of a study's sealed split records its look there (and wherever else that split's ledger is found)."""
    plots: bool = True
    """Write PNG plots into ``out``."""
    progress: bool = True
    """tqdm progress bar on stderr."""
    threads: int = 0
    """CPU threads for torch; 0 = OMP_NUM_THREADS if set, else the physical cores less those other jobs keep busy
    (algos/threads.py). results.json holds the count used."""

    def __post_init__(self) -> None:
        check_finite(self)
        self._check_numbers()
        for key, _ in self.set:
            if "." not in key:
                raise ValueError(f"--set {key}: rsim eval sets its own settings with flags; see rsim eval --help.")
            if any(key == t or key.startswith(t + ".") for t in TRAIN_ONLY):
                raise ValueError(f"--set {key}: rsim eval does not take it, a training setting or one its own flags "
                                 "decide (--k, --temperature, --seed, --max-answer-tokens); see rsim eval --help.")
        self._apply_set()
        self._check_sections()
        for m in self.resolved_modes():
            if m == "trained" and not self.model.planner:
                raise ValueError("mode 'trained' needs --planner SPEC (a saved planner, checkpoint or run dir).")

    def _check_numbers(self) -> None:
        for name in ("k", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"EvalConfig.{name}={v!r} is invalid: use an int >= 1.")
        if isinstance(self.max_answer_tokens, bool) or not isinstance(self.max_answer_tokens, int) or self.max_answer_tokens < 0:
            raise ValueError(f"EvalConfig.max_answer_tokens={self.max_answer_tokens!r} is invalid: use 0 "
                             "(rounds * step tokens) or an int >= 1.")
        if not self.temperature > 0:
            raise ValueError(f"EvalConfig.temperature={self.temperature!r} is invalid: use a positive float.")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 0:
            raise ValueError(f"EvalConfig.threads={self.threads!r} is invalid: use an int >= 1, or 0 to choose automatically.")
        for seq in self.fixed:
            if not seq or any(not isinstance(s, int) or not 0 <= s < num_strategies() for s in seq):
                raise ValueError(f"EvalConfig.fixed has sequence {seq!r}: use ints in 0..{num_strategies() - 1}, "
                                 "e.g. --fixed 1,3,8.")

    def _apply_set(self) -> None:
        """Apply the ``--set`` items to the sections (each section's own checks run; a bad key raises ValueError)."""
        from ..dataclass_cli import apply_overrides

        for f in dataclasses.fields(self):
            sub = {k.split(".", 1)[1]: v for k, v in self.set if k.startswith(f.name + ".")}
            if sub:
                object.__setattr__(self, f.name, apply_overrides(getattr(self, f.name), sub, prefix=f.name + "."))

    def _check_sections(self) -> None:
        for name, cls in (("model", ModelConfig), ("data", DataConfig), ("env", EnvConfig), ("reasoner", ReasonerConfig)):
            if not isinstance(getattr(self, name), cls):
                raise TypeError(f"EvalConfig.{name} must be a {cls.__name__}, got {type(getattr(self, name)).__name__}.")
        default = ModelConfig()
        for key in ("dtype", "planner_lora", "reasoner_lora"):
            if getattr(self.model, key) != getattr(default, key):
                raise ValueError(f"model.{key}: rsim eval loads each agent as it was saved; {key} is a training setting.")

    def resolved_modes(self) -> list[str]:
        """Concrete mode names (``fixed`` expanded to one ``fixed:a,b,c`` per sequence)."""
        modes = list(self.modes) or ["none", "random", "fixed"] + (["trained"] if self.model.planner else [])
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
        return self.max_answer_tokens or self.env.max_steps * self.reasoner.max_step_tokens
