"""DemandSeries and Forecast: grid arithmetic, windows, immutability, lookup by number."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from forecaster.core.series import DemandSeries, Forecast, from_epoch_seconds, to_epoch_seconds


def series() -> DemandSeries:
    return DemandSeries(start=600, step_seconds=60, values=np.arange(10.0))


def test_grid_arithmetic() -> None:
    s = series()
    assert s.end == 600 + 9 * 60
    assert s.timestamps[3] == 780
    assert s.index_of(np.array([600, 659, 660])).tolist() == [0, 0, 1]
    assert s.usable_seconds == 600


def test_window_and_until() -> None:
    s = series()
    w = s.window(660, 840)
    assert w.start == 660 and w.values.tolist() == [1.0, 2.0, 3.0]
    assert s.until(719).values.tolist() == [0.0, 1.0]
    assert len(s.window(0, 10)) == 0
    assert s.window(0, 10**9).values.tolist() == s.values.tolist()


def test_values_are_read_only() -> None:
    with pytest.raises(ValueError, match=r"read-only"):
        series().values[0] = 5


def test_forecast_lookup_by_number() -> None:
    values = np.arange(12.0).reshape(2, 3, 2)
    f = Forecast("m", np.array([0, 60]), (300, 900, 1800), (0.5, 0.95), values)
    assert f.values_at(quantile=0.95, horizon_seconds=900).tolist() == [3.0, 9.0]
    with pytest.raises(KeyError, match=r"quantile 0\.9 not in forecast"):
        f.values_at(quantile=0.9, horizon_seconds=900)
    with pytest.raises(KeyError, match="horizon 60s"):
        f.values_at(quantile=0.5, horizon_seconds=60)
    with pytest.raises(ValueError, match="shape"):
        Forecast("m", np.array([0]), (300,), (0.5,), np.zeros((2, 1, 1)))


def test_epoch_conversion_refuses_naive_datetimes() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert from_epoch_seconds(to_epoch_seconds(moment)) == moment
    with pytest.raises(ValueError, match="naive"):
        to_epoch_seconds(datetime(2026, 1, 2))
