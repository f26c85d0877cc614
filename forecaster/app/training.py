"""The weekly training job: fetch each pool's history, train it, share the models.

``forecasting.training.train_pool`` does the work for one series; this module fetches the
history the settings name and, with the ConfigMap model store, installs the published champions
first and publishes what became current afterwards. A pool that fails is reported, not fatal.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

from forecaster.actuators.coordination.model_configmaps import ModelConfigMaps
from forecaster.app.build import pool_policy, training_plan
from forecaster.app.build_replay import replay_setup_from_settings
from forecaster.app.connect import build_source
from forecaster.app.model_sharing import fetch_models, model_store, publish_models
from forecaster.app.replay_policies import replay_policy
from forecaster.core.jobs import JobTrace
from forecaster.core.operating_point import OperatingPoint
from forecaster.core.series import DemandSeries, to_epoch_seconds
from forecaster.durations import DAY, format_duration
from forecaster.errors import ForecasterError, SourceError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import PoolTraining, Progress, train_pool
from forecaster.service.clock import Clock
from forecaster.settings import PoolSettings, Settings
from forecaster.simulation.operating_point import choose_operating_point
from forecaster.sources.base import DemandSource, PodHistorySource
from forecaster.sources.inputs import TrainingInputs, gather, history_end

log = logging.getLogger(__name__)


def fetch_history(
    settings: Settings, source: DemandSource, *, pool: PoolSettings, clock: Clock
) -> TrainingInputs:
    """The trailing ``history_days`` of demand, and the arrivals on its grid; a recorded
    history (a CSV file) ends at its last row."""
    history = int(settings.forecast.history_days * DAY)
    step = settings.forecast.step_seconds
    now = to_epoch_seconds(clock.now())
    end = history_end(source, pool.name, now=now, step_seconds=step)
    inputs = gather(source, pool.name, start=end - history + step, end=end, step_seconds=step)
    if inputs.demand.usable_seconds == 0:
        raise SourceError(f"pool {pool.name}: the history holds no usable samples")
    return inputs


def fetch_pods(source: DemandSource, series: DemandSeries) -> JobTrace | None:
    """The pool's pods over ``series``' window, where the source keeps them (Prometheus:
    kube-state-metrics): None, and why in the log, otherwise - the replays then rebuild pods
    from the demand level."""
    if not isinstance(source, PodHistorySource):
        log.info("pool %s: the source keeps no pods: replaying the demand level", series.name)
        return None
    try:
        pods = source.fetch_pods(
            series.name,
            start=series.start,
            end=series.end + series.step_seconds,
            step_seconds=series.step_seconds,
        )
    except SourceError as exc:
        log.warning("pool %s: no pod history (%s): replaying the demand level", series.name, exc)
        return None
    if len(pods) == 0:
        log.warning("pool %s: no GPU pods in the history: replaying the demand level", series.name)
        return None
    log.info("pool %s: replaying %d pods from the history", series.name, len(pods))
    return pods


def choose_point(
    settings: Settings,
    pool: PoolSettings,
    history: DemandSeries,
    *,
    arrivals: bool = True,
    source: DemandSource | None = None,
) -> OperatingPoint | None:
    """With a budget (``operating_point``), the quantile and floor the pool plans for until the
    next retrain, chosen by replaying ``history`` (``simulation.operating_point``; the pool's pods
    where ``source`` keeps them) with the models the pool will have (``arrivals``: its training
    has pods' creation times); None without a budget, or when the replays cannot choose (the
    configured quantile then holds)."""
    chosen = settings.operating_point
    if not chosen.enabled:
        return None
    pods = fetch_pods(source, history) if source is not None else None
    days = (history.end + history.step_seconds - history.start) / DAY
    try:
        setup = replay_setup_from_settings(
            settings,
            pool_name=pool.name,
            epoch=history.start,
            start_day=0,
            warmup_days=days - chosen.measure_days,
            end_day=days,
            model=chosen.model,
        )
        setup = dataclasses.replace(setup, arrivals=arrivals)
        point = choose_operating_point(
            history,
            setup,
            make_policy=replay_policy,
            quantiles=chosen.quantiles,
            floors_gpus=candidate_floors(pool, chosen.floor_nodes),
            budget=chosen.budget(price_per_gpu_hour=pool_policy(settings, pool).price_per_gpu_hour),
            measure_seconds=int(chosen.measure_days * DAY),
            pods=pods,
            demand_pod_gpus=chosen.demand_pod_gpus,
            progress=lambda name: log.info(
                "pool %s: operating point: replaying %s", pool.name, name
            ),
        )
    except ForecasterError as exc:
        log.warning(
            "pool %s: no operating point (%s): the configured quantile holds", pool.name, exc
        )
        return None
    if point is not None:
        log.info("pool %s: operating point %s", pool.name, point.reason)
    return point


def candidate_floors(pool: PoolSettings, floor_nodes: Sequence[int]) -> list[int]:
    """The floors the operating point tries for ``pool``: ``floor_nodes`` in its GPUs, each at
    most its ``max_prewarm_gpus`` in whole placeholders (the planner caps a larger floor there:
    the same replay again), without repeats."""
    unit = pool.placeholder_size
    cap = pool.max_prewarm_gpus // unit * unit
    return sorted({min(n * pool.gpus_per_node, cap) for n in floor_nodes})


def train(
    settings: Settings,
    *,
    pools: list[str] | None,
    clock: Clock,
    mirror: ModelConfigMaps | None = None,
    progress: Progress | None = None,
    time_budget_seconds: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> list[PoolTraining]:
    """Train every selected pool, the stalest first; a pool that fails is reported as failed,
    the others go on.

    With a ``mirror`` (ConfigMap model store) the champions are fetched first and each pool's
    model is published as soon as it is trained: a Job killed at its deadline keeps the pools
    it finished. With ``time_budget_seconds`` (set below the Job's ``activeDeadlineSeconds``) a
    pool is not started once the time spent plus the longest pool so far would pass it: it is
    reported as skipped, keeps its current model and, as the stalest, goes first next time. The
    operating point's replays make a pool take minutes, not seconds (docs/design.md).
    """
    if mirror is not None:
        fetch_models(settings, mirror)
    source = build_source(settings)
    store = model_store(settings)
    created = clock.now().strftime("%Y%m%dT%H%M%SZ")
    began, longest = monotonic(), 0.0
    results = []
    for pool in stalest_first([p for p in settings.pools if not pools or p.name in pools], store):
        spent = monotonic() - began
        if time_budget_seconds is not None and spent + longest > time_budget_seconds:
            results.append(_skipped(pool, store, spent, longest, time_budget_seconds))
            continue
        result = _train_pool(
            settings, source, store, pool, clock=clock, created=created, progress=progress
        )
        took = monotonic() - began - spent
        longest = max(longest, took)
        log.info("pool %s: %s in %s", pool.name, result.status, format_duration(took))
        if mirror is not None:
            publish_models(settings, mirror, pools=[pool.name])
        results.append(result)
    return results


def stalest_first(pools: Sequence[PoolSettings], store: ArtifactStore) -> list[PoolSettings]:
    """``pools`` by their newest stored model, oldest (or none) first: a pool a time budget
    skipped is trained first next time. Ties keep the configured order."""
    return sorted(pools, key=lambda pool: max(store.versions(pool.name), default=""))


def _skipped(
    pool: PoolSettings, store: ArtifactStore, spent: float, longest: float, budget: float
) -> PoolTraining:
    current = store.current_version(pool.name) or "none"
    message = (
        f"not started: {format_duration(spent)} of the {format_duration(budget)} time budget"
        f" spent and the longest pool took {format_duration(longest)}; keeps its current model"
        f" ({current}) and, as the stalest, is trained first next time"
    )
    log.warning("pool %s: %s", pool.name, message)
    return PoolTraining(pool=pool.name, status="skipped", message=message, quality=None)


def _train_pool(
    settings: Settings,
    source: DemandSource,
    store: ArtifactStore,
    pool: PoolSettings,
    *,
    clock: Clock,
    created: str,
    progress: Progress | None,
) -> PoolTraining:
    """Fetch, choose the operating point and train one pool; a ``ForecasterError`` is reported
    as a failed result."""
    try:
        inputs = fetch_history(settings, source, pool=pool, clock=clock)
        series, report, arrivals = inputs.demand, inputs.report, inputs.arrivals
        for line in report.describe():  # debug: `train` prints these in its report
            log.debug("pool %s data: %s", pool.name, line)
        result = train_pool(
            series,
            report,
            plan=training_plan(settings, pool),
            store=store,
            created=created,
            progress=progress,
            arrivals=arrivals,
            operating_point=choose_point(
                settings, pool, series, arrivals=arrivals is not None, source=source
            ),
        )
    except ForecasterError as exc:
        log.debug("pool %s: training failed: %s", pool.name, exc)
        return PoolTraining(pool=pool.name, status="failed", message=str(exc), quality=None)
    log.debug("pool %s: %s", pool.name, result.message)
    return result
