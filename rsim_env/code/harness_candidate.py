"""Candidate-side harness: runs INSIDE the sandbox with ``python -I -S -c <wire.py + this file>``.

It confines itself (``limits.confine``: network namespace, uid, resource limits), loads the untrusted
program, then serves function calls:
one request line (``[args, kwargs]`` in :mod:`wire` form) on fd ``req``, one reply line
(``["ok", value]`` or ``["err", exception name, message]``) on fd ``rep``. The program runs in
this process and may tamper with anything here -- that is fine, because this process only ever
returns *data*; the verdict is reached in the separate checker process (see ``harness_checker``).
Standard library only; no ``from __future__`` (the file is concatenated after ``wire.py``).
"""

import json
import os
import sys

try:  # imported as a module (tests); inside the sandbox wire.py's source is prepended instead
    from rsim_env.code.limits import confine
    from rsim_env.code.wire import WireError, decode, encode
except ImportError:  # pragma: no cover - sandbox path: limits.py + wire.py are prepended
    pass


def _send(fd, obj_line):
    data = (obj_line + "\n").encode("utf-8", "surrogatepass")
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _error_line(exc):
    name = type(exc).__name__
    return encode(["err", name if isinstance(name, str) else "Exception", str(exc)[:500]])


def load(program, entry_point):
    """Run the program's top level; return the entry-point callable or raise."""
    namespace = {"__name__": "__candidate__", "__builtins__": __builtins__}
    code = compile(program, "<candidate>", "exec")
    exec(code, namespace)  # noqa: S102 - this is the sandboxed process; running the program is its job
    fn = namespace.get(entry_point)
    if not callable(fn):
        raise NameError(f"the program defines no function named {entry_point!r}")
    return fn


def serve(fn, req_fd, rep_fd):
    """Answer call requests until the checker closes the request pipe."""
    reader = os.fdopen(req_fd, "rb", buffering=1 << 16)
    for line in reader:
        try:
            args, kwargs = decode_request(line)
            value = fn(*args, **kwargs)
            try:
                reply = encode(["ok", value])
            except (WireError, RecursionError) as exc:
                reply = encode(["err", "TypeError", f"return value: {exc}"])
        except BaseException as exc:  # the candidate's own failure is data for the checker
            reply = _error_line(exc)
        _send(rep_fd, reply)


def decode_request(line):
    """``[args tuple, kwargs dict]`` from one request line (sent by the trusted checker)."""
    args, kwargs = decode(line)
    return tuple(args), kwargs


def main():
    cfg = json.loads(sys.argv[1])
    program = sys.argv[2]
    confine(cfg)
    sys.setrecursionlimit(cfg.get("recursion_limit", 3000))
    req_fd, rep_fd = cfg["req_fd"], cfg["rep_fd"]
    try:
        fn = load(program, cfg["entry_point"])
    except BaseException as exc:  # SyntaxError, NameError, SystemExit, MemoryError, ...
        _send(rep_fd, encode(["crashed", f"{type(exc).__name__}: {str(exc)[:500]}"]))
        os._exit(1)
    _send(rep_fd, encode(["loaded"]))
    serve(fn, req_fd, rep_fd)
    os._exit(0)


if __name__ == "__main__":
    main()
