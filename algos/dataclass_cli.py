"""Command-line flags generated from a config dataclass (one flag per field, help from its docstring).

``rsim eval`` and every benchmark build their parsers here instead of copying every field by
hand: ``--field-name VALUE`` for each scalar field (typed from its annotation), ``--no-field`` /
``--field`` for booleans, and per-field ``metadata`` for the rest::

    modes: tuple[str, ...] = field(default=(), metadata={"parse": split_modes})
    fixed: tuple[tuple[int, ...], ...] = field(default=..., metadata={"parse": parse_sequence, "append": True})

A benchmark's whole ``__main__`` is ``cli_main(main, Config, "python -m benchmarks.NAME", __doc__)``.
Errors, in the command line or in the config it makes, raise ``ValueError`` (a bad command line:
:class:`algos.console.UsageError`); at the console they are one line on stderr and exit status 1,
the same as every other ``rsim`` error (:mod:`algos.console`), never argparse's usage dump and 2.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import sys
import textwrap
import types
import typing
from typing import Any, Callable, Sequence

from .console import UsageError, run

__all__ = ["ArgumentParser", "UsageError", "field_docs", "add_fields", "comma_list", "config_from_args",
           "parse_config", "cli_main"]


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose errors raise :class:`UsageError` instead of printing usage and exiting 2."""

    def error(self, message: str) -> typing.NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


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
    if isinstance(kwargs.get("help"), str) and kwargs["help"] != argparse.SUPPRESS:
        kwargs["help"] = kwargs["help"].replace("%", "%%")  # argparse %-formats help ("95%" would crash --help)
    parser.add_argument("--" + name.replace("_", "-"), **kwargs)
    if "_" in name:
        hidden = dict(kwargs, help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        parser.add_argument("--" + name, **hidden)


def _keep_message(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` whose ValueError message reaches the user (argparse would say only "invalid <name> value")."""

    def wrapped(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from e

    wrapped.__name__ = getattr(parse, "__name__", "value")
    return wrapped


def _optional_of(hint: Any) -> Any:
    """``X`` for ``X | None`` (the flag is typed ``X``; not given = the field's default), else ``hint``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 2 and type(None) in args:
        return args[0] if args[1] is type(None) else args[1]
    return hint


def comma_list(item: type) -> Callable[[str], tuple]:
    """Parser of ``"a,b,c"`` into a tuple of ``item`` (what a ``tuple[int, ...]`` field's flag takes)."""

    def parse(text: str) -> tuple:
        try:
            return tuple(item(x.strip()) for x in text.split(",") if x.strip())
        except ValueError as e:
            raise ValueError(f"{text!r}: expected a comma-separated list of {item.__name__}, e.g. "
                             f"{','.join(str(item(v)) for v in ('1', '2'))}.") from e

    parse.__name__ = f"{item.__name__}_list"
    return parse


def _tuple_item(hint: Any) -> type | None:
    """``int`` for ``tuple[int, ...]`` (likewise float and str), else None."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in (int, float, str):
        return args[0]
    return None


def add_fields(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """Add one flag per field of ``cls`` (dataclass) to ``parser``; defaults stay the dataclass's.

    A field is left out when it is in ``skip``, not an ``__init__`` argument, a nested dataclass, or
    has ``metadata={"cli": False}``. ``tuple[int, ...]`` (or float, str) fields take a comma list;
    ``metadata={"flag": "set"}`` names the flag ``--set`` instead of ``--field-name``.
    """
    docs, hints = field_docs(cls), typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = _optional_of(hints[f.name])
        if f.name in skip or not f.init or dataclasses.is_dataclass(hint) or f.metadata.get("cli") is False:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        meta, help_, flag = f.metadata, docs.get(f.name, ""), f.metadata.get("flag", f.name)
        if "parse" in meta or _tuple_item(hint):
            shown = ",".join(map(str, default)) if _tuple_item(hint) else ""
            _add(parser, flag, dest=f.name, type=_keep_message(meta.get("parse") or comma_list(_tuple_item(hint))),
                 default=None, action="append" if meta.get("append") else "store",
                 help=f"{help_} (default: {shown})" if shown else help_)
        elif hint is bool and default:
            _add(parser, "no_" + flag, dest=f.name, action="store_false", default=True, help=f"turn off: {help_}")
        elif hint is bool:
            _add(parser, flag, dest=f.name, action="store_true", default=False, help=help_)
        else:
            typ = hint if hint in (int, float, str) else str
            _add(parser, flag, dest=f.name, type=typ, default=default, help=f"{help_} (default: {default!r})")


def config_from_args(cls: type, ns: argparse.Namespace, **extra: Any) -> Any:
    """Build ``cls`` from parsed flags (fields whose flag was not given keep their default)."""
    values = {f.name: getattr(ns, f.name) for f in dataclasses.fields(cls)
              if hasattr(ns, f.name) and getattr(ns, f.name) is not None}
    for f in dataclasses.fields(cls):
        if f.metadata.get("append") and f.name in values:
            values[f.name] = tuple(values[f.name])
    return cls(**values, **extra)


def parse_config(cls: type, argv: Sequence[str], prog: str, description: str = "", epilog: str = "") -> Any:
    """Parse ``argv`` into ``cls``.

    Raises:
        UsageError: a flag that ``cls`` has no field for, or a value that does not parse.
        ValueError: the config's own check (``__post_init__``) refused a value.
    """
    p = ArgumentParser(prog=prog, description=description, epilog=epilog,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_fields(p, cls)
    return config_from_args(cls, p.parse_args(list(argv)))


def cli_main(main: Callable[[Any], Any], cls: type, prog: str, doc: str | None = "",
             argv: Sequence[str] | None = None) -> None:
    """Console entry of a runnable module: flags from ``cls`` -> ``main(cfg)``; exits 0, or 1 with one line.

    Args:
        main: the module's ``main(cfg)``.
        cls: its config dataclass (every field becomes a flag).
        prog: shown in ``--help`` and in errors, e.g. ``"python -m studies.paper"``.
        doc: the module docstring; its first paragraph is the description, the rest the epilog.
        argv: default ``sys.argv[1:]``; ``--debug`` (or ``RSIM_DEBUG=1``) shows tracebacks.
    """
    description, _, epilog = (doc or "").strip().partition("\n\n")
    status = run(lambda args: main(parse_config(cls, args, prog, description, epilog)),
                 sys.argv[1:] if argv is None else list(argv), prog=prog)
    sys.exit(status)
