"""Kubernetes Events for what an operator must see in ``kubectl describe``/``get events``.

An object another team wrote that the observation passes over (``core.cluster.Skipped``: a
pod or an announced item asking more per pod than one node holds, or unreadable) is said once
per object every ``SKIPPED_EVENT_EVERY_SECONDS`` in a Warning Event on the daemon (its Pod, else
its state ConfigMap), at most ``MAX_SKIPPED_EVENTS_PER_TICK`` a tick: tenants decide how many
such objects there are, not how many writes we make.

Recorded: a NodePool field that a person or a GitOps tool changed while our opt-in pause was on
(left as they set it; a Warning Event on that NodePool says so, besides ``/api/v1/status`` and
``forecaster_reconcile_errors_total``), and a state ConfigMap the daemon refuses to read (it
then acts as if the GPU-hours budget were spent: ``actuators.state_store``). Events live in our
namespace (a NodePool is cluster-scoped), so the RBAC stays namespaced. Best effort: an Event
that cannot be written is logged, never fails the tick.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Event, ObjectReference
from forecaster.actuators.quantities import kube_timestamp
from forecaster.core.cluster import Skipped
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)


def nodepool_event(namespace: str, nodepool: str, *, reason: str, message: str, now: int) -> Event:
    """A Warning Event about ``nodepool`` at ``now``."""
    involved: ObjectReference = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": nodepool,
    }
    return warning(namespace, involved, reason=reason, message=message, now=now)


def warning(
    namespace: str, involved: ObjectReference, *, reason: str, message: str, now: int
) -> Event:
    """A Warning Event about the object ``involved`` at ``now``."""
    stamp = kube_timestamp(now)
    name = involved.get("name", "object")
    # the API server refuses a core/v1 Event whose involvedObject namespace differs from its own
    involved = {**involved, "namespace": namespace}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{name}.forecaster.{now}",
            "namespace": namespace,
            "labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: name[:63]},
        },
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": lbl.MANAGER},
        "reportingComponent": lbl.MANAGER,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


SKIPPED_EVENT_EVERY_SECONDS = 6 * 3600
MAX_SKIPPED_EVENTS_PER_TICK = 5
MAX_REMEMBERED = 10_000
"""Objects whose Event is remembered (older ones are forgotten first: said again, at worst)."""


class SkippedEvents:
    """Says, rate-limited (see the module docstring), which objects were passed over."""

    def __init__(self, kube: Kube, namespace: str, involved: ObjectReference) -> None:
        self.kube, self.namespace, self.involved = kube, namespace, involved
        self._said: dict[tuple[str, str, str], int] = {}

    def report(self, skipped: Sequence[Skipped], *, now: int) -> None:
        """One Event per object not said within ``SKIPPED_EVENT_EVERY_SECONDS``, a few a tick."""
        fresh = [
            s
            for s in skipped
            if now - self._said.get((s.kind, s.name, s.reason), -SKIPPED_EVENT_EVERY_SECONDS)
            >= SKIPPED_EVENT_EVERY_SECONDS
        ]
        for passed in fresh[:MAX_SKIPPED_EVENTS_PER_TICK]:
            self._said[(passed.kind, passed.name, passed.reason)] = now
            message = f"{passed.kind} {passed.name} passed over ({passed.reason}): {passed.message}"
            body = warning(
                self.namespace,
                self.involved,
                reason="ObjectSkipped",
                message=message[:1000],
                now=now,
            )
            body["metadata"]["name"] = f"forecaster-skipped.{now}.{len(self._said)}"
            try:
                self.kube.create_event(self.namespace, body)
            except ActuationError as exc:  # best effort: the metric and the status say it too
                log.warning(
                    "could not record an Event for %s %s: %s", passed.kind, passed.name, exc
                )
        if len(self._said) > MAX_REMEMBERED:
            oldest = sorted(self._said, key=self._said.__getitem__)
            for key in oldest[: len(self._said) - MAX_REMEMBERED]:
                del self._said[key]


class Events:
    """Writes our Events into ``namespace``."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def nodepool_conflict(self, nodepool: str, message: str, *, now: int) -> None:
        """Record that a NodePool field was changed by someone else during our pause."""
        body = nodepool_event(
            self.namespace, nodepool, reason="RestoreConflict", message=message, now=now
        )
        try:
            self.kube.create_event(self.namespace, body)
        except ActuationError as exc:
            log.warning("could not record an Event for NodePool %s: %s", nodepool, exc)
