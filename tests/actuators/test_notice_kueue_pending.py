"""Kueue's pending queue as notice (the ``kueue-pending`` source), through the API double serving
Kueue's CRDs, LocalQueues and its visibility API (``pendingworkloads``), every object validated.

ClusterQueue ``research-a`` holds 16 GPUs of flavor ``a100`` (pool ``gpu-a``), 16 reserved by a
running 2 x 8 GPU workload admitted at 08:05 with a 30 minute limit. Pending behind it: a
2 x 8 workload, then a 1 x 4 one. The first is due when the running one must end (08:35), the
second fits only when... nothing else we can time frees quota: not announced. Quota free now
announces at once (at its creation). A cluster without the visibility API: "not installed".
A workload still pending past its expected admission + the grace is withdrawn and charged.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import NoticeReading
from forecaster.actuators.notice.kueue_pending import KueuePendingSource
from forecaster.actuators.quantities import kube_timestamp
from forecaster.app import build
from forecaster.core.notice import AnnouncedItem
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import cluster_queue, flavor, read_source, workload

ADMITTED_AT = T0 + 300  # the factory's condition time, 08:05
LIMIT = 1800
RUNNING = (("QuotaReserved", "True", "QuotaReserved"), ("Admitted", "True", "Admitted"))


def pending(name: str, gpus_per_pod: int, count: int) -> dict[str, Any]:
    """A workload waiting in LocalQueue ``research``: no admission, no condition."""
    obj = workload(name, gpus_per_pod, count)
    del obj["status"]
    return obj


def local_queue() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "research", "namespace": "ml"},
        "spec": {"clusterQueue": "research-a"},
    }


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(kueue=True, kueue_visibility=True) as server:
        server.clock = float(T0)
        sim = ClusterSim(server)
        sim.busy_pool(POOL, limit_gpus=400)
        server.put("resourceflavors", flavor("a100", POOL))
        server.put("clusterqueues", cluster_queue("research-a", "lab", nominal=16, used=16))
        server.put("localqueues", local_queue())
        running = workload("running", 8, 2, *RUNNING)
        running["spec"]["maximumExecutionTimeSeconds"] = LIMIT
        server.put("workloads", running)
        server.clock = float(T0 + 600)  # the double stamps creation with its clock: 08:10
        server.put("workloads", pending("next", 8, 2))
        server.clock = float(T0 + 660)
        server.put("workloads", pending("after", 4, 1))
        server.clock = float(T0)
        yield server
    assert server.invalid == [], server.invalid


def read(api: KubeApiDouble, now: int) -> NoticeReading:
    return read_source(api, KueuePendingSource(), now)


def test_the_head_of_the_queue_is_due_when_running_work_must_free_its_quota(
    api: KubeApiDouble,
) -> None:
    now = T0 + 900
    reading = read(api, now)
    due = ADMITTED_AT + LIMIT
    assert reading.items == {
        POOL: (
            AnnouncedItem(
                POOL,
                8,
                2,
                True,
                due,
                due + 600,
                "kueue-pending",
                "pending ml/next/main",
                True,
                "ml",
            ),
        )
    }  # "after" needs quota nothing we can time frees: not announced
    (status,) = reading.statuses
    assert (status.installed, status.items, status.problem) == (True, 1, None)
    assert read(api, now + 60).items == reading.items  # the same item at every reading


def test_quota_free_now_announces_at_the_workloads_creation(api: KubeApiDouble) -> None:
    api.store.delete(("clusterqueues", "", "research-a"))
    api.put("clusterqueues", cluster_queue("research-a", "lab", nominal=40, used=16))
    created = T0 + 600
    items = read(api, T0 + 900).items[POOL]
    assert [(i.key, i.earliest_start, i.gpus) for i in items] == [
        ("pending ml/next/main", created, 16),
        ("pending ml/after/main", created + 60, 4),
    ]


def finished(name: str, ran: int) -> dict[str, Any]:
    """A workload of LocalQueue ``research`` admitted at 07:00 that ran ``ran`` seconds."""
    obj = workload(name, 8, 2, *RUNNING, ("Finished", "True", "Succeeded"))
    for condition in obj["status"]["conditions"]:
        at = T0 - 3600 + (ran if condition["type"] == "Finished" else 0)
        condition["lastTransitionTime"] = kube_timestamp(at)
    return obj


@pytest.mark.parametrize(
    ("ran", "now", "due"),
    [
        ((1200, 1500, 2400, 3000), T0 + 900, ADMITTED_AT + (1500 + 2400) / 2),
        ((1200, 1500, 2400, 3000), ADMITTED_AT + 1300, ADMITTED_AT + 2400),  # ran 1300 s so far
        ((1200, 1500), T0 + 900, None),  # too few runs seen: untimed
    ],
)
def test_without_a_time_limit_running_work_is_timed_by_the_runs_seen_before(
    api: KubeApiDouble, ran: tuple[int, ...], now: int, due: float | None
) -> None:
    """The running workload has no ``maximumExecutionTimeSeconds``: its end is the median of its
    LocalQueue's finished runs that lasted longer than it has so far."""
    running = api.store.delete(("workloads", "ml", "running"))
    del running["spec"]["maximumExecutionTimeSeconds"]
    api.put("workloads", running)
    for i, seconds in enumerate(ran):
        api.put("workloads", finished(f"done-{i}", seconds))
    items = read(api, now).items.get(POOL, ())
    assert [(i.key, i.earliest_start) for i in items] == (
        [("pending ml/next/main", int(due))] if due is not None else []
    )


def test_without_the_visibility_api_the_source_is_not_installed() -> None:
    with KubeApiDouble(kueue=True) as plain:
        plain.put("clusterqueues", cluster_queue("research-a", "lab", nominal=16, used=0))
        (status,) = read(plain, T0).statuses
        assert not status.installed
    with KubeApiDouble() as bare:
        (status,) = read(bare, T0).statuses
        assert not status.installed


def test_pending_work_that_does_not_come_is_withdrawn_and_charged(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    settings = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "notice": {"sources": ["kueue-pending"]},
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64}],
        }
    )
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    flat = LiveSource(T0 - 2 * 86400, [16.0] * (2 * 1440 + 40))
    daemon = Daemon(reconciler=build.build_reconciler(settings, source=flat, kube=kube))
    due = ADMITTED_AT + LIMIT
    api.clock = float(due - 60)
    first = daemon.reconcile(due - 60)
    assert first is not None
    assert first.plan.pool(POOL).target_gpus == 16  # prewarmed once for the head of the queue
    api.clock = float(due)
    assert daemon.reconcile(due) is not None  # due: still held
    api.clock = float(due + 601)
    late = daemon.reconcile(due + 601)  # still pending (the running one was not evicted)
    assert late is not None
    status = TestClient(create_app(daemon)).get("/api/v1/status").json()
    (source,) = [s for s in status["notice_sources"] if s["source"] == "kueue-pending"]
    assert (source["resolved_7d"], source["precision_7d"]) == (1, 0.0)
    # held from the first tick (due - 60: within the configured window) to 600 s past due
    assert source["waste_gpu_hours_7d"] == pytest.approx(16 * 660 / 3600, abs=1e-3)
