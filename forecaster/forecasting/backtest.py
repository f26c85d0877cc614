"""Rolling-origin backtests: how each model would have done, forecast by forecast.

The last ``test_seconds`` of a series is the test period. Origins fall every
``origin_every_seconds`` in it. Models are refitted every ``refit_every_seconds`` on the trailing
``train_seconds`` before the refit time - never on anything after it - and then forecast every
origin up to the next refit using the history up to that origin only. Points whose actual value
is a gap or an excluded outage are not scored.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from forecaster.core.series import DemandSeries, FloatArray, IntArray
from forecaster.durations import DAY
from forecaster.errors import DataError, ModelError
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.features import take
from forecaster.forecasting.scoring import coverage, headroom, pinball_loss

ModelFactory = Callable[[], Forecaster]


@dataclass(frozen=True)
class BacktestSpec:
    """Where and how often to forecast and refit."""

    horizon_seconds: int
    quantile: float = 0.95
    test_seconds: int = 7 * DAY
    train_seconds: int = 14 * DAY
    origin_every_seconds: int = 300
    refit_every_seconds: int = DAY


@dataclass(frozen=True)
class ModelRun:
    """All scored forecasts of one model."""

    model: str
    origins: IntArray
    p50: FloatArray
    upper: FloatArray
    actual: FloatArray
    fit_seconds: tuple[float, ...]
    failures: tuple[str, ...]


@dataclass(frozen=True)
class ModelScore:
    """Summary of a model's run: what selection and the report look at."""

    model: str
    coverage: float
    pinball: float
    headroom_gpus: float
    mean_fit_seconds: float
    points: int
    failures: int


def score(run: ModelRun, *, quantile: float) -> ModelScore:
    """Coverage, pinball loss and headroom of one run."""
    if run.actual.size == 0:
        nan = float("nan")
        return ModelScore(run.model, nan, nan, nan, nan, 0, len(run.failures))
    return ModelScore(
        model=run.model,
        coverage=coverage(run.actual, run.upper),
        pinball=pinball_loss(run.actual, run.upper, quantile=quantile),
        headroom_gpus=headroom(run.actual, run.upper),
        mean_fit_seconds=float(np.mean(run.fit_seconds)) if run.fit_seconds else float("nan"),
        points=int(run.actual.size),
        failures=len(run.failures),
    )


def run_backtest(
    series: DemandSeries, factory: ModelFactory, *, spec: BacktestSpec, label: str
) -> ModelRun:
    """Backtest one model; a failed refit leaves its block unscored and is recorded."""
    test_start = _test_start(series, spec)
    origins_all: list[IntArray] = []
    p50s: list[FloatArray] = []
    uppers: list[FloatArray] = []
    actuals: list[FloatArray] = []
    fit_seconds: list[float] = []
    failures: list[str] = []
    for block_start in range(test_start, series.end + 1, spec.refit_every_seconds):
        block_end = min(block_start + spec.refit_every_seconds, series.end + 1)
        origins = np.arange(block_start, block_end, spec.origin_every_seconds, dtype=np.int64)
        origins = origins[origins + spec.horizon_seconds <= series.end]
        if origins.size == 0:
            continue
        train = series.window(block_start - spec.train_seconds, block_start)
        model = factory()
        began = time.perf_counter()
        try:
            model.fit(train)
        except (ModelError, ValueError) as exc:
            failures.append(f"fit at {block_start}: {exc}")
            continue
        fit_seconds.append(time.perf_counter() - began)
        forecast = model.predict(series.until(int(origins[-1])), at=origins)
        p50 = forecast.values_at(quantile=0.5, horizon_seconds=spec.horizon_seconds)
        upper = forecast.values_at(quantile=spec.quantile, horizon_seconds=spec.horizon_seconds)
        actual = take(series.values, series.index_of(origins + spec.horizon_seconds))
        keep = np.isfinite(actual) & np.isfinite(upper) & np.isfinite(p50)
        origins_all.append(origins[keep])
        p50s.append(p50[keep])
        uppers.append(upper[keep])
        actuals.append(actual[keep])
    return ModelRun(
        model=label,
        origins=_concat(origins_all, np.int64),
        p50=_concat(p50s, np.float64),
        upper=_concat(uppers, np.float64),
        actual=_concat(actuals, np.float64),
        fit_seconds=tuple(fit_seconds),
        failures=tuple(failures),
    )


def _test_start(series: DemandSeries, spec: BacktestSpec) -> int:
    test_start = series.end + series.step_seconds - spec.test_seconds
    test_start -= (test_start - series.start) % spec.origin_every_seconds
    have = test_start - series.start
    if have < spec.train_seconds:
        raise DataError(
            f"backtest needs {spec.train_seconds / DAY:.1f} days of history before the"
            f" {spec.test_seconds / DAY:.1f}-day test period; the series has"
            f" {(series.end - series.start + series.step_seconds) / DAY:.1f} days in all"
        )
    return test_start


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype=dtype)
