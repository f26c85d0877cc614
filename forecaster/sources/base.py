"""The one interface every demand source implements.

A source returns samples already cleaned onto a regular grid by ``core.quality.regularize`` plus
the report of what was wrong with them, so the forecasting code never sees raw rows.
"""

from __future__ import annotations

from typing import Protocol

from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries


class DemandSource(Protocol):
    """Reads the GPU demand history of one pool."""

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Demand of ``pool`` on the grid ``start <= t <= end`` (epoch seconds, UTC)."""
        ...
