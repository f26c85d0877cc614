"""The composition root's replay half: the replay setup, and each policy wired for the twin.

``predictive`` is wired here exactly as ``app.build.build_reconciler`` wires the daemon - the
same ``Reconciler`` with a ``PoolRuntime`` from the same horizon rule, the setup's budgets and
SLO - with the twin behind its ports (``simulation.live.TwinPorts``) and replay's weekly
retraining standing in for the training CronJob (``simulation.replay.WeeklyRetrain``).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

from forecaster.actuators.prewarm.backends import AUTO
from forecaster.actuators.prewarm.registry import backend_conduct
from forecaster.app import build
from forecaster.app.connect import read_demand_csv
from forecaster.app.signals import twin_signals
from forecaster.core.cluster import MeasuredLead
from forecaster.core.jobs import JobTrace, jobs_from_series
from forecaster.core.policy import (
    MIN_WAKE_SECONDS,
    Budgets,
    PoolPolicy,
)
from forecaster.durations import DAY
from forecaster.errors import ConfigError
from forecaster.reconcile.loop import Reconciler
from forecaster.reconcile.records import PoolRuntime
from forecaster.reconcile.state import MemoryStateStore
from forecaster.settings import PoolSettings, Settings
from forecaster.simulation.declared_notice import NoticeMix
from forecaster.simulation.live import TwinPorts
from forecaster.simulation.pool import SAMPLE_TRACE_EPOCH, SimulatedPool
from forecaster.simulation.replay import Predictive, ReplaySetup, WeeklyRetrain
from forecaster.simulation.twin import TwinConfig
from forecaster.sources.files import read_job_trace

PLACEHOLDER_TTL_SECONDS = 3600
"""Replay's placeholders live an hour, as the shipped config's (each GPU is charged that long)."""


def replay_setup(
    *,
    twin: TwinConfig,
    epoch: int,
    start_day: float,
    warmup_days: float,
    end_day: float,
    max_prewarm_gpus: int,
    price_on_demand: float,
    price_spot: float,
    model: str,
    quantile: float,
    floor_gpus: int = 0,
    backend: str = "placeholders",
) -> ReplaySetup:
    """A replay of days [start_day, end_day) measured after ``warmup_days``, the predictive
    planning for ``quantile`` above ``floor_gpus``; every cap is ``max_prewarm_gpus`` (GPUs,
    GPU-hours a day, cost an hour); prewarm behaves as ``backend`` declares."""
    budgets = Budgets(
        max_total_prewarm_gpus=max_prewarm_gpus,
        max_prewarm_gpu_hours_per_day=max_prewarm_gpus * 24.0,
        max_cost_per_hour=max_prewarm_gpus * price_on_demand,
        commitment_seconds=PLACEHOLDER_TTL_SECONDS,
    )
    start, warmup_end, end = _window(
        epoch=epoch, start_day=start_day, warmup_days=warmup_days, end_day=end_day
    )
    return ReplaySetup(
        twin=dataclasses.replace(twin, conduct=backend_conduct(backend), signals=twin_signals()),
        start=start,
        warmup_end=warmup_end,
        end=end,
        budgets=budgets,
        max_prewarm_gpus=max_prewarm_gpus,
        price_on_demand=price_on_demand,
        price_spot=price_spot,
        model=model,
        plan_quantile=quantile,
        floor_gpus=floor_gpus,
    )


def replay_setup_from_settings(
    settings: Settings,
    *,
    epoch: int,
    start_day: float,
    warmup_days: float,
    end_day: float,
    model: str,
    pool_name: str | None = None,
) -> ReplaySetup:
    """A replay of the twin's pool (``twin.pool``; or ``pool_name``) exactly as the configured
    daemon runs it.

    The pool's runtime, the budgets and the SLO come from the same builders as the daemon's
    (``app.build``); the twin launches nodes after the pool's provisioning + image pull and
    decides every ``reconcile_every_seconds``, as the daemon ticks (and, with ``watch_pods``, also
    when a pod is created, as the daemon's pod watch wakes it).
    """
    pool = settings.pool(pool_name or settings.twin.pool)
    if pool.placeholder_size != pool.gpus_per_node:
        raise ConfigError(
            f"pool {pool.name}: replay simulates whole-node placeholders, but placeholder_gpus"
            f" is {pool.placeholder_size} of {pool.gpus_per_node}"
        )
    twin = dataclasses.replace(
        build.pool_twin(settings, pool, nodepool_limit_gpus=settings.twin.nodepool_limit_gpus),
        tick_seconds=settings.reconcile_every_seconds,
        wake_seconds=MIN_WAKE_SECONDS if settings.watch_pods else None,
        max_prewarm_gpus=pool.max_prewarm_gpus,
        conduct=backend_conduct(_replayed_backend(settings, pool)),
    )
    start, warmup_end, end = _window(
        epoch=epoch, start_day=start_day, warmup_days=warmup_days, end_day=end_day
    )
    return ReplaySetup(
        twin=twin,
        start=start,
        warmup_end=warmup_end,
        end=end,
        budgets=build.budgets(settings),
        max_prewarm_gpus=pool.max_prewarm_gpus,
        price_on_demand=pool.prices.on_demand,
        price_spot=pool.prices.spot,
        model=model,
        horizons_seconds=settings.forecast.horizons_seconds,
        slo=settings.slo,
        plan_quantile=settings.forecast.target_quantile,
        floor_gpus=pool.floor_gpus,
        runtime=build.pool_runtime(settings, pool),
    )


def _window(
    *, epoch: int, start_day: float, warmup_days: float, end_day: float
) -> tuple[int, int, int]:
    """Trace days as epoch seconds: start, end of warm-up (metrics from), end."""
    return (
        int(epoch + start_day * DAY),
        int(epoch + (start_day + warmup_days) * DAY),
        int(epoch + end_day * DAY),
    )


def replay_pool_policy(setup: ReplaySetup) -> PoolPolicy:
    """The simulated pool's policy: the configured pool's, else whole-node placeholders with
    the setup's caps and price."""
    if setup.runtime is not None:
        return setup.runtime.policy
    return PoolPolicy(
        pool=setup.twin.pool,
        gpus_per_node=setup.twin.gpus_per_node,
        placeholder_size_gpus=setup.twin.gpus_per_node,
        max_prewarm_gpus=setup.max_prewarm_gpus,
        price_per_gpu_hour=setup.price_per_gpu_hour,
        stale_after_seconds=900,
        hold_seconds=900,
        allow_unlimited_nodepool=setup.twin.nodepool_limit_gpus is None,
        floor_gpus=setup.floor_gpus,
    )


def predictive(setup: ReplaySetup) -> Predictive:
    """The daemon's reconcile loop on the twin (see the module docstring)."""
    ports = TwinPorts(setup.twin.pool)
    # replay's own pool plans at one horizon (it has no measured lead to move it): fit that one;
    # a configured pool may move between its horizons, so all of them are fitted, as the CronJob
    horizons = setup.horizons_seconds if setup.runtime is not None else (setup.horizon_seconds,)
    models = WeeklyRetrain(
        source=ports,
        clock=lambda: ports.now,
        model_name=setup.model,
        horizons_seconds=horizons,
        quantiles=(0.5, setup.plan_quantile),
        schedule=setup.retrain,
        arrivals=setup.arrivals,
        burst_alpha=setup.burst_alpha,
    )
    runtime = setup.runtime or PoolRuntime(
        policy=replay_pool_policy(setup),
        horizon_seconds=setup.horizon_seconds,
        target_quantile=setup.plan_quantile,
        lead_seconds=setup.lead_seconds,
        decision_interval_seconds=int(setup.twin.tick_seconds),
    )
    reconciler = Reconciler(
        pools=[runtime],
        source=ports,
        models=models,
        budgets=setup.budgets,
        slo=setup.slo_policy,
        state_store=MemoryStateStore(),
        observe=ports.observe,
        actuator=ports,
        save_every_seconds=DAY,  # never read back: serialising it every 5 min cost 4 % of a replay
    )
    return Predictive(reconciler=reconciler, ports=ports, models=models)


def on_this_cluster(
    setup: ReplaySetup,
    *,
    lead: MeasuredLead | None,
    kueue_quota_gpus: int | None,
    kueue_notice_seconds: float,
    notice: NoticeMix | None,
) -> ReplaySetup:
    """A configured pool's replay on the cluster it runs in: nodes launch as the pool's
    ``lead`` measured them (where it was), and the simulated cluster's Kueue and announced work
    are the replay's own, not the pool's settings."""
    twin = setup.twin
    if lead is not None:
        pull = twin.image_pull_seconds if lead.startup_seconds is None else lead.startup_seconds
        twin = dataclasses.replace(
            twin, provision_seconds=lead.provisioning_seconds, image_pull_seconds=pull
        )
    twin = dataclasses.replace(
        twin,
        kueue_quota_gpus=kueue_quota_gpus,
        kueue_notice_seconds=kueue_notice_seconds,
        notice=notice,
    )
    return dataclasses.replace(setup, twin=twin)


def _replayed_backend(settings: Settings, pool: PoolSettings) -> str:
    """The pool's backend, else an explicit ``actuation``; ``auto`` replays placeholders (what
    it chooses depends on the cluster it runs on, and placeholders wait out a grace)."""
    if pool.backend is not None:
        return pool.backend
    actuation = settings.planning.actuation
    return "placeholders" if actuation == AUTO else actuation


def simulated_setup(
    pool: SimulatedPool,
    *,
    epoch: int,
    start_day: float = 0.0,
    warmup_days: float = 10.0,
    end_day: float = 50.0,
) -> ReplaySetup:
    """A replay of ``pool`` over days [start_day, end_day) of a trace starting at ``epoch``,
    measured after ``warmup_days`` (the ``replay`` command's flags; the benches' setups)."""
    twin = TwinConfig(
        gpus_per_node=pool.gpus_per_node,
        provision_seconds=pool.provision_seconds,
        image_pull_seconds=pool.image_pull_seconds,
        tick_seconds=pool.decide_every_seconds,
        wake_seconds=pool.wake_seconds or None,
        consolidate_after_seconds=pool.consolidate_after_seconds,
        warm_image=pool.warm_image,
        max_prewarm_gpus=pool.max_prewarm_gpus,
        kueue_quota_gpus=pool.kueue_quota_gpus,
        kueue_notice_seconds=pool.kueue_notice_seconds,
        notice=pool.notice,
    )
    return replay_setup(
        twin=twin,
        epoch=epoch,
        start_day=start_day,
        warmup_days=warmup_days,
        end_day=end_day,
        max_prewarm_gpus=pool.max_prewarm_gpus,
        price_on_demand=pool.price_on_demand,
        price_spot=pool.price_spot,
        model=pool.model,
        quantile=pool.quantile,
        floor_gpus=pool.floor_gpus,
        backend=pool.backend,
    )


def jobs_from_files(*, jobs: Path | None, series: Path | None, epoch: int) -> tuple[JobTrace, int]:
    """What a replay runs: a job trace (``--jobs``, its times from ``epoch``) or jobs rebuilt
    from a demand level (``--series``, from its own start); with the trace's day 0."""
    if jobs is not None:
        return read_job_trace(jobs, epoch=epoch), epoch
    if series is not None:
        level, _ = read_demand_csv(series, step_seconds=60)
        return jobs_from_series(level.start, level.step_seconds, values=level.values), level.start
    raise ConfigError("give --jobs FILE or --series FILE")


def trace_replay(
    jobs_file: Path,
    pool: SimulatedPool | None = None,
    *,
    start_day: float = 0.0,
    warmup_days: float = 10.0,
    end_day: float = 50.0,
    epoch: str = SAMPLE_TRACE_EPOCH,
) -> tuple[JobTrace, int, ReplaySetup]:
    """A job trace and the replay of ``pool`` (default: the ``replay`` command's) over it, as
    ``replay --jobs`` with its flags sets it up: the jobs, day 0 (``epoch``) in epoch seconds,
    and the setup."""
    day_zero = int(datetime.fromisoformat(epoch).timestamp())
    jobs, _ = jobs_from_files(jobs=jobs_file, series=None, epoch=day_zero)
    setup = simulated_setup(
        pool or SimulatedPool(),
        epoch=day_zero,
        start_day=start_day,
        warmup_days=warmup_days,
        end_day=end_day,
    )
    return jobs, day_zero, setup
