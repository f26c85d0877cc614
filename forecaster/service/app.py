"""Composition root: turns settings into sources, training plans and stores. The only wiring."""

from __future__ import annotations

import logging

from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries, to_epoch_seconds
from forecaster.errors import ForecasterError, SourceError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.service.clock import Clock
from forecaster.service.training import PoolTraining, TrainingPlan, train_pool
from forecaster.settings import PoolSettings, Settings
from forecaster.sources.base import DemandSource
from forecaster.sources.files import CsvSource
from forecaster.sources.prometheus import PrometheusSource

log = logging.getLogger(__name__)
DAY = 86400


def build_source(settings: Settings) -> DemandSource:
    """The configured demand source."""
    outage = settings.forecast.outage_min_seconds
    if settings.source.kind == "csv":
        files = {p.name: p.csv for p in settings.pools if p.csv is not None}
        return CsvSource(
            files, value_column=settings.source.csv_value_column, outage_min_seconds=outage
        )
    prom = settings.source.prometheus
    return PrometheusSource(
        url=prom.url,
        queries={p.name: p.query for p in settings.pools if p.query},
        timeout_seconds=prom.timeout_seconds,
        retries=prom.retries,
        backoff_seconds=prom.backoff_seconds,
        outage_min_seconds=outage,
    )


def training_plan(settings: Settings, pool: PoolSettings) -> TrainingPlan:
    """Plain training parameters for one pool."""
    forecast = settings.forecast
    return TrainingPlan(
        models=forecast.models,
        horizons_seconds=forecast.horizons_seconds,
        quantiles=forecast.quantiles,
        selection_horizon_seconds=settings.horizon_for(pool),
        target_quantile=forecast.target_quantile,
        coverage_tolerance=forecast.coverage_tolerance,
        min_history_seconds=int(forecast.min_history_days * DAY),
        test_seconds=int(forecast.backtest.test_days * DAY),
        train_seconds=int(forecast.backtest.train_days * DAY),
        origin_every_seconds=forecast.backtest.origin_every_seconds,
        refit_every_seconds=forecast.backtest.refit_every_seconds,
    )


def fetch_history(
    settings: Settings, source: DemandSource, pool: PoolSettings, *, clock: Clock
) -> tuple[DemandSeries, QualityReport]:
    """The trailing ``history_days`` of demand; a CSV file's history ends at its last row."""
    history = int(settings.forecast.history_days * DAY)
    step = settings.forecast.step_seconds
    if isinstance(source, CsvSource):
        full, _ = source.fetch_all(pool.name, step_seconds=step)
        end = full.end
    else:
        end = to_epoch_seconds(clock.now())
    series, report = source.fetch(pool.name, start=end - history + step, end=end, step_seconds=step)
    if series.usable_seconds == 0:
        raise SourceError(f"pool {pool.name}: the history holds no usable samples")
    return series, report


def train(settings: Settings, *, pools: list[str] | None, clock: Clock) -> list[PoolTraining]:
    """Train every selected pool; a pool that fails is reported as failed, the others go on."""
    source = build_source(settings)
    store = ArtifactStore(settings.models_dir)
    created = clock.now().strftime("%Y%m%dT%H%M%SZ")
    results = []
    for pool in settings.pools:
        if pools and pool.name not in pools:
            continue
        try:
            series, report = fetch_history(settings, source, pool, clock=clock)
            for line in report.describe():
                log.info("pool %s data: %s", pool.name, line)
            result = train_pool(
                series, report, plan=training_plan(settings, pool), store=store, created=created
            )
        except ForecasterError as exc:
            log.error("pool %s: training failed: %s", pool.name, exc)
            result = PoolTraining(pool=pool.name, status="failed", message=str(exc), quality=None)
        else:
            log.info("pool %s: %s", pool.name, result.message)
        results.append(result)
    return results
