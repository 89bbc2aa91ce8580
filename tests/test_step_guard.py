"""Non-finite updates are dropped, counted and logged; N in a row stop the run (unit level).

The trainer-level NaN-step tests (tiny preset) are in test_trainer_faults.py.
"""

import logging
import math

import pytest
import torch

from algos.step_guard import StepGuard, TrainingDivergedError


@pytest.mark.parametrize("loss,gn,ok", [(0.5, 1.0, True), (math.nan, 1.0, False), (0.5, math.inf, False),
                                        (torch.tensor(-math.inf), torch.tensor(2.0), False)],
                         ids=["finite", "nan-loss", "inf-grad", "tensor-inf-loss"])
def test_finite_verdict(loss, gn, ok):
    g = StepGuard(3)
    assert g.finite("reasoner", loss, gn) is ok
    assert g.end_step(1) == (0 if ok else 1)


def test_consecutive_bad_steps_stop_with_clear_message(caplog):
    g = StepGuard(2)
    with caplog.at_level(logging.WARNING, logger="rsim.train"):
        g.finite("planner", math.nan, 1.0)
        g.end_step(1)
        g.finite("planner", 0.1, 1.0)
        g.end_step(2)  # a good step resets the run of bad ones
        g.finite("planner", math.nan, math.nan)
        g.end_step(3)
        g.finite("reasoner", 0.2, math.inf)
        with pytest.raises(TrainingDivergedError, match=r"stopped at step 4: 2 consecutive steps .*reasoner loss=0.2 "
                                                        r"grad_norm=inf.* last good checkpoint is ck/step_2"):
            g.end_step(4, "ck/step_2")
    assert g.state() == {"bad_steps_in_row": 2, "bad_steps_total": 3}
    assert sum("skipped 1 update(s)" in r.getMessage() for r in caplog.records) == 3


def test_state_roundtrip_and_validation():
    g = StepGuard(5)
    g.load({"bad_steps_in_row": 1, "bad_steps_total": 4})
    assert g.state() == {"bad_steps_in_row": 1, "bad_steps_total": 4}
    g.load({})
    assert g.state() == {"bad_steps_in_row": 0, "bad_steps_total": 0}
    with pytest.raises(ValueError, match="max_bad_steps=0"):
        StepGuard(0)
