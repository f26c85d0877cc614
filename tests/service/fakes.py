"""A demand source whose history grows as the test advances time."""

from __future__ import annotations

import numpy as np

from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.errors import SourceError


class LiveSource:
    """Serves ``values`` on a 60 s grid from ``start``; ``fail`` makes the next fetches fail."""

    def __init__(self, start: int, values: list[float]) -> None:
        self.start = start
        self.values = list(values)
        self.fail: str | None = None

    def append(self, *values: float) -> None:
        self.values.extend(values)

    @property
    def end(self) -> int:
        return self.start + 60 * (len(self.values) - 1)

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        if self.fail:
            raise SourceError(self.fail)
        ts = self.start + 60 * np.arange(len(self.values))
        keep = (ts >= start) & (ts <= end)
        return regularize(
            ts[keep], np.asarray(self.values)[keep], step_seconds=step_seconds, name=pool
        )
