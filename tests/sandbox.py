"""Explicit sandbox opt-in for tests that run code problems but are not about isolation.

``isolation="auto"`` refuses to run model-written code without a working bubblewrap. A test module
that grades code problems uses :func:`module_opt_in` so that it runs under bubblewrap where it
works and, where it does not, under the weaker mode opted in to by name (``RSIM_SANDBOX=rlimits``)
-- never by a silent fallback. The isolation tests themselves live in test_code_sandbox.py and
test_sandbox_fail_closed.py.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Iterator

import pytest

from rsim_env.code import Executor, SandboxConfig, SandboxUnavailable
from rsim_env.code.isolation import OPT_IN_ENV


@functools.lru_cache(maxsize=1)
def bubblewrap_works() -> bool:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(OPT_IN_ENV, raising=False)
        try:
            Executor(SandboxConfig(max_parallel=1)).close()
        except SandboxUnavailable:
            return False
    return True


@contextlib.contextmanager
def opt_in() -> Iterator[None]:
    """``RSIM_SANDBOX=rlimits`` while inside, only where bubblewrap does not work."""
    with pytest.MonkeyPatch.context() as mp:
        if not bubblewrap_works():
            mp.setenv(OPT_IN_ENV, "rlimits")
        yield


@pytest.fixture(scope="module")
def module_opt_in() -> Iterator[None]:
    with opt_in():
        yield
