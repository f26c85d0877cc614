"""How much demand will *rise* within the prewarm window, from the pods created lately.

Waiting comes from new capacity needed within the lead time, not from the level of demand: a
pool steady at 300 GPUs needs no prewarm, a pool at 40 GPUs that just received a batch
submission of 64 GPUs does. So this model forecasts, per horizon ``h`` and quantile ``q``, the
*peak additional demand* over the window: ``max(demand over (t, t + h]) - demand(t)``, from

* the GPUs requested by pods created in the last 1, 5, 15 and 60 minutes
  (``core.cluster.ARRIVAL_WINDOWS_SECONDS``: batch submissions arrive in bursts that continue),
* the level of demand (running + pending GPUs: a big pool has more churn),
* the hour of the day and of the week (sine and cosine: when people submit).

Each (horizon, quantile) is a linear quantile regression (``statsmodels.QuantReg``), cross-
conformal calibrated: shifted by the quantile of the errors each time block of the history shows
under a fit without that block (``_calibrated``). Linear on purpose: it is applied at
every decision (15 s), its coefficients are plain JSON (artifacts never pickle), and a reason can
say what drove it. Training history: demand and arrivals per step (``sources``); live, the counts
come from the API server at each decision (``PoolSnapshot.arrivals``), not from a scrape.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar, Protocol, Self

import numpy as np
import statsmodels.api as sm

from forecaster.core.cluster import ARRIVAL_WINDOWS_SECONDS, RecentArrivals
from forecaster.core.series import DemandSeries, FloatArray, IntArray
from forecaster.errors import ModelError

FEATURES = (
    *(f"created_{w // 60}m" for w in ARRIVAL_WINDOWS_SECONDS),
    "level",
    "day_sin",
    "day_cos",
    "week_sin",
    "week_cos",
)
MIN_ROWS = 1440
"""At least a day of minutes with demand and arrivals known (and the window after them)."""
ROW_STRIDE = 2
"""Fit on every other minute: neighbouring minutes' targets share all but one minute of their
window and their counts all but one minute of history, so the second one adds almost nothing
(pinball loss over all of cluster04's rows within 0.1 % of the full fit's at q 0.5-0.95,
measured) at twice the cost."""
P_TOL = 1e-4
"""Quantile regression stops when no coefficient moves more than this (GPUs per feature unit).
statsmodels' default, 1e-6, takes 2-3x the iterations for a pinball loss within 1e-5 of it
(measured on cluster04's history): the weekly retrain of a replay fits this model 36 times."""


def features(*, created: FloatArray, level: FloatArray, at: IntArray) -> FloatArray:
    """The design matrix (``FEATURES`` plus an intercept) for rows of counts, level and time.

    ``created`` has one column per ``ARRIVAL_WINDOWS_SECONDS``."""
    hours = np.asarray(at, dtype=np.float64) / 3600.0
    day = 2 * np.pi * (hours % 24) / 24
    week = 2 * np.pi * (hours % 168) / 168
    return np.column_stack(
        [
            np.ones(hours.size),
            created,
            level,
            np.sin(day),
            np.cos(day),
            np.sin(week),
            np.cos(week),
        ]
    )


def trailing_counts(arrivals: DemandSeries) -> FloatArray:
    """For every grid point, GPUs created in each trailing window (NaN where a gap is in it).

    ``arrivals`` holds, at ``t``, the GPUs of pods created in (t - step, t]."""
    step = arrivals.step_seconds
    values = arrivals.values
    known = np.isfinite(values)
    total = np.concatenate([[0.0], np.cumsum(np.where(known, values, 0.0))])
    gaps = np.concatenate([[0], np.cumsum(~known)])
    index = np.arange(values.size)
    columns = []
    for window in ARRIVAL_WINDOWS_SECONDS:
        steps = max(1, window // step)
        first = np.maximum(0, index + 1 - steps)
        counts = total[index + 1] - total[first]
        complete = (gaps[index + 1] - gaps[first] == 0) & (index + 1 >= steps)
        columns.append(np.where(complete, counts, np.nan))
    return np.column_stack(columns)


def peak_rise(demand: DemandSeries, *, horizon_seconds: int) -> FloatArray:
    """``max(demand over (t, t + h]) - demand(t)`` per grid point (NaN near the end or a gap)."""
    steps = max(1, horizon_seconds // demand.step_seconds)
    values = demand.values
    rise = np.full(values.size, np.nan)
    if values.size <= steps:
        return rise
    ahead = np.lib.stride_tricks.sliding_window_view(values[1:], steps)
    rise[: ahead.shape[0]] = ahead.max(axis=1) - values[: ahead.shape[0]]  # NaN propagates
    return rise


class RiseModel(Protocol):
    """What the plan asks at every tick: the peak rise of demand within a horizon - the
    arrivals model's quantile, or the burst rule's one answer (``forecasting.burst``)."""

    name: ClassVar[str]

    def rise(
        self,
        *,
        level: float,
        recent: RecentArrivals,
        at: int,
        horizon_seconds: int,
        quantile: float,
    ) -> float: ...

    def to_state(self) -> dict[str, Any]: ...


class ArrivalsModel:
    """Quantiles of the peak additional demand per horizon (see the module docstring)."""

    name: ClassVar[str] = "arrivals"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        calibration_folds: int = 5,
    ) -> None:
        self.horizons_seconds = tuple(int(h) for h in horizons_seconds)
        self.quantiles = tuple(float(q) for q in quantiles)
        self.calibration_folds = calibration_folds
        self.coef_: dict[tuple[int, float], FloatArray] = {}
        self.rows_: int = 0
        self._last_row: tuple[tuple[float, tuple[int, ...], int], FloatArray] | None = None

    def fit(self, demand: DemandSeries, arrivals: DemandSeries) -> Self:
        """Learn from demand and arrivals on the same grid (``arrivals`` as in
        ``trailing_counts``); gaps are left out. Raises ``ModelError`` on too little data."""
        if (demand.start, demand.step_seconds, len(demand)) != (
            arrivals.start,
            arrivals.step_seconds,
            len(arrivals),
        ):
            raise ModelError("demand and arrivals must share one grid")
        if not np.nansum(arrivals.values) > 0:
            raise ModelError(
                "arrivals model: no pod was created in the whole history - the arrivals query"
                " sees none of this pool's pods"
            )
        created = trailing_counts(arrivals)
        design = features(created=created, level=demand.values, at=demand.timestamps)
        coef: dict[tuple[int, float], FloatArray] = {}
        for horizon in self.horizons_seconds:
            target = peak_rise(demand, horizon_seconds=horizon)
            rows = np.isfinite(target) & np.isfinite(design).all(axis=1)
            if np.count_nonzero(rows) < MIN_ROWS:
                raise ModelError(
                    f"arrivals model: {np.count_nonzero(rows)} usable minutes of demand and"
                    f" arrivals, needs {MIN_ROWS}"
                )
            rows[np.arange(rows.size) % ROW_STRIDE != 0] = False
            x, y = design[rows], target[rows]
            for quantile in self.quantiles:
                coef[(horizon, quantile)] = _calibrated(x, y, quantile, self.calibration_folds)
            self.rows_ = int(np.count_nonzero(rows))
        self.coef_ = coef
        return self

    def predict(
        self, *, level: float, recent: RecentArrivals, at: int
    ) -> dict[tuple[int, float], float]:
        """Peak additional demand per (horizon, quantile) at ``at``; never below zero."""
        row = self._row(level=level, recent=recent, at=at)
        return {key: max(0.0, float(row @ beta)) for key, beta in self.coef_.items()}

    def rise(
        self,
        *,
        level: float,
        recent: RecentArrivals,
        at: int,
        horizon_seconds: int,
        quantile: float,
    ) -> float:
        """One horizon and quantile of ``predict`` (what the loop asks at every tick)."""
        beta = next(
            (
                b
                for (h, q), b in self.coef_.items()
                if h == int(horizon_seconds) and abs(q - quantile) < 1e-9
            ),
            None,
        )
        if beta is None:
            raise ModelError(
                f"arrivals model has no horizon {horizon_seconds} s / quantile {quantile}"
                f" (has {sorted(self.coef_)})"
            )
        return max(0.0, float(self._row(level=level, recent=recent, at=at) @ beta))

    def _row(self, *, level: float, recent: RecentArrivals, at: int) -> FloatArray:
        if not self.coef_:
            raise ModelError("arrivals model is not fitted")
        key = (level, recent.gpus, at)
        if self._last_row is not None and self._last_row[0] == key:
            return self._last_row[1]  # the loop asks the median and the plan's quantile in turn
        rows = features(
            created=np.asarray([recent.gpus], dtype=np.float64),
            level=np.asarray([level], dtype=np.float64),
            at=np.asarray([at], dtype=np.int64),
        )
        row = np.asarray(rows[0], dtype=np.float64)
        self._last_row = (key, row)
        return row

    def to_state(self) -> dict[str, Any]:
        """Settings and coefficients as JSON-able data."""
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "calibration_folds": self.calibration_folds,
            "features": ["intercept", *FEATURES],
            "rows": self.rows_,
            "coefficients": [
                {"horizon_seconds": h, "quantile": q, "beta": [float(b) for b in beta]}
                for (h, q), beta in sorted(self.coef_.items())
            ],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Rebuild from ``to_state()``; refuses coefficients for other features."""
        if state.get("features") != ["intercept", *FEATURES]:
            raise ModelError("arrivals model state is for other features")
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]),
            quantiles=tuple(state["quantiles"]),
            calibration_folds=int(state["calibration_folds"]),
        )
        model.rows_ = int(state["rows"])
        model.coef_ = {
            (int(c["horizon_seconds"]), float(c["quantile"])): np.asarray(c["beta"], dtype=float)
            for c in state["coefficients"]
        }
        if any(beta.size != len(FEATURES) + 1 for beta in model.coef_.values()):
            raise ModelError("arrivals model state has coefficients of the wrong size")
        return model


def _calibrated(x: FloatArray, y: FloatArray, quantile: float, folds: int) -> FloatArray:
    """Quantile-regression coefficients fitted on every row, shifted by the ``quantile`` of the
    errors each of ``folds`` contiguous time blocks shows under a model fitted without it
    (cross-conformal). Every row calibrates, so the shift is not at the mercy of one short,
    unusually calm or bursty stretch - which a single hold-out of the last days is, since
    overlapping windows make neighbouring errors nearly the same event."""
    beta = _quantreg(x, y, quantile).copy()
    blocks = np.array_split(np.arange(len(y)), folds)
    errors = []
    for block in blocks:
        rest = np.ones(len(y), dtype=bool)
        rest[block] = False
        if block.size and rest.any():
            errors.append(y[block] - x[block] @ _quantreg(x[rest], y[rest], quantile))
    if errors:
        pooled = np.sort(np.concatenate(errors))
        rank = min(len(pooled) - 1, max(0, math.ceil((len(pooled) + 1) * quantile) - 1))
        beta[0] += float(pooled[rank])
    return beta


def _quantreg(x: FloatArray, y: FloatArray, quantile: float) -> FloatArray:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence and singular-design chatter
            result = sm.QuantReg(y, x).fit(q=quantile, max_iter=2000, p_tol=P_TOL)
    except (ValueError, np.linalg.LinAlgError) as exc:
        raise ModelError(f"arrivals model: quantile regression failed: {exc}") from exc
    beta = np.asarray(result.params, dtype=np.float64)
    if not np.isfinite(beta).all():
        raise ModelError("arrivals model: quantile regression gave non-finite coefficients")
    return beta
