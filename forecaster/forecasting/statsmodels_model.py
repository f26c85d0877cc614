"""Linear quantile regression (statsmodels ``QuantReg``) of the h-step change.

The change ``y[t+h] - y[t]`` is regressed on Fourier terms of the time of day and week (when do
jobs arrive?) and on recent volatility (are they arriving in a burst now?). Linear and few
features, so it is stable out of sample and fits in about a second on 28 days of 1-minute data.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.series import DemandSeries, FloatArray, Forecast, IntArray
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.features import (
    forward_filled,
    horizon_steps,
    levels_at,
    reaching_back,
    take,
    trailing_sum,
)

_WEEK = 7 * DAY


def design_matrix(
    series: DemandSeries, at: IntArray, *, daily_terms: int, weekly_terms: int
) -> FloatArray:
    """Intercept, Fourier terms of day and week, and 1 h volatility (log1p of |changes|)."""
    at = np.asarray(at, dtype=np.int64)
    cols: list[FloatArray] = [np.ones(at.size)]
    for period, terms, shift in ((DAY, daily_terms, 0), (_WEEK, weekly_terms, 4 * DAY)):
        phase = 2 * np.pi * ((at + shift) % period) / period
        for k in range(1, terms + 1):
            cols.extend((np.sin(k * phase), np.cos(k * phase)))
    fill, hour = 600 // series.step_seconds, 3600 // series.step_seconds
    values, idx = reaching_back(series.values, series.index_of(at), steps=hour + fill + 1)
    moves = np.abs(np.diff(forward_filled(values, max_steps=fill), prepend=np.nan))
    cols.append(np.log1p(trailing_sum(moves, idx, steps=hour)))
    return np.column_stack(cols)


class FourierQuantReg:
    """QuantReg of the h-step change on Fourier + volatility terms; one fit per (h, q)."""

    name: ClassVar[str] = "quantreg"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        daily_terms: int = 3,
        weekly_terms: int = 2,
        train_every_seconds: int = 120,
    ) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.daily_terms = daily_terms
        self.weekly_terms = weekly_terms
        self.train_every_seconds = train_every_seconds
        self.params_: FloatArray | None = None  # (n_horizons, n_quantiles, n_features)
        self.terms_: tuple[int, int] = (daily_terms, weekly_terms)

    def fit(self, series: DemandSeries) -> Self:
        """Fit one linear quantile regression per horizon and quantile."""
        from statsmodels.regression.quantile_regression import QuantReg
        from statsmodels.tools.sm_exceptions import IterationLimitWarning

        origins = series.timestamps[:: max(1, self.train_every_seconds // series.step_seconds)]
        # a Fourier term of a period needs two periods of data, or it extrapolates wildly
        span = series.end - series.start
        self.terms_ = (
            self.daily_terms if span >= 2 * DAY else 0,
            self.weekly_terms if span >= 2 * _WEEK else 0,
        )
        x = self._design(series, origins)
        level = levels_at(series, origins)
        params = []
        for horizon in self.horizons_seconds:
            horizon_steps(series, horizon)
            target = take(series.values, series.index_of(origins + horizon)) - level
            keep = np.isfinite(target) & np.isfinite(x).all(axis=1)
            if np.count_nonzero(keep) < 50 * x.shape[1]:
                raise ModelError(f"{self.name}: too few usable training points for {horizon}s")
            row = []
            if np.ptp(target[keep]) == 0:
                # a constant change (a flat stretch, e.g. all demand announced) has every
                # quantile equal to it; QuantReg divides by its zero spread, so say it directly
                flat = np.zeros(x.shape[1])
                flat[0] = target[keep][0]
                params.append([flat] * len(self.quantiles))
                continue
            for q in self.quantiles:
                # IRLS can stop at max_iter a hair short of its tolerance on flat stretches; the
                # estimate is still usable and the backtest judges it, so do not fail the fit
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", IterationLimitWarning)
                    try:
                        fitted = QuantReg(target[keep], x[keep]).fit(q=q, max_iter=2000)
                    except (ValueError, np.linalg.LinAlgError) as exc:
                        raise ModelError(f"{self.name}: fit failed: {exc}") from exc
                row.append(np.asarray(fitted.params, dtype=np.float64))
            params.append(row)
        self.params_ = np.asarray(params)
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Level at each origin plus the regressed change quantiles."""
        if self.params_ is None:
            raise ModelError(f"{self.name}: predict() called before fit()")
        at = np.asarray(at, dtype=np.int64)
        x = self._design(history, at)
        change = np.einsum("nf,hqf->nhq", x, self.params_)
        values = np.maximum.accumulate(levels_at(history, at)[:, None, None] + change, axis=2)
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def _design(self, series: DemandSeries, at: IntArray) -> FloatArray:
        daily, weekly = self.terms_
        return design_matrix(series, at, daily_terms=daily, weekly_terms=weekly)

    def to_state(self) -> dict[str, Any]:
        """Settings and coefficients."""
        if self.params_ is None:
            raise ModelError(f"{self.name}: cannot save an unfitted model")
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "daily_terms": self.daily_terms,
            "weekly_terms": self.weekly_terms,
            "train_every_seconds": self.train_every_seconds,
            "terms_used": list(self.terms_),
            "params": self.params_.tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Inverse of ``to_state``."""
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]),
            quantiles=tuple(state["quantiles"]),
            daily_terms=int(state["daily_terms"]),
            weekly_terms=int(state["weekly_terms"]),
            train_every_seconds=int(state["train_every_seconds"]),
        )
        model.params_ = np.asarray(state["params"], dtype=np.float64)
        daily, weekly = state.get("terms_used", (model.daily_terms, model.weekly_terms))
        model.terms_ = (int(daily), int(weekly))
        return model
