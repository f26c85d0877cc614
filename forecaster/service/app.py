"""Composition root: turns settings into sources, training plans and stores. The only wiring."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence

from forecaster.actuators import guardrails, labels
from forecaster.actuators.actuator import Actuator, PoolActuation
from forecaster.actuators.backends import (
    AUTOSCALER_HINT,
    BackendChoice,
    BackendDetector,
    choose_backend,
)
from forecaster.actuators.capacitybuffers import CapacityBuffers
from forecaster.actuators.control import Control
from forecaster.actuators.guardrails import Guardrail, PoolCheck
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.kueue import KueueScope
from forecaster.actuators.leases import fence
from forecaster.actuators.model_configmaps import ModelConfigMaps
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.observer import observe
from forecaster.actuators.placeholders import Placeholders, PlaceholderSpec
from forecaster.actuators.state_store import ConfigMapStateStore
from forecaster.core.cluster import PoolSnapshot
from forecaster.core.error_budget import SloPolicy
from forecaster.core.policy import Budgets, PoolPolicy
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries, to_epoch_seconds
from forecaster.durations import DAY
from forecaster.errors import ConfigError, ForecasterError, SourceError
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.training import PoolTraining, Progress, TrainingPlan, train_pool
from forecaster.reconcile.loop import Observer, PoolRuntime, PrewarmActuator, Reconciler
from forecaster.reconcile.models import ModelProvider
from forecaster.reconcile.state import MemoryStateStore, StateStore
from forecaster.service.clock import Clock
from forecaster.settings import PoolSettings, Settings
from forecaster.sources.base import DemandSource
from forecaster.sources.files import CsvSource
from forecaster.sources.prometheus import (
    PrometheusSource,
    QueryCheck,
    prometheus_duration_seconds,
)

log = logging.getLogger(__name__)
UNINSTALL_IDENTITY = "forecaster-cleanup"
UNINSTALL_HOLD_SECONDS = 3600  # replicas stay followers this long after `cleanup`
BUFFER_DRAIN_CHECKS, BUFFER_DRAIN_SECONDS = 12, 5.0  # up to a minute for buffers to drain


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
    settings: Settings, source: DemandSource, *, pool: PoolSettings, clock: Clock
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


def train(
    settings: Settings,
    *,
    pools: list[str] | None,
    clock: Clock,
    mirror: ModelConfigMaps | None = None,
    progress: Progress | None = None,
) -> list[PoolTraining]:
    """Train every selected pool; a pool that fails is reported as failed, the others go on.

    With a ``mirror`` (ConfigMap model store) the champions are fetched first and what became
    current is published afterwards.
    """
    if mirror is not None:
        fetch_models(settings, mirror)
    results = _train_pools(settings, pools=pools, clock=clock, progress=progress)
    if mirror is not None:
        publish_models(settings, mirror, pools=[r.pool for r in results])
    return results


def _train_pools(
    settings: Settings, *, pools: list[str] | None, clock: Clock, progress: Progress | None
) -> list[PoolTraining]:
    source = build_source(settings)
    store = ArtifactStore(settings.models_dir)
    created = clock.now().strftime("%Y%m%dT%H%M%SZ")
    results = []
    for pool in settings.pools:
        if pools and pool.name not in pools:
            continue
        try:
            series, report = fetch_history(settings, source, pool=pool, clock=clock)
            for line in report.describe():  # debug: `train` prints these in its report
                log.debug("pool %s data: %s", pool.name, line)
            result = train_pool(
                series,
                report,
                plan=training_plan(settings, pool),
                store=store,
                created=created,
                progress=progress,
            )
        except ForecasterError as exc:
            log.debug("pool %s: training failed: %s", pool.name, exc)
            result = PoolTraining(pool=pool.name, status="failed", message=str(exc), quality=None)
        else:
            log.debug("pool %s: %s", pool.name, result.message)
        results.append(result)
    return results


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
    )


def budgets(settings: Settings) -> Budgets:
    """Shared caps; each prewarm GPU is charged for the placeholder TTL up front."""
    caps = settings.planning.budgets
    return Budgets(
        max_total_prewarm_gpus=caps.max_total_prewarm_gpus,
        max_prewarm_gpu_hours_per_day=caps.max_prewarm_gpu_hours_per_day,
        max_cost_per_hour=caps.max_cost_per_hour,
        commitment_seconds=settings.planning.placeholders.ttl_seconds,
    )


def slo_policy(settings: Settings) -> SloPolicy:
    """The error-budget policy."""
    return SloPolicy(**settings.slo.model_dump())


def placeholder_spec(settings: Settings, pool: PoolSettings) -> PlaceholderSpec:
    """What the pool's placeholders look like."""
    ph = settings.planning.placeholders
    return PlaceholderSpec(
        pool=pool.name,
        gpus=pool.placeholder_size,
        ttl_seconds=ph.ttl_seconds,
        renew_before_seconds=ph.renew_before_seconds,
        image=pool.warm_image or ph.image,
        command=pool.warm_command if pool.warm_image else (),
    )


