"""The demand history with kube-state-metrics' defaults: the daemon's own export, and what
``check-query`` says when the opt-in bootstrap is missing.

Cases: every replica exports ``forecaster_observed_demand_gpus{pool}`` - the real pods' GPUs,
our placeholders excluded; a Prometheus holding only kube-state-metrics' default metrics (no
``kube_pod_nodeselectors``) and that export reads the demand from the export (max over two
replicas), and ``check-query`` says which source the pool reads and names the opt-in flag for
history from before the daemon ran (exit 0); with neither, ``check-query`` exits 1 naming the
missing metric and the flag; ``doctor`` says the same (a warning, an error).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import yaml
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app.build import build_cluster_service
from forecaster.cli import main
from forecaster.core.series import iso_utc
from forecaster.service.clock import FakeClock
from forecaster.service.http import create_app
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import Series, running_prometheus

pytestmark = pytest.mark.prometheus
NOW = int(time.time()) // 3600 * 3600 - 6 * 3600  # older than the head block
START = NOW - 3 * 86400


def ksm_defaults() -> list[Series]:
    """One running 8-GPU pod of ``ml`` and our 8-GPU placeholder, as kube-state-metrics exports
    them by default: requests and phase, no node selectors (an opt-in metric)."""
    out = []
    for namespace, pod in (("ml", "train-0"), ("forecaster-placeholders", "forecaster-gpu-a-0-1")):
        ident = {"namespace": namespace, "pod": pod}
        steps = range(START, NOW + 1, 60)
        out.append(
            Series(
                "kube_pod_container_resource_requests",
                {**ident, "container": "c", "resource": "nvidia_com_gpu", "unit": "integer"},
                [(t, 8.0) for t in steps],
            )
        )
        out.append(
            Series(
                "kube_pod_status_phase", {**ident, "phase": "Running"}, [(t, 1.0) for t in steps]
            )
        )
    return out


def own_export() -> list[Series]:
    """Two replicas' export for two days: they agree but for one minute a follower lagged. Of
    the 12 GPUs they observe, 4 are of announced work (a CronJob's run): the history is the 8
    unannounced ones."""
    out = []
    for instance, lag in (("10.0.0.1:8080", 0.0), ("10.0.0.2:8080", -8.0)):
        for name, announced in (
            ("forecaster_observed_demand_gpus", 4.0),
            ("forecaster_observed_unannounced_demand_gpus", 0.0),
        ):
            samples = [
                (t, 8.0 + announced + (lag if t == NOW - 3600 else 0.0))
                for t in range(NOW - 2 * 86400, NOW + 1, 60)
            ]
            out.append(
                Series(name, {"pool": "gpu-a", "instance": instance, "job": "forecaster"}, samples)
            )
    return out


def config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "forecaster.yaml"
    document = {
        "source": {"kind": "prometheus", "prometheus": {"url": url, "retries": 0}},
        "forecast": {"min_history_days": 1},
        "pools": [{"name": "gpu-a"}],
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_every_replica_exports_the_real_demand_it_observes(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    service = build_cluster_service(settings(tmp_path), kube, identity="replica-a", clock=clock)
    service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    service.renew()
    service.reconcile()
    assert api.objects("jobs", "forecaster-placeholders")  # it prewarmed: placeholders exist ...
    busy_cluster.step()
    clock.advance(30)
    service.renew()
    service.reconcile()
    metrics = TestClient(create_app(service.daemon)).get("/metrics").text
    assert f'forecaster_observed_demand_gpus{{pool="{POOL}"}} 16.0' in metrics  # ... not demand
    service.stop()


def test_default_metrics_and_the_own_export_read_the_real_demand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_prometheus(tmp_path / "p", ksm_defaults() + own_export()) as url:
        source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
        series, _ = source.fetch("gpu-a", start=NOW - 86400, end=NOW, step_seconds=60)
        assert np.all(series.values == 8.0)  # the unannounced export's max over replicas: never 16
        code = main(["check-query", "--config", str(config(tmp_path, url)), "--at", iso_utc(NOW)])
        out = capsys.readouterr().out
    assert code == 0, out
    assert "reads: forecaster_observed_demand_gpus 2.0 days; kube_pod_nodeselectors not" in out
    assert "WARN no-bootstrap [gpu-a]" in out
    assert "--metric-opt-in-list=kube_pod_nodeselectors" in out


def test_with_neither_source_check_query_names_the_opt_in_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with running_prometheus(tmp_path / "p", ksm_defaults()) as url:
        code = main(["check-query", "--config", str(config(tmp_path, url)), "--at", iso_utc(NOW)])
        out = capsys.readouterr().out
    assert code == 1, out
    assert "ERROR no-demand-metric [gpu-a]: no demand history: neither" in out
    assert "--metric-opt-in-list=kube_pod_nodeselectors" in out


@pytest.mark.parametrize("own", [True, False], ids=["own-export", "neither"])
def test_doctor_names_the_opt_in_for_the_bootstrap(
    own: bool,
    tmp_path: Path,
    api: KubeApiDouble,
    busy_cluster: ClusterSim,
    capsys: pytest.CaptureFixture[str],
) -> None:
    series = ksm_defaults() + (own_export() if own else [])
    with running_prometheus(tmp_path / "p", series) as url:
        argv = ["doctor", "--config", str(config(tmp_path, url)), "--kube-host", api.url]
        code = main([*argv, "--at", iso_utc(NOW)])
        out = capsys.readouterr().out
    assert "--metric-opt-in-list=kube_pod_nodeselectors" in out
    if own:  # the daemon's own history is there: only a warning
        assert code == 0 and "WARN no-bootstrap [gpu-a]" in out, out
    else:
        assert code == 1 and "ERROR no-demand-metric [gpu-a]" in out, out
