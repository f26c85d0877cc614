"""Kueue-aware prewarm through the daemon's reconciler and the API double serving Kueue's CRDs.

Cases (every Kueue object is validated against the vendored v1beta2 CRDs): a cohort whose quota
is lower than the forecast caps the prewarm and the plan says so; a workload holding quota with
no pods yet counts as demand; pods gated by Kueue are not pending demand; queue health
(admission wait, PodsReadyTimeout evictions) is read per ClusterQueue; a pool configured for
Kueue on a cluster without it withdraws and says why.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.observe.kueue import KueueScope, read_rooms
from forecaster.app import build
from forecaster.core.kueue import QueueHealth
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import cluster_queue, flavor, workload

GPU = "nvidia.com/gpu"


@pytest.fixture
def kueue_api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(kueue=True) as server:
        server.clock = float(T0)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)
        server.put("resourceflavors", flavor("a100", POOL))
        yield server
    assert server.invalid == [], server.invalid


def settings(tmp_path: Path, **pool: object) -> Settings:
    return Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64, **pool}],
        }
    )


def surge() -> LiveSource:
    """Demand that climbed fast: the forecast wants several nodes."""
    values = [16.0] * 2800 + [16.0 + 2 * i for i in range(40)]
    return LiveSource(T0 - 60 * (len(values) - 1), values)


def tick(
    tmp_path: Path, kueue_api: KubeApiDouble, source: LiveSource | None = None, **pool: object
):  # type: ignore[no-untyped-def]
    config = settings(tmp_path, **pool)
    kube = Kube(api_client(host=kueue_api.url), dry_run=False, backoff_seconds=0.01)
    return build.build_reconciler(config, source=source or surge(), kube=kube).tick(T0)


def test_a_cohort_quota_below_the_forecast_caps_the_prewarm(
    tmp_path: Path, kueue_api: KubeApiDouble
) -> None:
    kueue_api.put("clusterqueues", cluster_queue("research-a", "research", 16, 16, borrowing=16))
    kueue_api.put("clusterqueues", cluster_queue("research-b", "research", 16, 0))
    plan = tick(tmp_path, kueue_api, kueue={}).plan.pool(POOL)
    assert plan.target_gpus == 16  # 64 without Kueue: max_prewarm_gpus binds (reason above)
    assert "capped by pool max_prewarm_gpus (64 GPUs): 80 -> 64" in plan.reasons
    assert "capped by Kueue cohort `research` quota (16 GPUs): 64 -> 16" in plan.reasons


def test_quota_reserved_without_pods_is_demand_and_gated_pods_are_not(
    tmp_path: Path, kueue_api: KubeApiDouble
) -> None:
    kueue_api.put("clusterqueues", cluster_queue("research-a", "research", 64, 16))
    kueue_api.put(
        "workloads",
        workload("waiting-check", 8, 2, ("QuotaReserved", "True", "QuotaReserved")),
    )
    gated = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gated", "namespace": "ml"},
        "spec": {
            "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
            "nodeSelector": {"karpenter.sh/nodepool": POOL},
            "containers": [{"name": "c", "image": "train", "resources": {"requests": {GPU: "8"}}}],
        },
    }
    kueue_api.put("pods", gated)
    record = tick(tmp_path, kueue_api, LiveSource(T0 - 2 * 86400, [16.0] * 2881), kueue={})
    snapshot = record.pools[POOL].snapshot
    assert snapshot is not None and snapshot.pending_gpus == 0  # the gated pod starts no node
    assert snapshot.kueue is not None
    (item,) = snapshot.announced  # the notice source ``kueue`` reads it
    assert (item.source, item.gpus, item.pool, item.in_history) == ("kueue", 16, POOL, True)
    assert item.key == "workload ml/waiting-check/main"
    reasons = record.plan.pool(POOL).reasons
    assert any(
        r.startswith("kueue: 16 GPUs hold their place (quota) but have no pods yet")
        for r in reasons
    )


def test_queue_health_counts_admission_waits_and_pods_ready_timeouts(
    kueue_api: KubeApiDouble,
) -> None:
    kueue_api.put("clusterqueues", cluster_queue("research-a", "research", 64, 16))
    kueue_api.put(
        "workloads",
        workload(
            "ok", 8, 1, ("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted")
        ),
    )
    kueue_api.put("workloads", workload("slow", 8, 1, ("Evicted", "True", "PodsReadyTimeout")))
    kube = Kube(api_client(host=kueue_api.url), dry_run=True)
    rooms = read_rooms(kube, [KueueScope(POOL)])
    assert rooms[POOL].admissible_gpus == 48
    assert rooms[POOL].health == (QueueHealth("research-a", 300.0, 1),)


def test_a_kueue_pool_on_a_cluster_without_kueue_withdraws(tmp_path: Path) -> None:
    with KubeApiDouble() as kueue_api:
        kueue_api.clock = float(T0)
        sim = ClusterSim(kueue_api)
        sim.add_nodepool(POOL, limit_gpus=400)
        sim.add_node(POOL)
        sim.step()
        plan = tick(tmp_path, kueue_api, kueue={}).plan.pool(POOL)
    assert plan.target_gpus == 0
    assert any("Kueue gates this pool but the cluster does not serve it" in r for r in plan.reasons)


def test_status_and_metrics_show_the_kueue_room(tmp_path: Path, kueue_api: KubeApiDouble) -> None:
    kueue_api.put("clusterqueues", cluster_queue("research-a", "research", 16, 16, borrowing=16))
    kueue_api.put("clusterqueues", cluster_queue("research-b", "research", 16, 0))
    kueue_api.put("workloads", workload("slow", 8, 1, ("Evicted", "True", "PodsReadyTimeout")))
    config = settings(tmp_path, kueue={})
    kube = Kube(api_client(host=kueue_api.url), dry_run=False, backoff_seconds=0.01)
    reconciler = build.build_reconciler(config, source=surge(), kube=kube)
    daemon = Daemon(reconciler=reconciler, pools=(POOL,))
    daemon.reconcile(T0)
    client = TestClient(create_app(daemon))
    kueue = client.get("/api/v1/status").json()["pools"][POOL]["kueue"]
    assert kueue["admissible_gpus"] == 16 and kueue["scope"] == "cohort `research`"
    assert kueue["queues"]["research-a"]["pods_ready_timeout_evictions"] == 1
    metrics = client.get("/metrics").text
    assert f'forecaster_kueue_admissible_gpus{{pool="{POOL}"}} 16.0' in metrics
    assert (
        'forecaster_kueue_pods_ready_timeout_evictions{cluster_queue="research-a"} 1.0' in metrics
    )


def test_kueue_v1beta1_is_read_where_v1beta2_is_not_served() -> None:
    with KubeApiDouble(kueue="v1beta1") as kueue_api:
        old = flavor("a100", POOL) | {"apiVersion": "kueue.x-k8s.io/v1beta1"}
        kueue_api.put("resourceflavors", old)
        queue = cluster_queue("research-a", "research", 16, 4)
        queue["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        queue["spec"]["cohort"] = queue["spec"].pop("cohortName")  # v1beta1's field name
        kueue_api.put("clusterqueues", queue)
        kube = Kube(api_client(host=kueue_api.url), dry_run=True)
        rooms = read_rooms(kube, [KueueScope(POOL)])
        assert kueue_api.invalid == []
    assert rooms[POOL].admissible_gpus == 12 and rooms[POOL].scope == "cohort `research`"
