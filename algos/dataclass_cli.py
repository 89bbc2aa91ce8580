"""Command-line flags generated from a config dataclass (one flag per field, help from its docstring).

``rsim train``, ``rsim eval`` and every benchmark build their parsers here, so one grammar serves
them all: ``--field-name VALUE`` for each scalar field (typed from its annotation), ``--no-field`` /
``--field`` for booleans, ``--set section.field=VALUE`` for any field of a nested config dataclass
(:func:`apply_overrides`: converted to the field's type, every ``__post_init__`` check re-run), the
flags a config names in its ``FLAGS`` class attribute for its most used nested fields
(``FLAGS = {"data": "data.source"}``: ``--data SPEC`` sets ``data.source``), and per-field
``metadata`` for the rest::

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
import json
import sys
import textwrap
import types
import typing
from typing import Any, Callable, Sequence

from .console import UsageError, run

__all__ = ["ArgumentParser", "UsageError", "field_docs", "add_fields", "apply_overrides", "comma_list",
           "config_from_args", "given", "parse_config", "set_keys", "cli_main"]


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
    """``--field-name`` (a flag not given leaves the config's value: its default, a preset's, a run's)."""
    if isinstance(kwargs.get("help"), str):
        kwargs["help"] = kwargs["help"].replace("%", "%%")  # argparse %-formats help ("95%" would crash --help)
    parser.add_argument("--" + name.replace("_", "-"), default=argparse.SUPPRESS, **kwargs)


def _keep_message(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` whose ValueError message reaches the user (argparse would say only "invalid <name> value")."""

    def wrapped(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from e

    wrapped.__name__ = parse.__name__
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


def _flags(cls: type) -> dict[str, str]:
    """``cls.FLAGS``: flag name -> the dotted key it sets (a config without one has none)."""
    return dict(vars(cls).get("FLAGS", {}))


def _parse_set(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise ValueError(f"--set {text!r}: expected KEY=VALUE, e.g. env.max_steps=3.")
    return key.strip(), value.strip()


def _field_flag(parser: argparse.ArgumentParser, f: dataclasses.Field, hint: Any, help_: str,
                flag: str, dest: str, default: Any) -> None:  # dest: the field's name, or its dotted key (FLAGS)
    """The flag of one scalar field ``f`` (typed ``hint``; ``default``: its value in the command's default config)."""
    meta = f.metadata
    if "parse" in meta or _tuple_item(hint):
        shown = ",".join(map(str, default)) if _tuple_item(hint) else ""
        _add(parser, flag, dest=dest, type=_keep_message(meta.get("parse") or comma_list(_tuple_item(hint))),
             action="append" if meta.get("append") else "store",
             help=f"{help_} (default: {shown})" if shown else help_)
    elif hint is bool and default:
        _add(parser, "no_" + flag, dest=dest, action="store_false", help=f"turn off: {help_}")
    elif hint is bool:
        _add(parser, flag, dest=dest, action="store_true", help=help_)
    else:
        typ = hint if hint in (int, float, str) else str
        _add(parser, flag, dest=dest, type=typ, metavar=flag.upper(), help=f"{help_} (default: {default!r})")


def _nested_field(cls: type, key: str) -> tuple[dataclasses.Field, Any, str, Any]:
    """The field a dotted ``key`` of ``cls`` names, its type, its docstring and its value in ``cls()``."""
    *path, last = key.split(".")
    value = cls()
    for part in path:
        cls, value = _optional_of(typing.get_type_hints(cls)[part]), getattr(value, part)
    f = next(x for x in dataclasses.fields(cls) if x.name == last)
    return f, _optional_of(typing.get_type_hints(cls)[last]), field_docs(cls).get(last, ""), getattr(value, last)


def add_fields(parser: argparse.ArgumentParser, cls: type, skip: Sequence[str] = ()) -> None:
    """Add one flag per scalar field of ``cls`` (dataclass), its ``FLAGS`` and ``--set`` to ``parser``.

    A field is left out when it is in ``skip``, not an ``__init__`` argument, a nested dataclass (its
    fields are ``--set`` keys), or has ``metadata={"cli": False}``. ``tuple[int, ...]`` (or float, str)
    fields take a comma list; ``metadata={"flag": "name"}`` names a field's flag ``--name``. A flag that is not
    given leaves the field as it is.
    """
    docs, hints = field_docs(cls), typing.get_type_hints(cls)
    nested = False
    for f in dataclasses.fields(cls):
        hint = _optional_of(hints[f.name])
        nested |= dataclasses.is_dataclass(hint)
        if f.name in skip or not f.init or dataclasses.is_dataclass(hint) or f.metadata.get("cli") is False:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        _field_flag(parser, f, hint, docs.get(f.name, ""), f.metadata.get("flag", f.name), f.name, default)
    for flag, key in _flags(cls).items():
        f, hint, help_, default = _nested_field(cls, key)
        _field_flag(parser, f, hint, f"{help_} (= --set {key}=...)", flag, key, default)
    if nested:
        parser.add_argument("--set", dest="set_items", action="append", default=[], metavar="KEY=VALUE",
                            type=_keep_message(_parse_set),
                            help="set any field of a section, e.g. env.max_steps=3, reasoner.max_step_tokens=32, "
                                 "env.check.timeout_s=5 (repeatable; every key means the same in rsim train and "
                                 "rsim eval; rsim train --print-config lists them).")


def given(cls: type, ns: argparse.Namespace) -> dict[str, Any]:
    """Every value the command line named, as dotted keys of ``cls``: the flags given, then ``--set`` items."""
    keys = [f.name for f in dataclasses.fields(cls)] + list(_flags(cls).values())
    out = {k: vars(ns)[k] for k in keys if k in vars(ns)}
    for f in dataclasses.fields(cls):
        if f.metadata.get("append") and f.name in out:
            out[f.name] = tuple(out[f.name])
    return out | dict(vars(ns).get("set_items", []))


def config_from_args(cls: type, ns: argparse.Namespace) -> Any:
    """Build ``cls`` from parsed flags: its defaults, then :func:`given` applied (:func:`apply_overrides`).

    A config with a field of ``metadata={"overrides": True}`` also keeps the ``--set`` items there
    (``rsim eval`` applies them over the evaluated run's settings and records them).
    """
    record = [f.name for f in dataclasses.fields(cls) if f.metadata.get("overrides")]
    items = tuple(vars(ns).get("set_items", []))
    base = cls(**{record[0]: items}) if record else cls()
    return apply_overrides(base, given(cls, ns))


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


def set_keys(cls: type, prefix: str = "") -> dict[str, tuple[type, str, Any]]:
    """Every ``--set`` key of ``cls`` (the fields of its nested sections, recursively) -> (owner, field, type)."""
    out: dict[str, tuple[type, str, Any]] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = _optional_of(hints[f.name])
        if dataclasses.is_dataclass(hint):
            out |= set_keys(hint, f"{prefix}{f.name}.")
        elif prefix:
            out[prefix + f.name] = (cls, f.name, hints[f.name])
    return out


def _parse_bool(key: str, value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{key}={value!r}: expected true or false.")


def _convert(key: str, hint: Any, current: Any, value: Any) -> Any:
    """``value`` (a command-line string, or already typed) as the field's type ``hint``."""
    if not isinstance(value, str):
        return value
    args = typing.get_args(hint)
    if type(None) in args:  # Optional[X]: "none" / "null" / "" mean None
        if value.strip().lower() in ("none", "null", ""):
            return None
        hint = next(a for a in args if a is not type(None))
    try:
        if hint is bool:
            return _parse_bool(key, value)
        if hint in (int, float, str):
            return hint(value)
        if typing.get_origin(hint) is tuple or isinstance(current, tuple):
            return tuple(json.loads(value))
    except (ValueError, json.JSONDecodeError) as e:
        raise ValueError(f"{key}={value!r}: expected a {hint.__name__ if isinstance(hint, type) else hint} "
                         f"(current value {current!r}).") from e
    return value


def apply_overrides(cfg: Any, overrides: dict[str, Any], prefix: str = "") -> Any:
    """Return ``cfg`` with dotted-key overrides applied (values may be strings from the command line)."""
    grouped: dict[str, dict[str, Any]] = {}
    changes: dict[str, Any] = {}
    hints = typing.get_type_hints(type(cfg))
    names = {f.name for f in dataclasses.fields(cfg)}
    for key, value in overrides.items():
        head, _, rest = key.partition(".")
        full = prefix + key
        if head not in names:
            raise ValueError(f"unknown config key {full!r}; valid in {prefix or 'the top level'}: {sorted(names)} "
                             "(print them all with `rsim train --print-config`).")
        current = getattr(cfg, head)
        if rest:
            if not dataclasses.is_dataclass(current):
                raise ValueError(f"config key {full!r}: {prefix + head!r} is a value, not a section; use {prefix + head}=...")
            grouped.setdefault(head, {})[rest] = value
        elif dataclasses.is_dataclass(current):
            raise ValueError(f"config key {full!r} is a section; set one of its fields, e.g. {full}.<field>=...")
        else:
            changes[head] = _convert(full, hints[head], current, value)
    for head, sub in grouped.items():
        changes[head] = apply_overrides(getattr(cfg, head), sub, prefix + head + ".")
    try:
        return dataclasses.replace(cfg, **changes)
    except TypeError as e:  # a wrong type reached a component's own checks
        raise ValueError(f"{prefix or 'config'}: {e}") from e


def cli_main(main: Callable[[Any], Any], cls: type, prog: str, doc: str | None = "",
             argv: Sequence[str] | None = None) -> None:
    """Console entry of a runnable module: flags from ``cls`` -> ``main(cfg)``; exits 0, or 1 with one line.

    Args:
        main: the module's ``main(cfg)``.
        cls: its config dataclass (every field becomes a flag).
        prog: shown in ``--help`` and in errors, e.g. ``"python -m studies.calibrate"``.
        doc: the module docstring; its first paragraph is the description, the rest the epilog.
        argv: default ``sys.argv[1:]``; ``--debug`` (or ``RSIM_DEBUG=1``) shows tracebacks.
    """
    description, _, epilog = (doc or "").strip().partition("\n\n")
    status = run(lambda args: main(parse_config(cls, args, prog, description, epilog)),
                 sys.argv[1:] if argv is None else list(argv), prog=prog)
    sys.exit(status)
