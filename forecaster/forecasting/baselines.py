"""Honest baselines every model must beat, and the fallback when a model fails.

* ``PersistenceQuantile``: the level now plus the empirical quantile of past h-step changes.
  Cheap, level-conditioned and hard to beat at 5-30 minute horizons - the fallback model.
* ``SeasonalNaive``: the value one season ago (a day by default) plus the empirical quantile of
  past seasonal residuals. Not level-conditioned; kept to show why level-conditioning matters.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.series import DemandSeries, Forecast, IntArray
from forecaster.errors import ModelError
from forecaster.forecasting.features import (
    changes,
    empirical_quantile,
    horizon_steps,
    levels_at,
    take,
)

MIN_SAMPLES = 200
"""Fewer changes than this give a P95 resting on a handful of points: refuse to fit."""


class PersistenceQuantile:
    """Level at the origin + empirical quantiles of h-step changes seen in training."""

    name: ClassVar[str] = "persistence"

    def __init__(self, *, horizons_seconds: tuple[int, ...], quantiles: tuple[float, ...]) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.offsets_: np.ndarray | None = None

    def fit(self, series: DemandSeries) -> Self:
        """Quantiles of ``y[t+h] - y[t]`` over the training series, per horizon."""
        offsets = np.empty((len(self.horizons_seconds), len(self.quantiles)))
        for j, horizon in enumerate(self.horizons_seconds):
            delta = changes(series.values, horizon_steps(series, horizon))
            if np.count_nonzero(np.isfinite(delta)) < MIN_SAMPLES:
                raise ModelError(
                    f"{self.name}: fewer than {MIN_SAMPLES} usable {horizon}s changes to learn from"
                )
            for k, q in enumerate(self.quantiles):
                offsets[j, k] = empirical_quantile(delta, q)
        if np.isnan(offsets).any():
            raise ModelError(f"{self.name}: not enough usable history to fit")
        self.offsets_ = offsets
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Level at each origin plus the fitted change quantiles."""
        offsets = _fitted(self.offsets_, self.name)
        level = levels_at(history, at)
        values = level[:, None, None] + offsets[None, :, :]
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        """Settings and the fitted offsets."""
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "offsets": _fitted(self.offsets_, self.name).tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Inverse of ``to_state``."""
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]), quantiles=tuple(state["quantiles"])
        )
        model.offsets_ = np.asarray(state["offsets"], dtype=np.float64)
        return model


class SeasonalNaive:
    """Value one season before the target + empirical quantiles of seasonal residuals."""

    name: ClassVar[str] = "seasonal-naive"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        season_seconds: int = 86400,
    ) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.season_seconds = season_seconds
        self.offsets_: np.ndarray | None = None

    def fit(self, series: DemandSeries) -> Self:
        """Quantiles of ``y[t] - y[t - season]`` over the training series."""
        if any(h >= self.season_seconds for h in self.horizons_seconds):
            raise ModelError(f"{self.name}: horizons must be shorter than the season")
        residual = changes(series.values, horizon_steps(series, self.season_seconds))
        if np.count_nonzero(np.isfinite(residual)) < MIN_SAMPLES:
            raise ModelError(f"{self.name}: needs more than one season of usable history")
        offsets = np.array([empirical_quantile(residual, q) for q in self.quantiles])
        if np.isnan(offsets).any():
            raise ModelError(f"{self.name}: needs more than one season of usable history")
        self.offsets_ = np.tile(offsets, (len(self.horizons_seconds), 1))
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """``y[origin + h - season]`` plus the residual quantiles."""
        offsets = _fitted(self.offsets_, self.name)
        values = np.empty((np.size(at), len(self.horizons_seconds), len(self.quantiles)))
        for j, horizon in enumerate(self.horizons_seconds):
            past = take(history.values, history.index_of(at + horizon - self.season_seconds))
            values[:, j, :] = past[:, None] + offsets[j][None, :]
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        """Settings and the fitted offsets."""
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "season_seconds": self.season_seconds,
            "offsets": _fitted(self.offsets_, self.name).tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Inverse of ``to_state``."""
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]),
            quantiles=tuple(state["quantiles"]),
            season_seconds=int(state["season_seconds"]),
        )
        model.offsets_ = np.asarray(state["offsets"], dtype=np.float64)
        return model


def _fitted(state: np.ndarray | None, name: str) -> np.ndarray:
    if state is None:
        raise ModelError(f"{name}: predict() called before fit()")
    return state
