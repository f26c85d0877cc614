"""What the leader Lease records, at its edges (the real client against the API double).

A renewal keeps the acquisition time and the transition count (a takeover changes both); a
record unchanged for exactly one lease duration is not yet free; the earlier leader is judged
once, at the first read, and a later takeover does not rewrite it; an acquisition exactly at
the grace bound is a replica started with us; a holder's deadline is its renewal plus its own
duration, to the second; a release never clears a Lease someone else now holds, nor fails on
one that is gone. The cleanup fence counts a transition on top of the Lease's own, waits 0 for
a free Lease, retries a racing renewal up to five times and no more.
"""

from __future__ import annotations

from typing import Any

import pytest

from forecaster.actuators.coordination.leases import (
    CLEANUP_IDENTITY,
    EARLIER_GRACE_SECONDS,
    fence,
    lease_body,
    micro_time,
    release_fence,
)
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.quantities import timestamp_seconds as seconds
from forecaster.errors import ActuationError
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.actuators.test_leases import NS, T, clock, elector

NAME = "forecaster-leader"


def kube_of(api: KubeApiDouble) -> Kube:
    return Kube(api_client(host=api.url), dry_run=False, retries=0, backoff_seconds=0.01)


def fenced(api: KubeApiDouble) -> int:
    """``forecaster cleanup``'s fence for 600 s at T; how long it says to wait."""
    return fence(
        kube_of(api), namespace=NS, identity=CLEANUP_IDENTITY, hold_seconds=600, wall=lambda: T
    )


def the_lease(api: KubeApiDouble) -> dict[str, Any]:
    (lease,) = api.objects("leases", NS)
    return lease


def test_a_renewal_keeps_the_acquisition_and_the_count_and_a_takeover_changes_both(
    api: KubeApiDouble,
) -> None:
    ca, cb = clock(), clock()
    a, b = elector(api, "replica-a", ca), elector(api, "replica-b", cb)
    assert a.try_acquire_or_renew()
    ca.advance(5)
    assert a.try_acquire_or_renew()
    spec = the_lease(api)["spec"]
    assert (seconds(spec["acquireTime"]), spec["leaseTransitions"]) == (T, 0)
    assert seconds(spec["renewTime"]) == T + 5
    assert not b.try_acquire_or_renew()
    cb.advance(15)  # unchanged for exactly one duration: not yet free
    assert not b.try_acquire_or_renew()
    cb.advance(1)
    assert b.try_acquire_or_renew()
    spec = the_lease(api)["spec"]
    assert (seconds(spec["acquireTime"]), spec["leaseTransitions"]) == (T + 16, 1)


def test_the_earlier_leader_is_judged_at_the_first_read_only(api: KubeApiDouble) -> None:
    body = lease_body(NS, NAME, identity="old", duration=15, now=T - 600, transitions=2)
    body["spec"]["acquireTime"] = micro_time(T - 3600)
    kube_of(api).create_lease(NS, body)
    cb = clock()
    b = elector(api, "replica-b", cb)
    assert not b.try_acquire_or_renew()  # first read: the old leader's record
    cb.advance(16)
    assert b.try_acquire_or_renew()  # taken over
    cb.advance(5)
    assert b.try_acquire_or_renew()  # this round reads the Lease as b's own
    assert (b.earlier_leader() or "").startswith("old, last renewed")


def test_an_acquisition_at_the_grace_bound_is_a_replica_started_with_us(
    api: KubeApiDouble,
) -> None:
    body = lease_body(NS, NAME, identity="peer", duration=15, now=T, transitions=0)
    body["spec"]["acquireTime"] = micro_time(T - EARLIER_GRACE_SECONDS)
    kube_of(api).create_lease(NS, body)
    b = elector(api, "replica-b", clock())
    assert not b.try_acquire_or_renew()
    assert b.earlier_leader() is None


def test_an_unreadable_renew_time_is_no_earlier_leader_and_no_deadline(api: KubeApiDouble) -> None:
    body = lease_body(NS, NAME, identity="peer", duration=15, now=T, transitions=0)
    body["spec"].pop("acquireTime")
    kube_of(api).create_lease(NS, body)
    lease = the_lease(api)
    lease["spec"]["renewTime"] = "2026-13-45T99:00:00.000000Z"  # not a time
    api.store.replace(("leases", NS, NAME), lease)
    b = elector(api, "replica-b", clock())
    assert not b.try_acquire_or_renew()
    assert b.earlier_leader() is None
    assert b.holder() == ("peer", None)


def test_the_holders_deadline_is_its_renewal_plus_its_own_duration(api: KubeApiDouble) -> None:
    body = lease_body(NS, NAME, identity="peer", duration=40, now=T + 0.75, transitions=0)
    kube_of(api).create_lease(NS, body)
    b = elector(api, "replica-b", clock())
    assert not b.try_acquire_or_renew()
    assert b.holder() == ("peer", micro_time(T + 40)[:19] + "Z")


def test_a_release_leaves_a_lease_someone_else_took_and_one_that_is_gone(
    api: KubeApiDouble,
) -> None:
    a = elector(api, "replica-a", clock())
    assert a.try_acquire_or_renew()
    assert fenced(api) == 15
    a.release()  # still within its validity: it tries, and finds cleanup holding it
    assert not a.is_leader()
    assert the_lease(api)["spec"]["holderIdentity"] == CLEANUP_IDENTITY
    b = elector(api, "replica-b", clock())
    api.store.delete(("leases", NS, NAME))
    assert b.try_acquire_or_renew()
    api.store.delete(("leases", NS, NAME))
    b.release()  # the Lease is gone: nothing to give back, no error
    assert not b.is_leader()


def test_the_fence_counts_a_transition_on_top_of_the_leases_own(api: KubeApiDouble) -> None:
    body = lease_body(NS, NAME, identity="", duration=15, now=T, transitions=3)
    kube_of(api).create_lease(NS, body)
    assert fenced(api) == 0
    assert the_lease(api)["spec"]["leaseTransitions"] == 4
    assert the_lease(api)["spec"]["holderIdentity"] == CLEANUP_IDENTITY


@pytest.mark.parametrize(("races", "taken"), [(4, True), (5, False)])
def test_the_fence_retries_a_racing_renewal_up_to_five_times(
    api: KubeApiDouble, races: int, taken: bool
) -> None:
    body = lease_body(NS, NAME, identity="replica-a", duration=15, now=T, transitions=0)
    kube_of(api).create_lease(NS, body)
    api.faults.add("PUT", r"/leases/", status=409, times=races)
    if taken:
        assert fenced(api) == 15
        assert the_lease(api)["spec"]["holderIdentity"] == CLEANUP_IDENTITY
    else:
        with pytest.raises(ActuationError, match="kept changing"):
            fenced(api)
        assert the_lease(api)["spec"]["holderIdentity"] == "replica-a"


def test_the_fence_retries_a_create_that_raced_and_only_a_cleanup_hold_is_given_back(
    api: KubeApiDouble,
) -> None:
    kube = kube_of(api)
    assert not release_fence(kube, namespace=NS, wall=lambda: T)  # no Lease: nothing to give
    api.faults.add("POST", r"/leases", status=409, times=1)
    assert fenced(api) == 0
    assert release_fence(kube, namespace=NS, wall=lambda: T)
    assert the_lease(api)["spec"]["holderIdentity"] == ""
    a = elector(api, "replica-a", clock())
    assert a.try_acquire_or_renew()
    assert not release_fence(kube, namespace=NS, wall=lambda: T)  # a replica's: not ours to free
    assert the_lease(api)["spec"]["holderIdentity"] == "replica-a"
