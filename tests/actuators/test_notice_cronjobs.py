"""CronJobs as notice, through the daemon's reconciler and the API double (every CronJob is
validated against the Kubernetes 1.33 schema).

The source reads the next run of each GPU CronJob; the plan covers it when it starts within
the pool's window, once (a second tick holds what the first made), and drops it when the run's
Job exists (its pods are then real demand). Suspended CronJobs, ``Forbid``/``Replace`` with a
run going, templates without GPUs or fitting no pool announce nothing; time zones and the
missed-start deadline are honoured; an unreadable object is skipped and named; a cluster that
does not serve CronJobs shows the source as not installed.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.attribution import shape
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.notice.base import NoticeReader, NoticeReading
from forecaster.actuators.notice.cronjobs import CronJobSource
from forecaster.app import build
from forecaster.core.notice import AnnouncedItem
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings.schema import NoticeNamespaces
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.factories import one_pool_settings, placeholders, read_source

GPU = "nvidia.com/gpu"
OTHER = "gpu-b"


def nightly(name: str = "nightly", **changes: Any) -> dict[str, Any]:
    """``tests.factories.cronjob`` on POOL unless ``pool`` says otherwise."""
    return cronjob(name, **{"pool": POOL, **changes})


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble() as server:
        server.clock = float(T0)
        sim = ClusterSim(server)
        sim.busy_pool(POOL, limit_gpus=400)
        sim.add_nodepool(OTHER, limit_gpus=400)
        yield server
    assert server.invalid == [], server.invalid


def read(api: KubeApiDouble, now: int = T0) -> NoticeReading:
    return read_source(api, CronJobSource(), now)


def items(api: KubeApiDouble, now: int = T0) -> list[AnnouncedItem]:
    return [i for found in read(api, now).items.values() for i in found]


def test_the_next_run_is_announced_on_its_pool(api: KubeApiDouble) -> None:
    api.put("cronjobs", nightly())
    api.put("cronjobs", nightly("other", pool=OTHER, job_spec={"parallelism": 4}))
    reading = read(api)
    (mine,) = reading.items[POOL]
    assert mine == AnnouncedItem(
        pool=POOL,
        gpus_per_pod=8,
        pods=2,
        gang=False,
        earliest_start=T0 + 300,
        latest_start=T0 + 300 + 600,  # no startingDeadlineSeconds: the grace
        source="cronjob",
        key="cronjob ml/nightly@2027-01-15T08:05:00Z",
        namespace="ml",  # trust is judged per source and namespace
    )
    (other,) = reading.items[OTHER]
    assert other.pods == 2  # parallelism 4, completions 2: at most 2 at once
    (status,) = reading.statuses
    assert status.installed and status.items == 2 and status.problem is None


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"suspend": True}, "suspended"),
        (
            {"concurrencyPolicy": "Forbid", "status": {"active": [{"name": "nightly-1"}]}},
            "Forbid with a run going: the next run is skipped",
        ),
        (
            {"concurrencyPolicy": "Replace", "status": {"active": [{"name": "nightly-1"}]}},
            "Replace: the new run takes the old one's nodes",
        ),
        ({"pool": "no-such-pool"}, "no pool can take the pods"),
    ],
)
def test_what_announces_nothing(api: KubeApiDouble, changes: dict[str, Any], why: str) -> None:
    api.put("cronjobs", nightly(**changes))
    assert items(api) == [], why


def test_a_template_without_gpus_announces_nothing(api: KubeApiDouble) -> None:
    obj = nightly()
    container = obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "1"}}
    api.put("cronjobs", obj)
    assert items(api) == []


def test_concurrency_allow_with_a_run_going_still_announces(api: KubeApiDouble) -> None:
    api.put("cronjobs", nightly(status={"active": [{"name": "nightly-1"}]}))
    assert [i.gpus for i in items(api)] == [16]


def test_the_time_zone_and_the_missed_start_deadline(api: KubeApiDouble) -> None:
    # 09:05 in Berlin is 08:05 UTC in January; created at T0 - 1 h, never run yet
    api.put(
        "cronjobs",
        nightly(
            schedule="5 9 * * *",
            timeZone="Europe/Berlin",
            startingDeadlineSeconds=120,
            status={},
        ),
    )
    (item,) = items(api)
    assert (item.earliest_start, item.latest_start) == (T0 + 300, T0 + 420)
    # past the deadline without a run: that run is skipped, tomorrow's is announced
    (late,) = items(api, now=T0 + 600)
    assert late.earliest_start == T0 + 300 + 86400


def test_an_unreadable_cronjob_is_skipped_and_named(api: KubeApiDouble) -> None:
    api.put("cronjobs", nightly("broken", schedule="every day at nine"))
    api.put("cronjobs", nightly())
    reading = read(api)
    assert [i.key for i in reading.items[POOL]] == ["cronjob ml/nightly@2027-01-15T08:05:00Z"]
    (status,) = reading.statuses  # the source stays readable: one object costs itself only
    assert status.problem is None and status.skipped == 1
    (skipped,) = reading.skipped
    assert (skipped.kind, skipped.name, skipped.reason) == ("cronjobs", "ml/broken", "unreadable")


def test_a_cluster_not_serving_cronjobs_shows_the_source_not_installed(
    api: KubeApiDouble,
) -> None:
    api.faults.add("GET", "/apis/batch/v1/cronjobs", status=404, times=1)
    (status,) = read(api).statuses
    assert not status.installed and status.items == 0


def run_pods(api: KubeApiDouble, job: str, *, index: int = 0) -> None:
    """A pod of ``job`` (a CronJob run's Job, by its name) on POOL, pending: the run came."""
    created = ClusterSim(api).submit(f"{job}-{index}", POOL, 8)
    created["metadata"]["ownerReferences"] = run_pod("p", job)["metadata"]["ownerReferences"]
    api.store.replace(("pods", "ml", f"{job}-{index}"), created)


def run_pod(name: str, job: str, namespace: str = "ml") -> Any:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": "u", "controller": True}
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]}}


