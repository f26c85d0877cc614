"""Turn raw samples into a clean regular ``DemandSeries`` and say what was wrong with them.

Every source (CSV, Prometheus, the cluster twin) hands its samples to ``regularize`` so the same
rules apply everywhere:

* NaN and infinite values, and negative GPU counts, become gaps (a request count is never < 0);
* unsorted rows are sorted; duplicated timestamps keep the last sample;
* samples off the step grid snap to the nearest grid point;
* missing grid points stay gaps (NaN) - they are never interpolated;
* a run of exact zeros at least ``outage_min_seconds`` long looks like an outage or lost
  monitoring (the Helios trace has a 24 h and a 2 h one) and is excluded, so models neither learn
  it as demand nor get scored on it. Set ``outage_min_seconds=0`` to keep zeros.

Nothing is dropped silently: ``QualityReport`` counts each case and ``describe`` words it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from forecaster.core.series import DemandSeries, FloatArray, IntArray, iso_utc

Window = tuple[int, int]
"""A time window ``(start, end)`` in epoch seconds, end exclusive."""


@dataclass(frozen=True)
class QualityReport:
    """What ``regularize`` found and did, in counts of samples and windows of time."""

    samples: int
    non_finite: int
    negative: int
    unsorted: bool
    duplicates: int
    off_grid: int
    gaps: tuple[Window, ...]
    outages: tuple[Window, ...]
    usable_points: int
    step_seconds: int
    outside_window: int = 0
    """Samples stamped outside the asked window, dropped before gridding (a sample from 1970
    would otherwise make a grid of millions of points)."""

    @property
    def missing_points(self) -> int:
        """Grid points with no sample at all."""
        return sum((end - start) // self.step_seconds for start, end in self.gaps)

    @property
    def excluded_points(self) -> int:
        """Grid points dropped as outages."""
        return sum((end - start) // self.step_seconds for start, end in self.outages)

    @property
    def clean(self) -> bool:
        """True when nothing had to be fixed or excluded."""
        return not (
            self.outside_window
            or self.non_finite
            or self.negative
            or self.unsorted
            or self.duplicates
            or self.off_grid
            or self.gaps
            or self.outages
        )

    def describe(self) -> list[str]:
        """One human sentence per problem found (empty when the data was clean)."""
        lines: list[str] = []
        if self.outside_window:
            lines.append(f"{self.outside_window} sample(s) outside the asked window dropped")
        if self.non_finite:
            lines.append(f"{self.non_finite} NaN/infinite value(s) treated as gaps")
        if self.negative:
            lines.append(f"{self.negative} negative value(s) treated as gaps")
        if self.unsorted:
            lines.append("samples were out of order and have been sorted")
        if self.duplicates:
            lines.append(f"{self.duplicates} duplicated timestamp(s): kept the last sample")
        if self.off_grid:
            lines.append(
                f"{self.off_grid} sample(s) off the {self.step_seconds}s grid snapped to it"
            )
        if self.gaps:
            lines.append(
                f"{len(self.gaps)} gap(s), {self.missing_points} missing point(s) kept as gaps"
                f" (longest {_longest(self.gaps) // 60} min)"
            )
        for start, end in self.outages:
            first, last = iso_utc(start, minutes=True), iso_utc(end, minutes=True)
            lines.append(
                f"outage-like run of zeros excluded: {first} to {last} ({(end - start) // 60} min)"
            )
        return lines


MAX_GRID_POINTS = 2_000_000
"""About 3.8 years of minutes (16 MB of float64): no history we forecast from is longer."""


def regularize(
    timestamps: IntArray | npt.ArrayLike,
    values: FloatArray | npt.ArrayLike,
    *,
    step_seconds: int,
    name: str = "",
    outage_min_seconds: int = 3600,
    window: tuple[int, int] | None = None,
) -> tuple[DemandSeries, QualityReport]:
    """Clean raw ``(timestamps, values)`` onto a regular grid; see the module docstring.

    ``window`` (first, last): samples stamped outside it are dropped and counted first. Without
    one, a span of more than ``MAX_GRID_POINTS`` steps is refused rather than allocated."""
    ts, vals, outside = _checked(timestamps, values, step_seconds, name=name, window=window)
    non_finite = ~np.isfinite(vals)
    vals[non_finite] = np.nan
    negative = vals < 0
    vals[negative] = np.nan

    steps = np.diff(ts)
    if ts[0] % step_seconds == 0 and bool(np.all(steps == step_seconds)):
        # already the grid (the twin; most range queries): nothing to sort, snap or dedupe
        start, grid = int(ts[0]), vals
        unsorted, duplicates, off_grid = False, 0, 0
    else:
        start, grid, unsorted, duplicates, off_grid = _onto_grid(ts, vals, steps, step_seconds)

    gaps = _runs(np.isnan(grid), start=start, step_seconds=step_seconds, min_points=1)
    outages: tuple[Window, ...] = ()
    if outage_min_seconds > 0:
        min_points = max(1, -(-outage_min_seconds // step_seconds))
        outages = _runs(grid == 0, start=start, step_seconds=step_seconds, min_points=min_points)
        for first, stop in outages:
            grid[(first - start) // step_seconds : (stop - start) // step_seconds] = np.nan

    series = DemandSeries(start=start, step_seconds=step_seconds, values=grid, name=name)
    report = QualityReport(
        samples=int(ts.size),
        non_finite=int(np.count_nonzero(non_finite)),
        negative=int(np.count_nonzero(negative)),
        unsorted=unsorted,
        duplicates=duplicates,
        off_grid=off_grid,
        gaps=gaps,
        outages=outages,
        usable_points=int(np.count_nonzero(~np.isnan(grid))),
        step_seconds=step_seconds,
        outside_window=outside,
    )
    return series, report


def _checked(
    timestamps: IntArray | npt.ArrayLike,
    values: FloatArray | npt.ArrayLike,
    step_seconds: int,
    *,
    name: str,
    window: tuple[int, int] | None,
) -> tuple[IntArray, FloatArray, int]:
    """The samples inside ``window`` (a copy: ``regularize`` writes to it) and how many were
    outside; ``ValueError`` for none left or a span too long to allocate."""
    ts = np.asarray(timestamps, dtype=np.int64)
    vals = np.asarray(values, dtype=np.float64).copy()
    if ts.shape != vals.shape or ts.ndim != 1:
        raise ValueError("timestamps and values must be one-dimensional and of equal length")
    outside = 0
    if window is not None:
        inside = (ts >= window[0]) & (ts <= window[1])
        outside = int(ts.size - np.count_nonzero(inside))
        ts, vals = ts[inside], vals[inside]
    if ts.size == 0:
        raise ValueError(
            "no samples" + (f" ({outside} outside the asked window)" if outside else "")
        )
    span = (int(ts.max()) - int(ts.min())) // step_seconds + 1
    if span > MAX_GRID_POINTS:
        raise ValueError(
            f"{name or 'series'}: samples from {iso_utc(int(ts.min()))} to {iso_utc(int(ts.max()))}"
            f" would make {span} points of {step_seconds}s (at most {MAX_GRID_POINTS}):"
            " a wrong timestamp?"
        )
    return ts, vals, outside


def _onto_grid(
    ts: IntArray, vals: FloatArray, steps: IntArray, step_seconds: int
) -> tuple[int, FloatArray, bool, int, int]:
    """Samples in any order onto the grid: (start, grid, unsorted, duplicates, off-grid)."""
    unsorted = bool(np.any(steps < 0))
    order = np.argsort(ts, kind="stable")
    ts, vals = ts[order], vals[order]

    snapped = np.round(ts / step_seconds).astype(np.int64) * step_seconds
    off_grid = int(np.count_nonzero(snapped != ts))
    # keep the last sample for each grid point (stable sort keeps arrival order among equals)
    last_of_run = np.append(snapped[1:] != snapped[:-1], True)
    duplicates = int(snapped.size - np.count_nonzero(last_of_run))
    snapped, vals = snapped[last_of_run], vals[last_of_run]

    start = int(snapped[0])
    length = int((snapped[-1] - start) // step_seconds) + 1
    grid = np.full(length, np.nan)
    grid[(snapped - start) // step_seconds] = vals
    return start, grid, unsorted, duplicates, off_grid


def _runs(
    mask: npt.NDArray[np.bool_], *, start: int, step_seconds: int, min_points: int
) -> tuple[Window, ...]:
    """Windows where ``mask`` is True for at least ``min_points`` consecutive grid points."""
    padded = np.concatenate(([False], mask, [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    firsts, stops = edges[0::2], edges[1::2]
    return tuple(
        (start + int(a) * step_seconds, start + int(b) * step_seconds)
        for a, b in zip(firsts, stops, strict=True)
        if b - a >= min_points
    )


def _longest(windows: tuple[Window, ...]) -> int:
    return max(end - start for start, end in windows)
