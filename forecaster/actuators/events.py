"""Kubernetes Events for what an operator must see in ``kubectl describe``/``get events``.

Recorded: a NodePool field that a person or a GitOps tool changed while our opt-in pause was on
(left as they set it; a Warning Event on that NodePool says so, besides ``/api/v1/status`` and
``forecaster_reconcile_errors_total``), and a state ConfigMap the daemon refuses to read (it
then acts as if the GPU-hours budget were spent: ``actuators.state_store``). Events live in our
namespace (a NodePool is cluster-scoped), so the RBAC stays namespaced. Best effort: an Event
that cannot be written is logged, never fails the tick.
"""

from __future__ import annotations

import logging

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Event, ObjectReference
from forecaster.actuators.quantities import kube_timestamp
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