def build_reconciler(
    settings: Settings,
    *,
    source: DemandSource | None = None,
    kube: Kube | None = None,
    what_if: bool = False,
    observer: Observer | None = None,
    actuator: PrewarmActuator | None = None,
) -> Reconciler:
    """The loop, wired: with ``kube`` it observes and acts, without it it only plans.

    ``what_if``: with no cluster, assume each NodePool's limit leaves room for the pool's
    ``max_prewarm_gpus`` above today's demand (otherwise the unknown limit allows nothing).
    """
    runtimes = [
        PoolRuntime(
            policy=pool_policy(settings, pool),
            horizon_seconds=settings.horizon_for(pool),
            target_quantile=settings.forecast.target_quantile,
            assumed_limit_headroom_gpus=pool.max_prewarm_gpus if what_if else None,
            lead_seconds=pool.lead_time.total_seconds,
        )
        for pool in settings.pools
    ]
    models = ModelProvider(
        ArtifactStore(settings.models_dir),
        horizons_seconds=settings.forecast.horizons_seconds,
        quantiles=settings.forecast.quantiles,
    )
    state_store: StateStore = MemoryStateStore()
    halt = None
    if kube is not None:
        live = kube
        halt = Control(kube, namespace=settings.planning.placeholders.namespace).read
        actuator = build_actuator(settings, kube)
        if not kube.dry_run:
            state_store = ConfigMapStateStore(
                kube,
                namespace=settings.planning.placeholders.namespace,
                name=settings.state_config_map,
            )

        # buffers of ours are charged whatever the configured backend (auto may switch)
        buffer_namespace = settings.planning.placeholders.namespace

        kueue = [
            KueueScope(p.name, p.kueue.flavors, p.kueue.cluster_queues)
            for p in settings.pools
            if p.kueue is not None
        ]

        def observe_live(pools: Sequence[str], now: int) -> Mapping[str, PoolSnapshot]:
            return observe(
                live, pools=pools, now=now, buffer_namespace=buffer_namespace, kueue=kueue
            )

        observer = observe_live

    return Reconciler(
        pools=runtimes,
        source=source or build_source(settings),
        models=models,
        budgets=budgets(settings),
        slo=slo_policy(settings),
        state_store=state_store,
        step_seconds=settings.forecast.step_seconds,
        observe=observer,
        actuator=actuator,
        halt=halt,
    )


