"""Leader election on a Lease in the API double, each replica with its own clock.

Cases: the first replica takes the Lease and the second does not; renewing keeps it; the holder
stops acting before its Lease could pass to another replica when it cannot renew (API errors);
another replica takes over only after the record has stayed unchanged for a whole lease
duration *on its own monotonic clock* (transitions counted); a replica whose wall clock is far
ahead of the holder's never takes a Lease the holder keeps renewing (no foreign timestamp is
compared with a local one); a released Lease is taken at once; a lost race (409) is not
leadership; writes are refused (``NotLeaderError``, nothing sent) once leadership has lapsed,
and a write's request timeout ends inside the remaining leadership. Also: leadership ends at
its safe deadline to the second, a lost renewal race is not leadership, who else holds the Lease,
the log of each change (and of a step-down), a release the API refuses, an earlier leader judged
by its acquisition, and the cleanup fence (the holder's own duration, a racing renewal retried).
Every Lease written validates against the core schema (fixture).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from forecaster.actuators.coordination.leases import (
    CLEANUP_IDENTITY,
    LeaderElector,
    fence,
    lease_body,
    micro_time,
)
from forecaster.actuators.kube import Kube, api_client
from forecaster.errors import ActuationError, NotLeaderError
from forecaster.service.clock import FakeClock
from forecaster.testing.kubeapi.server import KubeApiDouble

NS = "forecaster"
T = 1_800_000_000.0


def elector(api: KubeApiDouble, identity: str, clock: FakeClock) -> LeaderElector:
    kube = Kube(api_client(host=api.url), dry_run=False, retries=0, backoff_seconds=0.01)
    return LeaderElector(
        kube,
        namespace=NS,
        name="forecaster-leader",
        identity=identity,
        wall=lambda: clock.now().timestamp(),
        monotonic=clock.monotonic,
        lease_seconds=15,
    )


def clock(offset: float = 0.0) -> FakeClock:
    return FakeClock(datetime.fromtimestamp(T + offset, tz=UTC))


def test_one_leader_renewal_and_takeover(api: KubeApiDouble) -> None:
    ca, cb = clock(), clock()
    a, b = elector(api, "replica-a", ca), elector(api, "replica-b", cb)
    assert a.try_acquire_or_renew() and a.is_leader()
    cb.advance(1)
    assert not b.try_acquire_or_renew() and not b.is_leader()
    ca.advance(5)
    assert a.try_acquire_or_renew()
    cb.advance(9)
    assert not b.try_acquire_or_renew()  # b saw a renewal: it waits a full duration from then
    # a cannot renew any more: it stops acting after 2/3 of the lease, before anyone may take it
    api.faults.add("*", r"/leases", status=500, times=1000)
    ca.advance(3)
    assert not a.try_acquire_or_renew()
    assert not a.is_leader()
    api.faults.clear()
    cb.advance(14)
    assert not b.try_acquire_or_renew()  # 14 s unchanged is not yet a lease duration
    cb.advance(2)
    assert b.try_acquire_or_renew() and b.is_leader()  # 16 s unchanged: b takes over
    (lease,) = api.objects("leases", NS)
    assert lease["spec"]["holderIdentity"] == "replica-b" and lease["spec"]["leaseTransitions"] == 1
    ca.advance(1)
    assert not a.try_acquire_or_renew()
    cb.advance(5)
    assert b.try_acquire_or_renew()  # a renewal is no transition: the count is kept
    (lease,) = api.objects("leases", NS)
    assert lease["spec"]["leaseTransitions"] == 1
    b.release()
    ca.advance(1)
    assert a.try_acquire_or_renew()  # taken back: a second transition
    (lease,) = api.objects("leases", NS)
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("replica-a", 2)


@pytest.mark.parametrize("skew", [12, 60, 3600, -3600])
def test_wall_clock_skew_never_gives_two_leaders(api: KubeApiDouble, skew: float) -> None:
    ca, cb = clock(), clock(offset=skew)
    a, b = elector(api, "replica-a", ca), elector(api, "replica-b", cb)
    assert a.try_acquire_or_renew()
    for _ in range(12):  # a keeps renewing every 5 s; b tries every 5 s with its skewed clock
        ca.advance(5)
        cb.advance(5)
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()
        assert a.is_leader() and not b.is_leader()


def test_release_hands_over_at_once(api: KubeApiDouble) -> None:
    ca, cb = clock(), clock()
    a, b = elector(api, "replica-a", ca), elector(api, "replica-b", cb)
    assert a.try_acquire_or_renew()
    a.release()
    assert not a.is_leader()
    cb.advance(2)
    assert b.try_acquire_or_renew()


def test_a_lost_race_is_not_leadership(api: KubeApiDouble) -> None:
    a = elector(api, "replica-a", clock())
    api.faults.add("POST", r"/leases$", status=409, times=1)
    assert not a.try_acquire_or_renew()
    assert not a.is_leader()


def test_writes_are_refused_once_leadership_lapses(api: KubeApiDouble) -> None:
    ca = clock()
    a = elector(api, "replica-a", ca)
    a.kube.guard = a.remaining_seconds
    assert a.try_acquire_or_renew()
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": NS}}
    a.kube.create_config_map(NS, cm)
    ca.advance(9.5)  # 0.4 s of leadership left: too little to finish a write
    before = len(api.requests)
    with pytest.raises(NotLeaderError):
        a.kube.create_config_map(NS, {**cm, "metadata": {"name": "y", "namespace": NS}})
    assert len(api.requests) == before  # nothing was sent


def test_a_write_times_out_inside_the_remaining_leadership(api: KubeApiDouble) -> None:
    ca = clock()
    a = elector(api, "replica-a", ca)
    a.kube.guard = a.remaining_seconds
    assert a.try_acquire_or_renew()
    ca.advance(7.9)  # 2.0 s left: the request must give up within 1.5 s
    api.faults.add("POST", r"/configmaps$", status=0, delay_seconds=6.0)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": NS}}
    began = time.monotonic()
    with pytest.raises(ActuationError, match="timed out"):
        a.kube.create_config_map(NS, cm)
    assert time.monotonic() - began < 4.0  # gave up (1.5 s), did not wait for the answer (6 s)


def test_leadership_ends_exactly_at_its_safe_deadline(api: KubeApiDouble) -> None:
    ca = clock()
    a = elector(api, "replica-a", ca)
    assert a.try_acquire_or_renew()  # valid for 15 s x 0.66 = 9.9 s from before the request
    ca.advance(9.4)
    assert a.is_leader()  # 0.5 s left
    ca.advance(1.0)
    assert not a.is_leader()  # 0.5 s past


def test_a_lost_renewal_race_is_not_leadership(api: KubeApiDouble) -> None:
    ca = clock()
    a = elector(api, "replica-a", ca)
    assert a.try_acquire_or_renew()
    api.faults.add("PUT", r"/leases/", status=409, times=1)
    ca.advance(5)
    assert not a.try_acquire_or_renew() and not a.is_leader()


def test_who_else_holds_the_lease_and_the_log_of_each_change(
    api: KubeApiDouble, caplog: pytest.LogCaptureFixture
) -> None:
    ca, cb = clock(), clock()
    a, b = elector(api, "replica-a", ca), elector(api, "replica-b", cb)
    assert a.holder() is None  # nothing read yet
    with caplog.at_level("WARNING", logger="forecaster.actuators.coordination.leases"):
        assert a.try_acquire_or_renew()
        ca.advance(5)
        assert a.try_acquire_or_renew()  # a renewal is not news
    assert [r.getMessage() for r in caplog.records] == [
        "leader election: replica-a is now the leader"
    ]
    assert not b.try_acquire_or_renew()
    assert a.holder() is None  # we hold it (a's own read)
    until = b.holder()
    assert until is not None and until[0] == "replica-a" and until[1] is not None
    caplog.clear()
    with caplog.at_level("WARNING", logger="forecaster.actuators.coordination.leases"):
        api.faults.add("*", r"/leases", status=500, times=1000)
        ca.advance(5)
        assert not a.try_acquire_or_renew()
    assert "leader election: replica-a is no longer the leader" in caplog.messages


def test_stepping_down_says_why_only_when_it_led(
    api: KubeApiDouble, caplog: pytest.LogCaptureFixture
) -> None:
    a = elector(api, "replica-a", clock())
    with caplog.at_level("ERROR", logger="forecaster.actuators.coordination.leases"):
        a.step_down("not a leader yet")
        assert caplog.messages == []
        assert a.try_acquire_or_renew()
        a.step_down("tick stuck for 300 s")
    assert not a.is_leader()
    assert caplog.messages == ["leader election: replica-a steps down: tick stuck for 300 s"]


def test_a_release_the_api_refuses_is_logged_not_raised(api: KubeApiDouble) -> None:
    a = elector(api, "replica-a", clock())
    assert a.try_acquire_or_renew()
    api.faults.add("*", r"/leases", status=500, times=1000)
    a.release()  # shutting down: an API error must not stop the rest of the shutdown
    assert not a.is_leader()


def test_an_earlier_leader_is_judged_by_when_it_acquired_not_when_it_renewed(
    api: KubeApiDouble,
) -> None:
    """A leader that acquired an hour ago and renewed a second ago is an earlier leader (the
    state it wrote is real); one that acquired since we started is a replica started with us."""
    kube = Kube(api_client(host=api.url), dry_run=False, retries=0, backoff_seconds=0.01)
    body = lease_body(
        NS, "forecaster-leader", identity="old", duration=15, now=T - 1, transitions=3
    )
    body["spec"]["acquireTime"] = micro_time(T - 3600)
    kube.create_lease(NS, body)
    a = elector(api, "replica-a", clock())
    assert not a.try_acquire_or_renew()
    assert (a.earlier_leader() or "").startswith("old, last renewed")


def test_the_fence_waits_the_holders_own_duration_and_retries_a_racing_renewal(
    api: KubeApiDouble,
) -> None:
    kube = Kube(api_client(host=api.url), dry_run=False, retries=0, backoff_seconds=0.01)
    wall = lambda: T  # noqa: E731
    assert fence(kube, namespace=NS, identity=CLEANUP_IDENTITY, hold_seconds=600, wall=wall) == 0
    (lease,) = api.objects("leases", NS)
    assert lease["spec"]["leaseTransitions"] == 0  # created, not taken from anyone
    lease["spec"].update(holderIdentity="replica-a", leaseDurationSeconds=40)
    kube.replace_lease(NS, lease)
    api.faults.add("PUT", r"/leases/", status=409, times=1)  # a renewal raced the fence
    assert fence(kube, namespace=NS, identity=CLEANUP_IDENTITY, hold_seconds=600, wall=wall) == 40
    (lease,) = api.objects("leases", NS)
    assert lease["spec"]["holderIdentity"] == CLEANUP_IDENTITY
    assert lease["spec"]["leaseTransitions"] == 1  # taken from replica-a: one transition
