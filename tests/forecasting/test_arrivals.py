"""The arrivals model: what it learns from pods created lately, its calibration and its state.

Covers: trailing counts and the peak-rise target on hand-made grids (gaps stay gaps), a burst in
progress raising the forecast over a quiet pool, split-conformal coverage on later data it never
saw, the JSON state round trip (and refusal of other features), too little data, other grids.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from forecaster.core.cluster import RecentArrivals
from forecaster.core.series import DemandSeries
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import (
    ArrivalsModel,
    features,
    peak_rise,
    trailing_counts,
)
from tests.factories import bursty

HORIZONS = (300, 600)
QUANTILES = (0.5, 0.9)


@pytest.fixture(scope="module")
def fitted() -> ArrivalsModel:
    demand, arrivals = bursty(14, seed=1)
    return ArrivalsModel(horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(demand, arrivals)


def test_trailing_counts_sum_each_window_and_leave_gaps_as_gaps() -> None:
    values = np.zeros(70)
    values[[0, 10, 65]] = [1, 2, 4]
    values[30] = np.nan
    counts = trailing_counts(DemandSeries(0, 60, values))
    assert counts[10, 0] == 2 and counts[10, 1] == 2  # the last minute, the last 5
    assert np.isnan(counts[10, 2])  # 15 minutes not observed yet: unknown, not 2
    assert counts[14, 2] == 3
    assert counts[65, 0] == 4 and counts[65, 1] == 4
    assert np.isnan(counts[40, 2])  # the gap at 30 is within its 15 minutes
    assert counts[50, 2] == 0  # ...and not within these
    assert np.isnan(counts[65, 3]) and np.isnan(counts[10, 3])  # the hour holds the gap / is short


def test_peak_rise_is_the_highest_demand_ahead_over_now() -> None:
    demand = DemandSeries(0, 60, np.array([5.0, 3, 9, 4, 4, 4, np.nan, 1]))
    rise = peak_rise(demand, horizon_seconds=120)
    np.testing.assert_array_equal(rise, [4, 6, -5, 0, np.nan, np.nan, np.nan, np.nan])


def test_a_burst_in_progress_raises_the_forecast(fitted: ArrivalsModel) -> None:
    at = 1_800_003_600
    quiet = fitted.rise(
        level=20, recent=RecentArrivals((0, 1, 3, 12)), at=at, horizon_seconds=600, quantile=0.9
    )
    burst = fitted.rise(
        level=20, recent=RecentArrivals((8, 24, 24, 30)), at=at, horizon_seconds=600, quantile=0.9
    )
    assert burst > quiet + 16  # the rest of the burst (8 a minute for the minutes left) ahead
    assert quiet < 10


def test_calibrated_quantile_covers_later_data_it_never_saw(fitted: ArrivalsModel) -> None:
    demand, arrivals = bursty(14, seed=2, start=1_800_000_000 + 20 * 86400)
    target = peak_rise(demand, horizon_seconds=600)
    x = features(created=trailing_counts(arrivals), level=demand.values, at=demand.timestamps)
    rows = np.isfinite(target) & np.isfinite(x).all(axis=1)
    beta = fitted.coef_[(600, 0.9)]
    covered = np.mean(target[rows] <= np.maximum(0, x[rows] @ beta))
    assert 0.86 <= covered <= 0.95


def test_state_round_trips_through_json_and_refuses_other_features(fitted: ArrivalsModel) -> None:
    state = json.loads(json.dumps(fitted.to_state()))
    again = ArrivalsModel.from_state(state)
    recent = RecentArrivals((3, 9, 20, 40))
    assert again.predict(level=33, recent=recent, at=1_800_000_000) == fitted.predict(
        level=33, recent=recent, at=1_800_000_000
    )
    state["features"] = state["features"][:-1]
    with pytest.raises(ModelError, match="other features"):
        ArrivalsModel.from_state(state)


def test_too_little_data_no_arrivals_or_another_grid_is_refused() -> None:
    demand, arrivals = bursty(0.5, seed=3)
    with pytest.raises(ModelError, match="usable minutes"):
        ArrivalsModel(horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(demand, arrivals)
    demand, arrivals = bursty(3, seed=3)
    with pytest.raises(ModelError, match="no pod was created"):
        ArrivalsModel(horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(
            demand, DemandSeries(arrivals.start, 60, arrivals.values * 0)
        )
    shifted = DemandSeries(arrivals.start + 60, 60, arrivals.values)
    with pytest.raises(ModelError, match="one grid"):
        ArrivalsModel(horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(demand, shifted)


def test_an_unknown_horizon_is_named(fitted: ArrivalsModel) -> None:
    with pytest.raises(ModelError, match="no horizon 900 s"):
        fitted.rise(
            level=0, recent=RecentArrivals((0, 0, 0, 0)), at=0, horizon_seconds=900, quantile=0.9
        )
