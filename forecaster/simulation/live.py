"""The twin behind the daemon's ports: demand source, observer and actuator in one.

``TwinPorts`` gives the reconcile loop (``reconcile.loop.Reconciler``) what a cluster gives it -
demand history like a Prometheus range query (``fetch``), the pool as the observer sees it
(``observe``) - and carries out its commands (``apply``: the prewarm target and NodePool
protection become the twin's decision). It reads the twin only through ``TwinView``: the past and
the present, never job durations or future arrivals.

Two drivers use it: ``LiveTwin`` (``forecaster run`` without a cluster: the twin is stepped by an
accelerated clock while the daemon ticks on its own schedule) and replay's ``predictive`` policy
(``simulation/replay.py``: the twin calls the reconciler at each of its ticks).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

import numpy as np

from forecaster.core.actions import ActuationReport, Command, ProtectNodePool, SetPrewarm
from forecaster.core.cluster import PoolSnapshot
from forecaster.core.jobs import JobTrace
from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError
from forecaster.simulation.twin import Decision, Twin, TwinConfig, TwinView


class TwinPorts:
    """The reconcile loop's source, observer and actuator over one twin pool (module docstring).

    It is also the twin's policy: ``decide`` returns whatever the loop last applied."""

    name = "daemon"

    def __init__(self, pool: str, view: TwinView | None = None) -> None:
        self.pool = pool
        self.view = view
        self.decision = Decision(0)
        self.lock = threading.Lock()
        self._counted = 0  # placeholders that ended and were reported (``TwinView.ended_after``)
        self._read: dict[str, tuple[tuple[int, ...], tuple[DemandSeries, QualityReport]]] = {}
        """Per kind of history, the last range read and its result (``_series``)."""

    @property
    def now(self) -> float:
        """The simulated time (0 before the twin starts)."""
        return self.view.now if self.view is not None else 0.0

    def _twin(self) -> TwinView:
        if self.view is None:
            raise SourceError("the twin has not started")
        return self.view

    def decide(self, view: TwinView) -> Decision:
        """The twin's policy: the last applied plan."""
        return self.decision

    # ---- DemandSource --------------------------------------------------------------------------
    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Requested GPUs per minute as the twin observed them, like a Prometheus range query."""
        if pool != self.pool:
            raise SourceError(f"the twin simulates pool {self.pool!r}, not {pool!r}")
        with self.lock:
            first, values = self._twin().demand_history(since=start)
        return self._series_of("demand", first, values, end=end, step_seconds=step_seconds)

    @staticmethod
    def _series(
        pool: str, first: int, values: np.ndarray, *, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Per-minute values from ``first`` as the sources return them (on the step's grid)."""
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

    def fetch_arrivals(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """GPUs of the pods created per minute, on ``fetch``'s grid (``ArrivalSource``)."""
        if pool != self.pool:
            raise SourceError(f"the twin simulates pool {self.pool!r}, not {pool!r}")
        with self.lock:
            first, values = self._twin().arrival_history(since=start)
        return self._series_of("arrivals", first, values, end=end, step_seconds=step_seconds)

    def _series_of(
        self, kind: str, first: int, values: np.ndarray, *, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """``_series``, read once per range: the twin's history holds complete minutes only,
        which never change once written, so the same first minute, length, end and step give
        the same series - the loop's ticks within one minute (every 15 s) reuse it."""
        kept = 0 if end < first else min(values.size, (end - first) // 60 + 1)
        key = (first, values.size, kept, step_seconds)
        last = self._read.get(kind)
        if last is None or last[0] != key:
            last = key, self._series(self.pool, first, values, end=end, step_seconds=step_seconds)
            self._read[kind] = last
        return last[1]

    # ---- observer ------------------------------------------------------------------------------

    def observe(self, pools: Sequence[str], now: int) -> dict[str, PoolSnapshot]:
        """The twin's snapshot for its pool."""
        with self.lock:
            return {p: self._twin().snapshot() for p in pools if p == self.pool}

    # ---- actuator ------------------------------------------------------------------------------
    def apply(self, commands: Sequence[Command], *, now: int) -> ActuationReport:
        """Carry the commands out on the twin (its prewarm target and NodePool protection);
        report the prewarm that ended unused."""
        report = ActuationReport()
        with self.lock:
            for command in (c for c in commands if c.pool == self.pool):
                if isinstance(command, SetPrewarm):
                    self.decision = dataclasses.replace(self.decision, target_gpus=command.gpus)
                    self._counted, wasted, used = self._twin().ended_after(self._counted)
                    report.wasted_gpu_hours[self.pool] = wasted
                    report.used_gpus[self.pool] = used
                else:
                    protect = isinstance(command, ProtectNodePool)
                    self.decision = dataclasses.replace(self.decision, protect=protect)
        return report


class LiveTwin(TwinPorts):
    """A twin stepped by a clock, with the daemon's ports (see the module docstring)."""

    def __init__(self, jobs: JobTrace, config: TwinConfig, *, start: float, end: float) -> None:
        super().__init__(config.pool)
        self.twin = Twin(jobs, self, config, start=start, end=end)
        self.twin.begin()
        self.view = self.twin

    def advance_to(self, t: float) -> None:
        """Run the twin up to simulated time ``t``."""
        with self.lock:
            self.twin.advance_to(t)
