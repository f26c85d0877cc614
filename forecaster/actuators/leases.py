"""Leader election on a ``coordination.k8s.io/v1`` Lease, written for safety first.

The ``kubernetes.leaderelection`` module can keep its work thread running after a connection
error ends its loop (two leaders at once) and never releases on shutdown (see STACK-NOTES), so
this is a small loop of our own:

* ``try_acquire_or_renew(now)`` takes the Lease if it is free, expired or already ours, with
  the resourceVersion as precondition (a race loses with 409, never with two holders);
* ``is_leader(now)`` is true only until ``renewed + lease_seconds * safety`` - a replica that
  cannot renew (API errors, partition) stops acting *before* its Lease can expire and another
  replica take over; any error while renewing drops leadership at once;
* ``release(now)`` hands the Lease back on shutdown so a successor need not wait.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube, Obj
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)


def micro_time(seconds: float) -> str:
    """Kubernetes MicroTime (RFC 3339 with microseconds, UTC)."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(text: str) -> float:
    """Inverse of ``micro_time`` (also accepts whole seconds)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class LeaderElector:
    """See the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_seconds: int = 15,
        safety: float = 0.66,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.safety = safety
        self._valid_until = 0.0

    def is_leader(self, now: float) -> bool:
        """May this replica act now?"""
        return now < self._valid_until

    def try_acquire_or_renew(self, now: float) -> bool:
        """One election round; returns whether we lead afterwards."""
        was = self.is_leader(now)
        try:
            won = self._round(now)
        except (ActuationError, ValueError, KeyError) as exc:
            log.error("leader election: %s; not acting until the Lease is renewed", exc)
            won = False
        self._valid_until = now + self.lease_seconds * self.safety if won else 0.0
        if won != was:
            log.warning(
                "leader election: %s %s the leader",
                self.identity,
                "is now" if won else "is no longer",
            )
        return won

    def release(self, now: float) -> None:
        """Give the Lease up (shutdown)."""
        if not self.is_leader(now):
            return
        self._valid_until = 0.0
        try:
            lease = self.kube.get_lease(self.namespace, self.name)
            if lease is not None and lease["spec"].get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["renewTime"] = micro_time(now)
                self.kube.replace_lease(self.namespace, lease)
        except ActuationError as exc:
            log.warning("leader election: could not release the Lease: %s", exc)

    def _round(self, now: float) -> bool:
        lease = self.kube.get_lease(self.namespace, self.name)
        if lease is None:
            try:
                self.kube.create_lease(self.namespace, self._body(now, transitions=0, acquired=now))
            except ConflictError:
                return False
            return True
        spec = lease.get("spec", {})
        holder = spec.get("holderIdentity") or ""
        renewed = parse_micro_time(spec["renewTime"]) if spec.get("renewTime") else 0.0
        duration = int(spec.get("leaseDurationSeconds") or self.lease_seconds)
        free = holder == "" or now > renewed + duration
        if holder != self.identity and not free:
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
        acquired = (
            parse_micro_time(spec["acquireTime"])
            if holder == self.identity and spec.get("acquireTime")
            else now
        )
        body = self._body(now, transitions=transitions, acquired=acquired)
        body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
        try:
            self.kube.replace_lease(self.namespace, body)
        except ConflictError:
            return False
        return True

    def _body(self, now: float, *, transitions: int, acquired: float) -> Obj:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER},
            },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": micro_time(acquired),
                "renewTime": micro_time(now),
                "leaseTransitions": transitions,
            },
        }
