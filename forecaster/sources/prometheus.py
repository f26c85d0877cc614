"""GPU demand history from Prometheus (kube-state-metrics) through ``prometheus-api-client``.

* Range queries are split into chunks of at most ``max_points_per_request`` grid points:
  Prometheus refuses more than 11,000 points per series ("exceeded maximum resolution").
  Chunks do not overlap; duplicated timestamps are dropped anyway by ``regularize``.
* Start and end are aligned down to the step so every fetch lands on the same grid.
* Transient failures (connection refused, timeouts, 429/5xx) are retried with exponential
  backoff by the HTTP session; a 4xx (bad PromQL) is not retried.
* Every failure becomes a one-line ``SourceError`` naming the server or the query problem.

The default query counts GPUs requested by Pending and Running pods per Karpenter NodePool.
Pending pods have no node yet, so the pool is taken from the pod's own node selector
(``kube_pod_nodeselectors``, exported by kube-state-metrics); pools that select differently
override the query in config. ``{pool}`` in a query is replaced with the NodePool name.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import requests
import urllib3.exceptions
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from forecaster.accelerators import GPU, metric_label
from forecaster.core.cluster import MeasuredLead
from forecaster.core.jobs import JobTrace, SeenPod, jobs_from_pods
from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries, iso_utc
from forecaster.errors import SourceError

log = logging.getLogger(__name__)

DEFAULT_RETENTION = "15d"
"""What Prometheus keeps when ``--storage.tsdb.retention.time`` is not set (its flag then reads
``0s``) and no size limit is either."""

MAX_POINTS_PER_SERIES = 11_000
"""Prometheus's hard limit of points per series in one range query."""

OWN_DEMAND_QUERY = (
    'max(forecaster_observed_unannounced_demand_gpus{pool="{pool}"})'
    ' or max(forecaster_observed_demand_gpus{pool="{pool}"})'
)
"""The daemon's own export of the demand it observes (every replica; ``max`` over them): of
work not announced (``actuators.notice`` marks the pods of announced work, planned from their
announcement instead), else - history from a release without notice - all of it."""

ANNOUNCED_PODS = """group by (namespace, pod) (
    kube_pod_owner{owner_kind="Job"}
    * on (namespace, owner_name) group_left()
      group by (namespace, owner_name) (label_replace(
        kube_job_owner{owner_kind=~"CronJob|JobSet"}, "owner_name", "$1", "job_name", "(.+)"
      ))
  )"""
"""Pods of announced work in kube-state-metrics (STABLE, default metrics): pods of a Job that a
CronJob or a JobSet owns. The queries leave them out, as the daemon's own export does, so the
forecast is of unannounced work. Coarser than the daemon's marking: a JobSet's first stage,
which gives no notice, is left out too (only until the daemon's own history exists)."""

CLAIMED_PODS_QUERY = (
    "count by (namespace) (count by (namespace, pod)"
    " (max_over_time(kube_pod_resourceclaim_info[{days}d])))"
)
"""Pods per namespace with a DRA claim over the last ``{days}`` days (one series per claim)."""

NODESELECTORS = "kube_pod_nodeselectors"
NODESELECTORS_OPT_IN = (
    "kube-state-metrics exports kube_pod_nodeselectors only when opted in:"
    " --metric-opt-in-list=kube_pod_nodeselectors (kube-prometheus-stack:"
    " kube-state-metrics.extraArgs)"
)

BOOTSTRAP_QUERY = """sum(
  sum by (namespace, pod) (max by (namespace, pod, container) (
    kube_pod_container_resource_requests{resource="{resource}",{exclude}}
  ))
  * on (namespace, pod) group_left()
    max by (namespace, pod) (kube_pod_status_phase{phase=~"Pending|Running"} == 1)
  * on (namespace, pod) group_left()
    max by (namespace, pod) (kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="{pool}"})
  unless on (namespace, pod) ANNOUNCED_PODS
)""".replace("ANNOUNCED_PODS", ANNOUNCED_PODS)
"""GPUs requested by Pending + Running pods that select NodePool ``{pool}`` (kube-state-metrics:
``kube_pod_nodeselectors`` is opt-in), our own (``{exclude}``) and announced work's
(``ANNOUNCED_PODS``) left out: the history from before
the daemon ran. ``max by`` container first: kube-state-metrics starts a new series when it
labels a bound pod's ``node`` (and two exporters would duplicate every series)."""

