"""Soak benchmarks: run long and check that nothing piles up. Not unit tests.

Three sections, each its own row group in the table and key in the JSON:

* ``train``: ``rsim train --preset tiny`` for ``train_steps`` steps (checkpoints every 10 steps as the
  preset does), sampling the process's RSS, open file descriptors, threads and child processes every
  ``sample_every`` steps. Flat series = no leak.
* ``sandbox``: ``executions`` runs of the code sandbox (:class:`rsim_env.code.Executor`) on HumanEval's
  canonical solutions with a hostile program every ``hostile_every`` jobs (fork bomb, infinite loop,
  memory hog, file writes outside the sandbox, sockets to a listener on the host's 127.0.0.1, a
  daemon that escapes its session). Every ``check_every`` executions, with nothing running: leftover
  processes of the sandbox uids, uids left marked dirty, temp dirs/files left behind, our own child
  processes, files the hostile programs tried to leave in ``/tmp``; and connections our listener
  accepted. Latency p50/p99 of benign executions per quarter of the run (stable = no slowdown).
* ``served``: ``requests`` chat requests through :class:`agents.served.reasoner.OpenAIReasoner` (episodes
  of two requests: one planned step, then the boxed answer) against a local server (``tests/chat_server.py``
  in its own process on 127.0.0.1) that is SIGKILLed ``restarts`` times mid-run and started again
  ``down_s`` later. The client waits and retries; ``lost`` counts episodes that did not end with the
  right answer.

    OMP_NUM_THREADS=1 nice -n 5 python -m benchmarks.runtime.soak --out docs/soak_results/soak.json
    python -m benchmarks.runtime.soak --table docs/soak_results/soak.json    # the table of a saved run
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import psutil

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("train", "sandbox", "served")


@dataclass(frozen=True)
class SoakConfig:
    """Settings of ``python -m benchmarks.runtime.soak`` (scale down with --train-steps/--executions/--requests)."""

    out: str | None = None
    """Write the JSON result here (None: only print the table)."""
    table: str | None = None
    """Print the table of this saved JSON result and exit (runs nothing)."""
    sections: str = "train,sandbox,served"
    """Comma-separated sections to run."""
    train_steps: int = 500
    """Steps of the tiny preset."""
    sample_every: int = 50
    """Sample RSS / fds / threads / children every this many steps."""
    executions: int = 2000
    """Code-sandbox executions (benign and hostile together)."""
    hostile_every: int = 4
    """One hostile program after every this many benign ones."""
    exec_timeout_s: float = 2.0
    """Time limit of one sandboxed execution."""
    parallel: int = 2
    """Sandboxed executions at a time."""
    check_every: int = 100
    """Check for leftovers after every this many executions (with none running)."""
    isolation: str = "bwrap"
    """Sandbox isolation: "bwrap" (needs bubblewrap) or "rlimits" (the explicit opt-in without it)."""
    uid_base: int = 62000
    """First sandbox uid of the soak's own pool (apart from the default pool other runs use)."""
    requests: int = 1000
    """Served-reasoner requests (two per episode)."""
    restarts: int = 2
    """Times the server is killed and restarted, evenly spread over the run."""
    down_s: float = 2.0
    """Seconds the server stays down before each restart."""
    batch_episodes: int = 10
    """Episodes per rollout (requests of one rollout run concurrently)."""
    max_retries: int = 8
    """The client's retries of one request (OpenAIConfig.max_retries)."""
    backoff_s: float = 0.25
    """The client's first retry delay, doubling (OpenAIConfig.backoff_s)."""

    def __post_init__(self) -> None:
        bad = [s for s in self.section_list if s not in SECTIONS]
        if bad:
            raise ValueError(f"SoakConfig.sections={self.sections!r}: unknown {bad}; use a subset of {SECTIONS}.")
        for name in ("train_steps", "sample_every", "executions", "hostile_every", "parallel", "check_every",
                     "requests", "batch_episodes"):
            if getattr(self, name) < 1:
                raise ValueError(f"SoakConfig.{name}={getattr(self, name)!r}: use an int >= 1.")
        if self.isolation not in ("bwrap", "rlimits"):
            raise ValueError(f"SoakConfig.isolation={self.isolation!r}: use 'bwrap' or 'rlimits' (the explicit "
                             "opt-in to run hostile programs without bubblewrap).")

    @property
    def section_list(self) -> list[str]:
        return [s.strip() for s in self.sections.split(",") if s.strip()]


