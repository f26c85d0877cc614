"""Pick one model per pool from its backtest scores.

Rule: among models whose P95 coverage is within ``tolerance`` of the target, the lowest pinball
loss wins. A model that under-covers is never picked for its low loss (it would leave jobs
waiting); if no model is within tolerance, the one closest to the target from above wins, else
the fallback baseline. The reason says which case applied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from forecaster.forecasting.backtest import ModelScore


@dataclass(frozen=True)
class Selection:
    """The chosen model and why."""

    model: str
    reason: str


def select(
    scores: Sequence[ModelScore], *, target: float, tolerance: float, fallback: str
) -> Selection:
    """Apply the selection rule of the module docstring."""
    scored = [s for s in scores if s.points > 0 and math.isfinite(s.pinball)]
    eligible = [s for s in scored if abs(s.coverage - target) <= tolerance]
    if eligible:
        best = min(eligible, key=lambda s: (s.pinball, s.model))
        return Selection(
            best.model,
            f"lowest pinball ({best.pinball:.3f}) among models with coverage within"
            f" {target:.2f}±{tolerance:.2f} (coverage {best.coverage:.3f})",
        )
    over = [s for s in scored if s.coverage > target]
    if over:
        best = min(over, key=lambda s: (s.coverage, s.pinball, s.model))
        return Selection(
            best.model,
            f"no model within {target:.2f}±{tolerance:.2f}; closest over-covering one"
            f" (coverage {best.coverage:.3f})",
        )
    return Selection(fallback, f"no model reached coverage {target:.2f}; using the fallback")
