"""Kueue workloads holding quota with no pods yet, as notice (the ``kueue`` source), through the
API double serving Kueue's CRDs (every object validated against the vendored schemas).

A workload with ``QuotaReserved`` and not ``Admitted`` is one item per GPU pod set, on the pool
its flavor selects (else the one its template fits), due at once, expected until quota was
reserved + the grace; an admitted one announces nothing. One still waiting past that is
withdrawn and charged to the source. The twin's workloads (``--kueue-notice``) give the same
items through the daemon's path; v1beta1 is read where v1beta2 is not served.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import NoticeReading, read_notice
from forecaster.actuators.notice.kueue_reserved import KueueReservedSource
from forecaster.app import build
from forecaster.core.notice import AnnouncedItem
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.simulation.kueue_objects import TwinWorkloads
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import flavor, one_pool_settings, read_source, synthetic, workload

OTHER = "gpu-b"
RESERVED = ("QuotaReserved", "True", "QuotaReserved")
RESERVED_AT = T0 + 300  # the factory's condition time, 08:05


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(kueue=True) as server:
        server.clock = float(T0)
        sim = ClusterSim(server)
        sim.busy_pool(POOL, limit_gpus=400)
        sim.add_nodepool(OTHER, limit_gpus=400)
        server.put("resourceflavors", flavor("a100", POOL))
        yield server
    assert server.invalid == [], server.invalid


def read(api: KubeApiDouble, now: int) -> NoticeReading:
    return read_source(api, KueueReservedSource(), now)


def test_a_workload_holding_quota_is_announced_on_its_flavors_pool(api: KubeApiDouble) -> None:
    api.put("workloads", workload("waiting", 8, 2, RESERVED))
    admitted = workload("running", 8, 4, RESERVED, ("Admitted", "True", "Admitted"))
    api.put("workloads", admitted)
    now = RESERVED_AT + 30
    reading = read(api, now)
    assert reading.items == {
        POOL: (
            AnnouncedItem(
                POOL,
                8,
                2,
                True,
                RESERVED_AT,
                RESERVED_AT + 600,
                "kueue",
                "workload ml/waiting/main",
                True,
                "ml",
            ),
        )
    }
    (status,) = reading.statuses
    assert (status.installed, status.items, status.problem) == (True, 1, None)
    assert read(api, RESERVED_AT + 90).items == reading.items  # the same item at every reading


def test_without_a_pool_flavor_the_template_decides(api: KubeApiDouble) -> None:
    api.put("resourceflavors", {**flavor("plain", POOL), "spec": {}})
    obj = workload("elsewhere", 4, 1, RESERVED)
    obj["status"]["admission"]["podSetAssignments"][0]["flavors"] = {"nvidia.com/gpu": "plain"}
    template = obj["spec"]["podSets"][0]["template"]["spec"]
    template["nodeSelector"] = {"karpenter.sh/nodepool": OTHER}
    template["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    api.put("workloads", obj)
    (item,) = read(api, RESERVED_AT).items[OTHER]
    assert (item.gpus, item.gang) == (4, False)


def test_kueue_not_served_is_not_installed_and_v1beta1_is_read() -> None:
    with KubeApiDouble() as bare:
        (status,) = read(bare, T0).statuses
        assert not status.installed
    with KubeApiDouble(kueue="v1beta1") as old:
        ClusterSim(old).add_nodepool(POOL, limit_gpus=400)
        old.put("resourceflavors", flavor("a100", POOL) | {"apiVersion": "kueue.x-k8s.io/v1beta1"})
        obj = workload("waiting", 8, 1, RESERVED) | {"apiVersion": "kueue.x-k8s.io/v1beta1"}
        old.put("workloads", obj)
        assert old.invalid == []
        (item,) = read(old, RESERVED_AT).items[POOL]
    assert item.key == "workload ml/waiting/main"


def test_a_workload_stuck_in_its_checks_is_withdrawn_and_charged(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """Prewarmed once while due; past reserved + grace still without pods: no longer planned,
    resolved as not come, the GPU-hours held for it charged to ``kueue``."""
    api.put("workloads", workload("stuck", 8, 2, RESERVED))
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    flat = LiveSource(T0 - 2 * 86400, [16.0] * (2 * 1440 + 6))
    daemon = Daemon(
        reconciler=build.build_reconciler(one_pool_settings(tmp_path), source=flat, kube=kube)
    )
    api.clock = float(RESERVED_AT)
    first = daemon.reconcile(RESERVED_AT)
    assert first is not None
    reasons = first.plan.pool(POOL).reasons
    assert any(r.startswith("kueue: 16 GPUs hold their place (quota)") for r in reasons)
    assert first.plan.pool(POOL).target_gpus >= 16
    api.clock = float(RESERVED_AT + 601)
    late = daemon.reconcile(RESERVED_AT + 601)
    assert late is not None
    assert not any(r.startswith("kueue:") for r in late.plan.pool(POOL).reasons)
    status = TestClient(create_app(daemon)).get("/api/v1/status").json()
    (kueue,) = [s for s in status["notice_sources"] if s["source"] == "kueue"]
    assert (kueue["resolved_7d"], kueue["precision_7d"]) == (1, 0.0)
    assert kueue["waste_gpu_hours_7d"] == pytest.approx(16 * 600 / 3600, abs=1e-3)


def test_the_twin_and_the_api_double_give_the_same_items_from_the_same_objects() -> None:
    """``--kueue-notice``'s workloads (``simulation.kueue_objects``), read as the twin reads
    them and, schema-validated in the double, through the Kube adapter."""
    jobs = synthetic(1, seed=3)
    start, end = float(jobs.submit[0]) - 1, float(jobs.submit[-1]) + 1
    twin = TwinWorkloads(jobs, notice_seconds=600, pool=POOL, gpus_per_node=8, start=start, end=end)
    twin.now = float(jobs.submit[40]) - 300
    now = int(twin.now)
    replayed = read_notice(twin, [KueueReservedSource()], pools=(), now=now)
    assert len(replayed.items[POOL]) >= 2
    with KubeApiDouble(kueue=True) as cluster:
        cluster.clock = float(now)
        ClusterSim(cluster).add_nodepool(POOL, limit_gpus=1000)
        for plural in ("resourceflavors", "workloads"):
            for obj in twin.list_objects("kueue.x-k8s.io", "v1beta2", plural) or []:
                cluster.put(plural, obj)
        assert cluster.invalid == []
        daemon = read(cluster, now)
    assert sorted(daemon.items[POOL], key=str) == sorted(replayed.items[POOL], key=str)
    assert sum(i.gpus for i in replayed.items[POOL]) == int(jobs.gpus[twin.reserved()].sum())
    assert dataclasses.astuple(replayed.statuses[0])[:2] == ("kueue", True)
