"""Pre-flight checks: guardrails, the prewarm backend, the history queries (``doctor``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from forecaster.accelerators import GPU, unit_of
from forecaster.actuators import guardrails
from forecaster.actuators import labels as lbl
from forecaster.actuators.attribution import shape
from forecaster.actuators.coordination.state_store import ConfigMapStateStore
from forecaster.actuators.guardrails import Guardrail, PoolCheck
from forecaster.actuators.kube import NODEPOOL_GRANT, Kube
from forecaster.actuators.notice.base import NamespaceFilter, read_notice
from forecaster.actuators.notice.registry import SOURCES
from forecaster.actuators.observe.claims import claimed_pods
from forecaster.actuators.observe.pod_watch import LIVE_PODS
from forecaster.actuators.prewarm.backends import BackendChoice, choose_backend
from forecaster.actuators.prewarm.registry import served_backends
from forecaster.core.cluster import ClaimedPods
from forecaster.core.notice import top_namespaces
from forecaster.core.policy import horizon_for_lead
from forecaster.durations import DAY
from forecaster.errors import ActuationError, ConfigError, SourceError
from forecaster.reconcile.state import ServiceState, StateFormatError
from forecaster.settings import Settings
from forecaster.sources.base import DemandSource
from forecaster.sources.prometheus import (
    NODESELECTORS_OPT_IN,
    PrometheusSource,
    QueryCheck,
    prometheus_duration_seconds,
)

log = logging.getLogger(__name__)


def backend_choice(settings: Settings, kube: Kube) -> BackendChoice:
    """The prewarm backend pools without their own would use now, and why (``doctor``)."""
    ph = settings.planning.placeholders
    return choose_backend(
        kube, ph.namespace, actuation=settings.planning.actuation, now=int(time.time())
    )


def backend_lines(settings: Settings, kube: Kube) -> list[str]:
    """What ``doctor`` says of prewarm backends: the choice in force and why, then each
    registered backend served or not (and why not), then the pools that name their own."""
    ph = settings.planning.placeholders
    choice = backend_choice(settings, kube)
    served, missing = served_backends(kube, ph.namespace, ph.priority_class)
    lines = [f"backend: {choice.backend} ({choice.reason})"]
    lines += [f"backend {name}: served" for name in served]
    lines += [f"backend {name}: not served: {why}" for name, why in missing.items()]
    for pool in settings.pools:
        if pool.backend is not None:
            state = (
                "served" if pool.backend in served else "NOT served: the daemon refuses to start"
            )
            lines.append(f"pool {pool.name}: backend {pool.backend} ({state})")
    return lines


def unit_lines(settings: Settings) -> list[str]:
    """One line per pool counted in another unit than whole NVIDIA GPUs: what its numbers are
    (a MIG pool's are slices, not GPUs)."""
    return [
        f"pool {p.name}: counted in {unit_of(p.resource)} ({p.resource}): its demand, prewarm,"
        " caps and prices are in that unit"
        for p in settings.pools
        if p.resource != GPU
    ]


GRANT_FIX = (
    "re-render the RBAC with the pool (Helm: it is in `pools`; Kustomize: `forecaster rbac"
    " --config deploy/base/forecaster.yaml > deploy/base/config-rbac.yaml`) and apply it"
)


def grant_findings(settings: Settings, kube: Kube) -> list[Guardrail]:
    """One finding per configured pool the daemon's NodePool grant does not name: the daemon
    gets 403 on that NodePool (that pool only), every tick, until the grant names it."""
    try:
        role = kube.get_cluster_role(NODEPOOL_GRANT)
    except ActuationError as exc:
        return [
            Guardrail(
                "nodepool-grant-unchecked",
                None,
                f"cannot read ClusterRole {NODEPOOL_GRANT} to check the daemon's NodePool grant"
                f" ({exc})",
            )
        ]
    if role is None:  # not installed (yet): nothing to check
        return []
    named: set[str] = set()
    for rule in role.get("rules") or []:
        if "nodepools" in rule.get("resources", []) and "get" in rule.get("verbs", []):
            if "resourceNames" not in rule:
                return []  # every NodePool (a grant from before pools were named)
            named.update(rule["resourceNames"])
    return [
        Guardrail(
            "nodepool-grant",
            pool.name,
            f"ClusterRole {NODEPOOL_GRANT} does not name NodePool {pool.name}: the daemon gets"
            f" 403 on it (that pool only) - {GRANT_FIX}",
        )
        for pool in settings.pools
        if pool.name not in named
    ]


def namespace_lines(settings: Settings, kube: Kube, *, now: int) -> list[str]:
    """The namespaces whose announced work held the most prewarm in 7 days, with precision
    and waste, from the daemon's saved state (its notice outcomes)."""
    store = ConfigMapStateStore(kube, namespace=settings.namespace, name=settings.state_config_map)
    try:
        data = store.load()
        state = None if data is None else ServiceState.from_dict(data)
    except (ActuationError, StateFormatError) as exc:
        return [f"notice namespaces: the daemon's state cannot be read ({exc})"]
    top = top_namespaces(state.notice, now=now) if state is not None else ()
    if not top:
        return ["notice namespaces: no announced item resolved in 7 days"]
    return [
        f"notice namespace {n.namespace}: {n.held_gpu_hours:.1f} GPU-hours held for its"
        f" announced work in 7 days ({n.waste_gpu_hours:.1f} for items that did not come),"
        f" precision {n.precision:.2f} over {n.resolved} items"
        for n in top
    ]


def notice_lines(settings: Settings, kube: Kube, *, now: int) -> list[str]:
    """One line per configured notice source: not installed, unreadable, or what it announces
    now (the soonest item per pool)."""
    sources = [SOURCES.get(name) for name in settings.notice.sources]
    if not sources:
        return ["notice: no source configured (notice.sources: [])"]
    shapes = [shape(n) for n in kube.list_nodepools()]
    reading = read_notice(
        kube,
        sources,
        pools=shapes,
        now=now,
        grace_seconds=settings.notice.grace_seconds,
        resources={p.name: p.resource for p in settings.pools},
        node_units={p.name: p.gpus_per_node for p in settings.pools},
        namespaces=notice_namespaces(settings),
    )
    lines = []
    for status in reading.statuses:
        if not status.installed:
            lines.append(f"notice {status.source}: not installed (its API is not served)")
            continue
        mine = sorted(
            (i for items in reading.items.values() for i in items if i.source == status.source),
            key=lambda i: i.earliest_start,
        )
        soonest = f"; soonest: {mine[0].key} ({mine[0].gpus} GPUs, {mine[0].pool})" if mine else ""
        problem = f"; {status.problem}" if status.problem else ""
        lines.append(f"notice {status.source}: {status.items} item(s) announced{soonest}{problem}")
    for passed in reading.skipped[:MAX_SKIPPED_LINES]:
        lines.append(f"notice: skipped {passed.kind} {passed.name}: {passed.message}")
    if len(reading.skipped) > MAX_SKIPPED_LINES:
        lines.append(f"notice: ... and {len(reading.skipped) - MAX_SKIPPED_LINES} more skipped")
    return lines


MAX_SKIPPED_LINES = 5


def notice_namespaces(settings: Settings) -> NamespaceFilter:
    """``notice.namespaces`` as the notice reader filters with it."""
    chosen = settings.notice.namespaces
    return NamespaceFilter(frozenset(chosen.include), frozenset(chosen.exclude))


"""Skipped objects named by ``doctor`` (the rest counted): tenants decide how many there are."""


def claim_lines(kube: Kube) -> list[str]:
    """One line per namespace and pool with live pods asking for devices through DRA claims
    (``actuators.observe.claims``): they are never prewarmed, and a user should know."""
    nodes = kube.list_nodes(labels=lbl.NODEPOOL_LABEL)
    node_pool = {n["metadata"]["name"]: n["metadata"]["labels"][lbl.NODEPOOL_LABEL] for n in nodes}
    shapes = [shape(n) for n in kube.list_nodepools()]
    found = claimed_pods(kube.list_pods(fields=LIVE_PODS), node_pool=node_pool, shapes=shapes)
    if not found:
        return ["DRA: no live pod asks for devices through resourceClaims"]
    return [
        f"DRA: {c.pods} pod(s) in namespace {c.namespace}"
        f" ({'pool ' + c.pool if c.pool else 'no NodePool fits'}) ask for devices through"
        f" resourceClaims: {c.NOT_PREWARMED}"
        for c in found
    ]


def claimed_history_line(source: DemandSource, *, now: int) -> str:
    """The pods with DRA claims over the last week, per namespace (never prewarmed)."""
    if not isinstance(source, PrometheusSource):
        return "DRA last 7 days: not measured (source.kind is not prometheus)"
    try:
        found = source.claimed_pods(end=now)
    except SourceError as exc:
        return f"DRA last 7 days: not measured ({exc})"
    if not found:
        return "DRA last 7 days: no pod asked for devices through resourceClaims"
    shown = ", ".join(f"{pods} in {namespace}" for namespace, pods in sorted(found.items()))
    return f"DRA last 7 days: pods with resourceClaims: {shown}; {ClaimedPods.NOT_PREWARMED}"


def announced_history_line(source: DemandSource, *, now: int) -> str:
    """What the cluster announced over the last week: the share of the GPU-hours its Running
    pods used that were of announced work (Jobs of CronJobs and JobSets), the part notice can
    prewarm for; the rest is left to the forecast."""
    if not isinstance(source, PrometheusSource):
        return "notice last 7 days: not measured (source.kind is not prometheus)"
    try:
        share = source.announced_share(start=now - 7 * DAY, end=now)
    except SourceError as exc:
        return f"notice last 7 days: not measured ({exc})"
    if share.gpu_hours <= 0:
        return "notice last 7 days: no GPU pod ran (kube_pod_container_resource_requests)"
    return (
        f"notice last 7 days: {share.announced_gpu_hours:.0f} of {share.gpu_hours:.0f} GPU-hours"
        f" run ({share.announced_gpu_hours / share.gpu_hours:.0%}) were Jobs of CronJobs or"
        " JobSets, work the cluster announces before its pods exist"
    )


def run_guardrails(
    settings: Settings, kube: Kube, *, now: int, log_findings: bool = True
) -> list[Guardrail]:
    """Start-up checks at ``now``, each logged as a warning (``log_findings``: not where the
    caller prints them itself, as ``doctor`` does); returned for the status endpoint."""
    findings = guardrails.check(
        kube,
        [
            PoolCheck(
                pool=p.name,
                allow_unlimited=p.allow_unlimited_nodepool,
                resource=p.resource,
                horizon_seconds=horizon_for_lead(
                    p.lead_time.total_seconds,
                    settings.reconcile_every_seconds,
                    settings.forecast.horizons_seconds,
                ),
                image_pull_seconds=p.lead_time.image_pull_seconds,
                lead_seconds=p.lead_time.total_seconds,
            )
            for p in settings.pools
        ],
        now=now,
    )
    for finding in findings if log_findings else ():
        where = f" ({finding.pool})" if finding.pool else ""
        log.warning("guardrail %s%s: %s", finding.code, where, finding.message)
    return findings


def check_queries(
    settings: Settings, source: DemandSource, *, pools: Sequence[str] | None, now: int
) -> tuple[str | None, list[QueryCheck]]:
    """Prometheus' retention and what each pool's query returns (``check-query``, ``doctor``)."""
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
    one series, less history than ``min_history_days``; with an operating point, a pod history
    that cannot be read, or finds no pod while GPUs are requested (the choice then replays the
    demand level rebuilt as pods)."""
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
        if settings.operating_point.enabled and (
            check.pods_problem or (check.pods_last_day == 0 and (check.last_value or 0) > 0)
        ):
            why = check.pods_problem or (
                "it finds no GPU pod in the last day while GPUs are requested now"
                f" ({check.last_value:g}; kube-state-metrics' kube_pod_created,"
                " kube_pod_start_time, kube_pod_status_phase and the karpenter.sh/nodepool node"
                " selector; or set the pool's pods_query)"
            )
            findings.append(
                Guardrail(
                    "no-pod-history",
                    check.pool,
                    f"the pod history cannot be used: {why}; the operating point replays the"
                    " demand level rebuilt as pods instead (job sizes guessed)",
                )
            )
        findings += _demand_sources(check, now=now)
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


def _demand_sources(check: QueryCheck, *, now: int) -> list[Guardrail]:
    """Where the pool's demand history can come from: the daemon's own export, kube-state-metrics'
    opt-in ``kube_pod_nodeselectors`` (the bootstrap), or neither - then no history at all."""
    if check.nodeselectors_exported is None:  # a custom query: not judged here
        return []
    own, exported = check.own_first_at, check.nodeselectors_exported
    if own is None and not exported:
        return [
            Guardrail(
                "no-demand-metric",
                check.pool,
                "no demand history: neither forecaster_observed_demand_gpus (the daemon's own,"
                f" exported once it runs) nor kube_pod_nodeselectors is in Prometheus;"
                f" {NODESELECTORS_OPT_IN}",
            )
        ]
    if not exported:
        days = (now - own) / DAY if own is not None else 0.0
        return [
            Guardrail(
                "no-bootstrap",
                check.pool,
                f"history from the daemon's own forecaster_observed_demand_gpus only ({days:.1f}"
                f" days); history from before it ran needs {NODESELECTORS_OPT_IN}",
            )
        ]
    if check.series == 0 and check.first_sample_at is None:
        return [
            Guardrail(
                "no-series",
                check.pool,
                "the pool's query returned no series in the whole lookback: no pod selected"
                f" NodePool {check.pool} (is the name right?)",
            )
        ]
    return []
