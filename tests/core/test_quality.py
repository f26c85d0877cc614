"""regularize(): every data-quality case is fixed, counted and worded; nothing silently lost.

Cases: clean data; NaN/inf; negative; unsorted; duplicates (keep last); off-grid samples; gaps kept
as NaN; long zero runs excluded as outages, short ones kept, zero threshold disables; the real
Helios outages; and properties over random inputs (grid regular, every kept value in its slot).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forecaster.core.quality import regularize
from tests.conftest import HELIOS, load_sample

T0 = 1_700_000_040  # on the 60 s grid


def grid(n: int) -> np.ndarray:
    return T0 + 60 * np.arange(n)


def test_clean_data_is_untouched() -> None:
    values = np.array([3.0, 4, 4, 8])
    series, report = regularize(grid(4), values, step_seconds=60)
    assert report.clean and report.describe() == []
    assert series.start == T0 and series.step_seconds == 60
    np.testing.assert_array_equal(series.values, values)


@pytest.mark.parametrize(
    ("values", "field", "expected_gaps"),
    [
        ([1.0, np.nan, 3.0], "non_finite", 1),
        ([1.0, np.inf, 3.0], "non_finite", 1),
        ([1.0, -2.0, 3.0], "negative", 1),
    ],
)
def test_bad_values_become_gaps(values: list[float], field: str, expected_gaps: int) -> None:
    series, report = regularize(grid(3), values, step_seconds=60)
    assert getattr(report, field) == 1
    assert np.isnan(series.values).sum() == expected_gaps
    assert report.describe()


def test_unsorted_rows_are_sorted_and_reported() -> None:
    ts = grid(4)[[2, 0, 3, 1]]
    series, report = regularize(ts, [2.0, 0, 3, 1], step_seconds=60)
    assert report.unsorted
    np.testing.assert_array_equal(series.values, [0.0, 1, 2, 3])


def test_duplicates_keep_the_last_sample() -> None:
    ts = np.array([T0, T0 + 60, T0 + 60, T0 + 120])
    series, report = regularize(ts, [1.0, 5, 6, 7], step_seconds=60)
    assert report.duplicates == 1
    np.testing.assert_array_equal(series.values, [1.0, 6, 7])


def test_off_grid_samples_snap_to_the_nearest_point() -> None:
    ts = np.array([T0, T0 + 61, T0 + 118])
    series, report = regularize(ts, [1.0, 2, 3], step_seconds=60)
    assert report.off_grid == 2
    assert series.start == T0
    np.testing.assert_array_equal(series.values, [1.0, 2, 3])


def test_gaps_stay_gaps() -> None:
    ts = np.concatenate((grid(3), grid(10)[7:]))
    series, report = regularize(ts, np.ones(6), step_seconds=60)
    assert len(series) == 10
    assert report.gaps == ((T0 + 180, T0 + 420),)
    assert report.missing_points == 4
    assert np.isnan(series.values[3:7]).all()


def test_long_zero_runs_are_outages_short_ones_are_demand() -> None:
    values = np.concatenate(([5.0] * 10, [0.0] * 60, [5.0] * 10, [0.0] * 59, [5.0] * 10))
    series, report = regularize(grid(values.size), values, step_seconds=60, outage_min_seconds=3600)
    assert report.outages == ((T0 + 600, T0 + 600 + 3600),)
    assert report.excluded_points == 60
    assert np.isnan(series.values[10:70]).all()
    assert (series.values[80:139] == 0).all()
    assert "outage-like run of zeros excluded" in report.describe()[0]


def test_zero_threshold_keeps_all_zeros() -> None:
    values = np.zeros(200)
    series, report = regularize(grid(200), values, step_seconds=60, outage_min_seconds=0)
    assert report.outages == () and (series.values == 0).all()


def test_helios_outages_are_the_documented_windows() -> None:
    _, report = load_sample(HELIOS)
    stamps = [
        (np.datetime64(s, "s").astype(str), np.datetime64(e - 60, "s").astype(str))
        for s, e in report.outages
    ]
    # shared/data/README.md: 2020-05-09T15:56Z to 2020-05-10T16:00Z and 2020-05-12T06:01Z to 08:01Z
    assert stamps == [
        ("2020-05-09T15:56:00", "2020-05-10T16:00:00"),
        ("2020-05-12T06:01:00", "2020-05-12T08:01:00"),
    ]


def test_empty_or_mismatched_input_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        regularize(np.array([], dtype=np.int64), np.array([]), step_seconds=60)
    with pytest.raises(ValueError, match="equal length"):
        regularize(grid(3), [1.0, 2.0], step_seconds=60)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=500),
            st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 50)),
        ),
        min_size=1,
        max_size=60,
    )
)
def test_properties_over_random_samples(rows: list[tuple[int, float]]) -> None:
    ts = np.array([T0 + 60 * slot for slot, _ in rows], dtype=np.int64)
    values = np.array([float(v) for _, v in rows])
    series, report = regularize(ts, values, step_seconds=60, outage_min_seconds=0)
    assert series.start == ts.min() and series.end == ts.max()
    assert len(series) == (ts.max() - ts.min()) // 60 + 1
    assert report.samples == len(rows)
    assert report.usable_points == np.count_nonzero(np.isfinite(series.values))
    assert np.all(np.isnan(series.values) | (series.values >= 0))
    # the last sample given for each slot wins when it is a valid count
    last: dict[int, float] = {}
    for slot, value in rows:
        last[slot] = float(value)
    for slot, value in last.items():
        got = series.values[(T0 + 60 * slot - series.start) // 60]
        if np.isfinite(value) and value >= 0:
            assert got == value
        else:
            assert np.isnan(got)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 50)),
        min_size=1,
        max_size=60,
    ),
    st.integers(0, 59),
)
def test_a_clean_grid_takes_the_short_way_to_the_same_result(
    values: list[float], offset: int
) -> None:
    """Samples already on the grid skip sorting and snapping; samples evenly spaced but off
    the grid (``offset``) still snap and are counted."""
    ts = grid(len(values)) + offset
    series, report = regularize(ts, [float(v) for v in values], step_seconds=60)
    shuffled = np.concatenate((ts[1:], ts[:1]))  # the general path: sort, snap, dedupe
    rolled = [float(v) for v in values[1:] + values[:1]]
    general, general_report = regularize(shuffled, rolled, step_seconds=60)
    np.testing.assert_array_equal(series.values, general.values)
    assert series.start == general.start
    assert report.off_grid == general_report.off_grid == (len(values) if offset else 0)
    assert report.gaps == general_report.gaps and report.outages == general_report.outages
    assert report.unsorted is False and general_report.unsorted is (len(values) > 1)
