"""Train one pool: check the history, backtest the candidates, select, fit, publish.

Knows sources' output and forecasting, not where the data came from (the caller fetches it).
A pool with too little usable history is marked forecast-only with how much more it needs; a
model that fails in the backtest is simply not selected; the selected model is fitted on the whole
training history and published atomically.
"""

from __future__ import annotations

import hashlib
import logging
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from typing import Any, Literal

import numpy as np

from forecaster.core.operating_point import OperatingPoint
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries, from_epoch_seconds
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import ArrivalsModel, RiseModel
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.backtest import BacktestSpec, ModelRun, ModelScore, run_backtest, score
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.burst import BurstRule
from forecaster.forecasting.registry import FALLBACK, build
from forecaster.forecasting.selection import Selection, champion_or_challenger, select

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainingPlan:
    """Everything training needs to know, as plain values (no settings object)."""

    models: tuple[str, ...]
    horizons_seconds: tuple[int, ...]
    quantiles: tuple[float, ...]
    selection_horizon_seconds: int
    target_quantile: float
    coverage_tolerance: float
    min_history_seconds: int
    test_seconds: int
    train_seconds: int
    origin_every_seconds: int
    refit_every_seconds: int
    burst_alpha: float | None = None
    """Set for a pool whose policy is ``burst``: the burst rule with this alpha is published in
    the arrivals model's place (``forecasting.burst``)."""


@dataclass(frozen=True)
class PoolTraining:
    """The outcome for one pool, for the report and the logs."""

    pool: str
    status: Literal["trained", "forecast-only", "failed", "skipped"]
    message: str
    quality: QualityReport | None
    scores: tuple[ModelScore, ...] = ()
    runs: tuple[ModelRun, ...] = ()
    selection: Selection | None = None
    version: str | None = None
    fit_seconds: float = 0.0
    total_seconds: float = 0.0
    spec: BacktestSpec | None = None


def backtest_spec(series: DemandSeries, plan: TrainingPlan) -> BacktestSpec:
    """The plan's backtest, shortened to fit a history between the minimum and test+train."""
    span = series.end - series.start + series.step_seconds
    test = int(min(plan.test_seconds, max(DAY, span - plan.train_seconds)))
    train = int(min(plan.train_seconds, span - test))
    return BacktestSpec(
        horizon_seconds=plan.selection_horizon_seconds,
        quantile=plan.target_quantile,
        test_seconds=test,
        train_seconds=train,
        origin_every_seconds=plan.origin_every_seconds,
        refit_every_seconds=plan.refit_every_seconds,
    )


Progress = Callable[[str], None]
"""Called with each model's name once its backtest is done (the CLI's progress bar)."""


def backtest_models(
    series: DemandSeries,
    plan: TrainingPlan,
    *,
    spec: BacktestSpec,
    progress: Progress | None = None,
) -> tuple[list[ModelRun], list[ModelScore]]:
    """Run every candidate through the same backtest."""
    runs, scores = [], []
    for name in plan.models:

        def factory(name: str = name) -> Any:
            return build(name, horizons_seconds=(spec.horizon_seconds,), quantiles=plan.quantiles)

        run = run_backtest(series, factory, spec=spec, label=name)
        for failure in run.failures:
            log.warning("backtest of %s on %s: %s", name, series.name, failure)
        runs.append(run)
        scores.append(score(run, quantile=plan.target_quantile))
        if progress is not None:
            progress(name)
    return runs, scores


def train_pool(
    series: DemandSeries,
    quality: QualityReport,
    *,
    plan: TrainingPlan,
    store: ArtifactStore,
    created: str,
    progress: Progress | None = None,
    arrivals: DemandSeries | None = None,
    operating_point: OperatingPoint | None = None,
) -> PoolTraining:
    """Backtest, select, fit and publish the model for one pool (see module docstring).

    With the pool's ``arrivals`` (GPUs of pods created per step, on the series' grid) the
    peak-additional-demand model is fitted too and published with it; an ``operating_point``
    chosen on the same history is published with the model too."""
    began = time.perf_counter()
    pool = series.name
    usable = series.usable_seconds
    if usable < plan.min_history_seconds:
        return _too_short(pool, usable, plan, quality)
    spec = backtest_spec(series, plan)
    runs, scores = backtest_models(series, plan, spec=spec, progress=progress)
    selection = select(
        scores, target=plan.target_quantile, tolerance=plan.coverage_tolerance, fallback=FALLBACK
    )
    fit_began = time.perf_counter()
    model_name, model = _fitted(series, selection.model, plan)
    arrivals_model, arrivals_note = rise_model(series, arrivals, plan)
    fit_seconds = time.perf_counter() - fit_began
    promote, why = champion_or_challenger(store, pool, challenger=model_name, scores=scores)
    metadata = _metadata(
        series, quality=quality, scores=scores, selection=selection, spec=spec, plan=plan
    )
    version = store.publish(
        pool=pool,
        model_name=model_name,
        model=model,
        metadata=metadata,
        created=created,
        make_current=promote,
        arrivals=arrivals_model,
        operating_point=operating_point,
    )
    verb = "published" if promote else "published challenger"
    return PoolTraining(
        pool=pool,
        status="trained",
        message=f"{verb} {model_name} as version {version}: {why}; {arrivals_note}"
        + (f"; operating point {operating_point.reason}" if operating_point else ""),
        quality=quality,
        scores=tuple(scores),
        runs=tuple(runs),
        selection=selection,
        version=version,
        fit_seconds=fit_seconds,
        total_seconds=time.perf_counter() - began,
        spec=spec,
    )