_RUNNING_GPUS = """sum(
  sum by (namespace, pod) (max by (namespace, pod, container) (
    kube_pod_container_resource_requests{resource=~"{resources}",{exclude}}
  ))
  * on (namespace, pod) group_left()
    max by (namespace, pod) (kube_pod_status_phase{phase="Running"} == 1)ONLY
)"""
RUNNING_GPUS_QUERY = _RUNNING_GPUS.replace("ONLY", "")
"""GPUs of Running pods, cluster-wide, our own left out (default metrics only)."""
ANNOUNCED_RUNNING_GPUS_QUERY = _RUNNING_GPUS.replace(
    "ONLY", "\n  and on (namespace, pod) " + ANNOUNCED_PODS
)
"""Of those, the pods of announced work (``ANNOUNCED_PODS``)."""


@dataclass(frozen=True)
class AnnouncedShare:
    """GPU-hours run over a span, and those of announced work (``doctor``)."""

    gpu_hours: float
    announced_gpu_hours: float


DEFAULT_QUERY = OWN_DEMAND_QUERY + " or " + BOOTSTRAP_QUERY
"""GPUs requested by Pending + Running pods of NodePool ``{pool}``: the daemon's own export
(``forecaster_observed_demand_gpus``: our placeholders excluded, node affinity attributed) where
it exists, else - history from before the daemon ran, the bootstrap - kube-state-metrics' pods
that select the NodePool (``kube_pod_nodeselectors``, an opt-in metric), our own (placeholders,
in our namespaces: ``{exclude}``) never counted as demand."""

ARRIVALS_QUERY = """sum(
  sum by (namespace, pod) (max by (namespace, pod, container) (
    kube_pod_container_resource_requests{resource="{resource}",{exclude}}
  ))
  * on (namespace, pod) group_left()
    group by (namespace, pod) (kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="{pool}"})
  * on (namespace, pod) group_left()
    group by (namespace, pod) ((time() - kube_pod_created) >= {step} < {twice_step})
  unless on (namespace, pod) ANNOUNCED_PODS
) or vector(0)""".replace("ANNOUNCED_PODS", ANNOUNCED_PODS)
"""GPUs requested by pods of NodePool ``{pool}`` (not of announced work) created one to two
steps before the evaluation
time (``kube_pod_created`` is the creation time). Asking one step late leaves a scrape interval
(at most one step) for the pod to be seen at all; ``fetch_arrivals`` moves each value back one
step, so the value at ``t`` counts the pods created in (t - step, t]. No pod created is 0, not a
gap."""

POD_SELECTOR = """group by (namespace, pod) (
  last_over_time(
    kube_pod_nodeselectors{nodeselector_karpenter_sh_nodepool="{pool}",{exclude}}[{window}]
  )
)"""
"""The pods of NodePool ``{pool}`` seen within ``{window}`` before the evaluation time, one
series per (namespace, pod); a pool's ``pods_query`` overrides it."""

