"""Features computed on the reach of an origin equal those computed on the whole history.

A live tick predicts at one origin over two days of minutes; the level and the volatility term
only look back minutes, so they are computed on that reach (``features.reaching_back``). For any
history (gaps anywhere) and any origins (inside, before or after the grid), the result is the
one the whole history gives.
"""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from forecaster.core.series import DemandSeries
from forecaster.forecasting.features import forward_filled, levels_at, take, trailing_sum
from forecaster.forecasting.statsmodels_model import design_matrix

START = 1_800_000_000


def whole_history_level(series: DemandSeries, at: np.ndarray) -> np.ndarray:
    return take(forward_filled(series.values, max_steps=10), series.index_of(at))


def whole_history_volatility(series: DemandSeries, at: np.ndarray) -> np.ndarray:
    moves = np.abs(np.diff(forward_filled(series.values, max_steps=10), prepend=np.nan))
    return np.log1p(trailing_sum(moves, series.index_of(at), steps=60))


NAN = float("nan")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([NAN, NAN, NAN, 0.0, 3.0, 8.0, 250.0]), min_size=1, max_size=300),
    st.lists(st.integers(-90, 400), min_size=1, max_size=4),
)
@example([7.0] + [NAN] * 10, [10])  # the level is exactly as old as it may be
@example([7.0] + [NAN] * 10 + [9.0] * 50 + [NAN] * 20, [70])  # a move an hour + fill back
def test_features_on_the_reach_equal_the_whole_history(
    values: list[float], minutes: list[int]
) -> None:
    series = DemandSeries(START, 60, np.asarray(values), name="a")
    at = np.asarray([START + 60 * m for m in minutes], dtype=np.int64)
    np.testing.assert_array_equal(levels_at(series, at), whole_history_level(series, at))
    design = design_matrix(series, at, daily_terms=1, weekly_terms=1)
    np.testing.assert_array_equal(design[:, -1], whole_history_volatility(series, at))