def _too_short(pool: str, usable: int, plan: TrainingPlan, quality: QualityReport) -> PoolTraining:
    """The outcome for a pool with too little usable history: no model yet, and how much more."""
    missing = (plan.min_history_seconds - usable) / DAY
    return PoolTraining(
        pool=pool,
        status="forecast-only",
        message=(
            f"only {usable / DAY:.1f} days of usable history, needs"
            f" {plan.min_history_seconds / DAY:.0f}: {missing:.1f} more day(s);"
            " training publishes no model until then (the daemon forecasts with the"
            " persistence baseline)"
        ),
        quality=quality,
    )


def _fitted(series: DemandSeries, name: str, plan: TrainingPlan) -> tuple[str, Forecaster]:
    """The selected model fitted on the whole history; the fallback when it fails to fit."""
    try:
        model = build(name, horizons_seconds=plan.horizons_seconds, quantiles=plan.quantiles)
        model.fit(series)
    except ModelError as exc:
        log.warning(
            "pool %s: %s failed to fit (%s); falling back to %s", series.name, name, exc, FALLBACK
        )
        name = FALLBACK
        model = build(FALLBACK, horizons_seconds=plan.horizons_seconds, quantiles=plan.quantiles)
        model.fit(series)
    return name, model


def rise_model(
    series: DemandSeries, arrivals: DemandSeries | None, plan: TrainingPlan
) -> tuple[RiseModel | None, str]:
    """What the plan follows, and a line saying so (``fit_rise`` with the plan's horizons,
    quantiles and burst share)."""
    return fit_rise(
        series,
        arrivals,
        horizons_seconds=plan.horizons_seconds,
        quantiles=plan.quantiles,
        burst_alpha=plan.burst_alpha,
    )


def fit_rise(
    series: DemandSeries,
    arrivals: DemandSeries | None,
    *,
    horizons_seconds: tuple[int, ...],
    quantiles: tuple[float, ...],
    burst_alpha: float | None,
) -> tuple[RiseModel | None, str]:
    """What the plan follows, and a line saying so: the burst rule for a ``burst`` pool
    (``burst_alpha`` set), else the arrivals model where the pool's arrivals are known, else
    nothing (the level model). The training job and replay's weekly retrain both fit here."""
    if burst_alpha is not None:
        try:
            rule = BurstRule(horizons_seconds=horizons_seconds, alpha=burst_alpha).fit(series)
        except ModelError as exc:
            log.warning("pool %s: no burst rule: %s", series.name, exc)
            return None, f"no burst rule ({exc}): the plan follows the level model"
        floors = ", ".join(f"{f:.1f} GPUs in {h} s" for h, f in sorted(rule.floors_.items()))
        return rule, (
            f"burst rule (floor {floors} + {burst_alpha:g} x GPUs created in the last"
            " 15 min): the plan follows it"
        )
    if arrivals is None:
        return None, "no arrivals history: the plan follows the level model"
    return fit_arrivals(series, arrivals, horizons_seconds=horizons_seconds, quantiles=quantiles)


def fit_arrivals(
    demand: DemandSeries,
    arrivals: DemandSeries,
    *,
    horizons_seconds: tuple[int, ...],
    quantiles: tuple[float, ...],
) -> tuple[ArrivalsModel | None, str]:
    """The peak-additional-demand model fitted on the pool's history, and a line saying so -
    or None and why not (too little data: the plan then follows the level model)."""
    try:
        model = ArrivalsModel(horizons_seconds=horizons_seconds, quantiles=quantiles).fit(
            demand, arrivals
        )
    except ModelError as exc:
        log.warning("pool %s: no arrivals model: %s", demand.name, exc)
        return None, f"no arrivals model ({exc}): the plan follows the level model"
    return model, f"arrivals model fitted on {model.rows_} minutes: the plan follows it"


def data_hash(series: DemandSeries) -> str:
    """SHA-256 over the grid and values: the same data always hashes the same."""
    digest = hashlib.sha256(f"{series.start}:{series.step_seconds}:".encode())
    digest.update(np.ascontiguousarray(series.values).tobytes())
    return digest.hexdigest()


def _metadata(
    series: DemandSeries,
    *,
    quality: QualityReport,
    scores: list[ModelScore],
    selection: Selection,
    spec: BacktestSpec,
    plan: TrainingPlan,
) -> dict[str, Any]:
    return {
        "data": {
            "start": from_epoch_seconds(series.start).isoformat(),
            "end": from_epoch_seconds(series.end).isoformat(),
            "step_seconds": series.step_seconds,
            "usable_points": quality.usable_points,
            "sha256": data_hash(series),
            "quality": quality.describe(),
        },
        "horizons_seconds": list(plan.horizons_seconds),
        "quantiles": list(plan.quantiles),
        "backtest": {
            "horizon_seconds": spec.horizon_seconds,
            "test_seconds": spec.test_seconds,
            "train_seconds": spec.train_seconds,
            "scores": [
                {
                    "model": s.model,
                    "coverage": _finite(s.coverage),
                    "pinball": _finite(s.pinball),
                    "headroom_gpus": _finite(s.headroom_gpus),
                    "points": s.points,
                }
                for s in scores
            ],
            "selected": selection.model,
            "reason": selection.reason,
        },
        "versions": _library_versions(),
    }


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def _library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("forecaster", "numpy", "pandas", "scikit-learn", "statsmodels", "prophet"):
        try:
            versions[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return versions