POD_QUERIES = {
    "gpus": """sum by (namespace, pod) (max by (namespace, pod, container) (
  max_over_time(kube_pod_container_resource_requests{resource="{resource}"}[{window}])
)) and on (namespace, pod) ({pods})""",
    "created": "max by (namespace, pod) (last_over_time(kube_pod_created[{window}]))"
    " and on (namespace, pod) ({pods})",
    "started": "max by (namespace, pod) (last_over_time(kube_pod_start_time[{window}]))"
    " and on (namespace, pod) ({pods})",
    "alive": """max by (namespace, pod) (max_over_time(
  timestamp(kube_pod_status_phase{phase=~"Pending|Running"} == 1)[{window}:{step}]
)) and on (namespace, pod) ({pods})""",
}
"""Per pod of the pool, over one window (instant queries at its end): GPUs requested (summed
over containers; one series per container and node, as kube-state-metrics labels ``node`` once
the pod is bound, so the largest per container), creation and start times
(``kube_pod_start_time``: when a node took it), and
the last step it was Pending or Running (``timestamp`` inside the subquery is the step's time).
``fetch_pods`` runs them one window at a time and joins them by pod."""

OWNER_QUERY = """group by (namespace, pod, owner_kind, owner_name) (
  last_over_time(kube_pod_owner[{window}])
) and on (namespace, pod) ({pods})"""
"""Per pod of the pool, its owner (kube-state-metrics, default): pods of one owner created
together are one gang (``core.jobs.jobs_from_pods``)."""

LEAD_QUERY = 'max(forecaster_lead_measured_seconds{pool="{pool}",part="{part}"})'
"""The daemon's measured lead of a pool, one part (``provisioning``, ``startup``)."""

KARPENTER_LEAD_QUERY = (
    "histogram_quantile(0.5, sum by (le) ("
    "increase(karpenter_pods_provisioning_{part}_duration_seconds_bucket[{range}])))"
)
"""Karpenter's median over a range of the time from when it first judged a pending pod
schedulable (and launched capacity for it) to the pod bound (``part`` ``bound``: the launch) or
running (``startup``: launch + image pull + start). Alpha histograms, cluster-wide (no NodePool
label): the lead where the daemon measured none."""
KARPENTER_COUNT_QUERY = (
    "sum(increase(karpenter_pods_provisioning_bound_duration_seconds_count[{range}]))"
)

POD_WINDOW_SECONDS = 86_400
"""``fetch_pods`` asks one day at a time: a subquery over a day at one-minute steps is 1,440
evaluations, and a day's pods are one modest answer."""

RECORDED_QUERY = 'sum(nodepool:forecaster_gpu_demand:sum{nodepool="{pool}",resource="{resource}"})'
"""The same demand from the recording rule ``deploy/`` ships (cheap over weeks of history)."""


@dataclass(frozen=True)
class QueryCheck:
    """What a pool's query returns (``forecaster check-query``, ``doctor``)."""

    pool: str
    query: str
    series: int
    """Series the query returns now (it must be exactly one)."""
    last_value: float | None
    first_sample_at: int | None
    """The earliest sample within the lookback, at one-hour resolution (None: none at all)."""
    recent: QualityReport | None
    """The last day on the forecasting grid: gaps, NaN, resets (None: it could not be read)."""
    problem: str | None = None
    pods_last_day: int | None = None
    """GPU pods the pod history (``POD_QUERIES``) finds in the last day (None: not read)."""
    pods_problem: str | None = None
    """Why the pod history could not be read."""
    own_first_at: int | None = None
    """The first hour with the daemon's own ``forecaster_observed_demand_gpus`` for the pool."""
    nodeselectors_first_at: int | None = None
    """The first hour with a pod selecting the pool in ``kube_pod_nodeselectors``."""
    nodeselectors_exported: bool | None = None
    """Whether ``kube_pod_nodeselectors`` (kube-state-metrics, opt-in) exists at all."""


