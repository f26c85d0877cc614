"""Conformal calibration that works with any model: make P95 mean 95 %.

A model's raw quantiles are rarely honest (Prophet assumes Gaussian noise, boosted quantiles
over- or under-shoot out of sample). ``Calibrated`` wraps any ``Forecaster``:

1. *split conformal at fit*: the inner model is fitted on all but the last
   ``calibration_seconds`` of the training data; on that held-out tail it forecasts every
   ``origin_every_seconds`` and records the scores ``actual - forecast`` per horizon/quantile;
2. *adaptive at predict*: for each origin, the pool of scores is the held-out scores followed by
   every score realized since the fit (target time <= origin), of which the most recent
   ``window`` are kept. The forecast is the inner forecast plus the conformal quantile of that
   pool. So a model that drifts after weekly retraining is re-calibrated as errors come in,
   using only information available at the origin.

The inner model is not refitted on the held-out tail: the scores stay out-of-sample, which is
what the coverage guarantee rests on.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.series import DemandSeries, FloatArray, Forecast, IntArray
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster, Restore
from forecaster.forecasting.features import take


class Calibrated:
    """Wraps a model with split + adaptive conformal calibration (see module docstring)."""

    holds_models: ClassVar[bool] = True
    """Rebuilt with ``restore`` (``forecasting.registry.restore``)."""
    name: ClassVar[str] = "calibrated"

    def __init__(
        self,
        inner: Forecaster,
        *,
        calibration_seconds: int = 2 * DAY,
        origin_every_seconds: int = 300,
        adaptive: bool = True,
    ) -> None:
        self.inner = inner
        self.horizons_seconds = inner.horizons_seconds
        self.quantiles = inner.quantiles
        self.calibration_seconds = calibration_seconds
        self.origin_every_seconds = origin_every_seconds
        self.adaptive = adaptive
        self.scores_: FloatArray | None = None  # (n_scores, n_horizons, n_quantiles)
        self.fit_end_: int | None = None

    def fit(self, series: DemandSeries) -> Self:
        """Fit the inner model on the head, collect out-of-sample scores on the tail."""
        split = series.end + series.step_seconds - self.calibration_seconds
        head = series.window(series.start, split)
        if head.usable_seconds < self.calibration_seconds:
            raise ModelError(
                f"{self.inner.name}: calibration needs more history than its"
                f" {self.calibration_seconds // 3600} h hold-out"
            )
        self.inner.fit(head)
        origins = np.arange(split, series.end + 1, self.origin_every_seconds, dtype=np.int64)
        self.scores_ = self._scores(series, origins)
        self.fit_end_ = series.end
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Inner forecast plus a per-origin conformal offset."""
        if self.scores_ is None or self.fit_end_ is None:
            raise ModelError(f"{self.inner.name}: predict() called before fit()")
        at = np.asarray(at, dtype=np.int64)
        raw = self.inner.predict(history, at=at)
        offsets = np.empty_like(raw.values)
        if self.adaptive and at.size and int(at.max()) > self.fit_end_:
            since = np.arange(
                self.fit_end_
                + self.origin_every_seconds
                - self.fit_end_ % self.origin_every_seconds,
                int(at.max()) + 1,
                self.origin_every_seconds,
                dtype=np.int64,
            )
            fresh = self._scores(history, since)
        else:
            since, fresh = np.empty(0, dtype=np.int64), np.empty((0, *self.scores_.shape[1:]))
        window = self.scores_.shape[0]
        for j, horizon in enumerate(self.horizons_seconds):
            realized = np.searchsorted(since + horizon, at, side="right")
            for k, q in enumerate(self.quantiles):
                pool_all = np.concatenate((self.scores_[:, j, k], fresh[:, j, k]))
                base = self.scores_.shape[0]
                for i, count in enumerate(realized):
                    pool = pool_all[: base + count][-window:]
                    offsets[i, j, k] = conformal_quantile(pool, q)
        values = np.maximum.accumulate(raw.values + offsets, axis=2)
        return Forecast(raw.model, at, self.horizons_seconds, self.quantiles, values)

    def _scores(self, series: DemandSeries, origins: IntArray) -> FloatArray:
        forecast = self.inner.predict(series, at=origins)
        out = np.empty(forecast.values.shape)
        for j, horizon in enumerate(self.horizons_seconds):
            actual = take(series.values, series.index_of(origins + horizon))
            out[:, j, :] = actual[:, None] - forecast.values[:, j, :]
        return out

    def to_state(self) -> dict[str, Any]:
        """Inner model's state plus the held-out scores."""
        if self.scores_ is None or self.fit_end_ is None:
            raise ModelError(f"{self.inner.name}: cannot save an unfitted model")
        return {
            "inner": self.inner.name,
            "inner_state": self.inner.to_state(),
            "calibration_seconds": self.calibration_seconds,
            "origin_every_seconds": self.origin_every_seconds,
            "adaptive": self.adaptive,
            "scores": _nan_as_none(self.scores_.tolist()),
            "fit_end": self.fit_end_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], *, restore: Restore | None = None) -> Self:
        """Inverse of ``to_state``; the inner model is rebuilt by ``restore`` (the registry's,
        which passes itself: this module never imports the registry)."""
        if restore is None:
            raise ModelError(f"{cls.name}: rebuild it through forecasting.registry.restore")
        inner = restore(state["inner"], state["inner_state"])
        model = cls(
            inner,
            calibration_seconds=int(state["calibration_seconds"]),
            origin_every_seconds=int(state["origin_every_seconds"]),
            adaptive=bool(state["adaptive"]),
        )
        model.scores_ = np.asarray(state["scores"], dtype=np.float64)
        model.fit_end_ = int(state["fit_end"])
        return model


def _nan_as_none(value: Any) -> Any:
    """JSON has no NaN: nested lists of floats with NaN replaced by None (null)."""
    if isinstance(value, list):
        return [_nan_as_none(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def conformal_quantile(scores: FloatArray, quantile: float) -> float:
    """The finite-sample conformal quantile of the finite scores (0 if there are none).

    Uses rank ceil((n + 1) q) as in split conformal prediction, so the adjusted forecast covers
    at least ``quantile`` of exchangeable future points.
    """
    finite = np.sort(scores[np.isfinite(scores)])
    n = finite.size
    if n == 0:
        return 0.0
    rank = min(n, max(1, math.ceil((n + 1) * quantile)))
    return float(finite[rank - 1])
