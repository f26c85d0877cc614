"""Conformal calibration: finite-sample quantile, fixing a mis-calibrated model, adapting to drift.

Cases: conformal_quantile covers at least q of its own scores (property); a model whose P95 is far
too narrow (or too wide) reaches ~95 % coverage out of sample once wrapped; after the noise level
changes, adaptive calibration recovers coverage while the frozen offset does not; only scores
realized by the origin are used (no look-ahead).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.forecasting.backtest import BacktestSpec, run_backtest, score
from forecaster.forecasting.calibration import Calibrated, conformal_quantile
from tests.forecasting.fakes import LevelPlusConstant, random_walk

H = 900


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=300),
    st.floats(0.05, 0.99),
)
def test_conformal_quantile_covers_its_scores(scores: list[float], q: float) -> None:
    arr = np.array(scores)
    value = conformal_quantile(arr, q)
    assert np.mean(arr <= value) >= min(1.0, q)


def test_conformal_quantile_of_nothing_is_zero() -> None:
    assert conformal_quantile(np.array([np.nan]), 0.95) == 0.0


def backtest_coverage(series: DemandSeries, factory: object) -> float:
    spec = BacktestSpec(horizon_seconds=H, test_seconds=4 * DAY, train_seconds=5 * DAY)
    run = run_backtest(series, factory, spec=spec, label="x")  # type: ignore[arg-type]
    return score(run, quantile=0.95).coverage


@pytest.mark.parametrize("offset", [0.0, 200.0])
def test_wrapping_fixes_a_miscalibrated_model(offset: float) -> None:
    series = random_walk(10, scale=2.0, seed=1)  # 15-min change ~ N(0, 7.7): P95 ~ +12.7

    def raw() -> LevelPlusConstant:
        return LevelPlusConstant({0.5: 0.0, 0.95: offset}, (H,))

    raw_coverage = backtest_coverage(series, raw)
    assert raw_coverage < 0.6 or raw_coverage > 0.999
    calibrated = backtest_coverage(series, lambda: Calibrated(raw()))
    assert 0.93 <= calibrated <= 0.97


def test_adaptive_calibration_follows_a_change_in_volatility() -> None:
    calm = random_walk(8, scale=1.0, seed=2)
    wild = random_walk(4, scale=3.0, seed=3, start=calm.end + 60)
    series = DemandSeries(
        calm.start,
        60,
        np.concatenate((calm.values, wild.values - wild.values[0] + calm.values[-1])),
    )
    model = Calibrated(LevelPlusConstant({0.5: 0.0, 0.95: 0.0}, (H,)))
    model.fit(series.window(series.start, calm.end + 60))
    at = np.arange(calm.end + 2 * DAY, series.end - H, 300, dtype=np.int64)
    actual = series.values[series.index_of(at + H)]
    adaptive = model.predict(series, at=at).values_at(quantile=0.95, horizon_seconds=H)
    model.adaptive = False
    frozen = model.predict(series, at=at).values_at(quantile=0.95, horizon_seconds=H)
    assert np.mean(actual <= frozen) < 0.75
    assert np.mean(actual <= adaptive) > 0.9


def test_adaptive_scores_use_only_realized_targets() -> None:
    series = random_walk(6, scale=2.0, seed=4)
    model = Calibrated(LevelPlusConstant({0.5: 0.0, 0.95: 0.0}, (H,)))
    model.fit(series.window(series.start, series.start + 4 * DAY))
    at = np.arange(series.start + 4 * DAY + 3600, series.end - H, 1800, dtype=np.int64)
    full = model.predict(series, at=at).values
    for i, origin in enumerate(at):
        cut = model.predict(series.until(int(origin)), at=at[i : i + 1]).values
        np.testing.assert_allclose(cut[0], full[i])
