"""Gradient-boosted quantile regression of the h-step change (scikit-learn).

``HistGradientBoostingRegressor(loss="quantile")`` learns ``y[t+h] - y[t]`` from causal features
at the origin: recent changes (is demand ramping?), recent volatility (are jobs arriving in
bursts?), the level against its recent range, the time of day and week, and what the same window
did yesterday. It is level-conditioned by construction: the forecast is the level now plus the
predicted change. One regressor per (horizon, quantile).
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar, Self

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from forecaster.core.series import DemandSeries, FloatArray, Forecast, IntArray
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.features import (
    forward_filled,
    horizon_steps,
    levels_at,
    take,
    trailing_max,
    trailing_mean,
    trailing_sum,
)

_RECENT_STEPS = (1, 5, 15, 30, 60, 180)
_VOLATILITY_STEPS = (60, 360)
_WEEK = 7 * DAY


def feature_matrix(series: DemandSeries, at: IntArray, *, horizon_seconds: int) -> FloatArray:
    """Causal features for each origin in ``at`` (rows) - see the module docstring."""
    step = series.step_seconds
    level_values = forward_filled(series.values, max_steps=600 // step)
    idx = series.index_of(at)
    level = take(level_values, idx)
    cols: list[FloatArray] = []
    for lag in _RECENT_STEPS:
        cols.append(level - take(level_values, idx - max(1, lag * 60 // step)))
    abs_step = np.abs(np.diff(level_values, prepend=np.nan))
    moved = (abs_step > 0).astype(np.float64)
    moved[np.isnan(abs_step)] = np.nan
    for window in _VOLATILITY_STEPS:
        n = max(1, window * 60 // step)
        cols.append(trailing_sum(abs_step, idx, steps=n))
        cols.append(trailing_sum(moved, idx, steps=n))
    day_steps = DAY // step
    cols.append(level - trailing_mean(level_values, idx, steps=day_steps))
    cols.append(level - trailing_max(level_values, idx, steps=360 * 60 // step))
    # what the same window did one day earlier (all of it is in the past for h < 1 day)
    h = horizon_steps(series, horizon_seconds)
    cols.append(take(level_values, idx + h - day_steps) - take(level_values, idx - day_steps))
    seconds_of_day = np.asarray(at) % DAY
    seconds_of_week = (np.asarray(at) + 4 * DAY) % _WEEK  # epoch day 0 was a Thursday
    for period, phase in ((DAY, seconds_of_day), (_WEEK, seconds_of_week)):
        angle = 2 * np.pi * phase / period
        cols.append(np.sin(angle))
        cols.append(np.cos(angle))
    return np.column_stack(cols)


class GradientBoostingQuantile:
    """Quantile gradient boosting of the h-step change; see the module docstring."""

    name: ClassVar[str] = "gbm"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        max_iter: int = 100,
        learning_rate: float = 0.05,
        max_leaf_nodes: int = 7,
        min_samples_leaf: int = 500,
        train_every_seconds: int = 60,
        seed: int = 0,
    ) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.train_every_seconds = train_every_seconds
        self.seed = seed
        self.regressors_: dict[tuple[int, float], HistGradientBoostingRegressor] | None = None

    def fit(self, series: DemandSeries) -> Self:
        """One regressor per (horizon, quantile) on the training origins."""
        stride = max(1, self.train_every_seconds // series.step_seconds)
        origins = series.timestamps[::stride]
        regressors: dict[tuple[int, float], HistGradientBoostingRegressor] = {}
        for horizon in self.horizons_seconds:
            features = feature_matrix(series, origins, horizon_seconds=horizon)
            level = levels_at(series, origins)
            target = take(series.values, series.index_of(origins + horizon)) - level
            keep = np.isfinite(target)
            if np.count_nonzero(keep) < 4 * self.min_samples_leaf:
                raise ModelError(f"{self.name}: too few usable training points for {horizon}s")
            for q in self.quantiles:
                regressor = HistGradientBoostingRegressor(
                    loss="quantile",
                    quantile=q,
                    max_iter=self.max_iter,
                    learning_rate=self.learning_rate,
                    max_leaf_nodes=self.max_leaf_nodes,
                    min_samples_leaf=self.min_samples_leaf,
                    early_stopping=False,
                    random_state=self.seed,
                )
                regressors[(horizon, q)] = regressor.fit(features[keep], target[keep])
        self.regressors_ = regressors
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Level at each origin plus the predicted change quantiles (kept monotone in q)."""
        if self.regressors_ is None:
            raise ModelError(f"{self.name}: predict() called before fit()")
        level = levels_at(history, at)
        values = np.empty((np.size(at), len(self.horizons_seconds), len(self.quantiles)))
        for j, horizon in enumerate(self.horizons_seconds):
            features = feature_matrix(history, at, horizon_seconds=horizon)
            for k, q in enumerate(self.quantiles):
                values[:, j, k] = level + self.regressors_[(horizon, q)].predict(features)
        values = np.maximum.accumulate(values, axis=2)  # quantiles must not cross
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        """Settings plus each regressor as base64 skops bytes (loaded with an allow-list)."""
        import skops.io

        if self.regressors_ is None:
            raise ModelError(f"{self.name}: cannot save an unfitted model")
        return {
            "settings": self._settings(),
            "regressors": [
                {"horizon_seconds": h, "quantile": q, "skops": _b64(skops.io.dumps(r))}
                for (h, q), r in self.regressors_.items()
            ],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Inverse of ``to_state``; refuses any type outside scikit-learn's tree predictor."""
        import skops.io

        model = cls(**state["settings"])
        trusted = ["sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"]
        regressors = {}
        for item in state["regressors"]:
            data = base64.b64decode(item["skops"])
            untrusted = set(skops.io.get_untrusted_types(data=data)) - set(trusted)
            if untrusted:
                raise ModelError(f"{cls.name}: artifact holds untrusted types {sorted(untrusted)}")
            key = (int(item["horizon_seconds"]), float(item["quantile"]))
            regressors[key] = skops.io.loads(data, trusted=trusted)
        model.regressors_ = regressors
        return model

    def _settings(self) -> dict[str, Any]:
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "max_iter": self.max_iter,
            "learning_rate": self.learning_rate,
            "max_leaf_nodes": self.max_leaf_nodes,
            "min_samples_leaf": self.min_samples_leaf,
            "train_every_seconds": self.train_every_seconds,
            "seed": self.seed,
        }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
