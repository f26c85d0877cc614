"""The composition root of the daemon: settings become the objects that run it.

Wired here: the reconcile loop with its models, observer, actuator, state store and kill switch
(``build_reconciler``), the daemon of one replica (``build_cluster_service``) and the embedded
default on the twin (``build_embedded``); replay's pools and policies are ``app.build_replay``,
and the light part the one-shot commands need - Kubernetes client, demand source, kill switch -
is ``app.connect``. The CLI, the cluster service, the embedded default and replay all run this
same wiring. Nothing here runs anything: the one-shot operations are ``app.training``,
``app.cleanup`` and ``app.doctor``; the running daemon is ``service/``.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path

from forecaster.actuators.actuator import Actuator, PoolActuation
from forecaster.actuators.coordination.leases import LEASE_NAME, LEASE_SECONDS, LeaderElector
from forecaster.actuators.coordination.model_configmaps import ModelConfigMaps
from forecaster.actuators.coordination.state_store import ConfigMapStateStore
from forecaster.actuators.events import Events, SkippedEvents
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import ObjectReference
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.notice.base import NoticeReader
from forecaster.actuators.notice.registry import SOURCES
from forecaster.actuators.observe.kueue import KueueScope
from forecaster.actuators.observe.observer import observe
from forecaster.actuators.observe.pod_watch import PodWatch
from forecaster.actuators.prewarm.backends import BackendDetector
from forecaster.actuators.prewarm.placeholders import PlaceholderSpec
from forecaster.actuators.prewarm.registry import make_backends, served_backends
from forecaster.app.connect import build_source, control
from forecaster.app.doctor import notice_namespaces, run_guardrails
from forecaster.app.model_sharing import fetch_models, model_store
from forecaster.app.signals import live_readers, twin_signals
from forecaster.core.cluster import PoolSnapshot
from forecaster.core.operating_point import OperatingPoint
from forecaster.core.policy import Budgets, PoolPolicy, horizon_for_lead
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ConfigError, ForecasterError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import TrainingPlan
from forecaster.reconcile.loop import Reconciler
from forecaster.reconcile.models import ModelProvider
from forecaster.reconcile.observing import Observer
from forecaster.reconcile.records import PoolRuntime, PrewarmActuator
from forecaster.reconcile.state import MemoryStateStore, StateStore
from forecaster.service.clock import Clock, SystemClock
from forecaster.service.daemon import Daemon
from forecaster.service.embedded import EmbeddedRun
from forecaster.service.scheduler import ClusterService, stuck_after_seconds
from forecaster.settings import PoolSettings, Settings
from forecaster.simulation.live import LiveTwin
from forecaster.simulation.twin import TwinConfig
from forecaster.sources.base import DemandSource
from forecaster.sources.files import read_job_trace

log = logging.getLogger(__name__)


def pool_horizon(settings: Settings, pool: PoolSettings) -> int:
    """The pool's configured forecast horizon: the shortest that covers its prewarm window
    (lead time + reconcile interval + Karpenter's batch, ``core.policy.horizon_for_lead``)."""
    return horizon_for_lead(
        pool.lead_time.total_seconds,
        settings.reconcile_every_seconds,
        settings.forecast.horizons_seconds,
    )


def training_plan(settings: Settings, pool: PoolSettings) -> TrainingPlan:
    """Plain training parameters for one pool."""
    forecast = settings.forecast
    return TrainingPlan(
        models=forecast.models,
        horizons_seconds=forecast.horizons_seconds,
        quantiles=settings.model_quantiles,
        selection_horizon_seconds=pool_horizon(settings, pool),
        target_quantile=forecast.target_quantile,
        coverage_tolerance=forecast.coverage_tolerance,
        min_history_seconds=int(forecast.min_history_days * DAY),
        test_seconds=int(forecast.backtest.test_days * DAY),
        train_seconds=int(forecast.backtest.train_days * DAY),
        origin_every_seconds=forecast.backtest.origin_every_seconds,
        refit_every_seconds=forecast.backtest.refit_every_seconds,
        burst_alpha=pool.burst_alpha if pool.policy == "burst" else None,
    )


def pool_policy(settings: Settings, pool: PoolSettings) -> PoolPolicy:
    """The planner's view of a configured pool."""
    return PoolPolicy(
        pool=pool.name,
        gpus_per_node=pool.gpus_per_node,
        placeholder_size_gpus=pool.placeholder_size,
        max_prewarm_gpus=pool.max_prewarm_gpus,
        price_per_gpu_hour=pool.price_per_gpu_hour,
        stale_after_seconds=settings.planning.stale_after_seconds,
        hold_seconds=settings.planning.hold_seconds,
        forecast_only=pool.forecast_only,
        allow_unlimited_nodepool=pool.allow_unlimited_nodepool,
        protect_nodepool=settings.planning.protect_nodepools,
        floor_gpus=pool.floor_gpus,
        resource=pool.resource,
    )


def budgets(settings: Settings) -> Budgets:
    """Shared caps; each prewarm GPU is charged for the placeholder TTL up front."""
    caps = settings.planning.budgets
    return Budgets(
        max_total_prewarm_gpus=caps.max_total_prewarm_gpus,
        max_prewarm_gpu_hours_per_day=caps.max_prewarm_gpu_hours_per_day,
        max_cost_per_hour=caps.max_cost_per_hour,
        commitment_seconds=settings.planning.placeholders.ttl_seconds,
        notice_namespace_share=settings.notice.namespace_share,
        notice_namespace_gpu_share=settings.notice.namespace_gpu_share,
    )


def placeholder_spec(settings: Settings, pool: PoolSettings) -> PlaceholderSpec:
    """What the pool's placeholders look like."""
    ph = settings.planning.placeholders
    return PlaceholderSpec(
        pool=pool.name,
        gpus=pool.placeholder_size,
        resource=pool.resource,
        ttl_seconds=ph.ttl_seconds,
        renew_before_seconds=ph.renew_before_seconds,
        image=pool.warm_image or ph.image,
        command=pool.warm_command if pool.warm_image else (),
        max_pulled_images=ph.pull_recent_images,
        helper_image=ph.helper_image,
    )


def pool_runtime(settings: Settings, pool: PoolSettings, *, what_if: bool = False) -> PoolRuntime:
    """What the reconcile loop runs a pool with - in a cluster and in replay alike."""
    return PoolRuntime(
        policy=pool_policy(settings, pool),
        horizon_seconds=pool_horizon(settings, pool),
        target_quantile=settings.forecast.target_quantile,
        assumed_limit_headroom_gpus=pool.max_prewarm_gpus if what_if else None,
        lead_seconds=pool.lead_time.total_seconds,
        horizons_seconds=settings.forecast.horizons_seconds,
        lead_margin_seconds=pool.lead_time.margin_seconds,
        decision_interval_seconds=settings.reconcile_every_seconds,
    )


def live_observer(settings: Settings, kube: Kube, watch: PodWatch | None) -> Observer:
    """The loop's view of the cluster: every pool's snapshot with the GPUs our backends hold,
    Kueue's quota room and the announced work of the configured notice sources."""
    # what every backend holds is charged whatever the configured one (auto may switch)
    ph = settings.planning.placeholders
    held = list(make_backends(kube, ph.namespace, ph.priority_class).values())

    kueue = [
        KueueScope(p.name, p.kueue.flavors, p.kueue.cluster_queues, p.resource)
        for p in settings.pools
        if p.kueue is not None
    ]

    resources = {p.name: p.resource for p in settings.pools}
    node_units = {p.name: p.gpus_per_node for p in settings.pools}
    notice = NoticeReader(
        [SOURCES.get(name) for name in settings.notice.sources],
        grace_seconds=settings.notice.grace_seconds,
        namespaces=notice_namespaces(settings),
    )
    skipped = SkippedEvents(kube, settings.namespace, _daemon_reference(settings))

    def observe_live(pools: Sequence[str], now: int) -> Mapping[str, PoolSnapshot]:
        observation = observe(
            kube,
            pools=pools,
            now=now,
            holders=held,
            signals=live_readers(),
            kueue=kueue,
            watched=watch,
            notice=notice,
            resources=resources,
            node_units=node_units,
        )
        skipped.report(observation.skipped, now=now)
        return observation

    return observe_live


def _daemon_reference(settings: Settings) -> ObjectReference:
    """What our Events are about: the daemon's Pod (``POD_NAME``, set by the manifests), else
    its state ConfigMap (a local run)."""
    pod = os.environ.get("POD_NAME")
    if pod:
        return {"apiVersion": "v1", "kind": "Pod", "name": pod}
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": settings.state_config_map}


def build_reconciler(
    settings: Settings,
    *,
    source: DemandSource | None = None,
    kube: Kube | None = None,
    what_if: bool = False,
    observer: Observer | None = None,
    actuator: PrewarmActuator | None = None,
    watch: PodWatch | None = None,
    earlier_leader: Callable[[], str | None] = lambda: None,
) -> Reconciler:
    """The loop, wired: with ``kube`` it observes and acts (other pods from ``watch`` while
    it is in sync), without it it only plans.

    ``what_if``: with no cluster, assume each NodePool's limit leaves room for the pool's
    ``max_prewarm_gpus`` above today's demand (otherwise the unknown limit allows nothing).
    ``earlier_leader``: the Lease's word on whether a leader ran before (a lost state is then
    refused, ``actuators.state_store``).
    """
    runtimes = [pool_runtime(settings, pool, what_if=what_if) for pool in settings.pools]
    models = ModelProvider(
        model_store(settings),
        horizons_seconds=settings.forecast.horizons_seconds,
        # what the configured plan needs; a chosen point's quantile is checked on its own, so a
        # model trained before a budget was set keeps forecasting until the next retrain
        quantiles=settings.forecast.quantiles,
        follow_operating_points=settings.operating_point.enabled,
    )
    state_store: StateStore = MemoryStateStore()
    halt = None
    if kube is not None:
        halt = control(settings, kube).read
        actuator = build_actuator(settings, kube)
        if not kube.dry_run:
            state_store = ConfigMapStateStore(
                kube,
                namespace=settings.namespace,
                name=settings.state_config_map,
                earlier_leader=earlier_leader,
            )
        observer = live_observer(settings, kube, watch)

    return Reconciler(
        pools=runtimes,
        source=source or build_source(settings),
        models=models,
        budgets=budgets(settings),
        slo=settings.slo,
        state_store=state_store,
        step_seconds=settings.forecast.step_seconds,
        observe=observer,
        actuator=actuator,
        halt=halt,
    )


def build_actuator(settings: Settings, kube: Kube) -> Actuator:
    """Every prewarm backend the cluster serves, and NodePool patches.

    The backend is chosen at start-up and re-checked every 5 minutes (``BackendDetector``): a
    pool or an ``actuation`` naming a backend the cluster does not serve refuses to start.
    """
    ph = settings.planning.placeholders
    backends, missing = served_backends(kube, ph.namespace, ph.priority_class)
    for pool in settings.pools:
        if pool.backend in missing:
            raise ConfigError(
                f"pools[{pool.name}].backend: {pool.backend}, but {missing[pool.backend]}"
            )
    detector = BackendDetector(kube, ph.namespace, settings.planning.actuation)
    detector.current(0)  # decide (and refuse a bad explicit choice) before the first tick
    return Actuator(
        backends=backends,
        nodepools=NodePools(kube),
        events=Events(kube, settings.namespace),
        detector=detector,
        pools={
            p.name: PoolActuation(
                placeholder_spec(settings, p),
                backend=p.backend,
                limit_gpus=p.max_prewarm_gpus,
                protect_consolidate_after=settings.planning.protect_consolidate_after,
                protect_seconds=settings.planning.protect_seconds,
            )
            for p in settings.pools
        },
    )


def model_mirror(settings: Settings, kube: Kube) -> ModelConfigMaps | None:
    """The ConfigMap model store when configured (``models_store: configmap``), else None."""
    if settings.models_store != "configmap":
        return None
    return ModelConfigMaps(kube, namespace=settings.namespace)


def build_cluster_service(
    settings: Settings,
    kube: Kube,
    *,
    identity: str | None = None,
    clock: Clock | None = None,
    elect: bool = True,
) -> ClusterService:
    """Guardrails, reconciler, elector and daemon for one replica.

    ``elect=False`` (a local forecast-only run, which must write nothing): no Lease; the
    replica plans as a leader would, and its dry-run Kube sends no write.
    """
    clock = clock or SystemClock()
    identity = identity or os.environ.get("POD_NAME") or socket.gethostname()
    findings = run_guardrails(settings, kube, now=int(clock.now().timestamp()))
    elector = None
    if elect:
        elector = LeaderElector(
            kube,
            namespace=settings.namespace,
            name=LEASE_NAME,
            identity=identity,
            wall=lambda: clock.now().timestamp(),
            monotonic=clock.monotonic,
            lease_seconds=LEASE_SECONDS,
        )
        kube.guard = elector.remaining_seconds  # checked immediately before every write
    elif not kube.dry_run:
        raise ForecasterError("a replica without leader election must be dry-run")
    watch = PodWatch(kube) if settings.watch_pods else None
    reconciler = build_reconciler(
        settings,
        kube=kube,
        watch=watch,
        earlier_leader=elector.earlier_leader if elector else lambda: None,
    )
    daemon = Daemon(
        reconciler=reconciler,
        is_leader=elector.is_leader if elector else lambda: True,
        lease_holder=elector.holder if elector else lambda: None,
        monotonic=clock.monotonic,
        stuck_after_seconds=stuck_after_seconds(settings.reconcile_every_seconds),
        guardrails=[f"{g.code}{f' ({g.pool})' if g.pool else ''}: {g.message}" for g in findings],
        pools=tuple(p.name for p in settings.pools),
    )
    mirror = model_mirror(settings, kube)
    return ClusterService(
        daemon,
        elector,
        clock,
        reconcile_every_seconds=settings.reconcile_every_seconds,
        reload_models=(lambda: fetch_models(settings, mirror)) if mirror is not None else None,
        description=f"{len(settings.pools)} pool(s), dry_run={settings.dry_run}",
        watch=watch,
    )


PointChooser = Callable[[Settings, PoolSettings, DemandSeries], OperatingPoint | None]
"""``app.training.choose_point``: the operating point a retrain publishes (None: none)."""


def pool_twin(
    settings: Settings, pool: PoolSettings, *, nodepool_limit_gpus: int | None
) -> TwinConfig:
    """The twin of a configured pool: its node shape, launch and pull times, placeholder TTL,
    NodePool limit and the registered signals - the one place a configured pool becomes a
    twin (the embedded default runs it as is; a configured replay adds the daemon's cadence,
    caps and backend, ``app.build_replay.replay_setup_from_settings``)."""
    return TwinConfig(
        pool=pool.name,
        gpus_per_node=pool.gpus_per_node,
        resource=pool.resource,
        provision_seconds=pool.lead_time.provisioning_seconds,
        image_pull_seconds=pool.lead_time.image_pull_seconds,
        placeholder_ttl_seconds=settings.planning.placeholders.ttl_seconds,
        nodepool_limit_gpus=nodepool_limit_gpus,
        signals=twin_signals(),
        notice_sources=settings.notice.sources,
        notice_grace_seconds=settings.notice.grace_seconds,
    )


def build_embedded(
    settings: Settings, *, models_dir: Path, choose_point: PointChooser | None = None
) -> EmbeddedRun:
    """Load the trace, warm the twin up, train the first model and wire the daemon; with
    ``choose_point`` each retrain also chooses the operating point, as the training job does."""
    cfg = settings.twin
    try:
        epoch = int(datetime.fromisoformat(cfg.epoch).timestamp())
    except ValueError:
        raise ConfigError(f"twin.epoch: bad ISO 8601 time {cfg.epoch!r}") from None
    pool = settings.pool(cfg.pool)
    jobs = read_job_trace(cfg.jobs, epoch=epoch)
    start, end = epoch + cfg.start_day * DAY, epoch + cfg.end_day * DAY
    twin_config = pool_twin(settings, pool, nodepool_limit_gpus=cfg.nodepool_limit_gpus)
    twin = LiveTwin(jobs, twin_config, start=start, end=end)
    began = time.perf_counter()
    twin.advance_to(start + cfg.warmup_days * DAY)
    log.info(
        "twin warm-up: %.0f simulated days in %.1f s", cfg.warmup_days, time.perf_counter() - began
    )
    one_pool = settings.model_copy(
        update={
            "pools": (pool,),
            "models_dir": models_dir,
            "forecast": settings.forecast.model_copy(update={"models": cfg.models}),
        }
    )
    reconciler = build_reconciler(one_pool, source=twin, observer=twin.observe, actuator=twin)
    daemon = Daemon(reconciler=reconciler, pools=(pool.name,))
    run = EmbeddedRun(
        twin,
        daemon,
        ArtifactStore(models_dir),
        pool.name,
        end,
        training=training_plan(one_pool, pool),
        history_seconds=int(settings.forecast.history_days * DAY),
        reconcile_every_seconds=settings.reconcile_every_seconds,
        retrain_every_seconds=int(cfg.retrain_every_days * DAY),
        speed=cfg.speed,
    )
    if choose_point is not None:
        run.choose_point = lambda history: choose_point(one_pool, pool, history)
    run.train()
    run._last_train = twin.now
    return run
