"""A pool's demand forecast for one tick: the level forecast from the fetched history, and the
peak rise from the pods created lately (``forecasting.arrivals``) when the pool's model has one.

A pool whose data cannot be fetched keeps its last forecast (it goes stale); a pool with no
usable history or model has no demand, so the planner prewarms nothing for it. Every problem is
appended to the tick's errors, never raised.

``scripts/mutation_check.py`` pins exact lines of this module: a change to a pinned line updates
the mutation's strings there, never drops the mutation.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from forecaster.core.cluster import ARRIVAL_WINDOWS_SECONDS, DemandForecast, PoolSnapshot
from forecaster.core.error_budget import Evaluation
from forecaster.core.policy import PlanningHorizon
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries
from forecaster.errors import ForecasterError, ModelError
from forecaster.reconcile.operating_points import point_of, quantile_for
from forecaster.reconcile.records import Models, PoolRuntime, PoolTrack, PoolView, TickError
from forecaster.reconcile.scoring import score
from forecaster.reconcile.state import PoolState
from forecaster.sources.base import DemandSource

log = logging.getLogger("forecaster.reconcile.loop")  # the tick's lines, under one logger


@dataclass(frozen=True)
class History:
    """Where a pool's history comes from, and how much of it a forecast reads."""

    source: DemandSource
    models: Models
    lookback_seconds: int
    step_seconds: int


def forecast_pool(
    runtime: PoolRuntime,
    track: PoolTrack,
    pool_state: PoolState,
    history: History,
    *,
    now: int,
    horizon: PlanningHorizon,
    errors: list[TickError],
) -> tuple[PoolView, list[Evaluation]]:
    """Fetch the pool's history, score the pending forecasts on it and forecast anew."""
    name = runtime.policy.pool
    empty = PoolView(
        name,
        None,
        None,
        None,
        track.last_demand,
        None,
        (),
        None,
        0,
        runtime.target_quantile,
        horizon,
    )
    try:
        series, quality = history.source.fetch(
            name, start=now - history.lookback_seconds, end=now, step_seconds=history.step_seconds
        )
    except ForecasterError as exc:
        errors.append(TickError("data", name, str(exc)))
        log.error(
            "pool %s: no fresh data (%s); keeping the last forecast, which goes stale",
            name,
            exc,
        )
        return empty, []
    evaluations = score(pool_state, series)
    usable = np.flatnonzero(series.usable)
    active = history.models.get(name, history=series) if usable.size else None
    if active is not None:
        track.active = active
    if active is None:
        errors.append(TickError("model", name, "no usable history or model"))
        return PoolView(
            **{**empty.__dict__, "history": series, "quality": _lines(quality)}
        ), evaluations
    view = _predict(
        runtime,
        track,
        empty,
        series,
        quality=_lines(quality),
        evaluated=len(evaluations),
        errors=errors,
        ahead=horizon.horizon_seconds,
    )
    if view.forecast is not None:
        track.fetched = (now, view)
    return view, evaluations


def _predict(
    runtime: PoolRuntime,
    track: PoolTrack,
    empty: PoolView,
    series: DemandSeries,
    *,
    quality: tuple[str, ...],
    evaluated: int,
    errors: list[TickError],
    ahead: int,
) -> PoolView:
    """The view of the pool's current model forecasting from the end of its usable history."""
    active, name = track.active, runtime.policy.pool
    assert active is not None  # set by ``forecast_pool``
    origin = int(series.timestamps[np.flatnonzero(series.usable)[-1]])
    try:
        forecast = active.model.predict(series, at=np.array([origin], dtype=np.int64))
    except (ForecasterError, ValueError) as exc:
        errors.append(TickError("forecast", name, str(exc)))
        return PoolView(**{**empty.__dict__, "history": series})
    q = quantile_for(runtime, point_of(track))
    p95 = float(forecast.values_at(quantile=q, horizon_seconds=ahead)[0])
    p50 = float(forecast.values_at(quantile=0.5, horizon_seconds=ahead)[0])
    if math.isfinite(p95) and math.isfinite(p50):
        track.last_demand = DemandForecast(
            name, p50, p95, data_end=origin, model=active.name, quantile=q
        )
    return PoolView(
        name,
        active.name,
        active.version,
        forecast,
        track.last_demand,
        series,
        quality,
        None,
        evaluated,
        q,
        empty.horizon,
        active.operating_point,
    )


RISE_BY = {"arrivals": "arrivals model", "burst": "burst rule: floor + alpha x last 15 min"}


def with_arrivals(
    runtime: PoolRuntime,
    track: PoolTrack,
    view: PoolView,
    snapshot: PoolSnapshot,
    *,
    now: int,
    horizon: PlanningHorizon,
    errors: list[TickError],
) -> PoolView:
    """The view with the plan's demand from the arrivals model, when the pool has one and
    the cluster shows what was created lately; else as it was (the level forecast). Of
    unannounced work, as the level forecast: it rises from the GPUs of unannounced pods
    now (the plan adds announced work on top, ``core.planner.planned_demand``)."""
    name = runtime.policy.pool
    model = track.active.arrivals if track.active is not None else None
    recent = snapshot.arrivals
    if model is None or recent is None or snapshot.problem is not None:
        return view
    q, ahead, level = (
        quantile_for(runtime, point_of(track)),
        horizon.horizon_seconds,
        snapshot.real_demand_gpus - snapshot.announced_real_gpus,
    )
    try:
        upper = model.rise(level=level, recent=recent, at=now, horizon_seconds=ahead, quantile=q)
        median = model.rise(level=level, recent=recent, at=now, horizon_seconds=ahead, quantile=0.5)
    except ModelError as exc:
        errors.append(TickError("forecast", name, f"arrivals model: {exc}"))
        return view
    created = ", ".join(
        f"{g} in {w // 60} min" for g, w in zip(recent.gpus, ARRIVAL_WINDOWS_SECONDS, strict=True)
    )
    demand = DemandForecast(
        name,
        level + median,
        level + upper,
        data_end=now,
        model=model.name,
        quantile=q,
        peak=True,
        basis=f"{level} GPUs of unannounced work requested now + peak rise {upper:.1f}"
        f" within {ahead} s ({RISE_BY.get(model.name, model.name)});"
        f" GPUs of pods created: {created}",
    )
    return PoolView(**{**view.__dict__, "demand": demand})


def no_forecast(runtime: PoolRuntime) -> PoolView:
    """A pool whose forecasting failed: no demand, so the planner prewarms nothing."""
    name = runtime.policy.pool
    return PoolView(name, None, None, None, None, None, (), None, 0, runtime.target_quantile)


def _lines(quality: QualityReport) -> tuple[str, ...]:
    return tuple(quality.describe())
