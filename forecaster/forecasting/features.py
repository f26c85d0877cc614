"""Causal building blocks shared by the models: levels at origins and h-step changes.

Everything here looks only backwards from each origin, so a model built on it cannot peek at
the future (tests check predictions do not change when the history after the origin is cut).
"""

from __future__ import annotations

import numpy as np

from forecaster.core.series import DemandSeries, FloatArray, IntArray

DEFAULT_MAX_LEVEL_AGE_SECONDS = 600
"""How old the last observation may be and still count as 'the level now'."""


def forward_filled(values: FloatArray, *, max_steps: int) -> FloatArray:
    """Carry each observation forward over at most ``max_steps`` missing points."""
    idx = np.where(~np.isnan(values), np.arange(values.size), -1)
    last = np.maximum.accumulate(idx)
    filled = np.where(last >= 0, values[np.maximum(last, 0)], np.nan)
    age = np.arange(values.size) - last
    filled[(last < 0) | (age > max_steps)] = np.nan
    return filled


def levels_at(
    series: DemandSeries, at: IntArray, *, max_age_seconds: int = DEFAULT_MAX_LEVEL_AGE_SECONDS
) -> FloatArray:
    """Last observed value at or before each origin, NaN if older than ``max_age_seconds``."""
    max_steps = max_age_seconds // series.step_seconds
    values, index = reaching_back(series.values, series.index_of(at), steps=max_steps + 1)
    return take(forward_filled(values, max_steps=max_steps), index)


def reaching_back(
    values: FloatArray, index: IntArray, *, steps: int
) -> tuple[FloatArray, IntArray]:
    """The part of ``values`` that a feature looking at most ``steps`` back from each ``index``
    can read, and the indices into it: the same results, computed on minutes instead of weeks
    when a live tick predicts at one origin over days of history."""
    index = np.asarray(index, dtype=np.int64)
    if index.size == 0:
        return values, index
    # plain ints, not ``np.clip``: this runs at every forecast, where numpy's call costs more
    lo = min(max(int(index.min()) - steps, 0), values.size)
    hi = min(max(int(index.max()) + 1, lo), values.size)
    return values[lo:hi], index - lo


def take(values: FloatArray, index: IntArray) -> FloatArray:
    """``values[index]`` with NaN where the index falls outside the array."""
    index = np.asarray(index, dtype=np.int64)
    inside = (index >= 0) & (index < values.size)
    out = np.full(index.shape, np.nan)
    out[inside] = values[index[inside]]
    return out


def changes(values: FloatArray, steps: int) -> FloatArray:
    """``values[t + steps] - values[t]`` aligned at t (NaN where t + steps is past the end)."""
    out = np.full(values.size, np.nan)
    if steps < values.size:
        out[: values.size - steps] = values[steps:] - values[: values.size - steps]
    return out


def horizon_steps(series: DemandSeries, horizon_seconds: int) -> int:
    """A horizon in grid steps; horizons must be whole multiples of the step."""
    if horizon_seconds % series.step_seconds:
        raise ValueError(
            f"horizon {horizon_seconds}s is not a multiple of the {series.step_seconds}s step"
        )
    return horizon_seconds // series.step_seconds


def empirical_quantile(sample: FloatArray, q: float) -> float:
    """Quantile of the finite values in ``sample`` (NaN if there are none)."""
    finite = sample[np.isfinite(sample)]
    return float(np.quantile(finite, q)) if finite.size else float("nan")


def trailing_sum(values: FloatArray, index: IntArray, *, steps: int) -> FloatArray:
    """Sum of ``values[i - steps + 1 .. i]`` (NaN counted as 0) for each ``i`` in ``index``."""
    csum = np.concatenate(([0.0], np.cumsum(np.nan_to_num(values))))
    after = np.asarray(index) + 1
    hi = np.minimum(np.maximum(after, 0), values.size)  # ``np.clip``, without its overhead
    lo = np.minimum(np.maximum(after - steps, 0), values.size)
    return np.asarray(csum[hi] - csum[lo], dtype=np.float64)


def trailing_mean(values: FloatArray, index: IntArray, *, steps: int) -> FloatArray:
    """Mean of the non-NaN values among ``values[i - steps + 1 .. i]`` (NaN if none)."""
    counts = trailing_sum((~np.isnan(values)).astype(np.float64), index, steps=steps)
    total = trailing_sum(values, index, steps=steps)
    out = np.full(counts.shape, np.nan)
    np.divide(total, counts, out=out, where=counts > 0)
    return out


def trailing_max(values: FloatArray, index: IntArray, *, steps: int) -> FloatArray:
    """Max of the non-NaN values among ``values[i - steps + 1 .. i]`` (NaN if none)."""
    padded = np.concatenate(
        (np.full(steps - 1, -np.inf), np.where(np.isnan(values), -np.inf, values))
    )
    windows = np.lib.stride_tricks.sliding_window_view(padded, steps)
    index = np.asarray(index, dtype=np.int64)
    inside = (index >= 0) & (index < values.size)
    out = np.full(index.shape, np.nan)
    top = windows[index[inside]].max(axis=1)
    out[inside] = np.where(np.isfinite(top), top, np.nan)
    return out
