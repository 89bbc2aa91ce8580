"""studies/continual.py on a machine without bubblewrap: it refuses before it trains anything (the sandbox
fails closed, tests/test_sandbox_fail_closed.py)."""

import pytest

from rsim_env.code import SandboxUnavailable
from tests.test_sandbox_fail_closed import no_bwrap  # noqa: F401 - this process as on a machine without bubblewrap


def test_continual_benchmark_refuses_before_training(no_bwrap, tmp_path):  # noqa: F811 - the imported fixture
    from studies import continual

    def no_training(*a, **k):
        raise AssertionError("run A was trained before the sandbox check")

    no_bwrap.setattr(continual, "rsim_main", no_training)
    with pytest.raises(SandboxUnavailable, match="RSIM_SANDBOX=rlimits"):
        continual.main(continual.Config(out=str(tmp_path / "c")))
