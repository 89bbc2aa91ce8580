"""tools.cpu_load (CI's competing load for ``make test-load``): the busy processes run beside the command and are
gone after it; the exit code is the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools import cpu_load

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task").is_dir(), reason="reads Linux /proc")
def test_busy_processes_run_beside_the_command_and_stop_after_it(tmp_path):
    out = tmp_path / "seen.json"
    # The command records its siblings (the children of tools.cpu_load other than itself) and exits 3.
    probe = ("import json, os, pathlib; p = os.getppid(); "
             "kids = [int(k) for k in open(f'/proc/{p}/task/{p}/children').read().split() if int(k) != os.getpid()]; "
             f"pathlib.Path({str(out)!r}).write_text(json.dumps(kids)); raise SystemExit(3)")
    done = subprocess.run([sys.executable, "-m", "tools.cpu_load", "--procs", "2", "--", sys.executable, "-c", probe],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    spinners = json.loads(out.read_text())
    assert len(spinners) == 2  # two busy processes beside the command
    assert not [pid for pid in spinners if _is_spinner(pid)]  # joined: none left running


def _is_spinner(pid: int) -> bool:
    """A live process of tools.cpu_load under this pid (a forked spinner keeps its parent's command line; a pid
    reused since by another program does not)."""
    try:
        return b"tools.cpu_load" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_refuses_a_missing_command():
    with pytest.raises(SystemExit):
        cpu_load.main(["--procs", "1"])


@pytest.mark.skipif(not Path(f"/proc/{os.getpid()}/task").is_dir(), reason="reads Linux /proc")
def test_a_command_beside_is_the_load_until_it_ends_then_the_busy_processes(tmp_path):
    """``--beside``: while that command runs it is the only other child (no busy process); once it ends (here it fails,
    exit 4) the busy processes start, its output is printed whole, and its failure is the exit code."""
    out, go = tmp_path / "seen.json", tmp_path / "go"
    probe = textwrap.dedent(f"""
        import json, os, pathlib, time
        p = os.getppid()
        kids = lambda: [int(k) for k in open(f'/proc/{{p}}/task/{{p}}/children').read().split() if int(k) != os.getpid()]
        first = kids()
        pathlib.Path({str(go)!r}).write_text('')  # lets the load command end
        end = time.monotonic() + 120
        while time.monotonic() < end and len(kids()) != 2:
            time.sleep(0.05)
        pathlib.Path({str(out)!r}).write_text(json.dumps([first, kids()]))
    """)
    beside = f"while [ ! -e {go} ]; do sleep 0.05; done; echo printed-by-the-load; exit 4"
    done = subprocess.run([sys.executable, "-m", "tools.cpu_load", "--procs", "2", "--beside", beside, "--",
                           sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4, done.stderr
    assert "printed-by-the-load" in done.stdout and "the load command failed (exit status 4)" in done.stderr
    first, then = json.loads(out.read_text())
    assert len(first) == 1 and not _is_spinner(first[0])  # the load command's shell, no busy process yet
    assert len(then) == 2  # its shell gone, two busy processes
    assert not [pid for pid in then if _is_spinner(pid)]  # joined when the command ended


def test_the_commands_own_failure_comes_first(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tools.cpu_load", "--procs", "0", "--beside", "exit 0", "--",
                           sys.executable, "-c", "raise SystemExit(3)"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 3, done.stderr
    assert "the load command ended (exit status 0)" in done.stdout