_PROM_DURATION = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
_PROM_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def prometheus_duration_seconds(text: str) -> float | None:
    """Seconds of a Prometheus duration (``15d``, ``1y``, ``1d12h``); None if unreadable."""
    parts = _PROM_DURATION.findall(text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    return sum(int(n) * _PROM_UNITS[u] for n, u in parts)


EXCLUDE = "{exclude}"
"""The placeholder every shipped query (and a custom one) puts inside a pod selector: filled
with ``namespace!~"<forecaster's namespace>|<the placeholders' one>"`` so our placeholders are
never demand - those of today and those earlier versions held in forecaster's own namespace,
which the history still holds."""
OUR_NAMESPACES = ("forecaster", "forecaster-placeholders")
"""forecaster's own namespace and the placeholders' one, by default (``Settings``)."""


def exclusion(namespaces: Sequence[str]) -> str:
    """The label matcher that leaves out forecaster's own pods (every pod has a namespace;
    namespace names need no regex escaping)."""
    if not namespaces:
        return 'namespace!=""'
    if len(namespaces) == 1:
        return f'namespace!="{namespaces[0]}"'
    return f'namespace!~"{"|".join(namespaces)}"'


def render_query(
    template: str, pool: str, *, exclude_namespaces: Sequence[str] = (), resource: str = GPU
) -> str:
    """Substitute the pool name, ``{exclude}`` and ``{resource}`` (the pool's accelerator as
    kube-state-metrics labels it) - and only them: PromQL braces stay."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", pool):
        raise SourceError(f"pool name {pool!r} is not a valid NodePool name")
    return (
        template.replace("{pool}", pool)
        .replace(EXCLUDE, exclusion(exclude_namespaces))
        .replace("{resource}", metric_label(resource))
    )


class PrometheusSource:
    """A ``DemandSource`` reading one PromQL query per pool."""

    def __init__(
        self,
        *,
        url: str,
        queries: dict[str, str],
        timeout_seconds: float = 10.0,
        retries: int = 3,
        backoff_seconds: float = 0.5,
        max_points_per_request: int = MAX_POINTS_PER_SERIES - 1,
        outage_min_seconds: int = 3600,
        headers: dict[str, str] | None = None,
        arrival_queries: dict[str, str] | None = None,
        pod_selectors: dict[str, str] | None = None,
        pod_window_seconds: int = POD_WINDOW_SECONDS,
        exclude_namespaces: Sequence[str] = OUR_NAMESPACES,
        resources: dict[str, str] | None = None,
    ) -> None:
        """``exclude_namespaces``: forecaster's own and the placeholders', left out of every
        query's pods;
        ``resources``: each pool's accelerator resource (``nvidia.com/gpu`` where not named)."""
        if not 1 < max_points_per_request < MAX_POINTS_PER_SERIES:
            raise ValueError(f"max_points_per_request must be below {MAX_POINTS_PER_SERIES}")
        self.url = url.rstrip("/")
        self._queries = dict(queries)
        self._arrival_queries = dict(arrival_queries or {})
        self._pod_selectors = dict(pod_selectors or {})
        self._pod_window = pod_window_seconds
        self._exclude = tuple(exclude_namespaces)
        self._resources = dict(resources or {})
        self._timeout = timeout_seconds
        self._max_points = max_points_per_request
        self._outage_min_seconds = outage_min_seconds
        retry = Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            backoff_factor=backoff_seconds,
            status_forcelist=(429, 500, 502, 503, 504),
            allowed_methods=("GET", "POST"),
        )
        self._client = PrometheusConnect(
            url=self.url, headers=headers, retry=retry, timeout=timeout_seconds
        )

    def _render(self, template: str, pool: str) -> str:
        return render_query(
            template,
            pool,
            exclude_namespaces=self._exclude,
            resource=self._resources.get(pool, GPU),
        )

    def query_for(self, pool: str) -> str:
        """The PromQL used for ``pool``: its override, else the default template."""
        return self._render(self._queries.get(pool, DEFAULT_QUERY), pool)

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """Demand of ``pool`` on the step grid from ``start`` to ``end``, chunked."""
        return self._fetch(self.query_for(pool), pool, start, end, step_seconds)

    def fetch_arrivals(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        """GPUs of the pool's pods created in (t - step, t] for every grid point ``t``
        (``ARRIVALS_QUERY``; an ``ArrivalSource``)."""
        query = self._render(self._arrival_queries.get(pool, ARRIVALS_QUERY), pool)
        query = query.replace("{twice_step}", str(2 * step_seconds))
        query = query.replace("{step}", str(step_seconds))
        return self._fetch(query, pool, start, end, step_seconds, shift=step_seconds, outages=0)

    def fetch_pods(self, pool: str, *, start: int, end: int, step_seconds: int) -> JobTrace:
        """The pool's GPU pods alive in [start, end] as submissions (a ``PodHistorySource``):
        ``POD_QUERIES`` one window at a time, joined by pod, and the pods of one owner created
        together as one gang (``core.jobs.jobs_from_pods``). A pod seen in several windows is
        one pod (same namespace, name and creation time), its start time taken from whichever
        window knew it; one never seen Pending or Running, or without a creation time, is left
        out."""
        selector = self._render(self._pod_selectors.get(pool, POD_SELECTOR), pool)
        pods: dict[tuple[str, str, float], SeenPod] = {}
        at = start
        while at < end:
            at = min(end, at + self._pod_window)
            window = f"{min(self._pod_window, at - start + step_seconds)}s"
            values = {
                name: self._per_pod(
                    self._render(query, pool)
                    .replace("{pods}", selector)
                    .replace("{window}", window)
                    .replace("{step}", f"{step_seconds}s"),
                    at,
                )
                for name, query in POD_QUERIES.items()
            }
            owners = self._owners(
                OWNER_QUERY.replace("{pods}", selector).replace("{window}", window), at
            )
            for pod, requested in values["gpus"].items():
                created, alive = values["created"].get(pod), values["alive"].get(pod)
                if created is None or alive is None or requested <= 0:
                    continue
                started = values["started"].get(pod, math.nan)  # not yet on a node: NaN
                seen = pods.get((*pod, created))
                gpus = requested
                if seen is not None:
                    gpus, alive = max(gpus, seen.gpus), max(alive, seen.last_alive)
                    started = started if math.isnan(seen.started) else seen.started
                pods[(*pod, created)] = SeenPod(
                    created=created,
                    started=started,
                    last_alive=alive,
                    gpus=round(gpus),
                    owner=owners.get(pod) or (seen.owner if seen is not None else None),
                )
        jobs = jobs_from_pods(list(pods.values()), step_seconds=step_seconds)
        log.info("pool %s: %d GPU pods in the history, %d submissions", pool, len(pods), len(jobs))
        return jobs

    def _owners(self, query: str, at: int) -> dict[tuple[str, str], tuple[str, str, str]]:
        """``OWNER_QUERY`` at ``at`` as {(namespace, pod): (namespace, owner kind, name)}."""
        result = self._guarded(lambda: self._client.custom_query(query, params={"time": str(at)}))
        out = {}
        for item in result:
            labels = item.get("metric", {})
            if {"namespace", "pod", "owner_kind", "owner_name"} <= labels.keys():
                namespace = labels["namespace"]
                owner = (namespace, labels["owner_kind"], labels["owner_name"])
                out[(namespace, labels["pod"])] = owner
        return out

    def _per_pod(self, query: str, at: int) -> dict[tuple[str, str], float]:
        """An instant query at ``at`` as {(namespace, pod): value}."""
        result = self._guarded(lambda: self._client.custom_query(query, params={"time": str(at)}))
        out = {}
        for item in result:
            labels = item.get("metric", {})
            if "namespace" in labels and "pod" in labels:
                out[(labels["namespace"], labels["pod"])] = float(item["value"][1])
        return out

    def _fetch(
        self,
        query: str,
        pool: str,
        start: int,
        end: int,
        step_seconds: int,
        *,
        shift: int = 0,
        outages: int | None = None,
    ) -> tuple[DemandSeries, QualityReport]:
        """``query`` on the step grid, chunked; values at ``t + shift`` are reported at ``t``.
        Runs of zeros are outages from ``outages`` seconds (the source's own by default; 0 for
        arrivals, where a quiet night is no outage)."""
        start, end = start + shift, end + shift
        first = start - start % step_seconds
        last = end - end % step_seconds
        if last < first:
            raise SourceError(f"empty time range for pool {pool!r}: end is before start")
        timestamps: list[np.ndarray] = []
        values: list[np.ndarray] = []
        chunk_start = first
        while chunk_start <= last:
            chunk_end = min(last, chunk_start + (self._max_points - 1) * step_seconds)
            ts, vals = self._query_range(query, chunk_start, chunk_end, step_seconds)
            timestamps.append(ts)
            values.append(vals)
            chunk_start = chunk_end + step_seconds
        all_ts = np.concatenate(timestamps)
        if all_ts.size == 0:
            raise SourceError(
                f"Prometheus {self.url}: query for pool {pool!r} returned no samples between"
                f" {iso_utc(first)} and {iso_utc(last)}"
            )
        try:
            return regularize(
                all_ts - shift,
                np.concatenate(values),
                step_seconds=step_seconds,
                name=pool,
                outage_min_seconds=self._outage_min_seconds if outages is None else outages,
                window=(first - shift, last - shift),  # a stray sample must not size the grid
            )
        except ValueError as exc:
            raise SourceError(f"Prometheus {self.url}: pool {pool!r}: {exc}") from exc

    def retention(self) -> str | None:
        """The server's ``storage.tsdb.retention.time`` (None where it does not say: Thanos,
        managed services)."""
        flags = self._guarded(
            lambda: self._client._session.get(  # no flags call in the client; its session
                f"{self.url}/api/v1/status/flags",  # carries our retries
                headers=self._client.headers,
                auth=self._client.auth,
                timeout=self._timeout,
            )
        )
        if flags.status_code != 200:
            return None
        data = flags.json().get("data", {})
        value = str(data.get("storage.tsdb.retention.time") or "")
        if value in ("", "0s"):  # not set: 15d by default, unless only a size limit is set
            size = str(data.get("storage.tsdb.retention.size") or "")
            return DEFAULT_RETENTION if size in ("", "0B") else None
        return value

    def check(self, pool: str, *, now: int, lookback_seconds: int, step_seconds: int) -> QueryCheck:
        """Run the pool's query now, over the lookback (hourly) and over the last day (on the
        grid), and its pod history over the last day; a query error is reported in ``problem``
        (``pods_problem``), not raised."""
        query = self.query_for(pool)
        try:
            instant = self._guarded(
                lambda: self._client.custom_query(query, params={"time": str(now)})
            )
        except SourceError as exc:
            return QueryCheck(pool, query, 0, None, None, None, problem=str(exc))
        last = float(instant[0]["value"][1]) if len(instant) == 1 else None
        first = problem = None
        recent = None
        try:
            hourly, _ = self._query_range(query, now - lookback_seconds, now, 3600)
            first = int(hourly[0]) if hourly.size else None
            if hourly.size and hourly[-1] > now - 86400:  # else nothing to judge on the grid
                _, recent = self.fetch(pool, start=now - 86400, end=now, step_seconds=step_seconds)
        except SourceError as exc:
            problem = str(exc)
        pods = pods_problem = None
        try:
            pods = len(self.fetch_pods(pool, start=now - 86400, end=now, step_seconds=step_seconds))
        except SourceError as exc:
            pods_problem = str(exc)
        check = QueryCheck(
            pool, query, len(instant), last, first, recent, problem, pods, pods_problem
        )
        if pool in self._queries:  # a custom query: its sources are the operator's
            return check
        start = now - lookback_seconds
        selects = f'{NODESELECTORS}{{nodeselector_karpenter_sh_nodepool="{pool}"}}'
        return QueryCheck(
            pool,
            query,
            len(instant),
            last,
            first,
            recent,
            problem,
            pods,
            pods_problem,
            own_first_at=self._first_hour(render_query(OWN_DEMAND_QUERY, pool), start, now),
            nodeselectors_first_at=self._first_hour(f"count({selects})", start, now),
            nodeselectors_exported=self._first_hour(f"count({NODESELECTORS})", start, now)
            is not None,
        )

    def announced_share(self, *, start: int, end: int, step_seconds: int = 300) -> AnnouncedShare:
        """GPU-hours Running pods used in [start, end] and those of announced work: how much of
        the cluster's GPU work gives notice (a JobSet's first stage, which gives none, is
        counted as announced: ``ANNOUNCED_PODS`` is coarse). Raises ``SourceError``."""

        def gpu_hours(template: str) -> float:
            accelerators = sorted({GPU, *self._resources.values()})
            query = template.replace(EXCLUDE, exclusion(self._exclude)).replace(
                "{resources}", "|".join(metric_label(r) for r in accelerators)
            )
            _, values = self._query_range(query, start, end, step_seconds)
            return float(np.nansum(values)) * step_seconds / 3600

        return AnnouncedShare(
            gpu_hours(RUNNING_GPUS_QUERY), gpu_hours(ANNOUNCED_RUNNING_GPUS_QUERY)
        )

    def claimed_pods(self, *, end: int, days: int = 7) -> dict[str, int]:
        """Per namespace, the pods that asked for devices through DRA claims at some time in
        the ``days`` before ``end`` (``kube_pod_resourceclaim_info``, a default metric of
        kube-state-metrics); empty when none did. Raises ``SourceError``."""
        query = CLAIMED_PODS_QUERY.replace("{days}", str(days))
        found = self._guarded(lambda: self._client.custom_query(query, params={"time": str(end)}))
        return {
            str(item["metric"].get("namespace", "")): int(float(item["value"][1])) for item in found
        }

    def first_pod_at(self, pool: str, *, start: int, end: int) -> int | None:
        """The first hour in [start, end] at which a pod of ``pool`` shows in the pod history
        (``POD_SELECTOR`` or the pool's ``pods_query``); None: none at all."""
        selector = self._render(self._pod_selectors.get(pool, POD_SELECTOR), pool)
        return self._first_hour(f"count({selector.replace('{window}', '1h')})", start, end)

    def measured_lead(self, pool: str, *, start: int, end: int) -> MeasuredLead | None:
        """The pool's lead over [start, end] as the daemon measured it - the median of its hourly
        export (``forecaster_lead_measured_seconds``, ``LEAD_QUERY``) per part - else as
        Karpenter's pod provisioning histograms give it (``karpenter_lead``); None where
        neither has a figure (the daemon has not run, Karpenter's metrics are not scraped)."""

        def median(part: str) -> float | None:
            query = LEAD_QUERY.replace("{pool}", pool).replace("{part}", part)
            _, values = self._query_range(query, start, end, 3600)
            finite = values[np.isfinite(values)]
            return float(np.median(finite)) if finite.size else None

        provisioning = median("provisioning")
        if provisioning is None:
            return self.karpenter_lead(start=start, end=end)
        return MeasuredLead(
            provisioning_seconds=provisioning, startup_seconds=median("startup"), launches=0
        )

    def karpenter_lead(self, *, start: int, end: int) -> MeasuredLead | None:
        """The lead from Karpenter's pod provisioning histograms over [start, end]
        (``KARPENTER_LEAD_QUERY``): the median to bound is the launch, the median to running
        less it the start-up. Cluster-wide: every NodePool's pods it launched capacity for."""
        span = f"{max(1, end - start)}s"

        def instant(query: str) -> float | None:
            found = self._guarded(
                lambda: self._client.custom_query(
                    query.replace("{range}", span), params={"time": str(end)}
                )
            )
            value = float(found[0]["value"][1]) if found else math.nan
            return value if math.isfinite(value) else None

        bound = instant(KARPENTER_LEAD_QUERY.replace("{part}", "bound"))
        if bound is None:
            return None
        running = instant(KARPENTER_LEAD_QUERY.replace("{part}", "startup"))
        pods = instant(KARPENTER_COUNT_QUERY)
        return MeasuredLead(
            provisioning_seconds=bound,
            startup_seconds=max(0.0, running - bound) if running is not None else None,
            launches=round(pods or 0),
            origin="karpenter",
        )

    def _first_hour(self, query: str, start: int, end: int) -> int | None:
        """The first hour in [start, end] at which ``query`` has a sample (None: none, or the
        query failed - ``check`` reports the pool's own query's errors)."""
        try:
            hourly, _ = self._query_range(query, start, end, 3600)
        except SourceError:
            return None
        return int(hourly[0]) if hourly.size else None

    def _query_range(
        self, query: str, start: int, end: int, step_seconds: int
    ) -> tuple[np.ndarray, np.ndarray]:
        result = self._guarded(
            lambda: self._client.custom_query_range(
                query,
                start_time=datetime.fromtimestamp(start, tz=UTC),
                end_time=datetime.fromtimestamp(end, tz=UTC),
                step=f"{step_seconds}s",
            )
        )
        if len(result) > 1:
            labels = [item.get("metric", {}) for item in result[:3]]
            raise SourceError(
                f"query returned {len(result)} series (e.g. {labels}); it must aggregate to one"
                " series per pool, e.g. wrap it in sum(...)"
            )
        if not result:
            return np.empty(0, dtype=np.int64), np.empty(0)
        pairs = result[0].get("values", [])
        ts = np.array([round(float(t)) for t, _ in pairs], dtype=np.int64)
        vals = np.array([float(v) for _, v in pairs], dtype=np.float64)
        return ts, vals

    def _guarded(self, call: Callable[[], Any]) -> Any:
        """``call()``, with every client failure turned into one-line ``SourceError``."""
        try:
            return call()
        except PrometheusApiClientException as exc:
            raise SourceError(f"Prometheus {self.url} rejected the query: {_reason(exc)}") from exc
        except requests.exceptions.RetryError as exc:
            raise SourceError(
                f"Prometheus {self.url} kept failing (HTTP 429/5xx) after retries"
            ) from exc
        except requests.exceptions.RequestException as exc:
            reason = _root_reason(exc)
            if isinstance(exc, requests.exceptions.Timeout) or _is_timeout(reason):
                raise SourceError(
                    f"Prometheus {self.url} did not answer within {self._timeout:g}s"
                ) from exc
            raise SourceError(
                f"Prometheus {self.url} is unreachable: {_first_line(reason)}"
            ) from exc


def _reason(exc: PrometheusApiClientException) -> str:
    """Prometheus's own error text out of the client's 'HTTP Status Code 400 (b'{...}')'."""
    text = str(exc)
    match = re.search(r"\(b'(.*)'\)$", text, flags=re.S)
    if match:
        try:
            body = json.loads(match.group(1).encode().decode("unicode_escape"))
            return f"{body.get('errorType', 'error')}: {body.get('error', text)}"
        except (ValueError, UnicodeDecodeError):
            pass
    return _first_line(exc)


def _root_reason(exc: BaseException) -> BaseException:
    """The innermost urllib3 reason behind requests' 'Max retries exceeded' wrapper."""
    inner: BaseException = exc
    while True:
        nxt = getattr(inner, "reason", None)
        if not isinstance(nxt, BaseException):
            arg = inner.args[0] if inner.args else None
            nxt = arg if isinstance(arg, BaseException) and arg is not inner else None
        if nxt is None:
            return inner
        inner = nxt


def _is_timeout(reason: BaseException) -> bool:
    # urllib3's NewConnectionError (connection refused) subclasses its TimeoutError
    return isinstance(reason, urllib3.exceptions.TimeoutError) and not isinstance(
        reason, urllib3.exceptions.NewConnectionError
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
