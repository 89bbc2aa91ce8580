"""llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) as a managed child process.

Starts the server on a GGUF file (the embedded SmolLM2-135M by default), on a free 127.0.0.1 port,
waits until ``GET /v1/models`` lists the model, keeps the server's output in a log file whose path
it reports, and stops it on exit (SIGTERM, then SIGKILL if it does not stop in time). Tests, the
paired benchmark and docs/serving.md use it; anyone can run it by hand::

    python -m agents.llamacpp.server --port 8080            # prints the URL and the rsim command, Ctrl-C stops it
    rsim eval --reasoner "openai:default@http://127.0.0.1:8080/v1" --modes fixed:3,8 --limit 20

    with LlamaServer(LlamaServerConfig()) as server:     # from Python
        print(server.url)                                 # http://127.0.0.1:PORT/v1

What rSIM's default protocol needs from the server (``agents/served/decoder.py``): ``POST /v1/completions``
with a text prompt, ``max_tokens``, ``temperature`` 0 (greedy), ``logit_bias`` and ``seed``, answering
``choices[0].text``, ``finish_reason`` ("stop" at end-of-turn, "length" at the cap) and ``usage`` (whose
``prompt_tokens`` the client compares with its own count on each conversation's first prompt: the server must not
add a BOS token the chat template lacks). llama-cpp-python's server answers all of that with its defaults; it does not send the
sampled token ids (vLLM's ``return_tokens_as_token_ids``) and answers a token-id prompt with HTTP 500, so
``#token_ids=1`` is not available through it.
The options that matter are ``--last_n_tokens_size 0`` (its default applies a repeat penalty of 1.1 to every
request, greedy ones included, which the client never asks for and which changed 61 % of greedy episodes),
``n_ctx`` (the whole conversation must fit: prompt, every step and lead-in), ``n_threads`` (llama.cpp's default
is half the cores) and ``seed``; ``logits_all`` is not needed (no prompt log-probs are asked for). The server
answers one request at a time; concurrent client requests queue.

The server needs ``pip install 'rsim[server]'`` (llama-cpp-python's server extra, without rebuilding llama.cpp).
Standard library only here: the server runs in its own process.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LlamaServerConfig", "LlamaServer", "ServerStartError", "free_port", "main"]


class ServerStartError(RuntimeError):
    """The server exited, or did not answer ``/v1/models`` in time; the message names the log file."""


@dataclass(frozen=True)
class LlamaServerConfig:
    """How to run ``python -m llama_cpp.server``."""

    model: str = "default"
    """GGUF file to serve; "default" = the embedded SmolLM2-135M-Instruct (``python -m agents.embedded``)."""
    alias: str = "default"
    """Model name the server answers to (``/v1/models``); the client's ``openai:ALIAS@URL``. "default" also names
    the embedded model's tokenizer for the client's chat template."""
    host: str = "127.0.0.1"
    """Interface to listen on (127.0.0.1: this machine only)."""
    port: int = 0
    """TCP port; 0 = a free one, chosen at start and kept across restarts."""
    n_ctx: int = 2048
    """Context length in tokens: the longest conversation (prompt, every step and lead-in) must fit."""
    n_threads: int = 0
    """Decoding threads; 0 = ``OMP_NUM_THREADS`` if set, else all cores (llama.cpp's own default is half)."""
    seed: int = 0
    """The model's sampling seed (greedy decoding does not use it)."""
    repeat_window: int = 0
    """``--last_n_tokens_size``: tokens the server's repeat penalty looks back over. llama_cpp.server applies
    ``repeat_penalty`` 1.1 over the last 64 tokens to every request that does not send one, greedy included, which
    rSIM's reasoners never do (it steers "8 - 4 = " away from the 4 the question holds); 0 turns it off."""
    startup_timeout_s: float = 120.0
    """Longest wait for ``/v1/models`` to answer after the start."""
    stop_timeout_s: float = 10.0
    """Wait after SIGTERM before SIGKILL."""
    log_path: str = ""
    """Where the server's stdout and stderr go ("" = a new file in the temp dir); appended across restarts."""
    python: str = ""
    """Python that runs the server ("" = this one)."""
    extra_args: tuple[str, ...] = field(default=())
    """More ``llama_cpp.server`` options, e.g. ``("--n_batch", "256")``."""

    def __post_init__(self) -> None:
        if not 0 <= self.port < 65536:
            raise ValueError(f"LlamaServerConfig.port={self.port}: use 0 (a free port) or a port in 1..65535.")
        for name, least, note in (("n_ctx", 1, "tokens"), ("n_threads", 0, "0 = automatic"),
                                  ("repeat_window", 0, "0 = no repeat penalty")):
            if getattr(self, name) < least:
                raise ValueError(f"LlamaServerConfig.{name}={getattr(self, name)}: use an integer >= {least} ({note}).")
        for name in ("startup_timeout_s", "stop_timeout_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"LlamaServerConfig.{name}={getattr(self, name)}: use a number of seconds > 0.")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now (the OS's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _threads(n: int) -> int:
    if n:
        return n
    env = os.environ.get("OMP_NUM_THREADS", "")
    return int(env) if env.isdigit() and int(env) > 0 else (os.cpu_count() or 1)


def _model_path(model: str) -> str:
    if model == "default":
        from ..embedded import embedded_gguf_path  # standard library only: no torch for a server

        return str(embedded_gguf_path())
    path = Path(model).expanduser()
    if path.suffix != ".gguf" or not path.is_file():
        raise ValueError(f"LlamaServerConfig.model={model!r} is not an existing .gguf file; pass a GGUF path or "
                         "'default' (the embedded model, python -m agents.embedded).")
    return str(path)


class LlamaServer:
    """One ``llama_cpp.server`` process; a context manager (started on enter, stopped on exit).

    Attributes:
        url: The API root, ``http://HOST:PORT/v1`` (set once started).
        log_path: The server's log file.
        starts: How many times it was started (restarts included).
    """

    def __init__(self, config: LlamaServerConfig | None = None) -> None:
        self.cfg = config or LlamaServerConfig()
        self.port = self.cfg.port
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        if self.cfg.log_path:
            self.log_path = Path(self.cfg.log_path)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
        else:
            fd, name = tempfile.mkstemp(prefix="llama_server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)

    @property
    def url(self) -> str:
        return f"http://{self.cfg.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The server's command line."""
        c = self.cfg
        return [c.python or sys.executable, "-m", "llama_cpp.server", "--model", _model_path(c.model),
                "--model_alias", c.alias, "--host", c.host, "--port", str(self.port), "--n_ctx", str(c.n_ctx),
                "--n_threads", str(_threads(c.n_threads)), "--seed", str(c.seed),
                "--last_n_tokens_size", str(c.repeat_window), *c.extra_args]

    def start(self) -> "LlamaServer":
        """Start the server and wait until it lists the model; a port chosen here is kept for restarts.

        Raises:
            ServerStartError: It exited or did not answer in ``startup_timeout_s`` (it is killed first).
        """
        if self.running():
            return self
        chosen = self.port == 0
        for attempt in range(3):  # a port chosen here may be taken by someone else before the server binds it
            if chosen and (attempt or not self.port):
                self.port = free_port(self.cfg.host)
            try:
                self._spawn_and_wait()
                return self
            except ServerStartError:
                if not chosen or attempt == 2 or "address already in use" not in self.log_tail().lower():
                    raise
        raise AssertionError("unreachable")

    def _spawn_and_wait(self) -> None:
        cmd = self.command()
        with open(self.log_path, "ab") as log:
            log.write(f"\n$ {' '.join(cmd)}\n".encode())
            log.flush()
            # its own session: stop() signals exactly this server's process group, nothing else
            # unbuffered: uvicorn's access log (one line per request, see served()) goes to stdout, which a file
            # would otherwise hold back in a block buffer until the server exits
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.starts += 1
        if self.starts == 1:  # its own session does not get the terminal's Ctrl-C: stop it when this process exits
            atexit.register(self.kill)
        deadline = time.monotonic() + self.cfg.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise ServerStartError(f"llama_cpp.server exited with code {code} before it answered; last lines of "
                                       f"{self.log_path}:\n{self.log_tail()}")
            if self.models() is not None:
                return
            time.sleep(0.2)
        self.kill()
        raise ServerStartError(f"llama_cpp.server did not answer {self.url}/models in {self.cfg.startup_timeout_s:g} s "
                               f"(killed); raise startup_timeout_s on a slow machine; log: {self.log_path}")

    def models(self) -> list[str] | None:
        """The model ids ``GET /v1/models`` lists, or None while the server does not answer (or lists another)."""
        try:
            with urllib.request.urlopen(self.url + "/models", timeout=2) as resp:
                ids = [m.get("id") for m in json.loads(resp.read()).get("data", [])]
        except (urllib.error.URLError, OSError, ValueError, AttributeError):
            return None
        return ids if self.cfg.alias in ids else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after ``stop_timeout_s``; a no-op when it is not running."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(self.cfg.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
                return
        self.proc = None

    def kill(self) -> None:
        """SIGKILL at once (a crash, as far as the client can tell)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def restart(self) -> "LlamaServer":
        """Stop (if running) and start again on the same port."""
        self.stop()
        return self.start()

    def served(self, path: str = "/v1/completions") -> int:
        """``POST path`` requests the server answered with 200 OK, counted in its access log (every start, as the
        log is appended): the server's own count, independent of the client's ``usage``."""
        request = f'"POST {path} HTTP/'.encode()
        try:
            with open(self.log_path, "rb") as log:
                return sum(request in line and b'" 200 ' in line for line in log)
        except OSError:
            return 0

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)  # the group this server leads (start_new_session)
        except ProcessLookupError:
            pass

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten server must not outlive its owner
        try:
            self.kill()
        except Exception:
            pass


def main(cfg: LlamaServerConfig) -> dict[str, Any]:
    """Start the server, print its URL and the ``rsim eval`` command, serve until Ctrl-C (or SIGTERM)."""
    server = LlamaServer(cfg)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    with server:
        print(f"serving {_model_path(cfg.model)} as {cfg.alias!r} at {server.url} (log: {server.log_path})\n"
              f'  rsim eval --reasoner "openai:{cfg.alias}@{server.url}" --modes fixed:3,8 --limit 20', flush=True)
        try:
            while server.running():
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
    return {"url": server.url, "log_path": str(server.log_path)}


def parse_args(argv: list[str]) -> LlamaServerConfig:
    """``--field value`` for each field of :class:`LlamaServerConfig` (agents sit below algos' CLI helpers)."""
    import argparse
    import dataclasses

    ap = argparse.ArgumentParser(prog="python -m agents.llamacpp.server", description=__doc__.split("\n")[0])
    for f in dataclasses.fields(LlamaServerConfig):
        kind = {"int": int, "float": float}.get(str(f.type), str)
        ap.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=kind, default=f.default)
    return LlamaServerConfig(**vars(ap.parse_args(argv)))


if __name__ == "__main__":
    import sys

    main(parse_args(sys.argv[1:]))
