"""Leader election on a ``coordination.k8s.io/v1`` Lease, written for safety first.

The ``kubernetes.leaderelection`` module can keep its work thread running after a connection
error ends its loop (two leaders at once) and never releases on shutdown (see STACK-NOTES), so
this is a small loop of our own, judged the way client-go judges it:

* **Expiry is never computed from a foreign timestamp.** A replica remembers the Lease record
  it last saw (holder, renewTime, resourceVersion) and *when it saw it change*, on its own
  monotonic clock; the Lease is free only when the record has not changed for
  ``leaseDurationSeconds`` of local time. Wall-clock skew between replicas cannot make two
  leaders.
* Our own leadership is a **monotonic deadline**: ``renewed + lease_seconds * safety``, taken
  from the local monotonic time *before* the renewal request was sent. ``remaining_seconds()``
  is checked immediately before every cluster write (``Kube`` write guard), and each write's
  request timeout is cut to fit inside it, so no write of ours can be in flight when another
  replica may take over (it needs a full ``lease_seconds`` of unchanged record).
* Any error while renewing drops leadership at once; ``refuse_renewal`` (a stuck tick) lets the
  Lease lapse on purpose.
* ``release()`` hands the Lease back on shutdown so a successor need not wait.
* ``fence()`` (uninstall) takes the Lease from whoever holds it for a long hold, so no replica
  acts again; once the previous holder's ``leaseDurationSeconds`` has passed, none can still
  be inside its deadline, and what is undone afterwards stays undone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import Lease
from forecaster.actuators.quantities import timestamp_seconds
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)

LEASE_NAME = "forecaster-leader"
LEASE_SECONDS = 15
CLEANUP_IDENTITY = "forecaster-cleanup"
"""Who ``forecaster cleanup`` fences the Lease as: replicas say so, ``resume`` releases it."""


def micro_time(seconds: float) -> str:
    """Kubernetes MicroTime (RFC 3339 with microseconds, UTC)."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """See the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        name: str,
        identity: str,
        wall: Callable[[], float],
        monotonic: Callable[[], float],
        lease_seconds: int = 15,
        safety: float = 0.66,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.wall = wall
        self.monotonic = monotonic
        self.lease_seconds = lease_seconds
        self.safety = safety
        self._valid_until = 0.0
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._holder_until: str | None = None
        self._first_seen: str | None = None  # the Lease as this process first read it
        self._first_read = False
        self._started_at = wall()

    def is_leader(self) -> bool:
        """May this replica act now?"""
        return self.remaining_seconds() > 0

    def remaining_seconds(self) -> float:
        """Seconds of safe leadership left (<= 0: not the leader)."""
        return self._valid_until - self.monotonic()

    def try_acquire_or_renew(self) -> bool:
        """One election round; returns whether we lead afterwards."""
        was = self.is_leader()
        started = self.monotonic()  # validity counts from before the request: never longer
        try:
            won = self._round(started)
        except (ActuationError, ValueError, KeyError) as exc:
            log.error("leader election: %s; not acting until the Lease is renewed", exc)
            won = False
        self._valid_until = started + self.lease_seconds * self.safety if won else 0.0
        if won != was:
            log.warning(
                "leader election: %s %s the leader",
                self.identity,
                "is now" if won else "is no longer",
            )
        return won

    def earlier_leader(self) -> str | None:
        """Who held the Lease before this process first read it (None: nobody ever did - a
        fresh install, or not read yet). Judged from that first read, not today's holder."""
        return self._first_seen

    def holder(self) -> tuple[str, str | None] | None:
        """Another holder of the Lease, as last read: (identity, renew deadline as RFC 3339, when
        the holder set a duration), or None when we hold it or nobody does."""
        if self._observed is None or self._observed[0] in ("", self.identity):
            return None
        return self._observed[0], self._holder_until

    def step_down(self, reason: str) -> None:
        """Stop acting at once (e.g. a stuck tick); the Lease then lapses by itself."""
        if self.is_leader():
            log.error("leader election: %s steps down: %s", self.identity, reason)
        self._valid_until = 0.0

    def release(self) -> None:
        """Give the Lease up (shutdown)."""
        if not self.is_leader():
            return
        self._valid_until = 0.0
        try:
            lease = self.kube.get_lease(self.namespace, self.name)
            if lease is not None and lease["spec"].get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["renewTime"] = micro_time(self.wall())
                self.kube.replace_lease(self.namespace, lease)
        except ActuationError as exc:
            log.warning("leader election: could not release the Lease: %s", exc)

    def _body(self, now: float, *, transitions: int) -> Lease:
        return lease_body(
            self.namespace,
            self.name,
            identity=self.identity,
            duration=self.lease_seconds,
            now=now,
            transitions=transitions,
        )

    def _round(self, started: float) -> bool:
        lease = self.kube.get_lease(self.namespace, self.name)
        now = self.wall()
        if not self._first_read:
            self._first_read = True
            self._first_seen = _earlier(lease, started_at=self._started_at)
        if lease is None:
            try:
                self.kube.create_lease(self.namespace, self._body(now, transitions=0))
            except ConflictError:
                return False
            return True
        spec = lease.get("spec", {})
        holder = spec.get("holderIdentity") or ""
        record = (holder, str(spec.get("renewTime")), lease["metadata"]["resourceVersion"])
        if record != self._observed:
            self._observed, self._observed_at = record, started
        duration = int(spec.get("leaseDurationSeconds") or self.lease_seconds)
        self._holder_until = _deadline(spec.get("renewTime"), duration)
        free = holder == "" or started - self._observed_at > duration
        if holder != self.identity and not free:
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
        acquired = spec.get("acquireTime") if holder == self.identity else None
        body = self._body(now, transitions=transitions)
        if acquired:
            body["spec"]["acquireTime"] = acquired
        body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
        try:
            self.kube.replace_lease(self.namespace, body)
        except ConflictError:
            return False
        return True


