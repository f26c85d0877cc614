"""Backtest mechanics: refits see only the past, scores are right, short data is refused.

Cases: every refit's training window ends before its block and spans train_seconds; forecasts are
made from history ending at the last origin of the block; pinball/coverage/headroom known values;
gaps in the actuals are not scored; too-short series raise DataError naming the days needed.
"""

from __future__ import annotations

import numpy as np
import pytest

from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import DataError
from forecaster.forecasting.backtest import BacktestSpec, run_backtest, score
from forecaster.forecasting.scoring import coverage, headroom, pinball_loss
from tests.forecasting.fakes import LevelPlusConstant, random_walk


def test_refits_see_only_the_past() -> None:
    series = random_walk(10, scale=1.0, seed=0)
    models: list[LevelPlusConstant] = []

    def factory() -> LevelPlusConstant:
        models.append(LevelPlusConstant({0.5: 0.0, 0.95: 1.0}, (900,)))
        return models[-1]

    spec = BacktestSpec(horizon_seconds=900, test_seconds=3 * DAY, train_seconds=5 * DAY)
    run = run_backtest(series, factory, spec=spec, label="fake")
    assert len(models) == 3
    for model in models:
        ((fit_start, fit_end),) = model.fitted_on
        ((last_origin, history_end),) = model.predicted_with
        block_start = fit_end + 60
        assert fit_end - fit_start + 60 == 5 * DAY
        assert history_end == last_origin < block_start + DAY
    assert run.origins.min() >= series.end + 60 - 3 * DAY
    assert (run.origins + 900 <= series.end).all()


def test_gaps_in_actuals_are_not_scored() -> None:
    base = random_walk(9, scale=1.0, seed=0)
    values = base.values.copy()
    values[-1440:-720] = np.nan
    series = DemandSeries(base.start, 60, values)
    spec = BacktestSpec(horizon_seconds=900, test_seconds=2 * DAY, train_seconds=5 * DAY)
    run = run_backtest(
        series, lambda: LevelPlusConstant({0.5: 0, 0.95: 1}, (900,)), spec=spec, label="f"
    )
    assert np.isfinite(run.actual).all()
    assert run.actual.size < 2 * 288 - 100


def test_scoring_known_values() -> None:
    actual = np.array([10.0, 10.0, 10.0, 20.0])
    upper = np.array([12.0, 12.0, 12.0, 12.0])
    assert coverage(actual, upper) == 0.75
    assert headroom(actual, upper) == pytest.approx((2 + 2 + 2 - 8) / 4)
    # three points 2 above (0.05 * 2 each), one 8 below (0.95 * 8)
    assert pinball_loss(actual, upper, quantile=0.95) == pytest.approx((3 * 0.1 + 7.6) / 4)


def test_too_short_series_names_what_is_needed() -> None:
    series = random_walk(10, scale=1.0, seed=0)
    with pytest.raises(DataError, match=r"needs 14.0 days of history before the 7.0-day test"):
        run_backtest(
            series,
            lambda: LevelPlusConstant({0.5: 0, 0.95: 1}, (900,)),
            spec=BacktestSpec(horizon_seconds=900),
            label="f",
        )


def test_score_of_a_run_with_nothing_to_score_is_nan() -> None:
    base = random_walk(4, scale=1.0, seed=0)
    values = base.values.copy()
    values[-1440:] = np.nan  # the whole test day is a gap
    series = DemandSeries(base.start, 60, values)
    spec = BacktestSpec(horizon_seconds=900, test_seconds=DAY, train_seconds=2 * DAY)
    run = run_backtest(
        series, lambda: LevelPlusConstant({0.5: 0, 0.95: 1}, (900,)), spec=spec, label="f"
    )
    result = score(run, quantile=0.95)
    assert result.points == 0 and np.isnan(result.pinball) and np.isnan(result.coverage)
