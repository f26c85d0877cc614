"""Kueue's pending queue in the twin: the objects ``--notice queue=S:A-B`` puts in its cluster.

A queued job waits in a ClusterQueue of its own whose quota (the job's GPUs, flavor
``kueue_objects.FLAVOR``: the twin's pool) a running workload holds: admitted when the job was
announced, with ``maximumExecutionTimeSeconds`` up to the job's submission. Kueue's visibility
API lists the job's own workload as the queue's head (its LocalQueue, in namespace ``replay``,
is named as its ClusterQueue). So the ``kueue-pending`` source, reading
them as it reads a cluster, times the job by the quota that must free - at its submission.
"""

from __future__ import annotations

import math
from typing import Any

from forecaster.actuators.notice.base import Obj
from forecaster.actuators.notice.kueue_reserved import KUEUE, WORKLOADS
from forecaster.actuators.quantities import kube_timestamp
from forecaster.simulation.kueue_objects import FLAVOR

NAMESPACE = "replay"


def cluster_queue(j: int, *, resource: str, units: int) -> Obj:
    """Job ``j``'s ClusterQueue: its units of quota, all reserved by the running workload."""
    return {
        "apiVersion": f"{KUEUE}/{WORKLOADS.version}",
        "kind": "ClusterQueue",
        "metadata": {"name": _queue(j)},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": [resource],
                    "flavors": [
                        {"name": FLAVOR, "resources": [{"name": resource, "nominalQuota": units}]}
                    ],
                }
            ]
        },
        "status": {
            "flavorsReservation": [
                {"name": FLAVOR, "resources": [{"name": resource, "total": units, "borrowed": 0}]}
            ]
        },
    }


def workloads(
    j: int, *, spec: dict[str, Any], pods: int, announced: float, submitted: float
) -> list[Obj]:
    """The running workload holding job ``j``'s quota until its submission, and the job's own,
    pending."""
    pod_sets = [{"name": "main", "count": pods, "template": {"spec": spec}}]
    since = kube_timestamp(announced)
    running = {
        "apiVersion": f"{KUEUE}/{WORKLOADS.version}",
        "kind": "Workload",
        "metadata": {"name": f"replay-running-{j}", "namespace": NAMESPACE},
        "spec": {
            "queueName": _queue(j),
            "podSets": pod_sets,
            "maximumExecutionTimeSeconds": max(1, math.ceil(submitted - math.floor(announced))),
        },
        "status": {
            "admission": {
                "clusterQueue": _queue(j),
                "podSetAssignments": [{"name": "main", "flavors": {}, "count": pods}],
            },
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "reason": t,
                    "message": "",
                    "lastTransitionTime": since,
                }
                for t in ("QuotaReserved", "Admitted")
            ],
        },
    }
    queued = {
        "apiVersion": f"{KUEUE}/{WORKLOADS.version}",
        "kind": "Workload",
        "metadata": {
            "name": f"replay-queued-{j}",
            "namespace": NAMESPACE,
            "creationTimestamp": since,
        },
        "spec": {"queueName": _queue(j), "podSets": pod_sets},
    }
    return [running, queued]


def pending_summary(j: int) -> Obj:
    """What Kueue's visibility API answers for job ``j``'s ClusterQueue: its workload, first."""
    return {
        "kind": "PendingWorkloadsSummary",
        "apiVersion": "visibility.kueue.x-k8s.io/v1beta2",
        "metadata": {"name": _queue(j)},
        "items": [
            {
                "metadata": {"name": f"replay-queued-{j}", "namespace": NAMESPACE},
                "priority": 0,
                "localQueueName": _queue(j),
                "positionInClusterQueue": 0,
                "positionInLocalQueue": 0,
            }
        ],
    }


def queue_of(name: str) -> int | None:
    """The job whose ClusterQueue ``name`` is (None: not one of ours)."""
    prefix = "replay-queue-"
    return int(name.removeprefix(prefix)) if name.startswith(prefix) else None


def _queue(j: int) -> str:
    return f"replay-queue-{j}"
