"""The burst rule, as the daemon runs it live: a floor learned weekly plus a share of what was
just created.

Jobs arrive in batch submissions that land within one lead time, so the GPUs requested by pods
created in the last 15 minutes say more about the next minutes than the level does. The rule:
the peak rise of demand within the window is ``floor + alpha x GPUs created in the last 15
minutes``, where the floor is the median peak rise within the window over the last four weeks
(clipped at 0), relearned at each retrain. It takes the arrivals model's place in the plan
(``reconcile.forecast.with_arrivals``), so it runs under the same caps, ledger, error budget and
expiry as the quantile forecast; the quantile asked is ignored - a rule has one answer. The
replay's ``burst:ALPHA`` (``simulation.policies.Burst``) is the same formula run outside the
daemon, every 15 s, less the spare capacity (the daemon's planner subtracts what is warm).

A pool runs it with ``pools[].policy: burst`` and ``burst_alpha`` - what the frontier's verdict
recommends when the rule beats the quantile forecast there.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.cluster import ARRIVAL_WINDOWS_SECONDS, RecentArrivals
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import peak_rise

RECENT_SECONDS = 900
"""The trailing window whose created GPUs the rule continues (an ``ARRIVAL_WINDOWS_SECONDS``)."""
LOOKBACK_SECONDS = 28 * DAY
"""The history the floor is the median over."""


class BurstRule:
    """Peak rise within a horizon = floor + ``alpha`` x GPUs created in the last 15 minutes."""

    name: ClassVar[str] = "burst"

    def __init__(self, *, horizons_seconds: tuple[int, ...], alpha: float) -> None:
        if alpha < 0:
            raise ModelError(f"burst rule: alpha must be >= 0, got {alpha}")
        self.horizons_seconds = tuple(int(h) for h in horizons_seconds)
        self.alpha = float(alpha)
        self.floors_: dict[int, float] = {}

    def fit(self, demand: DemandSeries) -> Self:
        """Learn each horizon's floor from the last ``LOOKBACK_SECONDS`` of ``demand`` (gaps left
        out). Raises ``ModelError`` when no window of the history is whole."""
        recent = demand.values[-max(1, LOOKBACK_SECONDS // demand.step_seconds) :]
        start = demand.end - (recent.size - 1) * demand.step_seconds
        tail = DemandSeries(start, demand.step_seconds, recent, name=demand.name)
        floors = {}
        for horizon in self.horizons_seconds:
            rise = peak_rise(tail, horizon_seconds=horizon)
            known = rise[np.isfinite(rise)]
            if not known.size:
                raise ModelError(f"burst rule: no whole {horizon} s window of demand to learn from")
            floors[horizon] = float(np.median(np.maximum(known, 0.0)))
        self.floors_ = floors
        return self

    def rise(
        self,
        *,
        level: float,
        recent: RecentArrivals,
        at: int,
        horizon_seconds: int,
        quantile: float,
    ) -> float:
        """The rule's peak rise within ``horizon_seconds`` (``level``, ``at`` and ``quantile`` are
        the arrivals model's arguments; the rule reads none of them)."""
        floor = self.floors_.get(int(horizon_seconds))
        if floor is None:
            raise ModelError(
                f"burst rule has no horizon {horizon_seconds} s (has {sorted(self.floors_)})"
            )
        created = recent.gpus[ARRIVAL_WINDOWS_SECONDS.index(RECENT_SECONDS)]
        return max(0.0, floor + self.alpha * created)

    def to_state(self) -> dict[str, Any]:
        return {
            "kind": self.name,
            "alpha": self.alpha,
            "floors": [{"horizon_seconds": h, "floor": f} for h, f in sorted(self.floors_.items())],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        floors = {int(f["horizon_seconds"]): float(f["floor"]) for f in state["floors"]}
        rule = cls(horizons_seconds=tuple(floors), alpha=float(state["alpha"]))
        rule.floors_ = floors
        return rule
