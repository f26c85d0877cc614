"""Leader election on a Lease in the API double.

Cases: the first replica takes the Lease and the second does not; renewing keeps it; the holder
stops acting before its Lease expires when it cannot renew (API errors); after expiry another
replica takes over (transitions counted); a released Lease is taken at once; a lost race (409)
is not leadership. Every Lease written validates against the core schema (fixture).
"""

from __future__ import annotations

from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.leases import LeaderElector
from tests.kubeapi.server import KubeApiDouble

NS = "forecaster"


def elector(api: KubeApiDouble, identity: str) -> LeaderElector:
    kube = Kube(api_client(host=api.url), dry_run=False, retries=0, backoff_seconds=0.01)
    return LeaderElector(
        kube, namespace=NS, name="forecaster-leader", identity=identity, lease_seconds=15
    )


def test_one_leader_renewal_and_takeover(api: KubeApiDouble) -> None:
    a, b = elector(api, "replica-a"), elector(api, "replica-b")
    t = 1_800_000_000.0
    assert a.try_acquire_or_renew(t) and a.is_leader(t)
    assert not b.try_acquire_or_renew(t + 1) and not b.is_leader(t + 1)
    assert a.try_acquire_or_renew(t + 5)
    assert not b.try_acquire_or_renew(t + 10)
    # a cannot renew any more: it stops acting after 2/3 of the lease, before it expires
    api.faults.add("*", r"/leases", status=500, times=1000)
    assert not a.try_acquire_or_renew(t + 8)
    assert not a.is_leader(t + 8)
    api.faults.clear()
    assert not b.try_acquire_or_renew(t + 15)  # a's last renewal (t+5) is still valid
    assert b.try_acquire_or_renew(t + 21) and b.is_leader(t + 21)  # expired: b takes over
    (lease,) = api.objects("leases", NS)
    assert lease["spec"]["holderIdentity"] == "replica-b" and lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew(t + 22)


def test_release_hands_over_at_once(api: KubeApiDouble) -> None:
    a, b = elector(api, "replica-a"), elector(api, "replica-b")
    t = 1_800_000_000.0
    assert a.try_acquire_or_renew(t)
    a.release(t + 1)
    assert not a.is_leader(t + 1)
    assert b.try_acquire_or_renew(t + 2)


def test_a_lost_race_is_not_leadership(api: KubeApiDouble) -> None:
    a = elector(api, "replica-a")
    api.faults.add("POST", r"/leases$", status=409, times=1)
    assert not a.try_acquire_or_renew(1_800_000_000.0)
    assert not a.is_leader(1_800_000_000.0)
