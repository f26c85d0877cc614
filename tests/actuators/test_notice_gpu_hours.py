"""The live measure of notice, end to end through the API double: a CronJob's run announced an
hour ahead comes, its Job's pods bind and run, and the daemon reports - per pool and source, on
``/status`` and ``/metrics`` - the GPU-hours that came with notice of at least the lead time,
their share of the pool's GPU-hours, precision and the notice spread."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.factories import one_pool_settings

RUN_AT = T0 + 3900  # 09:05, the CronJob's daily run, first read at 08:00


@pytest.fixture
def cluster() -> Iterator[tuple[KubeApiDouble, ClusterSim]]:
    with KubeApiDouble() as server:
        server.clock = float(T0)
        sim = ClusterSim(server)
        sim.busy_pool(POOL, limit_gpus=400)  # 16 GPUs of unannounced work run
        yield server, sim
    assert server.invalid == [], server.invalid


def run_job(api: KubeApiDouble) -> dict[str, Any]:
    """What the CronJob controller does at 09:05: the run's Job, owned by the CronJob and named
    after the scheduled minute, and the CronJob's status."""
    (cron,) = api.objects("cronjobs", "ml")
    cron["status"] = {"lastScheduleTime": "2027-01-15T09:05:00Z", "active": [{"name": "r"}]}
    api.store.replace(("cronjobs", "ml", "nightly"), cron)
    owner = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "name": "nightly",
        "uid": cron["metadata"]["uid"],
        "controller": True,
    }
    return api.put(
        "jobs",
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": f"nightly-{RUN_AT // 60}",
                "namespace": "ml",
                "ownerReferences": [owner],
            },
            "spec": cron["spec"]["jobTemplate"]["spec"],
        },
    )


def metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    raise AssertionError(f"no {name}{labels}")


def test_the_gpu_hours_of_a_run_announced_ahead_are_reported_per_pool_and_source(
    tmp_path: Path, cluster: tuple[KubeApiDouble, ClusterSim]
) -> None:
    api, sim = cluster
    api.put(
        "cronjobs",
        cronjob(schedule="5 9 * * *", pool=POOL, job_spec={"parallelism": 1, "completions": 1}),
    )
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    reconciler = build.build_reconciler(one_pool_settings(tmp_path), source=source, kube=kube)
    daemon = Daemon(reconciler=reconciler, pools=(POOL,))
    daemon.reconcile(T0)  # the run at 09:05 is read: 3900 s of notice

    api.clock = float(RUN_AT)
    run_job(api)
    sim.step()  # the Job's pod: pending, a node launching for it
    daemon.reconcile(RUN_AT)  # the item left the reading by its latest start: it came
    for at in (RUN_AT + 60, RUN_AT + 660):  # the node is ready, the pod runs for 10 minutes
        api.clock = float(at)
        sim.step()
        record = daemon.reconcile(at)
        assert record is not None
    snapshot = record.pools[POOL].snapshot
    assert snapshot is not None
    assert snapshot.announced_running == (
        ("cronjob", "cronjob ml/nightly@2027-01-15T09:05:00Z", 8),
    )

    (cron,) = (
        TestClient(create_app(daemon)).get("/api/v1/status").json()["pools"][POOL]["notice_7d"]
    )
    pool_seconds = 16 * 900 + 16 * 60 + 24 * 600  # 08:00 (a step at most), 09:05, 09:06
    assert cron == {
        "source": "cronjob",
        "gpu_hours": {"ahead": round(8 * 600 / 3600, 3), "short": 0.0, "unmeasured": 0.0},
        "pool_gpu_hours": round(pool_seconds / 3600, 3),
        "ahead_share": round(8 * 600 / pool_seconds, 4),
        "precision": 1.0,
        "resolved": 1,
        "notice_seconds_p10_p50_p90": [3900, 3900, 3900],
    }
    text = TestClient(create_app(daemon)).get("/metrics").text
    labels = {"pool": POOL, "source": "cronjob"}
    hours = metric(text, "forecaster_notice_gpu_hours_7d", notice="ahead", **labels)
    assert hours == pytest.approx(8 * 600 / 3600)
    share = metric(text, "forecaster_notice_ahead_share_7d", **labels)
    assert share == pytest.approx(8 * 600 / pool_seconds)
    assert metric(text, "forecaster_notice_pool_precision_7d", **labels) == 1.0
    lead = metric(text, "forecaster_notice_lead_seconds_count", **labels)
    assert lead == 1.0
    page = TestClient(create_app(daemon)).get("/").text
    assert "notice_7d" in page and "share of the pool's GPU-hours with notice" in page