def test_the_pods_of_a_runs_job_are_marked_as_announced_work(api: KubeApiDouble) -> None:
    """The CronJob controller names a run's Job ``<cronjob>-<minutes>``: its pods are announced
    work, left out of the histories; a Job of that shape in another namespace, of another
    name or not of a CronJob's naming is not."""
    api.put("cronjobs", nightly())
    reading = read(api)
    assert reading.announced(run_pod("nightly-29433605-x", "nightly-29433605"))
    assert not reading.announced(run_pod("nightly-29433605-x", "nightly-29433605", "other"))
    assert not reading.announced(run_pod("weekly-29433605-x", "weekly-29433605"))
    assert not reading.announced(run_pod("nightly-manual-x", "nightly-manual"))
    assert not reading.announced({"metadata": {"name": "p", "namespace": "ml"}})  # type: ignore[typeddict-item]


def test_a_runs_pods_are_linked_to_the_item_announced_for_that_run(api: KubeApiDouble) -> None:
    """The run's Job is named after its scheduled minute: its pods carry the key of the item
    announced for that run (their GPU-hours count with the notice it gave), not the next's."""
    api.put("cronjobs", nightly())
    (item,) = items(api)
    job = f"nightly-{item.earliest_start // 60}"
    assert read(api).announcement(run_pod(f"{job}-x", job)) == ("cronjob", item.key)
    earlier = f"nightly-{item.earliest_start // 60 - 60}"
    assert read(api).announcement(run_pod(f"{earlier}-x", earlier)) != ("cronjob", item.key)


