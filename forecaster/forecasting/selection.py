"""Pick one model per pool from its backtest scores.

Rule: among models whose P95 coverage is within ``tolerance`` of the target, the lowest pinball
loss wins. A model that under-covers is never picked for its low loss (it would leave jobs
waiting); if no model is within tolerance, the one closest to the target from above wins, else
the fallback baseline. The reason says which case applied.

At each retrain the new pick is a challenger to the current model (``champion_or_challenger``):
both are scored on the same fresh backtest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from forecaster.errors import ModelError
from forecaster.forecasting.artifacts import ArtifactStore
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


def champion_or_challenger(
    store: ArtifactStore, pool: str, *, challenger: str, scores: list[ModelScore]
) -> tuple[bool, str]:
    """Should the newly trained model become current? (champion/challenger on this backtest)

    Both are scored in the same backtest on the same fresh data: the champion's model family
    was among the candidates. The challenger is promoted if it is the same family (a fresher
    fit), if there is no usable champion, or if its pinball loss is lower; otherwise it is kept
    for inspection and rollback while the champion stays current.
    """
    try:
        champion = store.load_current(pool)
    except ModelError as exc:
        return True, f"promoted: the current model is unusable ({exc})"
    if champion is None:
        return True, "promoted: first model of the pool"
    if champion.model_name == challenger:
        return True, f"promoted: a fresher fit of the champion's family {challenger}"
    by_name = {s.model: s for s in scores}
    old, new = by_name.get(champion.model_name), by_name.get(challenger)
    if old is None or new is None or not np.isfinite(old.pinball):
        return True, f"promoted: champion {champion.model_name} was not scored in this backtest"
    if new.pinball < old.pinball:
        return True, (
            f"promoted over champion {champion.model_name}"
            f" (pinball {new.pinball:.3f} < {old.pinball:.3f})"
        )
    return False, (
        f"champion {champion.model_name} ({champion.version}) stays current"
        f" (pinball {old.pinball:.3f} <= challenger {new.pinball:.3f})"
    )