# ---------------------------------------------------------------------------------------------- train
def _probe() -> dict[str, float]:
    p = psutil.Process()
    return {"rss_mib": p.memory_info().rss / 2**20, "fds": p.num_fds(), "threads": p.num_threads(),
            "children": len(p.children(recursive=True))}


def soak_train(cfg: SoakConfig, work: Path) -> dict[str, Any]:
    """``rsim train --preset tiny`` in this process, its resources sampled every ``sample_every`` steps."""
    from algos.cli import train
    from algos.config import resolve
    from algos.trainer import Trainer

    run = resolve("tiny", {"train.steps": cfg.train_steps, "train.output_dir": str(work / "train"),
                           "train.progress": False})
    samples: list[dict[str, float]] = []
    original = Trainer.train_step

    def sampled(self: Trainer) -> dict[str, float]:
        metrics = original(self)
        if self.step % cfg.sample_every == 0:
            samples.append({"step": self.step, **_probe()})
        return metrics

    t0 = time.perf_counter()
    Trainer.train_step = sampled  # type: ignore[method-assign]
    try:
        out = train(run)
    finally:
        Trainer.train_step = original  # type: ignore[method-assign]
    series = {k: [s[k] for s in samples] for k in ("step", "rss_mib", "fds", "threads", "children")}
    return {"steps": out["steps"], "seconds": time.perf_counter() - t0, **series,
            "rss_growth_mib": series["rss_mib"][-1] - series["rss_mib"][0] if samples else 0.0,
            "checkpoints_kept": len(list((work / "train" / "checkpoints").glob("step_*")))}


# -------------------------------------------------------------------------------------------- sandbox
ESCAPE = "/tmp/rsim-soak-escape"
HOSTILE = {
    "fork-bomb": "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass\n",
    "infinite-loop": "def {f}(*a, **k):\n    while True: pass\n",
    "memory-hog": "xs = []\nwhile True: xs.append(bytearray(10**7))\n",
    "file-writes": ("import os\nfor p in ('" + ESCAPE + "-{i}', os.path.expanduser('~/escape'), 'big.bin'):\n"
                    "    try:\n        with open(p, 'wb') as fh: fh.write(os.urandom(1 << 16) * 512)\n"
                    "    except OSError: pass\n"),
    "sockets": ("import socket\nfor port in ({port}, 22, 80):\n    try:\n"
                "        socket.create_connection(('127.0.0.1', port), timeout=0.5).sendall(b'escaped')\n"
                "    except OSError: pass\ns = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen()\n"),
    "daemon": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
               "        time.sleep(600)\n    os._exit(0)\n"),
}
"""Hostile programs (``{f}`` entry point, ``{i}`` job index, ``{port}`` our listener on 127.0.0.1)."""