def test_the_daemon_prewarms_an_announced_run_once_and_drops_it_when_its_job_exists(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """Flat demand (16 GPUs, all running): without notice nothing is prewarmed; the run due in
    5 minutes is prewarmed (16 GPUs), held - not doubled - at the next tick, and once the run's
    pods exist the item is gone and the pods are demand like any other."""
    api.put("cronjobs", nightly())
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    reconciler = build.build_reconciler(one_pool_settings(tmp_path), source=source, kube=kube)
    daemon = Daemon(reconciler=reconciler, pools=(POOL,))

    first = daemon.reconcile(T0)
    assert first is not None
    plan = first.plan.pool(POOL)
    assert plan.target_gpus == 16
    assert any(
        r.startswith("announced: 16 GPUs due within")
        and "cronjob ml/nightly@2027-01-15T08:05:00Z (16 GPUs, in 300s)" in r
        for r in plan.reasons
    ), plan.reasons
    assert sum(int(p["spec"]["parallelism"]) for p in placeholders(api)) * 8 >= 16
    held = copy.deepcopy(placeholders(api))

    api.clock = float(T0 + 30)
    second = daemon.reconcile(T0 + 30)
    assert second is not None and second.plan.pool(POOL).target_gpus == 16
    assert placeholders(api) == held  # once: nothing new for the same item

    status = TestClient(create_app(daemon)).get("/api/v1/status").json()
    announced = status["pools"][POOL]["announced"]
    assert [a["key"] for a in announced] == ["cronjob ml/nightly@2027-01-15T08:05:00Z"]
    quiet = {
        "items": 0,
        "problem": None,
        "precision_7d": None,
        "resolved_7d": 0,
        "waste_gpu_hours_7d": 0.0,
        "trusted": True,
        "distrusted_namespaces": [],
        "dropped_items": 0,
        "came_gpus_7d": 0,
        "ahead_gpus_7d": 0,
        "median_notice_seconds_7d": None,
    }
    assert status["notice_sources"] == [
        {"source": "cronjob", "installed": True, **quiet, "items": 1},
        {"source": "jobset", "installed": False, **quiet},
        {"source": "kueue", "installed": False, **quiet},
        {"source": "kueue-pending", "installed": False, **quiet},
        {"source": "argo", "installed": False, **quiet},
        {"source": "cronworkflow", "installed": False, **quiet},
        {"source": "volcano", "installed": False, **quiet},
    ]

    # 08:05: the controller creates the run's Job; its pods are pending real demand
    api.clock = float(T0 + 300)
    obj = api.objects("cronjobs", "ml")[0]
    obj["status"] = {"lastScheduleTime": "2027-01-15T08:05:00Z", "active": [{"name": "n-1"}]}
    api.store.replace(("cronjobs", "ml", "nightly"), obj)
    run = f"nightly-{(T0 + 300) // 60}"  # the 08:05 run's Job
    for i in range(2):  # the run's Job's pods: announced work, planned once, not learnt
        run_pods(api, run, index=i)
    record = daemon.reconcile(T0 + 300)
    assert record is not None
    snapshot = record.pools[POOL].snapshot
    assert snapshot is not None and snapshot.announced[0].earliest_start == T0 + 300 + 3600
    assert snapshot.pending_gpus + snapshot.running_gpus >= 32
    assert snapshot.announced_real_gpus == 16
    assert snapshot.arrivals is not None and snapshot.arrivals.gpus[0] == 0  # not arrivals
    reasons = record.plan.pool(POOL).reasons
    assert not any(r.startswith("announced:") for r in reasons)
    assert any("16 GPUs of announced work run now (not in the forecast)" in r for r in reasons)
    metrics = TestClient(create_app(daemon)).get("/metrics").text
    assert f'forecaster_observed_unannounced_demand_gpus{{pool="{POOL}"}} 16.0' in metrics
    assert f'forecaster_observed_demand_gpus{{pool="{POOL}"}} 32.0' in metrics
    # the run came 300 s after it was first read: less than the pool's window, so not ahead
    came = 'forecaster_notice_came_gpus_total{ahead="false",pool="%s",source="cronjob"} 16.0'
    assert came % POOL in metrics
    lead = 'forecaster_notice_lead_seconds_bucket{le="300.0",pool="%s",source="cronjob"} 1.0'
    assert lead % POOL in metrics
    # due from its first reading, the daemon's first (it starts within the configured
    # window): 16 GPUs held for 300 s
    held = 'forecaster_notice_held_gpu_hours_total{came="true",pool="%s",source="cronjob"} %r'
    assert held % (POOL, 16 * 300 / 3600) in metrics
    (cron, *_) = TestClient(create_app(daemon)).get("/api/v1/status").json()["notice_sources"]
    assert (cron["came_gpus_7d"], cron["ahead_gpus_7d"]) == (16, 0)
    assert cron["median_notice_seconds_7d"] == 300
    api.clock = float(T0 + 315)
    quiet = daemon.reconcile(T0 + 315)  # nothing changed: the plan stands
    assert quiet is not None and not quiet.replanned
    assert came % POOL in TestClient(create_app(daemon)).get("/metrics").text  # counted once


def test_runs_that_never_come_cut_the_source_and_runs_that_come_restore_it(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """A CronJob every 15 minutes whose controller creates nothing: each run is announced,
    withdrawn past its latest start and charged. After four, precision 0 < 0.5 - but one bad
    hour does not cut a source: its items are still planned. A day below 0.5 does: its items
    are no longer planned (the plan says why), also after a restart. Then runs come again
    until half of the week's items came, and the source is trusted again at once."""
    api.put(
        "cronjobs",
        nightly(schedule="*/15 * * * *", status={"lastScheduleTime": "2027-01-15T07:45:00Z"}),
    )
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    daemon = Daemon(
        reconciler=build.build_reconciler(one_pool_settings(tmp_path), source=source, kube=kube),
        pools=(POOL,),
    )
    last = [T0 - 300]

    def at(now: int):  # type: ignore[no-untyped-def]
        api.clock = float(now)
        source.append(*([16.0] * ((now - last[0]) // 60)))  # the history keeps up
        last[0] = now
        record = daemon.reconcile(now)
        assert record is not None
        return record

    for now in range(T0, T0 + 3600 + 1, 300):  # 08:00 .. 09:00: four runs judged, none came
        record = at(now)
    status = record.notice[0]  # cronjob (jobset: not installed)
    assert (status.trusted, status.precision, status.resolved) == (True, 0.0, 4)
    assert status.waste_gpu_hours > 0
    assert not any("not trusted" in r for r in record.plan.pool(POOL).reasons)

    for now in range(T0 + 2 * 3600, T0 + 3600 + 86400 + 1, 3600):  # a day of misses
        record = at(now)
    status = record.notice[0]
    assert status.distrusted_namespaces == ("ml",)  # the namespace is cut, not the source
    assert status.trusted and status.precision == 0.0 and status.resolved > 4
    reasons = record.plan.pool(POOL).reasons
    assert any(
        r.startswith("notice source cronjob/ml not trusted (precision 0.00") for r in reasons
    )
    assert record.plan.pool(POOL).target_gpus == 0

    # a restart (another replica takes over) reads the verdicts back from the state ConfigMap
    daemon = Daemon(
        reconciler=build.build_reconciler(one_pool_settings(tmp_path), source=source, kube=kube),
        pools=(POOL,),
    )
    restarted = at(T0 + 3600 + 86400 + 300).notice[0]
    assert (restarted.distrusted_namespaces, restarted.precision) == (("ml",), 0.0)
    assert restarted.resolved >= status.resolved
    missed = restarted.resolved

    now = T0 + 3600 + 86400 + 600
    for _ in range(400):  # runs come again, every one, until half of the week's items came
        if now % 900 == 0:
            obj = api.objects("cronjobs", "ml")[0]
            ran = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            obj["status"] = {"lastScheduleTime": ran}
            api.store.replace(("cronjobs", "ml", "nightly"), obj)
            for pod in api.objects("pods", "ml"):  # the last run's pod has finished
                if pod["metadata"]["name"].startswith("nightly-"):
                    api.store.objects.pop(("pods", "ml", pod["metadata"]["name"]))
            run_pods(api, f"nightly-{now // 60}")  # this run's: it came
        record = at(now)
        status = record.notice[0]
        if status.precision is not None and status.precision >= 0.5:
            break
        assert status.distrusted_namespaces == ("ml",)
        now += 300
    else:
        pytest.fail(f"still below 0.5 after 400 ticks: {status}")
    assert status.distrusted_namespaces == () and status.resolved >= 2 * missed  # at once
    json = TestClient(create_app(daemon)).get("/api/v1/status").json()["notice_sources"][0]
    assert json["trusted"] and json["precision_7d"] >= 0.5 and json["waste_gpu_hours_7d"] > 0


def test_a_run_entering_the_window_is_planned_at_once_not_after_a_quiet_tick(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """Between two ticks 40 s apart nothing in the cluster changes, so the second would keep
    the first plan (a quiet tick) - but the 08:15 run entered the 900 s window meanwhile."""
    api.put(
        "cronjobs",
        nightly(schedule="15 * * * *", status={"lastScheduleTime": "2027-01-15T07:15:00Z"}),
    )
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    daemon = Daemon(
        reconciler=build.build_reconciler(one_pool_settings(tmp_path), source=source, kube=kube),
        pools=(POOL,),
    )
    api.clock = float(T0 - 30)
    first = daemon.reconcile(T0 - 30)
    assert first is not None and first.pools[POOL].horizon is not None
    assert first.pools[POOL].horizon.horizon_seconds == 900
    assert first.plan.pool(POOL).target_gpus == 0  # 08:15 is 930 s away
    api.clock = float(T0 + 10)
    second = daemon.reconcile(T0 + 10)
    assert second is not None and second.replanned
    assert second.plan.pool(POOL).target_gpus == 16


def test_notice_namespaces_choose_whose_announced_work_is_read(api: KubeApiDouble) -> None:
    """``notice.namespaces``: an excluded namespace's runs are not read and its pods are
    unannounced demand (learnt by the forecast); with ``include``, only those namespaces'."""
    other = nightly("theirs")
    other["metadata"]["namespace"] = "team-b"
    api.put("cronjobs", nightly())
    api.put("cronjobs", other)
    kube = Kube(api_client(host=api.url), dry_run=True)
    shapes = [shape(n) for n in kube.list_nodepools()]

    def read_with(**chosen: Any) -> NoticeReading:
        config = one_pool_settings(Path("/nonexistent"))
        chosen_namespaces = NoticeNamespaces.model_validate(chosen)
        notice = config.notice.model_copy(update={"namespaces": chosen_namespaces})
        config = config.model_copy(update={"notice": notice})
        reader = NoticeReader([CronJobSource()], namespaces=build.notice_namespaces(config))
        return reader.read(kube, pools=shapes, now=T0)

    keys = [i.key for i in read_with(exclude=["team-b"]).items[POOL]]
    assert keys == ["cronjob ml/nightly@2027-01-15T08:05:00Z"]
    job = f"theirs-{(T0 + 300) // 60}"
    assert read_with(exclude=["team-b"]).announcement(run_pod(f"{job}-x", job, "team-b")) is None
    keys = [i.key for i in read_with(include=["team-b"]).items[POOL]]
    assert keys == ["cronjob team-b/theirs@2027-01-15T08:05:00Z"]
    assert read_with(include=["team-b"]).announcement(run_pod(f"{job}-x", job, "team-b"))
    both = read_with()
    assert len(both.items[POOL]) == 2
    with pytest.raises(ValueError, match="both included and excluded"):
        read_with(include=["ml"], exclude=["ml"])
