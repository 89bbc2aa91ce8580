"""Command-line flags generated from a config dataclass (one flag per field, help from its docstring).

``rsim eval`` and the benchmarks build their argparse parsers here instead of copying every field
by hand: ``--field-name VALUE`` for each scalar field (typed from its annotation), ``--no-field`` /
``--field`` for booleans, and per-field ``metadata`` for the rest::

    modes: tuple[str, ...] = field(default=(), metadata={"parse": split_modes})
    fixed: tuple[tuple[int, ...], ...] = field(default=..., metadata={"parse": parse_sequence, "append": True})
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import typing
from typing import Any, Sequence

__all__ = ["field_docs", "add_fields", "config_from_args", "parse_config"]


def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of dataclass ``cls`` (``{}`` if the source is unavailable)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    out = {}
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            out[stmt.target.id] = " ".join(nxt.value.value.split())
    return out


def _add(parser: argparse.ArgumentParser, name: str, **kwargs: Any) -> None:
    """``--field-name`` (shown), plus ``--field_name`` (hidden: the spelling of older scripts)."""
    parser.add_argument("--" + name.replace("_", "-"), **kwargs)
    if "_" in name:
        hidden = dict(kwargs, help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        parser.add_argument("--" + name, **hidden)


def add_fields(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """Add one flag per field of ``cls`` (dataclass) to ``parser``; defaults stay the dataclass's."""
    docs, hints = field_docs(cls), typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in skip or not f.init or dataclasses.is_dataclass(hints[f.name]):
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        meta, help_ = f.metadata, docs.get(f.name, "")
        if "parse" in meta:
            _add(parser, f.name, dest=f.name, type=meta["parse"], default=None,
                 action="append" if meta.get("append") else "store", help=help_)
        elif hints[f.name] is bool and default:
            _add(parser, "no_" + f.name, dest=f.name, action="store_false", default=True, help=f"turn off: {help_}")
        elif hints[f.name] is bool:
            _add(parser, f.name, dest=f.name, action="store_true", default=False, help=help_)
        else:
            typ = hints[f.name] if hints[f.name] in (int, float, str) else str
            _add(parser, f.name, dest=f.name, type=typ, default=default, help=f"{help_} (default: {default!r})")


def config_from_args(cls: type, ns: argparse.Namespace, **extra: Any) -> Any:
    """Build ``cls`` from parsed flags (fields whose flag was not given keep their default)."""
    values = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls)
              if hasattr(ns, f.name) and getattr(ns, f.name) is not None}
    for f in dataclasses.fields(cls):
        if f.metadata.get("append") and f.name in values:
            values[f.name] = tuple(values[f.name])
    return cls(**values, **extra)


def parse_config(cls: type, argv: Sequence[str], prog: str, description: str = "", epilog: str = "") -> Any:
    """Parse ``argv`` into ``cls``; a config error exits with argparse's usage message."""
    p = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fields(p, cls)
    ns = p.parse_args(list(argv))
    try:
        return config_from_args(cls, ns)
    except ValueError as e:
        p.error(str(e))
        raise  # unreachable: p.error exits
