"""Prophet, used in a level-conditioned way.

Prophet alone forecasts the daily/weekly shape, not where demand is right now, and its intervals
assume Gaussian noise (too narrow on bursty GPU demand). So this model uses Prophet only for the
*expected change* over the horizon: ``level(origin) + [yhat(origin + h) - yhat(origin)]`` plus
empirical quantiles of how real h-step changes departed from that expectation in training.
Prophet is fitted on 5-minute means (1-minute data costs ~10x the fit time for the same shape).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Self

import numpy as np
import pandas as pd

from forecaster.core.series import DemandSeries, FloatArray, Forecast, IntArray
from forecaster.errors import ModelError
from forecaster.forecasting.features import changes, empirical_quantile, horizon_steps, levels_at


def _quiet_stan() -> None:
    """cmdstanpy (re)configures its logger at import and logs two INFO lines per fit."""
    logging.getLogger("prophet.plot").disabled = True  # "Importing plotly failed" at import
    import cmdstanpy

    cmdstanpy.utils.get_logger().setLevel(logging.WARNING)
    logging.getLogger("prophet").setLevel(logging.WARNING)


class ProphetLevel:
    """Level now + Prophet's expected change + empirical residual quantiles."""

    name: ClassVar[str] = "prophet"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        resample_seconds: int = 300,
        changepoint_prior_scale: float = 0.05,
        country_holidays: str | None = None,
    ) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.resample_seconds = resample_seconds
        self.changepoint_prior_scale = changepoint_prior_scale
        self.country_holidays = country_holidays
        self.model_: Any = None
        self.offsets_: FloatArray | None = None

    def fit(self, series: DemandSeries) -> Self:
        """Fit Prophet on resampled means, then the residual-change quantiles."""
        _quiet_stan()
        from prophet import Prophet

        frame = _resampled(series, self.resample_seconds)
        if len(frame) < 2 * 86400 // self.resample_seconds:
            raise ModelError(f"{self.name}: needs at least 2 days of usable history")
        model = Prophet(
            daily_seasonality=True,
            weekly_seasonality=True,
            yearly_seasonality=False,
            changepoint_prior_scale=self.changepoint_prior_scale,
            uncertainty_samples=0,
        )
        if self.country_holidays:
            model.add_country_holidays(country_name=self.country_holidays)
        try:
            model.fit(frame)
        except Exception as exc:  # Stan failures come as assorted exception types
            raise ModelError(f"{self.name}: fit failed: {exc}") from exc
        self.model_ = model
        expected = self._yhat(series.timestamps)
        offsets = np.empty((len(self.horizons_seconds), len(self.quantiles)))
        for j, horizon in enumerate(self.horizons_seconds):
            steps = horizon_steps(series, horizon)
            residual = changes(series.values, steps) - changes(expected, steps)
            for k, q in enumerate(self.quantiles):
                offsets[j, k] = empirical_quantile(residual, q)
        self.offsets_ = offsets
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Level at each origin + expected change + residual quantiles."""
        if self.model_ is None or self.offsets_ is None:
            raise ModelError(f"{self.name}: predict() called before fit()")
        at = np.asarray(at, dtype=np.int64)
        level = levels_at(history, at)
        now = self._yhat(at)
        values = np.empty((at.size, len(self.horizons_seconds), len(self.quantiles)))
        for j, horizon in enumerate(self.horizons_seconds):
            drift = self._yhat(at + horizon) - now
            values[:, j, :] = (level + drift)[:, None] + self.offsets_[j][None, :]
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def _yhat(self, timestamps: IntArray) -> FloatArray:
        """Prophet's point forecast at each timestamp (computed on unique times only)."""
        unique, inverse = np.unique(np.asarray(timestamps, dtype=np.int64), return_inverse=True)
        ds = pd.to_datetime(unique, unit="s")
        yhat = self.model_.predict(pd.DataFrame({"ds": ds}))["yhat"].to_numpy(dtype=np.float64)
        return np.asarray(yhat[inverse], dtype=np.float64)

    def to_state(self) -> dict[str, Any]:
        """Settings, Prophet's own JSON serialization and the residual offsets."""
        from prophet.serialize import model_to_json

        if self.model_ is None or self.offsets_ is None:
            raise ModelError(f"{self.name}: cannot save an unfitted model")
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "resample_seconds": self.resample_seconds,
            "changepoint_prior_scale": self.changepoint_prior_scale,
            "country_holidays": self.country_holidays,
            "prophet_json": model_to_json(self.model_),
            "offsets": self.offsets_.tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Inverse of ``to_state``."""
        from prophet.serialize import model_from_json

        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]),
            quantiles=tuple(state["quantiles"]),
            resample_seconds=int(state["resample_seconds"]),
            changepoint_prior_scale=float(state["changepoint_prior_scale"]),
            country_holidays=state["country_holidays"],
        )
        model.model_ = model_from_json(state["prophet_json"])
        model.offsets_ = np.asarray(state["offsets"], dtype=np.float64)
        return model


def _resampled(series: DemandSeries, seconds: int) -> pd.DataFrame:
    """Mean of the usable samples in each ``seconds`` bucket, as Prophet's ``ds``/``y`` frame."""
    bucket = (series.timestamps - series.timestamps[0] % seconds) // seconds
    usable = series.usable
    frame = pd.DataFrame({"bucket": bucket[usable], "y": series.values[usable]})
    means = frame.groupby("bucket", sort=True)["y"].mean()
    ds = pd.to_datetime(means.index.to_numpy() * seconds + series.timestamps[0] % seconds, unit="s")
    return pd.DataFrame({"ds": ds, "y": means.to_numpy()})
