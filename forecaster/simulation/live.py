"""The twin as a live cluster for the daemon: demand source, observer and actuator in one.

``forecaster run`` without a cluster drives a ``LiveTwin`` with an accelerated clock: the twin
replays the job trace, the daemon's reconcile loop reads demand from it (``fetch``, like
Prometheus would), observes it (``observe``) and acts on it (``apply``: the plan's placeholder
target and NodePool protection become the twin's policy decision).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from forecaster.core.actions import ActuationReport
from forecaster.core.cluster import PoolSnapshot
from forecaster.core.jobs import JobTrace
from forecaster.core.planner import Plan
from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError
from forecaster.simulation.twin import Decision, Twin, TwinConfig, TwinView


class _Follow:
    """The twin's policy: whatever the daemon last applied."""

    name = "daemon"

    def __init__(self) -> None:
        self.decision = Decision(0)

    def decide(self, view: TwinView) -> Decision:
        return self.decision


class LiveTwin:
    """A steppable twin exposing the daemon's three ports (see the module docstring)."""

    def __init__(self, jobs: JobTrace, config: TwinConfig, *, start: float, end: float) -> None:
        self._policy = _Follow()
        self.twin = Twin(jobs, self._policy, config, start=start, end=end)
        self.twin.begin()
        self.pool = config.pool
        self._lock = threading.Lock()
        self._counted = 0  # placeholders that ended and were reported (``Twin.ended_after``)

    @property
    def now(self) -> float:
        """The simulated time."""
        return self.twin.now

    def advance_to(self, t: float) -> None:
        """Run the twin up to simulated time ``t``."""
        with self._lock:
            self.twin.advance_to(t)

    # ---- DemandSource --------------------------------------------------------------------------
    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Requested GPUs per minute as the twin observed them, like a Prometheus range query."""
        if pool != self.pool:
            raise SourceError(f"the twin simulates pool {self.pool!r}, not {pool!r}")
        with self._lock:
            first, values = self.twin.demand_history(since=start)
        if values.size == 0:
            raise SourceError("the twin has no demand history yet")
        timestamps = first + 60 * np.arange(values.size)
        keep = timestamps <= end
        return regularize(
            timestamps[keep],
            values[keep],
            step_seconds=step_seconds,
            name=pool,
            outage_min_seconds=0,
        )

    # ---- observer ------------------------------------------------------------------------------
    def observe(self, pools: Sequence[str], now: int) -> dict[str, PoolSnapshot]:
        """The twin's snapshot for its pool."""
        with self._lock:
            return {p: self.twin.snapshot() for p in pools if p == self.pool}

    # ---- actuator ------------------------------------------------------------------------------
    def apply(self, plan: Plan, *, now: int) -> ActuationReport:
        """Make the plan's target the twin's placeholder count; report wasted prewarm."""
        report = ActuationReport()
        for pool_plan in plan.pools:
            if pool_plan.pool != self.pool or not pool_plan.acts:
                continue
            with self._lock:  # the plan decided both (0 and no pause outside predictive mode)
                self._policy.decision = Decision(
                    pool_plan.target_gpus, protect=pool_plan.protect_nodepool
                )
                self._counted, wasted, used = self.twin.ended_after(self._counted)
                report.wasted_gpu_hours[self.pool] = wasted
                report.used_gpus[self.pool] = used
        return report