class _Listener:
    """A TCP listener on 127.0.0.1 that counts the connections sandboxed programs manage to make."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port, self.accepted = self.sock.getsockname()[1], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def _jobs(cfg: SoakConfig, port: int) -> list[dict[str, Any]]:
    from rsim_env.sources.data import load_problems

    problems, names, jobs = load_problems("humaneval", 164), list(HOSTILE), []
    while len(jobs) < cfg.executions:
        p = problems[len(jobs) % len(problems)]
        if (len(jobs) + 1) % (cfg.hostile_every + 1) == 0:
            kind = names[(len(jobs) // (cfg.hostile_every + 1)) % len(names)]
            program = HOSTILE[kind].format(f=p.entry_point, i=len(jobs), port=port)
        else:
            kind, program = "benign", p.answer
        jobs.append({"kind": kind, "program": program, "tests": p.tests, "entry_point": p.entry_point})
    return jobs


def _leftovers(cfg: SoakConfig, tmp_dir: Path, base_children: int = 0) -> dict[str, int]:
    from rsim_env.code import isolation

    uids = range(cfg.uid_base, cfg.uid_base + 2 * cfg.parallel + 2)
    dirty = sum(1 for u in uids if (f := isolation._LOCK_DIR / f"{u}.lock").is_file() and f.read_bytes() == b"dirty")
    owned = 0
    for d in {tempfile.gettempdir(), *isolation.WORLD_WRITABLE}:
        for e in os.scandir(d) if os.path.isdir(d) else ():
            try:
                owned += e.stat(follow_symlinks=False).st_uid in uids
            except OSError:
                pass
    return {"processes": len(isolation.pids_of_uids(uids)) if isolation.is_root() else 0, "dirty_uids": dirty,
            "temp_entries": len(list(tmp_dir.iterdir())), "sandbox_uid_files": owned,
            "escape_files": len([p for p in Path("/tmp").glob(Path(ESCAPE).name + "*")]),
            # children beyond those this process had before the soak (e.g. answer-checker workers)
            "children": max(0, len(psutil.Process().children(recursive=True)) - base_children)}


def _quantiles(xs: list[float]) -> dict[str, float]:
    q = sorted(xs)
    return {"n": len(q), "p50_s": statistics.median(q), "p99_s": q[min(len(q) - 1, int(0.99 * len(q)))],
            "max_s": q[-1]} if q else {"n": 0}


def soak_sandbox(cfg: SoakConfig, work: Path) -> dict[str, Any]:
    """``executions`` sandboxed runs with hostile programs mixed in; leftovers checked every ``check_every``."""
    from rsim_env.code import Executor, SandboxConfig

    tmp_dir = work / "sandbox-tmp"
    tmp_dir.mkdir(mode=0o711)
    os.chmod(tmp_dir, 0o711)  # the sandbox uids must traverse it
    ex = Executor(SandboxConfig(isolation=cfg.isolation, max_parallel=cfg.parallel, timeout_s=cfg.exec_timeout_s,
                                uid_base=cfg.uid_base, uid_count=2 * cfg.parallel + 2, tmp_dir=str(tmp_dir)))
    listener = _Listener()
    jobs = _jobs(cfg, listener.port)

    def one(job: dict[str, Any]) -> tuple[str, bool, str, float]:
        t = time.perf_counter()
        r = ex.execute(job["program"], job["tests"], job["entry_point"])
        return job["kind"], r.passed, r.reason, time.perf_counter() - t

    done: list[tuple[str, bool, str, float]] = []
    checks: list[dict[str, int]] = []
    base_children = len(psutil.Process().children(recursive=True))
    t0 = time.perf_counter()
    try:
        with ThreadPoolExecutor(cfg.parallel) as pool:
            for start in range(0, len(jobs), cfg.check_every):
                done += pool.map(one, jobs[start:start + cfg.check_every])
                checks.append({"after": len(done), **_leftovers(cfg, tmp_dir, base_children)})
                print(f"soak: sandbox {len(done)}/{len(jobs)} executions, leftovers {checks[-1]}", file=sys.stderr,
                      flush=True)
    finally:
        ex.close()
        listener.close()
    return _sandbox_summary(cfg, ex.mode, done, checks, listener.accepted, time.perf_counter() - t0)


def _sandbox_summary(cfg, mode, done, checks, accepted, wall) -> dict[str, Any]:
    benign = [d for d in done if d[0] == "benign"]
    quarter = max(1, len(done) // 4)
    quarters = [_quantiles([d[3] for d in done[i:i + quarter] if d[0] == "benign"])
                for i in range(0, quarter * 4, quarter)]
    verdicts: dict[str, dict[str, int]] = {}
    for kind, passed, reason, _ in done:
        if kind != "benign":
            key = "passed" if passed else reason
            verdicts.setdefault(kind, {}).setdefault(key, 0)
            verdicts[kind][key] += 1
    worst = {k: max(c[k] for c in checks) for k in checks[0] if k != "after"} if checks else {}
    return {"executions": len(done), "isolation": mode, "wall_s": wall, "benign": len(benign),
            "benign_passed": sum(d[1] for d in benign), "hostile": len(done) - len(benign),
            "hostile_passed": sum(d[1] for d in done if d[0] != "benign"), "hostile_verdicts": verdicts,
            "leftovers": sum(worst.values()), "leftovers_worst": worst, "leftover_checks": checks,
            "host_connections": accepted, **{k: v for k, v in _quantiles([d[3] for d in benign]).items() if k != "n"},
            "quarters": quarters, "hostile_latency": _quantiles([d[3] for d in done if d[0] != "benign"])}


# --------------------------------------------------------------------------------------------- served
class _Server:
    """``tests/chat_server.py`` in a child process on a fixed 127.0.0.1 port, so it can be killed and restarted."""

    CODE = ("import sys, threading\nfrom tests.chat_server import ChatServer\ns = ChatServer(int(sys.argv[1]))\n"
            "print(s.url, flush=True)\nthreading.Event().wait()\n")

    def __init__(self, port: int) -> None:
        self.port, self.proc = port, None
        self.url = f"http://127.0.0.1:{port}/v1"

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))))
        for _ in range(50):  # the port may take a moment to come free after a kill
            self.proc = subprocess.Popen([sys.executable, "-c", self.CODE, str(self.port)], cwd=ROOT, env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if self.proc.stdout.readline().strip() == self.url:
                return
            self.proc.wait()
            time.sleep(0.1)
        raise RuntimeError(f"the chat server did not start on port {self.port}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc.stdout.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _RetryLog(logging.Handler):
    """Keeps the client's retry log lines (they still reach stderr through the root logger's last resort)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _killer(cfg: SoakConfig, server: _Server, reasoner: Any, events: list, stop: threading.Event, t0: float) -> None:
    """Kill the server each time the client's answered requests pass the next of ``restarts`` even marks; restart it.

    Answered = attempts - retries (each retry follows one failed attempt).
    """
    marks = [cfg.requests * (k + 1) // (cfg.restarts + 1) for k in range(cfg.restarts)]
    for mark in marks:
        while (u := reasoner.usage())["requests"] - u["retries"] < mark:
            if stop.wait(0.01):
                return
        server.kill()
        events.append({"t_s": round(time.perf_counter() - t0, 2), "event": f"server SIGKILLed after ~{mark} answered requests"})
        time.sleep(cfg.down_s)
        server.start()
        events.append({"t_s": round(time.perf_counter() - t0, 2), "event": f"server restarted ({cfg.down_s:g} s down)"})


def soak_served(cfg: SoakConfig, work: Path) -> dict[str, Any]:
    """``requests`` served-reasoner requests while the server is killed and restarted ``restarts`` times."""
    from agents.served.reasoner import APIError, OpenAIConfig, OpenAIReasoner
    from agents.scripted.policies import FixedPlanner
    from algos.rollout import rollout
    from rsim_env import EnvGroup
    from rsim_env.problem import Problem

    server = _Server(_free_port())
    server.start()
    reasoner = OpenAIReasoner(OpenAIConfig(base_url=server.url, model="soak", max_retries=cfg.max_retries,
                                           backoff_s=cfg.backoff_s, timeout_s=10.0,
                                           max_concurrency=cfg.batch_episodes, seed=0))
    log, events, stop, t0 = _RetryLog(), [], threading.Event(), time.perf_counter()
    logging.getLogger("agents.served.reasoner").addHandler(log)
    killer = threading.Thread(target=_killer, args=(cfg, server, reasoner, events, stop, t0), daemon=True)
    killer.start()
    episodes = lost = replies = 0
    try:
        for b in range(-(-cfg.requests // (2 * cfg.batch_episodes))):
            n = min(cfg.batch_episodes, (cfg.requests - 2 * episodes + 1) // 2)
            problems = [Problem(id=f"s{b}-{i}", question=f"What is {b} + {i}?", answer=str(b + i)) for i in range(n)]
            episodes += n
            try:
                out = rollout(EnvGroup(problems, group_size=1, max_steps=4, protocol="chat"), reasoner,
                              FixedPlanner([3, 8]), seed=b)
            except APIError as e:  # retries ran out: the whole batch is lost
                lost += n
                events.append({"t_s": round(time.perf_counter() - t0, 2), "event": f"batch {b} lost: {e}"[:300]})
                continue
            lost += sum(not t["info"]["correct"] for t in out.trajectories)
            replies += sum(r.usage["requests"] for r in reasoner.records())
    finally:
        stop.set()
        killer.join()
        logging.getLogger("agents.served.reasoner").removeHandler(log)
        server.kill()
    u = reasoner.usage()
    return {"requests": replies, "attempts": u["requests"], "retries": u["retries"], "episodes": episodes,
            "lost": lost, "restarts": sum("restarted" in e["event"] for e in events), "events": events,
            "retry_log_lines": len(log.lines), "retry_log_sample": log.lines[:3], "wall_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------- report
def table(result: dict[str, Any]) -> str:
    """The soak's table (markdown) from a result dict (``main``'s return value or the saved JSON)."""
    lines = []
    if "train" in result:
        t = result["train"]
        lines += [f"**train** (`tiny` preset, {t['steps']} steps, {t['seconds']:.0f} s)", "",
                  "| step | RSS MiB | fds | threads | children |", "|---:|---:|---:|---:|---:|"]
        lines += [f"| {s} | {r:.1f} | {f} | {th} | {c} |"
                  for s, r, f, th, c in zip(t["step"], t["rss_mib"], t["fds"], t["threads"], t["children"])]
        lines.append("")
    if "sandbox" in result:
        s = result["sandbox"]
        lines += [f"**sandbox** ({s['executions']} executions, isolation {s['isolation']}, {s['wall_s']:.0f} s): "
                  f"benign passed {s['benign_passed']}/{s['benign']}, hostile passed {s['hostile_passed']}/{s['hostile']}, "
                  f"leftovers {s['leftovers']} (worst check: {s['leftovers_worst']}), connections to the host's "
                  f"127.0.0.1 {s['host_connections']}", "",
                  "| benign latency | all | Q1 | Q2 | Q3 | Q4 |", "|---|---:|---:|---:|---:|---:|"]
        for k in ("p50_s", "p99_s"):
            lines.append(f"| {k} | {s[k]:.3f} | " + " | ".join(f"{q.get(k, float('nan')):.3f}" for q in s["quarters"]) + " |")
        lines += ["", "hostile verdicts: " + "; ".join(f"{k}: {v}" for k, v in sorted(s["hostile_verdicts"].items())), ""]
    if "served" in result:
        v = result["served"]
        lines += [f"**served** ({v['wall_s']:.0f} s): {v['requests']} requests answered for {v['episodes']} episodes, "
                  f"lost {v['lost']}, {v['restarts']} server restarts, {v['retries']} retries "
                  f"({v['attempts']} attempts, {v['retry_log_lines']} retry log lines)", ""]
        lines += [f"* {e['t_s']:.1f} s: {e['event']}" for e in v["events"]]
        lines += [f"* client log: {line}" for line in v["retry_log_sample"]]
    return "\n".join(lines)


def main(cfg: SoakConfig) -> dict[str, Any]:
    """Run the chosen sections (or print a saved result's table); print the table, write JSON if ``cfg.out``."""
    if cfg.table:
        result = json.loads(Path(cfg.table).read_text())
        print(table(result))
        return result
    if "sandbox" in cfg.section_list and cfg.isolation == "bwrap" and shutil.which("bwrap") is None:
        raise ValueError("benchmarks.runtime.soak: bubblewrap (bwrap) is not installed, and the sandbox soak runs hostile "
                         "programs; install it (apt-get install bubblewrap) or pass --isolation rlimits to opt in "
                         "to the weaker isolation.")
    result: dict[str, Any] = {"config": asdict(cfg), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                              "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    work = Path(tempfile.mkdtemp(prefix="rsim-soak-"))
    os.chmod(work, 0o711)
    runners = {"train": soak_train, "sandbox": soak_sandbox, "served": soak_served}
    try:
        for name in cfg.section_list:
            print(f"soak: {name} ...", file=sys.stderr, flush=True)
            result[name] = runners[name](cfg, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(result))
    if cfg.out:
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


def parse(argv: Sequence[str]) -> SoakConfig:
    from algos.dataclass_cli import parse_config

    return parse_config(SoakConfig, argv, prog="python -m benchmarks.runtime.soak", description=__doc__.split("\n\n")[0])


if __name__ == "__main__":
    from algos.dataclass_cli import cli_main

    cli_main(main, SoakConfig, "python -m benchmarks.runtime.soak", __doc__)
