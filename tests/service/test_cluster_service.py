"""Two replicas of the daemon on the API double: one leads and writes, the other only serves.

Cases: the jobs are configured as documented (coalescing, one instance, lease every 5 s); the
leader's tick creates placeholders while the follower's tick writes nothing to the cluster
but still forecasts and plans; stopping the leader releases its Lease and the follower takes
over on its next round; guardrail findings reach the daemon's status; a leader whose tick
stalls until another replica (with a skewed wall clock) has taken over sends not one write
after it resumes; a leader whose ticks stop completing fails ``/healthz`` and stops renewing;
a new pending GPU pod, seen by the pod watch, starts a tick within seconds, not at the interval.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import cleanup, takeover
from forecaster.app.build import build_cluster_service
from forecaster.core.policy import MIN_WAKE_SECONDS
from forecaster.reconcile.records import TickRecord
from forecaster.service.clock import FakeClock
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history, settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble


def replica(tmp_path: Path, api: KubeApiDouble, identity: str, clock: FakeClock):  # type: ignore[no-untyped-def]
    config: Settings = settings(tmp_path)
    kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    service = build_cluster_service(config, kube, identity=identity, clock=clock)
    service.daemon.reconciler.source = LiveSource(T0 - 2 * 86400, calm_history())
    return service


def test_only_the_leader_writes(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    a = replica(tmp_path, api, "replica-a", clock)
    b = replica(tmp_path, api, "replica-b", clock)
    assert a.daemon.guardrails == [
        f"unprotected-gpu-workloads ({POOL}): " + a.daemon.guardrails[0].split(": ", 1)[1]
    ]
    a.renew()
    b.renew()
    before = len(api.writes())
    b.reconcile()
    follower_writes = [w for w in api.writes()[before:] if "/leases/" not in w.path]
    assert follower_writes == []
    assert b.daemon.metrics.leader._value.get() == 0  # a follower's gauge: 0, not -1
    assert b.daemon.last is not None and b.daemon.last.plan.pool(POOL).target_gpus >= 8
    a.reconcile()
    assert api.objects("jobs", "forecaster-placeholders")  # the leader prewarmed
    assert a.daemon.metrics.leader._value.get() == 1
    a.stop()
    b.renew()
    assert b.daemon.is_leader()


def test_scheduler_jobs(tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim) -> None:
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    service = replica(tmp_path, api, "replica-a", clock)
    scheduler = service.start()
    try:
        jobs = {job.id: job for job in scheduler.get_jobs()}
        assert set(jobs) == {"lease", "reconcile"}
        assert jobs["reconcile"].trigger.interval.total_seconds() == 15
        assert jobs["lease"].trigger.interval.total_seconds() == 5
        assert jobs["reconcile"].max_instances == 1 and jobs["reconcile"].coalesce
    finally:
        service.stop()
    assert not service.elector.is_leader()


def test_a_deposed_leader_stops_writing_in_the_middle_of_a_tick(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    clock_a = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    clock_b = FakeClock(datetime.fromtimestamp(T0 + 20, tz=UTC))  # skewed wall clock, too
    a = replica(tmp_path, api, "replica-a", clock_a)
    b = replica(tmp_path, api, "replica-b", clock_b)
    a.renew()
    b.renew()
    placeholders = a.daemon.reconciler.actuator.backends["placeholders"].placeholders  # type: ignore[union-attr]
    verify = placeholders.verify_priority_class

    def stall_then_verify() -> None:
        # a's tick hangs right before its creates (GC pause, slow API): its Lease lapses and b
        # takes over; when a resumes, not one of its writes may reach the cluster
        clock_a.advance(30)
        clock_b.advance(30)
        b.renew()
        assert b.daemon.is_leader()
        verify()

    placeholders.verify_priority_class = stall_then_verify  # type: ignore[method-assign]
    before = len(api.writes())
    a.reconcile()
    record = a.daemon.last
    assert record is not None and record.plan.pool(POOL).target_gpus >= 8
    a_writes = [w for w in api.writes()[before:] if "/leases/" not in w.path]
    assert a_writes == [], [w.path for w in a_writes]
    assert "not (or no longer) the leader" in (record.error("actuate", POOL) or "")
    assert api.objects("jobs", "forecaster-placeholders") == []
    b.reconcile()
    assert (
        len(api.objects("jobs", "forecaster-placeholders"))
        == b.daemon.last.plan.pool(POOL).placeholders
    )  # type: ignore[union-attr]


def test_a_stuck_leader_fails_liveness_and_lets_its_lease_lapse(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    a = replica(tmp_path, api, "replica-a", clock)
    a.renew()
    a.reconcile()
    client = TestClient(create_app(a.daemon))
    assert client.get("/healthz").status_code == 200
    clock.advance(80)  # five 15 s intervals but under the 90 s floor: slow, still fine
    a.renew()
    assert a.daemon.is_leader() and client.get("/healthz").status_code == 200
    clock.advance(20)  # 100 s > 90 s: the tick is stuck
    assert client.get("/healthz").json() == {"status": "stuck"}
    assert client.get("/healthz").status_code == 503
    a.renew()
    assert not a.daemon.is_leader()  # stepped down: the Lease is not renewed and lapses


def test_uninstall_cleanup_fences_a_running_leader(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim, caplog: pytest.LogCaptureFixture
) -> None:
    """Helm's pre-delete hook (or `forecaster cleanup`) runs while the Deployment still does:
    after it, the still-running replicas must not prewarm again."""
    clock_a = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    clock_b = FakeClock(datetime.fromtimestamp(T0 + 7, tz=UTC))
    a = replica(tmp_path, api, "replica-a", clock_a)
    b = replica(tmp_path, api, "replica-b", clock_b)
    a.renew()
    b.renew()
    a.reconcile()
    assert api.objects("jobs", "forecaster-placeholders")
    waited: list[float] = []

    def sleep(seconds: float) -> None:  # the replicas keep running while cleanup waits
        waited.append(seconds)
        for clock in (clock_a, clock_b):
            clock.advance(seconds)
        a.renew()
        b.renew()

    kube = Kube(api_client(host=api.url), dry_run=False)
    changed = cleanup.cleanup(
        kube,
        namespace="forecaster",
        placeholders="forecaster-placeholders",
        wall=lambda: T0 + 1.0,
        sleep=sleep,
    ).changed
    assert waited == [15] and changed
    assert api.objects("jobs", "forecaster-placeholders") == []
    for _ in range(20):  # ten minutes of both replicas trying to lead and prewarm
        for clock in (clock_a, clock_b):
            clock.advance(30)
        a.renew()
        b.renew()
        a.reconcile()
        b.reconcile()
    assert not a.daemon.is_leader() and not b.daemon.is_leader()
    assert api.objects("jobs", "forecaster-placeholders") == []
    # each replica says who holds the Lease and until when: log line, status, page banner
    said = a.daemon.not_acting()
    assert said.startswith("the leader Lease is held by forecaster-cleanup until 2027-")
    assert "`forecaster resume` gives it back" in said
    with caplog.at_level(logging.INFO, logger="forecaster.reconcile.loop"):
        a.reconcile()
    assert f"[writes nothing: {said}]" in caplog.text
    status = TestClient(create_app(a.daemon)).get("/api/v1/status").json()
    assert status["not_acting"] == said and status["leader"] is False
    # `forecaster resume` gives the Lease back: a replica leads and acts again at once
    now = int(clock_a.now().timestamp())
    assert takeover.give_back(settings(tmp_path), kube, reset_state=False, now=now)
    a.renew()
    a.reconcile()
    assert a.daemon.is_leader()
    assert TestClient(create_app(a.daemon)).get("/api/v1/status").json()["not_acting"] is None


def test_a_new_pending_gpu_pod_wakes_a_tick_before_the_interval(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    service = replica(tmp_path, api, "replica-a", clock)
    began: list[float] = []  # when each tick began: a slow tick must not look like no wake
    records: dict[int, TickRecord | None] = {}
    tick = service.daemon.reconcile

    def traced(now: int) -> TickRecord | None:
        began.append(time.monotonic())
        index = len(began) - 1
        records[index] = tick(now)
        return records[index]

    service.daemon.reconcile = traced  # type: ignore[method-assign]
    service.start()
    try:
        deadline = time.monotonic() + 10
        while not (records and service.watch and service.watch.pods() is not None):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(MIN_WAKE_SECONDS)  # the first tick is at start; a woken one may follow it
        first = len(began)
        busy_cluster.submit("urgent", POOL, 8)
        submitted = time.monotonic()
        # woken: not the interval's next tick, which is ~12 s after the pod (the first ran at
        # start); the bound leaves room for a slow machine, and counts when the tick began
        while len(began) == first:
            assert time.monotonic() - submitted < MIN_WAKE_SECONDS + 4, "no tick woken"
            time.sleep(0.05)
        deadline = time.monotonic() + 60  # a loaded machine may take a while over the tick
        while first not in records:
            assert time.monotonic() < deadline, "the woken tick never finished"
            time.sleep(0.05)
    finally:
        service.stop()
    record = records[first]
    assert record is not None and record.pools[POOL].snapshot.pending_gpus == 8  # and it saw it


def test_a_crash_looping_leader_is_stuck_not_making_progress(
    tmp_path: Path, api: KubeApiDouble, busy_cluster: ClusterSim
) -> None:
    """A tick that raises every time is no progress: liveness fails and the Lease lapses, as
    for a hung tick (a crash counted as progress would keep a broken leader forever)."""
    clock = FakeClock(datetime.fromtimestamp(T0, tz=UTC))
    a = replica(tmp_path, api, "replica-a", clock)
    a.renew()
    a.reconcile()
    client = TestClient(create_app(a.daemon))

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the tick")

    a.daemon.reconciler.tick = crash  # type: ignore[method-assign]
    for _ in range(7):  # 105 s of ticks, every one crashing
        clock.advance(15)
        a.renew()
        a.reconcile()
    assert client.get("/healthz").json() == {"status": "stuck"}
    assert 'forecaster_reconcile_errors_total{kind="crash"} 7.0' in client.get("/metrics").text
    a.renew()
    assert not a.daemon.is_leader()
