"""Checker-side harness: runs the (trusted) tests in their own sandboxed process.

The tests call ``candidate(...)``, a proxy that sends the arguments to the candidate process and
returns the *data* it sends back (see :mod:`wire`). The candidate's code never runs here, so it
cannot patch the tests, print a fake verdict, or exit early to look like a pass: the verdict is
written by this process to a pipe that only the parent reads. Result lines on fd ``res``::

    {"total": n}                       number of test statements in check()
    {"candidate": "loaded"}            the program loaded and defines the entry point
    {"crashed": "..."}                 the candidate process died or failed to load
    {"test": i, "ok": bool, "error": "..."}
    {"tests_error": "..."}             the tests themselves are broken (not the candidate's fault)
    {"done": true}

A *test statement* is a top-level statement of ``check``'s body that contains an ``assert``;
other statements are setup. Each test statement runs on its own (a failure does not stop the
next), so ``fraction`` = passed test statements / all of them.
Standard library only; no ``from __future__`` (the file is concatenated after ``wire.py``).
"""

import ast
import builtins
import json
import os
import sys

try:  # imported as a module (tests, validation in the parent)
    from rsim_env.code.limits import confine
    from rsim_env.code.wire import WireError, decode, encode
except ImportError:  # pragma: no cover - sandbox path: limits.py + wire.py are prepended
    pass

REPORT = "__rsim_report__"


def _has_assert(node):
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def instrument(tests_source):
    """Parse the tests and wrap each test statement of ``check`` so it reports on its own.

    Returns ``(module AST, number of test statements)``; raises ``ValueError`` if there is no
    top-level ``def check(candidate)`` with at least one ``assert``.
    """
    tree = ast.parse(tests_source, "<tests>")
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not checks:
        raise ValueError("tests define no top-level `def check(candidate):`; write the asserts inside one")
    check = checks[-1]
    body, n = [], 0
    for stmt in check.body:
        if not _has_assert(stmt):
            body.append(stmt)
            continue
        call = lambda arg: ast.Expr(ast.Call(ast.Name(REPORT, ast.Load()), [ast.Constant(n), arg], []))  # noqa: B023
        body.append(ast.Try(
            body=[stmt],
            handlers=[ast.ExceptHandler(ast.Name("BaseException", ast.Load()), "__rsim_exc__",
                                        [call(ast.Name("__rsim_exc__", ast.Load()))])],
            orelse=[call(ast.Constant(None))], finalbody=[]))
        n += 1
    if n == 0:
        raise ValueError("check() contains no assert; each test must assert something")
    check.body = body
    return ast.fix_missing_locations(tree), n


class CandidateDied(BaseException):
    """The candidate process is gone; every further call fails (BaseException: tests can't swallow it)."""


class Channel:
    """Call proxy over the two pipes to the candidate process."""

    def __init__(self, req_fd, rep_fd, max_reply_bytes):
        self.req_fd, self.rep_fd, self.cap = req_fd, rep_fd, max_reply_bytes
        self.buf = b""
        self.dead = None

    def read_line(self):
        while b"\n" not in self.buf:
            if len(self.buf) > self.cap:
                raise self.die(f"candidate sent a reply over {self.cap} bytes")
            chunk = os.read(self.rep_fd, 1 << 16)
            if not chunk:
                raise self.die("candidate process exited")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line

    def die(self, why):
        self.dead = self.dead or why
        return CandidateDied(self.dead)

    def __call__(self, *args, **kwargs):
        if self.dead:
            raise CandidateDied(self.dead)
        data = (encode([args, kwargs]) + "\n").encode()
        try:
            while data:
                data = data[os.write(self.req_fd, data):]
        except OSError:
            raise self.die("candidate process exited") from None
        try:
            reply = decode(self.read_line())
        except WireError as exc:
            raise self.die(f"malformed reply: {exc}") from None
        if type(reply) is list and len(reply) == 2 and reply[0] == "ok":
            return reply[1]
        if type(reply) is list and len(reply) == 3 and reply[0] == "err":
            raise _rebuild(reply[1], reply[2])
        raise self.die("malformed reply")


def _rebuild(name, message):
    """The candidate's exception as a builtin ``Exception`` subclass of the same name, if any."""
    cls = getattr(builtins, str(name), None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(str(message))
        except Exception:
            pass
    return RuntimeError(f"{name}: {message}")


class Reporter:
    """Writes result lines to the parent; remembers whether the candidate died."""

    def __init__(self, fd):
        self.fd = fd

    def __call__(self, index, exc=None):
        row = {"test": index, "ok": exc is None}
        if exc is not None:
            row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
        self.send(row)

    def send(self, row):
        data = (json.dumps(row) + "\n").encode()
        while data:
            data = data[os.write(self.fd, data):]


def run(tests_source, entry_point, channel, report):
    """Instrument the tests, wait for the candidate to load, run ``check(candidate)``."""
    tree, total = instrument(tests_source)
    report.send({"total": total})
    try:
        status = decode(channel.read_line())
    except (CandidateDied, WireError) as exc:
        report.send({"crashed": f"before loading: {exc}"})
        return
    if status != ["loaded"]:
        detail = status[1] if type(status) is list and len(status) == 2 else "malformed status"
        report.send({"crashed": str(detail)[:500]})
        return
    report.send({"candidate": "loaded"})
    namespace = {"__name__": "__rsim_tests__", REPORT: report, "candidate": channel, entry_point: channel}
    try:
        exec(compile(tree, "<tests>", "exec"), namespace)  # noqa: S102 - trusted test code, sandboxed anyway
        namespace["check"](channel)
    except CandidateDied:
        pass
    except BaseException as exc:  # a setup statement failed: the remaining tests did not run
        if channel.dead is None:
            report.send({"aborted": f"{type(exc).__name__}: {str(exc)[:300]}"})
    if channel.dead is not None:
        report.send({"crashed": channel.dead})


def main():
    cfg = json.loads(sys.argv[1])
    confine(cfg)
    report = Reporter(cfg["res_fd"])
    with open(cfg["tests_path"], encoding="utf-8") as fh:
        tests_source = fh.read()
    channel = Channel(cfg["req_fd"], cfg["rep_fd"], cfg["max_reply_bytes"])
    try:
        run(tests_source, cfg["entry_point"], channel, report)
    except BaseException as exc:
        report.send({"tests_error": f"{type(exc).__name__}: {str(exc)[:300]}"})
    report.send({"done": True})
    os._exit(0)


if __name__ == "__main__":
    main()
