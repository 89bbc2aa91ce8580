"""``rsim eval``: accuracy, strategy use and token cost of a reasoner under planner modes.

Any reasoner works (``--reasoner``: any agent spec of :mod:`agents.registry`, the same specs as
``rsim train``), so a planner trained with one reasoner is evaluated with another without
training: the paper's plug-in result. ``--out DIR`` writes ``results.json`` (every figure and the
exact configuration), ``episodes.jsonl`` (every step's text), ``table.md`` and PNG plots.

Package layout: :mod:`.config` (EvalConfig, mode grammar), :mod:`.run` (agents, episodes,
figures), :mod:`.report` (table, JSON, plots).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Sequence

from .config import DEFAULT_FIXED, EvalConfig, fixed_name, parse_sequence, split_modes
from .run import build_reasoner, episode_tokens, evaluate_mode, load_eval_problems, load_planner, run

__all__ = ["EvalConfig", "DEFAULT_FIXED", "fixed_name", "parse_sequence", "split_modes", "load_eval_problems",
           "build_reasoner", "load_planner", "episode_tokens", "evaluate_mode", "run", "parse", "main"]


def parse(argv: Sequence[str]) -> EvalConfig:
    """``rsim eval`` flags (generated from :class:`EvalConfig`) -> config; a bad flag or value raises ``ValueError``."""
    from agents.registry import spec_help as agent_specs
    from rsim_env.sources.data import spec_help

    from ..dataclass_cli import parse_config
    from .config import __doc__ as modes_doc

    epilog = (f"agent specs (--planner / --reasoner, the same in rsim train):\n"
              f"  {agent_specs()}\ndata specs (--data, the same in rsim train):\n  {spec_help()}\n\n"
              + modes_doc.split("\n\n", 1)[1])
    return parse_config(EvalConfig, argv, prog="rsim eval", description=__doc__.split("\n\n")[0], epilog=epilog)


def main(cfg: EvalConfig | Sequence[str] | None = None) -> dict[str, Any]:
    """``main(EvalConfig)``, ``main(["--limit", "10", ...])`` or console (``sys.argv``) -> results dict."""
    if not isinstance(cfg, EvalConfig):
        cfg = parse(sys.argv[1:] if cfg is None else cfg)
    from ..threads import use_threads

    return run(dataclasses.replace(cfg, threads=use_threads(cfg.threads)))  # results.json records the count used
