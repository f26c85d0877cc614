"""The light wiring the one-shot commands need: a Kubernetes client, the demand source, the kill
switch.

Kept apart from ``app.build`` (which wires the loop, its models and the twin) so ``pause``,
``resume``, ``doctor``, ``check-query``, ``validate-config`` and ``cleanup`` load no model
library: a kill switch answers in about a second (``tests/cli/test_one_shot_imports.py``).
"""

from __future__ import annotations

import logging
from pathlib import Path

from forecaster.actuators.coordination.control import Control
from forecaster.actuators.kube import Kube, api_client
from forecaster.core.quality import QualityReport
from forecaster.core.series import DemandSeries
from forecaster.settings import Settings
from forecaster.sources.base import DEFAULT_VALUE_COLUMN, DemandSource
from forecaster.sources.files import CsvSource
from forecaster.sources.prometheus import EXCLUDE, PrometheusSource

log = logging.getLogger(__name__)


def build_source(settings: Settings) -> DemandSource:
    """The configured demand source."""
    outage = settings.forecast.outage_min_seconds
    if settings.source.kind == "csv":
        files = {p.name: p.csv for p in settings.pools if p.csv is not None}
        return CsvSource(
            files, value_column=settings.source.csv_value_column, outage_min_seconds=outage
        )
    prom = settings.source.prometheus
    for pool in settings.pools:
        for key in ("query", "arrivals_query", "pods_query"):
            custom = getattr(pool, key)
            if custom and EXCLUDE not in custom and "nodepool:forecaster_gpu_demand" not in custom:
                log.warning(
                    "pool %s: its %s has no %s: forecaster's own placeholders may be counted as"
                    " demand (put %s inside the pod selector)",
                    pool.name,
                    key,
                    EXCLUDE,
                    EXCLUDE,
                )
    return PrometheusSource(
        url=prom.url,
        queries={p.name: p.query for p in settings.pools if p.query},
        arrival_queries={p.name: p.arrivals_query for p in settings.pools if p.arrivals_query},
        pod_selectors={p.name: p.pods_query for p in settings.pools if p.pods_query},
        timeout_seconds=prom.timeout_seconds,
        retries=prom.retries,
        backoff_seconds=prom.backoff_seconds,
        outage_min_seconds=outage,
        exclude_namespaces=(settings.namespace, settings.planning.placeholders.namespace),
        resources={p.name: p.resource for p in settings.pools},
    )


def csv_source(settings: Settings, *, pool: str, path: Path) -> CsvSource:
    """One pool's history from ``path`` (``plan --data``), cleaned as the config says."""
    return CsvSource(
        {pool: path},
        value_column=settings.source.csv_value_column,
        outage_min_seconds=settings.forecast.outage_min_seconds,
    )


def read_demand_csv(
    path: Path,
    *,
    step_seconds: int,
    value_column: str = DEFAULT_VALUE_COLUMN,
    outage_min_seconds: int = 3600,
) -> tuple[DemandSeries, QualityReport]:
    """A whole CSV file of demand, regularized (``backtest --data``, ``replay --series``)."""
    source = CsvSource(
        {path.stem: path}, value_column=value_column, outage_min_seconds=outage_min_seconds
    )
    return source.fetch_all(path.stem, step_seconds=step_seconds)


def control(settings: Settings, kube: Kube) -> Control:
    """The kill switch in our namespace."""
    return Control(kube, namespace=settings.namespace)


def connect(settings: Settings, *, host: str | None = None) -> Kube:
    """A Kube client: ``host`` (tests), in-cluster config, else kubeconfig."""
    return Kube(api_client(host=host), dry_run=settings.dry_run)


def connect_writer(*, host: str | None = None) -> Kube:
    """A Kube client that writes, with no config at all (``cleanup``)."""
    return Kube(api_client(host=host), dry_run=False)
