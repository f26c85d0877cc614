"""Pods that ask for accelerators through DRA claims (``spec.resourceClaims``): counted per
namespace and pool, shown on the status, the metrics and ``doctor`` as not prewarmed, and never
prewarmed (they request no extended resource, and Karpenter does not provision for them).
Through the daemon and the API double (every pod validated against the Kubernetes schema)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, doctor
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.prometheus_server import Series, running_prometheus
from tests.factories import one_pool_settings

NOTE = "not prewarmed (Karpenter does not provision for DRA claims)"


def claiming(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "vision", "uid": f"uid-{name}"},
        "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "containers": [
                {"name": "train", "image": "train", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            **spec,
        },
    }


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble() as server:
        server.clock = float(T0)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)
        yield server
    assert server.invalid == [], server.invalid


def daemon_on(api: KubeApiDouble, tmp_path: Path) -> Daemon:
    config = one_pool_settings(tmp_path)
    kube = Kube(api_client(host=api.url), dry_run=True)
    flat = LiveSource(T0 - 2 * 86400, [16.0] * (2 * 1440 + 1))
    return Daemon(reconciler=build.build_reconciler(config, source=flat, kube=kube))


def test_dra_pods_are_reported_per_namespace_and_pool_and_never_prewarmed(
    api: KubeApiDouble, tmp_path: Path
) -> None:
    before = daemon_on(api, tmp_path).reconcile(T0)
    node = api.objects("nodes")[0]["metadata"]["name"]
    api.put("pods", claiming("waiting", nodeSelector={"karpenter.sh/nodepool": POOL}))
    api.put("pods", claiming("running", nodeName=node))
    api.put("pods", claiming("nowhere", nodeSelector={"karpenter.sh/nodepool": "gone"}))
    daemon = daemon_on(api, tmp_path)
    after = daemon.reconcile(T0)
    assert before is not None and after is not None
    assert after.plan.pool(POOL).target_gpus == before.plan.pool(POOL).target_gpus
    assert after.pools[POOL].snapshot.real_demand_gpus == 16  # the two GPU jobs only
    client = TestClient(create_app(daemon))
    status = client.get("/api/v1/status").json()
    assert status["dra_claim_pods"] == [
        {"namespace": "vision", "pool": "gone", "pods": 1, "note": NOTE},
        {"namespace": "vision", "pool": POOL, "pods": 2, "note": NOTE},
    ]
    metrics = client.get("/metrics").text
    assert f'forecaster_dra_claim_pods{{namespace="vision",pool="{POOL}"}} 2.0' in metrics
    lines = doctor.claim_lines(Kube(api_client(host=api.url), dry_run=True))
    assert f"DRA: 2 pod(s) in namespace vision (pool {POOL}) ask for devices through" in lines[1]
    assert lines[1].endswith(NOTE)


def test_doctor_says_when_no_pod_has_a_claim(api: KubeApiDouble) -> None:
    lines = doctor.claim_lines(Kube(api_client(host=api.url), dry_run=True))
    assert lines == ["DRA: no live pod asks for devices through resourceClaims"]


@pytest.mark.prometheus
def test_doctor_counts_last_weeks_dra_pods_from_kube_state_metrics(tmp_path: Path) -> None:
    """``kube_pod_resourceclaim_info`` (one series per claim of a pod) backfilled into a real
    Prometheus: distinct pods per namespace over the last 7 days."""
    now = int(time.time()) // 3600 * 3600 - 6 * 3600  # older than the head block
    steps = range(now - 2 * 86400, now - 86400, 60)

    def claim(namespace: str, pod: str, name: str) -> Series:
        labels = {"namespace": namespace, "pod": pod, "uid": f"u-{pod}", "claim_name": name}
        return Series("kube_pod_resourceclaim_info", labels, [(t, 1.0) for t in steps])

    series = [
        claim("vision", "a", "gpu"),
        claim("vision", "a", "nic"),  # two claims, one pod
        claim("vision", "b", "gpu"),
        claim("nlp", "c", "gpu"),
    ]
    with running_prometheus(tmp_path / "p", series) as url:
        source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
        assert source.claimed_pods(end=now) == {"nlp": 1, "vision": 2}
        line = doctor.claimed_history_line(source, now=now)
        assert source.claimed_pods(end=now + 7 * 86400) == {}  # out of the week
    assert line == f"DRA last 7 days: pods with resourceClaims: 1 in nlp, 2 in vision; {NOTE}"
