"""Time series and forecasts as plain, immutable data.

``DemandSeries`` is a regular grid: a start time, a step and one value per step. A missing or
excluded sample is NaN, so gaps stay gaps and every consumer sees the same grid. Times are
integer epoch seconds (UTC) internally because numpy arithmetic on them is exact and fast;
``datetime`` objects appear only at the edges (CLI, reports) and are always tz-aware UTC.

``Forecast`` holds quantile forecasts for many origins at once (the backtest asks for thousands),
keyed by number: ``forecast.values_at(quantile=0.95, horizon_seconds=900)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def to_epoch_seconds(moment: datetime) -> int:
    """Convert a tz-aware datetime to integer epoch seconds; naive datetimes are refused."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment.isoformat()} is ambiguous: give a UTC offset")
    return int(moment.timestamp())


def from_epoch_seconds(seconds: int) -> datetime:
    """Epoch seconds to a tz-aware UTC datetime."""
    return datetime.fromtimestamp(int(seconds), tz=UTC)


def iso_utc(seconds: int, *, minutes: bool = False) -> str:
    """Epoch seconds as ISO 8601 UTC ending in Z, to the second or (``minutes``) the minute."""
    moment = from_epoch_seconds(seconds)
    if minutes:
        return moment.strftime("%Y-%m-%dT%H:%MZ")
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, eq=False)
class DemandSeries:
    """GPUs requested on a regular time grid; NaN marks a gap or an excluded sample."""

    start: int
    step_seconds: int
    values: FloatArray
    name: str = ""

    def __post_init__(self) -> None:
        if self.step_seconds <= 0:
            raise ValueError(f"step_seconds must be positive, got {self.step_seconds}")
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim != 1:
            raise ValueError("values must be one-dimensional")
        values.setflags(write=False)
        object.__setattr__(self, "values", values)

    def __len__(self) -> int:
        return int(self.values.size)

    @property
    def end(self) -> int:
        """Timestamp of the last grid point (inclusive)."""
        return self.start + (len(self) - 1) * self.step_seconds

    @property
    def timestamps(self) -> IntArray:
        """Epoch seconds of every grid point."""
        return self.start + np.arange(len(self), dtype=np.int64) * self.step_seconds

    @property
    def usable(self) -> npt.NDArray[np.bool_]:
        """Mask of grid points holding a real observation."""
        return ~np.isnan(self.values)

    @property
    def usable_seconds(self) -> int:
        """How much observed history the series holds, in seconds."""
        return int(np.count_nonzero(self.usable)) * self.step_seconds

    def index_of(self, timestamps: IntArray | int) -> IntArray:
        """Grid index for each timestamp (floor); may be out of range, callers check."""
        ts = np.asarray(timestamps, dtype=np.int64)
        return (ts - self.start) // self.step_seconds

    def window(self, start: int, end: int) -> DemandSeries:
        """The part of the grid with ``start <= t < end`` (clipped to the series)."""
        first = max(0, -(-(start - self.start) // self.step_seconds))
        stop = min(len(self), max(0, -(-(end - self.start) // self.step_seconds)))
        first = min(first, stop)
        return DemandSeries(
            start=self.start + first * self.step_seconds,
            step_seconds=self.step_seconds,
            values=self.values[first:stop],
            name=self.name,
        )

    def until(self, end_inclusive: int) -> DemandSeries:
        """History known at ``end_inclusive``: every grid point at or before it."""
        return self.window(self.start, end_inclusive + 1)


@dataclass(frozen=True, eq=False)
class Forecast:
    """Quantile forecasts: ``values[i, j, k]`` is quantile ``k`` at ``origins[i] + horizons[j]``."""

    model: str
    origins: IntArray
    horizons_seconds: tuple[int, ...]
    quantiles: tuple[float, ...]
    values: FloatArray

    def __post_init__(self) -> None:
        origins = np.asarray(self.origins, dtype=np.int64)
        values = np.asarray(self.values, dtype=np.float64)
        expected = (origins.size, len(self.horizons_seconds), len(self.quantiles))
        if values.shape != expected:
            raise ValueError(f"forecast values have shape {values.shape}, expected {expected}")
        origins.setflags(write=False)
        values.setflags(write=False)
        object.__setattr__(self, "origins", origins)
        object.__setattr__(self, "values", values)

    def values_at(self, *, quantile: float, horizon_seconds: int) -> FloatArray:
        """Forecast of one quantile at one horizon, for every origin."""
        return self.values[:, self._horizon_index(horizon_seconds), self._quantile_index(quantile)]

    def values_at_origin(self, index: int, *, quantile: float) -> FloatArray:
        """One origin's forecast of ``quantile`` at every horizon."""
        return self.values[index, :, self._quantile_index(quantile)]

    def _quantile_index(self, quantile: float) -> int:
        for k, q in enumerate(self.quantiles):
            if abs(q - quantile) < 1e-9:
                return k
        raise KeyError(f"quantile {quantile} not in forecast (has {list(self.quantiles)})")

    def _horizon_index(self, horizon_seconds: int) -> int:
        try:
            return self.horizons_seconds.index(int(horizon_seconds))
        except ValueError:
            raise KeyError(
                f"horizon {horizon_seconds}s not in forecast (has {list(self.horizons_seconds)})"
            ) from None
