"""JobSets (and the Kubeflow TrainJobs that own them) as notice, on the API double serving the
vendored JobSet CRD: a GPU ReplicatedJob waiting on ``dependsOn`` is announced as one gang
once its upstream runs, at the time the upstream's earlier runs say it will finish, and the
daemon prewarms it within its window."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import NoticeReading
from forecaster.actuators.notice.jobsets import JobSetSource
from forecaster.app import build
from forecaster.core.notice import AnnouncedItem
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import jobset, jobset_job, read_source

KEY = "jobset ml/train-1/node (trainjob ml/llm)"


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(jobsets=True) as server:
        server.clock = float(T0)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)
        yield server
    assert server.invalid == [], server.invalid


def read(api: KubeApiDouble, now: int = T0) -> NoticeReading:
    return read_source(api, JobSetSource(), now)


def items(api: KubeApiDouble) -> list[AnnouncedItem]:
    return [i for found in read(api).items.values() for i in found]


def test_a_waiting_gpu_job_is_one_gang_due_now_when_no_earlier_run_says_otherwise(
    api: KubeApiDouble,
) -> None:
    api.put("jobsets", jobset(pool=POOL))
    reading = read(api)
    assert reading.items[POOL] == (
        AnnouncedItem(
            pool=POOL,
            gpus_per_pod=8,
            pods=2,
            gang=True,
            earliest_start=T0,
            latest_start=T0 + 600,
            source="jobset",
            key=KEY,
            namespace="ml",
        ),
    )


def test_the_upstreams_earlier_runs_set_the_eta(api: KubeApiDouble) -> None:
    """Earlier initializers ran 20 and 30 min; this one started 10 min ago: due from 10 min on
    (the fastest run), not counted as not coming before 20 min + the grace (the slowest)."""
    api.put(
        "jobs",
        jobset_job(
            "train-0",
            "dataset-initializer",
            started="2027-01-14T08:00:00Z",
            completed="2027-01-14T08:20:00Z",
        ),
    )
    old = jobset_job(
        "train-9",
        "dataset-initializer",
        started="2027-01-14T09:00:00Z",
        completed="2027-01-14T09:30:00Z",
    )
    old["metadata"]["name"] = "train-9-init"
    api.put("jobs", old)
    api.put("jobs", jobset_job("train-1", "dataset-initializer", started="2027-01-15T07:50:00Z"))
    api.put("jobsets", jobset(pool=POOL))
    (item,) = items(api)
    assert (item.earliest_start, item.latest_start) == (T0 + 10 * 60, T0 + 20 * 60 + 600)


@pytest.mark.parametrize(
    ("changes", "due"),
    [
        ({"upstream": {"succeeded": 1}}, "upstream complete: created at once"),
        ({"depends": "Ready", "upstream": {"active": 1, "ready": 1}}, "Ready: pods ready"),
    ],
)
def test_a_reached_upstream_makes_the_item_due_now(
    api: KubeApiDouble, changes: dict[str, Any], due: str
) -> None:
    api.put("jobsets", jobset(pool=POOL, **changes))
    assert [i.earliest_start for i in items(api)] == [T0], due


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"gpu_counts": {"active": 2}}, "its Jobs exist: its pods are demand"),
        ({"upstream": {"active": 0, "ready": 0}}, "upstream not started: not the next hop"),
        ({"pool": "no-such-pool"}, "no pool can take the pods"),
    ],
)
def test_what_announces_nothing(api: KubeApiDouble, changes: dict[str, Any], why: str) -> None:
    api.put("jobsets", jobset(**{"pool": POOL, **changes}))
    assert items(api) == [], why


def test_suspended_or_finished_jobsets_announce_nothing(api: KubeApiDouble) -> None:
    suspended = jobset("s", pool=POOL)
    suspended["spec"]["suspend"] = True
    finished = jobset("f", pool=POOL)
    finished["status"]["conditions"] = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "FailedJobs",
            "message": "",
            "lastTransitionTime": "2027-01-15T07:00:00Z",
        }
    ]
    api.put("jobsets", suspended)
    api.put("jobsets", finished)
    assert items(api) == []


def test_without_jobsets_served_the_source_is_not_installed_and_reads_no_jobs() -> None:
    with KubeApiDouble() as api:
        api.clock = float(T0)
        ClusterSim(api).busy_pool(POOL)
        (status,) = read(api).statuses
        assert not status.installed
        assert not any(r.path.endswith("/jobs") and "apis/batch" in r.path for r in api.requests)


def test_the_daemon_prewarms_the_gang_before_its_jobs_exist(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    api.put("jobsets", jobset(pool=POOL))
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(tmp_path / "models"),
            "planning": {"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
            "notice": {"sources": ["jobset"]},
            "pools": [{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64}],
        }
    )
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    daemon = Daemon(
        reconciler=build.build_reconciler(config, source=source, kube=kube), pools=(POOL,)
    )
    record = daemon.reconcile(T0)
    assert record is not None
    plan = record.plan.pool(POOL)
    assert plan.target_gpus == 16
    assert any(f"{KEY} (16 GPUs, in 0s)" in r for r in plan.reasons), plan.reasons


def pod(name: str, labels: dict[str, str], namespace: str = "ml") -> Any:
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}, "spec": {}}


def test_only_the_pods_of_a_waiting_stage_are_marked_as_announced_work(
    api: KubeApiDouble,
) -> None:
    """The ``node`` stage waits on ``dependsOn``: its pods are announced work (left out of the
    histories); the initializer it waits on gave no notice and stays in them."""
    api.put("jobsets", jobset(pool=POOL))
    reading = read(api)
    stage = {"jobset.sigs.k8s.io/jobset-name": "train-1"}
    node = {**stage, "jobset.sigs.k8s.io/replicatedjob-name": "node"}
    first = {**stage, "jobset.sigs.k8s.io/replicatedjob-name": "dataset-initializer"}
    assert reading.announced(pod("train-1-node-0-0-a", node))
    assert reading.announcement(pod("train-1-node-0-0-a", node)) == ("jobset", KEY)  # its item
    assert not reading.announced(pod("train-1-dataset-initializer-0-0-b", first))
    assert not reading.announced(pod("train-1-node-0-0-a", node, namespace="other"))
    assert not reading.announced(pod("x", {}))
    assert not reading.announced({"metadata": {}, "spec": {}})  # type: ignore[typeddict-item]
