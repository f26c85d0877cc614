"""Placeholder pods: low-priority pause pods that make Karpenter bring GPU nodes up early.

* A PriorityClass with a negative value (-10: Cluster Autoscaler still scales for it) and
  ``preemptionPolicy: Never``: placeholders never push anything out; any real pod preempts them.
* Each placeholder requests ``nvidia.com/gpu`` sized to the pool's node shape, selects the
  NodePool (``karpenter.sh/nodepool``) and tolerates the GPU taint. It runs ``pause`` - or the
  pool's workload image, so the image is already on the node when real pods land.
* ``activeDeadlineSeconds`` makes every placeholder expire by itself: a dead daemon never keeps
  paying for GPUs. Live placeholders are renewed (replaced) shortly before they expire.
* Placeholders occupy numbered slots ``0..target-1`` (label ``forecaster.io/slot``): a restart
  or a retried tick fills only empty slots, so there are never duplicates.
* Placeholders that ended without being preempted (expired, renewed, scaled down) are wasted
  prewarm; their GPU-hours are reported for the waste budget. A preempted one simply disappears
  and is not recreated blindly: the next plan decides.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"


@dataclass(frozen=True)
class PlaceholderSpec:
    """What a pool's placeholders look like."""

    pool: str
    gpus: int
    ttl_seconds: int = 3600
    renew_before_seconds: int = 600
    max_renewals_per_tick: int = 2
    """Placeholders created together come due together: renewing a few per tick (oldest first)
    spreads the API writes over the renewal window instead of one slow tick."""
    image: str = PAUSE_IMAGE
    command: tuple[str, ...] = ()
    tolerations: tuple[dict[str, str], ...] = (
        {"key": lbl.GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
    )


@dataclass(frozen=True)
class Applied:
    """What one reconcile did."""

    created: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    wasted_gpu_hours: float = 0.0


class Placeholders:
    """Creates, renews and removes a pool's placeholder pods in our namespace."""

    def __init__(
        self, kube: Kube, *, namespace: str, priority_class: str, priority: int = -10
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.priority_class = priority_class
        self.priority = priority

    def ensure_priority_class(self) -> None:
        """Create our PriorityClass if it is missing."""
        if self.kube.get_priority_class(self.priority_class) is not None:
            return
        body = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": self.priority_class, "labels": {lbl.MANAGED_BY: lbl.MANAGER}},
            "value": self.priority,
            "preemptionPolicy": "Never",
            "globalDefault": False,
            "description": "forecaster GPU prewarm placeholders: preempted by any real workload",
        }
        with contextlib.suppress(ConflictError):  # another replica created it first
            self.kube.create_priority_class(body)

    def pods(self, pool: str | None = None) -> list[Obj]:
        """Our placeholder pods (of one pool, or all), any phase."""
        return self.kube.list_pods(namespace=self.namespace, labels=lbl.placeholder_selector(pool))

    def apply(self, spec: PlaceholderSpec, *, target: int, now: int) -> Applied:
        """Converge the pool to ``target`` live placeholders; see the module docstring."""
        pods = self.pods(spec.pool)
        wasted = 0.0
        deleted: list[str] = []
        live: list[Obj] = []
        renewals = 0
        for pod in sorted(pods, key=lambda p: _created_at(p, default=now)):  # oldest first
            phase = pod.get("status", {}).get("phase", "Pending")
            age = now - _created_at(pod, default=now)
            due = phase == "Running" and age >= spec.ttl_seconds - spec.renew_before_seconds
            if phase not in ("Pending", "Running"):
                wasted += _gpus(pod) * min(age, spec.ttl_seconds) / 3600  # expired unused
                deleted.append(self._delete(pod))
            elif due and renewals < spec.max_renewals_per_tick:
                renewals += 1
                wasted += _gpus(pod) * age / 3600  # renewed: its lifetime went unused
                deleted.append(self._delete(pod))
            else:
                live.append(pod)
        # scale down: pending ones first (they hold no node yet), then the youngest
        live.sort(
            key=lambda p: (
                p.get("status", {}).get("phase") == "Running",
                -_created_at(p, default=now),
            )
        )
        while len(live) > target:
            pod = live.pop(0)
            wasted += _gpus(pod) * max(0, now - _created_at(pod, default=now)) / 3600
            deleted.append(self._delete(pod))
        taken = {int(p["metadata"]["labels"].get(lbl.SLOT, -1)) for p in live}
        created: list[str] = []
        for slot in (s for s in range(target) if s not in taken):
            if len(live) + len(created) >= target:
                break
            created.append(self._create(spec, slot=slot, now=now))
        return Applied(tuple(created), tuple(deleted), wasted)

    def remove_all(self, pool: str | None = None) -> list[str]:
        """Delete every placeholder we own (of one pool, or all): for hand-off and cleanup."""
        return [self._delete(pod) for pod in self.pods(pool)]

    def _delete(self, pod: Obj) -> str:
        name = str(pod["metadata"]["name"])
        if pod["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            raise AssertionError(f"refusing to delete {name}: not managed by forecaster")
        self.kube.delete_pod(self.namespace, name)
        return name

    def _create(self, spec: PlaceholderSpec, *, slot: int, now: int) -> str:
        body = placeholder_pod(
            spec, namespace=self.namespace, priority_class=self.priority_class, slot=slot, now=now
        )
        try:
            self.kube.create_pod(self.namespace, body)
        except ConflictError:
            log.info(
                "placeholder %s already exists (created by an earlier try)",
                body["metadata"]["name"],
            )
        return str(body["metadata"]["name"])


def placeholder_pod(
    spec: PlaceholderSpec, *, namespace: str, priority_class: str, slot: int, now: int
) -> Obj:
    """The Pod manifest of one placeholder."""
    container: Obj = {
        "name": "prewarm",
        "image": spec.image,
        "resources": {
            "requests": {lbl.GPU_RESOURCE: str(spec.gpus), "cpu": "10m", "memory": "16Mi"},
            "limits": {lbl.GPU_RESOURCE: str(spec.gpus), "memory": "64Mi"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    if spec.command:
        container["command"] = list(spec.command)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"forecaster-{spec.pool}-{slot}-{now}",
            "namespace": namespace,
            "labels": {
                lbl.MANAGED_BY: lbl.MANAGER,
                lbl.ROLE: lbl.PLACEHOLDER,
                lbl.POOL: spec.pool,
                lbl.SLOT: str(slot),
            },
            "annotations": {lbl.GPUS: str(spec.gpus), lbl.CREATED_AT: str(now)},
        },
        "spec": {
            "priorityClassName": priority_class,
            "activeDeadlineSeconds": spec.ttl_seconds,
            "terminationGracePeriodSeconds": 0,
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "nodeSelector": {lbl.NODEPOOL_LABEL: spec.pool},
            "tolerations": [dict(t) for t in spec.tolerations],
            "securityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65535,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [container],
        },
    }


def _gpus(pod: Obj) -> int:
    return int(pod["metadata"].get("annotations", {}).get(lbl.GPUS, 0))


def _created_at(pod: Obj, *, default: int) -> int:
    return int(pod["metadata"].get("annotations", {}).get(lbl.CREATED_AT, default))