def build_actuator(settings: Settings, kube: Kube) -> Actuator:
    """Placeholders, CapacityBuffers (where served) and NodePool patches.

    The backend is chosen at start-up and re-checked every 5 minutes (``BackendDetector``): a
    cluster that asks for buffers explicitly but does not serve them refuses to start.
    """
    ph = settings.planning.placeholders
    placeholders = Placeholders(kube, namespace=ph.namespace, priority_class=ph.priority_class)
    served = kube.serves_capacity_buffers(ph.namespace)
    wanted = [p.name for p in settings.pools if p.backend == "capacitybuffer"]
    if wanted and not served:
        raise ConfigError(
            f"pools {wanted} use backend: capacitybuffer but the cluster does not serve"
            f" autoscaling.x-k8s.io/v1beta1 CapacityBuffers ({AUTOSCALER_HINT})"
        )
    detector = BackendDetector(kube, ph.namespace, settings.planning.actuation)
    detector.current(0)  # decide (and refuse a bad explicit choice) before the first tick
    return Actuator(
        placeholders=placeholders,
        nodepools=NodePools(kube),
        buffers=(
            CapacityBuffers(kube, namespace=ph.namespace, priority_class=ph.priority_class)
            if served
            else None
        ),
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


def backend_choice(settings: Settings, kube: Kube) -> BackendChoice:
    """The prewarm backend pools without their own would use now, and why (``doctor``)."""
    ph = settings.planning.placeholders
    return choose_backend(
        kube, ph.namespace, actuation=settings.planning.actuation, now=int(time.time())
    )


def model_mirror(settings: Settings, kube: Kube) -> ModelConfigMaps | None:
    """The ConfigMap model store when configured (``models_store: configmap``), else None."""
    if settings.models_store != "configmap":
        return None
    return ModelConfigMaps(kube, namespace=settings.planning.placeholders.namespace)


def fetch_models(settings: Settings, mirror: ModelConfigMaps) -> list[str]:
    """Install every pool's published model into ``models_dir`` when it is new; what changed.

    A pool whose published model cannot be read or verified keeps its current one (logged).
    """
    store = ArtifactStore(settings.models_dir)
    changed = []
    for pool in settings.pools:
        try:
            found = mirror.fetch(pool.name)
            if found is None or found[0] == store.current_version(pool.name):
                continue
            store.install(pool.name, found[0], text=found[1])
        except ForecasterError as exc:
            log.error(
                "pool %s: published model not installed, keeping the current: %s", pool.name, exc
            )
            continue
        changed.append(f"{pool.name} {found[0]}")
    return changed


def publish_models(settings: Settings, mirror: ModelConfigMaps, *, pools: Sequence[str]) -> None:
    """Publish the current local model of each pool in ``pools``."""
    store = ArtifactStore(settings.models_dir)
    for name in pools:
        version = store.current_version(name)
        if version is not None and mirror.publish(
            name, version=version, text=store.read_text(name, version)
        ):
            log.info("pool %s: model %s published to its ConfigMap", name, version)


def connect(settings: Settings, *, host: str | None = None) -> Kube:
    """A Kube client: ``host`` (tests), in-cluster config, else kubeconfig."""
    return Kube(api_client(host=host), dry_run=settings.dry_run)


def run_guardrails(settings: Settings, kube: Kube) -> list[Guardrail]:
    """Start-up checks, each logged as a warning; returned for the status endpoint."""
    findings = guardrails.check(
        kube,
        [
            PoolCheck(
                pool=p.name,
                allow_unlimited=p.allow_unlimited_nodepool,
                horizon_seconds=settings.horizon_for(p),
                image_pull_seconds=p.lead_time.image_pull_seconds,
            )
            for p in settings.pools
        ],
    )
    for finding in findings:
        where = f" ({finding.pool})" if finding.pool else ""
        log.warning("guardrail %s%s: %s", finding.code, where, finding.message)
    return findings


def check_queries(
    settings: Settings, *, pools: Sequence[str] | None, now: int
) -> tuple[str | None, list[QueryCheck]]:
    """Prometheus' retention and what each pool's query returns (``check-query``, ``doctor``)."""
    source = build_source(settings)
    if not isinstance(source, PrometheusSource):
        raise ConfigError("check-query needs source.kind: prometheus (this config reads CSV files)")
    for name in pools or ():
        settings.pool(name)  # an unknown pool is refused with the names there are
    retention = source.retention()
    checks = [
        source.check(
            p.name,
            now=now,
            lookback_seconds=int(settings.forecast.history_days * DAY),
            step_seconds=settings.forecast.step_seconds,
        )
        for p in settings.pools
        if not pools or p.name in pools
    ]
    return retention, checks


def history_findings(
    settings: Settings, retention: str | None, *, checks: Sequence[QueryCheck], now: int
) -> list[Guardrail]:
    """What keeps training from its history: a short retention, a query that does not return
    one series, less history than ``min_history_days``."""
    forecast = settings.forecast
    findings = []
    kept = prometheus_duration_seconds(retention) if retention else None
    if kept is not None and kept < forecast.history_days * DAY:
        findings.append(
            Guardrail(
                "short-retention",
                None,
                f"Prometheus keeps {retention} (storage.tsdb.retention.time) but training reads"
                f" {forecast.history_days:g} days (forecast.history_days): raise the retention,"
                " or record the demand series (deploy/ ships recording rules) into long-term"
                " storage",
            )
        )
    for check in checks:
        if check.problem or check.series > 1:  # none now is fine: no GPU pod asks right now
            why = check.problem or f"it returns {check.series} series now, not exactly one"
            findings.append(Guardrail("bad-query", check.pool, f"the pool's query fails: {why}"))
            continue
        days = 0.0 if check.first_sample_at is None else (now - check.first_sample_at) / DAY
        if days < forecast.min_history_days:
            findings.append(
                Guardrail(
                    "short-history",
                    check.pool,
                    f"{days:.1f} days of history, training needs {forecast.min_history_days:g}"
                    " (forecast.min_history_days): training publishes no model until then (the"
                    " daemon forecasts with the persistence baseline)",
                )
            )
    return findings


def cleanup(
    settings: Settings,
    kube: Kube,
    *,
    expired_at: int | None = None,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    hold_seconds: int = UNINSTALL_HOLD_SECONDS,
) -> list[str]:
    """Uninstall: withdraw every placeholder and buffer change, restore every NodePool we touched.

    First the leader Lease is fenced (taken for ``hold_seconds``) and the old leader's deadline
    waited out, so a daemon that is still running cannot prewarm again behind our back while
    the manifests are being deleted (Helm's pre-delete hook runs before the Deployment goes).
    Idempotent - a second run finds nothing to change. Leaves the PriorityClass and the state
    ConfigMap to ``kubectl delete -k deploy/...`` / ``helm uninstall``.

    With ``expired_at`` (``cleanup --expired``, the CronJob that works without the daemon):
    only what has outlived its deadline - buffers past ``expires-at`` are zeroed, NodePools past
    their protection deadline restored; placeholders expire by themselves (Jobs).
    """
    ph = settings.planning.placeholders
    buffers = (
        CapacityBuffers(kube, namespace=ph.namespace, priority_class=ph.priority_class)
        if kube.serves_capacity_buffers(ph.namespace)
        else None
    )
    actuator = Actuator(
        placeholders=Placeholders(kube, namespace=ph.namespace, priority_class=ph.priority_class),
        nodepools=NodePools(kube),
        buffers=buffers,
        pools={p.name: PoolActuation(placeholder_spec(settings, p)) for p in settings.pools},
    )
    if expired_at is not None:
        return expire(kube, buffers=buffers, now=expired_at)
    wait = fence(
        kube,
        namespace=ph.namespace,
        identity=UNINSTALL_IDENTITY,
        hold_seconds=hold_seconds,
        wall=wall,
    )
    if wait:
        sleep(wait)
    changed = []
    for pool in settings.pools:
        changed += actuator.withdraw(pool.name)
    if buffers is not None:
        changed += _remove_buffers(buffers, [p.name for p in settings.pools], sleep=sleep)
    return changed


def _remove_buffers(
    buffers: CapacityBuffers, pools: list[str], *, sleep: Callable[[float], None]
) -> list[str]:
    """Delete our zeroed buffers once the autoscaler has let their capacity go (bounded wait)."""
    changed, waiting = [], list(pools)
    for attempt in range(BUFFER_DRAIN_CHECKS):
        still = []
        for pool in waiting:
            removed = buffers.remove(pool)
            if removed:
                changed.append(f"CapacityBuffer of {pool} deleted (after 0 replicas)")
            elif removed is False:
                still.append(pool)
        waiting = still
        if not waiting:
            break
        if attempt < BUFFER_DRAIN_CHECKS - 1:
            sleep(BUFFER_DRAIN_SECONDS)
    changed += [
        f"CapacityBuffer of {pool} left at 0 replicas: the autoscaler still reports replicas;"
        " run cleanup again to delete it"
        for pool in waiting
    ]
    return changed


def expire(kube: Kube, *, buffers: CapacityBuffers | None, now: int) -> list[str]:
    """Undo what outlived its deadline (see ``cleanup``).

    Every NodePool carrying our record is looked at, configured or not, so removing a pool from
    the config does not strand its protection.
    """
    changed = []
    if buffers is not None:
        zeroed = buffers.zero_expired(now=now)
        changed += [f"CapacityBuffer {name} expired: 0 replicas" for name in zeroed]
    nodepools = NodePools(kube)
    for name in kube.list_nodepool_names(annotated=labels.ORIGINAL_DISRUPTION):
        if nodepools.restore(name, expired_before=now):
            changed.append(f"NodePool {name}: protection expired, restored")
    return changed
