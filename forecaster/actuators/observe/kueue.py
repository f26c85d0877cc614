"""Read Kueue's quota and workloads for the pools it gates (``core.kueue`` does the arithmetic).

Per pool (``KueueScope``): its ResourceFlavors - the configured names, else every flavor whose
``nodeLabels`` select ``karpenter.sh/nodepool=<pool>`` - and the ClusterQueues with quota of
the pool's accelerator resource (``nvidia.com/gpu`` by default) on them (the configured names,
else all). From each queue: its cohort (``cohortName``; ``cohort`` in v1beta1), nominal quota
and borrowing limit on those flavors, and the quota reserved (``status.flavorsReservation``).
From Workloads, for the status page: admission waits and ``PodsReadyTimeout`` evictions per
ClusterQueue. (Workloads holding quota whose pods do not exist yet are notice:
``actuators.notice.kueue_reserved``.)

v1beta2 is read where served, v1beta1 otherwise. Reads only; a cluster without Kueue gives no
room (the pool is then planned without a Kueue cap, and the status says why).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.kueue_quota import queue_quota
from forecaster.actuators.quantities import (
    MalformedObjectError,
    status_condition,
    timestamp_seconds,
)
from forecaster.core.kueue import KueueRoom, QueueHealth, room

if TYPE_CHECKING:  # types only: the client is the caller's
    from forecaster.actuators.kube import Kube, Obj


@dataclass(frozen=True)
class KueueScope:
    """Which Kueue objects gate one pool (empty tuples: discover)."""

    pool: str
    flavors: tuple[str, ...] = ()
    cluster_queues: tuple[str, ...] = ()
    resource: str = GPU
    """The pool's accelerator resource: the quota read is on it."""


@dataclass
class _Seen:
    admission_waits_s: list[float] = field(default_factory=list)
    pods_ready_timeouts: int = 0


def read_rooms(kube: Kube, scopes: Sequence[KueueScope]) -> dict[str, KueueRoom]:
    """Room (with its queues' health) per pool; empty when Kueue is not served."""
    found_flavors = kube.list_kueue("resourceflavors")
    found_queues = kube.list_kueue("clusterqueues")
    found_workloads = kube.list_kueue("workloads")
    if found_flavors is None or found_queues is None:
        return {}
    flavors, queues = found_flavors[1], found_queues[1]
    workloads = found_workloads[1] if found_workloads else []
    rooms = {}
    seen = _health(workloads)
    for scope in scopes:
        mine = _pool_flavors(scope, flavors)
        quotas = [
            q
            for cq in queues
            if not scope.cluster_queues or cq["metadata"]["name"] in scope.cluster_queues
            for q in [queue_quota(cq, mine, scope.resource)]
            if q is not None
        ]
        names = {q.name for q in quotas}
        health = [
            QueueHealth(name, _p95(seen[name].admission_waits_s), seen[name].pods_ready_timeouts)
            for name in sorted(names & set(seen))
        ]
        rooms[scope.pool] = room(quotas, health=health)
    return rooms


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def _pool_flavors(scope: KueueScope, flavors: list[Obj]) -> set[str]:
    if scope.flavors:
        return set(scope.flavors)
    return {
        f["metadata"]["name"]
        for f in flavors
        if (f.get("spec", {}).get("nodeLabels") or {}).get(lbl.NODEPOOL_LABEL) == scope.pool
    }


def _health(workloads: list[Obj]) -> dict[str, _Seen]:
    health: dict[str, _Seen] = {}
    for wl in workloads:
        queue = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
        evicted = status_condition(wl, "Evicted")
        if evicted is not None and evicted.get("reason") == "PodsReadyTimeout" and queue:
            health.setdefault(queue, _Seen()).pods_ready_timeouts += 1
        admitted = status_condition(wl, "Admitted")
        if queue and admitted is not None and admitted.get("status") == "True":
            try:
                wait = timestamp_seconds(admitted["lastTransitionTime"]) - timestamp_seconds(
                    wl["metadata"]["creationTimestamp"]
                )
            except (KeyError, ValueError) as exc:
                raise MalformedObjectError(f"Workload {wl['metadata'].get('name')}: {exc}") from exc
            health.setdefault(queue, _Seen()).admission_waits_s.append(max(0.0, wait))
    return health
