"""Small test models that follow the Forecaster protocol without subclassing it."""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.series import DemandSeries, Forecast, IntArray
from forecaster.forecasting.features import levels_at


class LevelPlusConstant:
    """Forecast = level now + a fixed offset per quantile (deliberately mis-calibrated)."""

    name: ClassVar[str] = "level-plus-constant"

    def __init__(self, offsets: dict[float, float], horizons_seconds: tuple[int, ...]) -> None:
        self.offsets = offsets
        self.horizons_seconds = horizons_seconds
        self.quantiles = tuple(sorted(offsets))
        self.fitted_on: list[tuple[int, int]] = []
        self.predicted_with: list[tuple[int, int]] = []

    def fit(self, series: DemandSeries) -> Self:
        self.fitted_on.append((series.start, series.end))
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        self.predicted_with.append((int(np.max(at)), history.end))
        level = levels_at(history, at)
        offsets = np.array([self.offsets[q] for q in self.quantiles])
        values = np.broadcast_to(
            level[:, None, None] + offsets[None, None, :],
            (np.size(at), len(self.horizons_seconds), len(self.quantiles)),
        )
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        return {"offsets": self.offsets}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        raise NotImplementedError


def random_walk(
    days: float, *, scale: float, seed: int, start: int = 1_700_000_040
) -> DemandSeries:
    """A 1-minute random walk with Gaussian steps of ``scale`` GPUs (kept positive)."""
    rng = np.random.default_rng(seed)
    steps = rng.normal(0, scale, int(days * 1440))
    return DemandSeries(start=start, step_seconds=60, values=500 + np.cumsum(steps))
