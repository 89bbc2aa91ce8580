"""Skip optimizer updates whose loss or gradient norm is not finite, and stop a run that keeps
producing them.

One NaN reward, an overflow in a half-precision forward or a log-prob of ``-inf`` makes the loss
NaN; ``optimizer.step()`` would then write NaN into the weights and Adam's moments, every later
step would be NaN too, and the next checkpoint would hold nothing usable. The trainer asks
:meth:`StepGuard.finite` before each ``optimizer.step()``: a bad update is dropped (gradients
zeroed, weights and optimizer state untouched), counted and logged. :meth:`StepGuard.end_step`
raises :class:`TrainingDivergedError` after ``max_bad_steps`` consecutive steps with a dropped
update, naming the last good checkpoint to resume from.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import torch

log = logging.getLogger("rsim.train")


class TrainingDivergedError(RuntimeError):
    """Too many consecutive optimizer steps had a non-finite loss or gradient norm."""


class StepGuard:
    """Counts dropped (non-finite) updates; see module docstring.

    Args:
        max_bad_steps: consecutive bad optimizer steps tolerated before stopping (>= 1).
        accelerator: for a decision every process shares (None = single process).
    """

    def __init__(self, max_bad_steps: int, accelerator: Any = None) -> None:
        if isinstance(max_bad_steps, bool) or not isinstance(max_bad_steps, int) or max_bad_steps < 1:
            raise ValueError(f"max_bad_steps={max_bad_steps!r} is invalid: use an int >= 1.")
        self.max_bad_steps = max_bad_steps
        self.acc = accelerator
        self.in_row = 0
        """Consecutive optimizer steps (up to now) with at least one dropped update."""
        self.total = 0
        """Optimizer steps with at least one dropped update, over the whole run."""
        self._bad_now: list[str] = []

    def finite(self, role: str, loss: torch.Tensor | float, grad_norm: torch.Tensor | float) -> bool:
        """Whether ``role``'s update may be applied; records it as bad otherwise.

        With several processes the verdict is all-reduced, so every replica skips together and
        the weights stay identical.
        """
        loss_v, gn_v = float(loss), float(grad_norm)
        bad = not (math.isfinite(loss_v) and math.isfinite(gn_v))
        if self.acc is not None and self.acc.num_processes > 1:
            flag = torch.tensor(float(bad), device=self.acc.device)
            bad = bool(self.acc.reduce(flag, "sum").item() > 0)
        if bad:
            self._bad_now.append(f"{role} loss={loss_v:.4g} grad_norm={gn_v:.4g}")
        return not bad

    def end_step(self, step: int, last_checkpoint: Any = None) -> int:
        """Close optimizer step ``step`` (1-based); return how many updates were dropped in it.

        Raises:
            TrainingDivergedError: the ``max_bad_steps``-th consecutive bad step.
        """
        dropped, detail = len(self._bad_now), "; ".join(self._bad_now)
        self._bad_now = []
        if not dropped:
            self.in_row = 0
            return 0
        self.in_row += 1
        self.total += 1
        log.warning("step %d: skipped %d update(s) with a non-finite loss or gradient norm (%s); "
                    "%d bad step(s) in a row, %d in total", step, dropped, detail, self.in_row, self.total)
        if self.in_row >= self.max_bad_steps:
            where = f"the last good checkpoint is {last_checkpoint}" if last_checkpoint else "no checkpoint was written yet"
            raise TrainingDivergedError(
                f"training stopped at step {step}: {self.in_row} consecutive steps had a non-finite loss or gradient "
                f"norm (last: {detail}); the weights were not updated by them and {where}. Lower the learning rate, "
                "check the rewards and data for NaN, or raise train.max_bad_steps, then resume.")
        return dropped

    def state(self) -> dict[str, int]:
        """Counters for ``state.json`` (an exact resume keeps counting where it stopped)."""
        return {"bad_steps_in_row": self.in_row, "bad_steps_total": self.total}

    def load(self, state: dict[str, Any]) -> None:
        """Inverse of :meth:`state` (checkpoints written before this existed count as 0)."""
        self.in_row = int(state.get("bad_steps_in_row", 0))
        self.total = int(state.get("bad_steps_total", 0))
