"""Tagged JSON for values crossing the sandbox boundary (stdlib only; never pickle).

The checker process calls the candidate's function in another process, so arguments and return
values travel as bytes. Only plain data may cross: ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes``, ``complex``, ``list``, ``tuple``, ``dict``, ``set``, ``frozenset`` (exact
types, nested). Anything else (a subclass, an object with a hand-written ``__eq__``) is refused by
:func:`encode`, so a candidate cannot return an "equals everything" object to fake a pass.

Encoding: lists, strings, numbers, ``true``/``false``/``null`` are plain JSON; every JSON object
is a one-key tag: ``{"t": [...]}`` tuple, ``{"d": [[k, v], ...]}`` dict, ``{"s": [...]}`` set,
``{"f": [...]}`` frozenset, ``{"b": "hex"}`` bytes, ``{"c": [re, im]}`` complex.

This file's source is also prepended to the harness scripts that run inside the sandbox (they
run with ``python -I -S`` and cannot import ``rsim_env``), so it must stay self-contained.
"""

import json as _json

MAX_DEPTH = 100
"""Deepest nesting accepted in either direction."""


class WireError(ValueError):
    """A value that may not cross the boundary (unsupported type, too deep, malformed)."""


_TAGS = {tuple: "t", set: "s", frozenset: "f"}


def _enc(x, depth):
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH}")
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x
    if t is list:
        return [_enc(v, depth + 1) for v in x]
    if t in _TAGS:
        items = [_enc(v, depth + 1) for v in x]
        if t is not tuple:  # canonical order so equal sets encode equally; fall back to input order
            try:
                items = sorted(items, key=_json.dumps)
            except TypeError:
                pass
        return {_TAGS[t]: items}
    if t is dict:
        return {"d": [[_enc(k, depth + 1), _enc(v, depth + 1)] for k, v in x.items()]}
    if t is bytes:
        return {"b": x.hex()}
    if t is complex:
        return {"c": [x.real, x.imag]}
    raise WireError(f"type {t.__module__}.{t.__qualname__} cannot cross the sandbox boundary; return plain data")


def encode(value) -> str:
    """One JSON line (no newline) for ``value``; raises :class:`WireError` on unsupported data."""
    return _json.dumps(_enc(value, 0), separators=(",", ":"))


def _dec(x, depth):
    if depth > MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH}")
    if isinstance(x, list):
        return [_dec(v, depth + 1) for v in x]
    if not isinstance(x, dict):
        return x
    if len(x) != 1:
        raise WireError(f"malformed tag object with keys {sorted(x)[:5]}")
    (tag, body), = x.items()
    if tag == "b" and isinstance(body, str):
        return bytes.fromhex(body)
    if tag == "c" and isinstance(body, list) and len(body) == 2:
        return complex(float(body[0]), float(body[1]))
    if not isinstance(body, list):
        raise WireError(f"malformed tag {tag!r}")
    items = [_dec(v, depth + 1) for v in body]
    if tag == "t":
        return tuple(items)
    if tag == "s":
        return set(items)
    if tag == "f":
        return frozenset(items)
    if tag == "d":
        if not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
            raise WireError("malformed dict tag")
        return {k: v for k, v in items}
    raise WireError(f"unknown tag {tag!r}")


def decode(line):
    """Inverse of :func:`encode`; raises :class:`WireError` on malformed or unhashable data."""
    try:
        return _dec(_json.loads(line), 0)
    except (ValueError, TypeError, RecursionError) as exc:
        if isinstance(exc, WireError):
            raise
        raise WireError(f"malformed message: {type(exc).__name__}: {str(exc)[:100]}") from None
