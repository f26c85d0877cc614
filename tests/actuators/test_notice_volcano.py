"""Volcano's pending PodGroups as notice (the ``volcano`` source), on the API double serving
Volcano's CRDs and playing its scheduler: a group stays ``Pending`` until the Ready nodes of its
pool have room for it, then is enqueued and its job's pods are created.

End to end: a gang on a pool scaled to zero gets its capacity from our prewarm (no autoscaler
sees pods that do not exist), is enqueued, and its pods land on the warm nodes; the item came.
A group Volcano never enqueues (the NodePool's limit leaves too little room) is withdrawn by its
TTL and charged. Read alone: the pool from the group's label, else the one pool of its resource;
its Queue's capability caps it; no Volcano: not installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.attribution import shape
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import read_notice
from forecaster.actuators.notice.volcano import VolcanoSource
from forecaster.app import build
from forecaster.core.notice import AnnouncedItem
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import read_source

OTHER = "gpu-b"
THIRD = "gpu-c"


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(volcano=True) as server:
        server.clock = float(T0)
        yield server
    assert server.invalid == [], server.invalid


def daemon(tmp_path: Path, api: KubeApiDouble) -> Daemon:
    settings = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "notice": {"sources": ["volcano"]},
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64}],
        }
    )
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    idle = LiveSource(T0 - 2 * 86400, [1.0] * (2 * 1440 + 60))  # next to nothing ran here
    return Daemon(reconciler=build.build_reconciler(settings, source=idle, kube=kube))


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_a_gang_on_a_pool_scaled_to_zero_gets_capacity_is_enqueued_and_lands_warm(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    sim = ClusterSim(api)
    sim.add_nodepool(POOL, limit_gpus=64)  # no node: scaled to zero
    sim.submit_vcjob("train", POOL, pods=2, per_pod=8)
    sim.step()
    assert api.objects("podgroups", "ml")[0]["status"]["phase"] == "Pending"
    assert api.objects("nodes") == []  # Karpenter sees no pod: the deadlock
    d = daemon(tmp_path, api)
    first = d.reconcile(T0)
    assert first is not None and first.plan.pool(POOL).target_gpus >= 16
    sim.step()  # Karpenter launches nodes for our placeholders
    warm = {n["metadata"]["name"] for n in api.objects("nodes")}
    assert len(warm) == 2
    api.clock = float(T0 + 61)
    for _ in range(3):
        sim.step()  # Ready: Volcano enqueues the group, its pods preempt the placeholders
    assert api.objects("podgroups", "ml")[0]["status"]["phase"] == "Inqueue"
    pods = [p for p in api.objects("pods", "ml") if p["metadata"]["name"].startswith("train-")]
    assert len(pods) == 2 and {p["spec"].get("nodeName") for p in pods} == warm
    api.clock = float(T0 + 90)
    d.reconcile(T0 + 90)
    status = TestClient(create_app(d)).get("/api/v1/status").json()
    (source,) = status["notice_sources"]
    assert (source["source"], source["resolved_7d"], source["precision_7d"]) == ("volcano", 1, 1.0)


def test_a_group_volcano_never_enqueues_is_withdrawn_by_its_ttl_and_charged(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    sim = ClusterSim(api)
    sim.add_nodepool(POOL, limit_gpus=8)  # room for one node: the 16-GPU gang never fits
    sim.submit_vcjob("train", POOL, pods=2, per_pod=8)
    d = daemon(tmp_path, api)
    first = d.reconcile(T0)
    assert first is not None
    assert any("volcano" in r for r in first.plan.pool(POOL).reasons)
    for at in (T0 + 61, T0 + 300, T0 + 601):
        api.clock = float(at)
        sim.step()
        record = d.reconcile(at)
        assert record is not None
    assert api.objects("podgroups", "ml")[0]["status"]["phase"] == "Pending"
    assert not any("volcano" in r for r in record.plan.pool(POOL).reasons)  # withdrawn
    status = TestClient(create_app(d)).get("/api/v1/status").json()
    (source,) = status["notice_sources"]
    assert (source["resolved_7d"], source["precision_7d"]) == (1, 0.0)
    assert source["waste_gpu_hours_7d"] > 0  # what was held for it is charged


def test_the_pool_and_the_queues_room_decide_the_item(api: KubeApiDouble) -> None:
    sim = ClusterSim(api)
    for pool in (POOL, THIRD):
        sim.add_nodepool(pool, limit_gpus=64)
    sim.add_nodepool(OTHER, limit_gpus=64, resource="amd.com/gpu")
    api.put("queues", queue("small", capability={"nvidia.com/gpu": "20"}))
    named = {"karpenter.sh/nodepool": POOL}  # two pools count nvidia.com/gpu: the label decides
    sim.submit_vcjob("big", POOL, pods=2, per_pod=8, queue="small", labels=named)
    api.clock = float(T0 + 1)
    sim.submit_vcjob("later", POOL, pods=1, per_pod=8, queue="small", labels=named)  # 16 + 8 > 20
    sim.submit_vcjob("amd", OTHER, pods=4, per_pod=2)  # the one pool of amd.com/gpu
    sim.submit_vcjob("unnamed", THIRD, pods=1, per_pod=8)  # which of the two: no item
    kube = Kube(api_client(host=api.url), dry_run=True)
    shapes = [shape(n) for n in kube.list_nodepools()]
    reading = read_notice(
        kube, [VolcanoSource()], pools=shapes, now=T0, resources={OTHER: "amd.com/gpu"}
    )
    got = {k: [(i.key, i.gpus_per_pod, i.pods) for i in v] for k, v in reading.items.items()}
    assert got == {POOL: [("podgroup ml/big", 8, 2)], OTHER: [("podgroup ml/amd", 2, 4)]}
    assert reading.items[POOL][0] == AnnouncedItem(
        POOL,
        8,
        2,
        True,
        T0,
        T0 + 600,
        "volcano",
        "podgroup ml/big",
        in_history=True,
        namespace="ml",
    )


def test_without_volcano_the_source_is_not_installed() -> None:
    with KubeApiDouble() as bare:
        (status,) = read_source(bare, VolcanoSource(), T0).statuses
        assert not status.installed