def fence(
    kube: Kube, *, namespace: str, identity: str, hold_seconds: int, wall: Callable[[], float]
) -> int:
    """Take the leader Lease from any holder for ``hold_seconds``; returns how long to wait.

    A leader's deadline ends at most its ``leaseDurationSeconds`` after its last renewal was
    sent, which was before this write; waiting that long after the fence means no replica can
    still write. Replicas that see the new holder stay followers until the hold lapses
    (``hold_seconds`` of unchanged record, judged on their own clocks). Conflicts (a renewal
    racing us) are retried.
    """
    for _ in range(5):
        lease = kube.get_lease(namespace, LEASE_NAME)
        now = wall()
        body = lease_body(
            namespace, LEASE_NAME, identity=identity, duration=hold_seconds, now=now, transitions=0
        )
        if lease is None:
            try:
                kube.create_lease(namespace, body)
            except ConflictError:
                continue
            return 0
        spec = lease.get("spec", {})
        holder = spec.get("holderIdentity") or ""
        body["spec"]["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
        try:
            kube.replace_lease(namespace, body)
        except ConflictError:
            continue
        if holder in ("", identity):
            return 0
        wait = int(spec.get("leaseDurationSeconds") or LEASE_SECONDS)
        log.warning(
            "fence: took the leader Lease from %s for %d s; waiting %d s for its deadline",
            holder,
            hold_seconds,
            wait,
        )
        return wait
    raise ActuationError("fence: the leader Lease kept changing; try again")


EARLIER_GRACE_SECONDS = 120
"""A Lease acquired this long before this process started was held by an earlier leader; one
acquired since is a replica started with us (a fresh install's first election)."""


def _earlier(lease: Lease | None, *, started_at: float) -> str | None:
    """The leader before this process, as the Lease shows it at our first read, or None."""
    spec = (lease or {}).get("spec") or {}
    acquired = _seconds(spec.get("acquireTime") or spec.get("renewTime"))
    if acquired is None or acquired >= started_at - EARLIER_GRACE_SECONDS:
        return None
    return f"{spec.get('holderIdentity') or 'released'}, last renewed {spec.get('renewTime')}"


def _seconds(stamp: object) -> float | None:
    """A Kubernetes (Micro)Time as epoch seconds (``quantities.timestamp_seconds``), or None."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return timestamp_seconds(stamp)
    except ValueError:
        return None


def _deadline(renew_time: object, duration: int) -> str | None:
    """``renewTime + duration`` as RFC 3339, for people (expiry is never judged by it)."""
    renewed = _seconds(renew_time)
    return None if renewed is None else micro_time(renewed + duration)[:19] + "Z"


def release_fence(kube: Kube, *, namespace: str, wall: Callable[[], float]) -> bool:
    """Give back a Lease that ``forecaster cleanup`` holds (``fence``): the replicas may lead
    again at their next election round. True if it was held by cleanup and is now free."""
    lease = kube.get_lease(namespace, LEASE_NAME)
    if lease is None or (lease.get("spec") or {}).get("holderIdentity") != CLEANUP_IDENTITY:
        return False
    lease["spec"]["holderIdentity"] = ""
    lease["spec"]["leaseDurationSeconds"] = LEASE_SECONDS
    lease["spec"]["renewTime"] = micro_time(wall())
    kube.replace_lease(namespace, lease)
    return True


def lease_body(
    namespace: str, name: str, *, identity: str, duration: int, now: float, transitions: int
) -> Lease:
    """Our Lease object held by ``identity`` from ``now``."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {lbl.MANAGED_BY: lbl.MANAGER},
        },
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": duration,
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        },
    }
