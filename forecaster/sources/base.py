"""The one interface every demand source implements.

A source returns samples already cleaned onto a regular grid by ``core.quality.regularize`` plus
the report of what was wrong with them, so the forecasting code never sees raw rows.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from forecaster.core.jobs import JobTrace
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries

DEFAULT_VALUE_COLUMN = "gpus_requested"
"""The CSV column of GPUs a demand file is read by unless told otherwise."""


class DemandSource(Protocol):
    """Reads the GPU demand history of one pool."""

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Demand of ``pool`` on the grid ``start <= t <= end`` (epoch seconds, UTC)."""
        ...


@runtime_checkable
class ArrivalSource(Protocol):
    """Reads the GPUs of the pods created in one pool, per step (``forecasting.arrivals``)."""

    def fetch_arrivals(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """GPUs requested by real pods of ``pool`` created in (t - step, t], on the grid
        ``start <= t <= end``."""
        ...


@runtime_checkable
class PodHistorySource(Protocol):
    """Reads the pods one pool ran: what the operating point's replays run
    (``simulation.operating_point``)."""

    def fetch_pods(self, pool: str, *, start: int, end: int, step_seconds: int) -> JobTrace:
        """The pool's GPU pods alive in [start, end] as submissions (the pods of one owner
        created together are one gang): each one's creation (``submit``), the time it ran
        (``duration``: from its start to the last moment it was seen Pending or Running, to
        within ``step_seconds``) and its GPUs. A pod may begin before ``start`` and still run
        at ``end``."""
        ...


@runtime_checkable
class SpannedSource(Protocol):
    """A recorded history (a file): it ends at its last sample, not now."""

    def span(self, pool: str, *, step_seconds: int) -> tuple[int, int]:
        """The first and last grid times of ``pool``'s history."""
        ...
