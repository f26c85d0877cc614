"""The Workloads Kueue holds in the twin with ``--kueue-notice``: read by the daemon's own source.

With ``kueue_notice_seconds`` every job's Workload reserves quota that long before its pods are
created (an admission check in between). The twin serves, as an ``ObjectLister``, one
ResourceFlavor selecting its pool and a Workload (``QuotaReserved``, not ``Admitted``) per job
whose pods come within the notice, so ``actuators.notice.kueue_reserved`` reads them exactly as
it reads a cluster's. A job's pod sets carry its GPUs exactly: whole nodes, then the rest.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.notice.base import Obj
from forecaster.actuators.notice.kueue_reserved import FLAVORS, KUEUE, WORKLOADS
from forecaster.actuators.quantities import kube_timestamp
from forecaster.core.jobs import JobTrace

FLAVOR = "replay-gpu"


class TwinWorkloads:
    """Kueue's Workloads and ResourceFlavor in the twin; ``now`` is the twin's clock."""

    def __init__(
        self,
        jobs: JobTrace,
        *,
        notice_seconds: float,
        pool: str,
        gpus_per_node: int,
        start: float,
        end: float,
        resource: str = GPU,
    ) -> None:
        self.jobs = jobs
        self.notice_seconds = notice_seconds
        self.pool = pool
        self.gpus_per_node = gpus_per_node
        self.resource = resource
        self.start = start
        self.end = end
        self.now = 0.0

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[Obj] | None:
        if group != KUEUE or version != WORKLOADS.version:
            return None
        if plural == FLAVORS.plural:
            return [flavor(self.pool)]
        if plural == WORKLOADS.plural:
            return [self._workload(j) for j in self.reserved()]
        return None

    def reserved(self) -> range:
        """Jobs whose pods are created in (now, now + notice], within the replay: their
        workloads hold quota already."""
        until = min(self.now + self.notice_seconds, math.nextafter(self.end, 0))
        submit = self.jobs.submit
        first = int(np.searchsorted(submit, max(self.now, self.start), side="right"))
        last = int(np.searchsorted(submit, until, side="right"))
        return range(first, max(first, last))

    def _workload(self, j: int) -> Obj:
        gpus = int(self.jobs.gpus[j])
        whole, rest = divmod(gpus, self.gpus_per_node)
        sets = [
            (name, per, n)
            for name, per, n in (("nodes", self.gpus_per_node, whole), ("rest", rest, 1))
            if per and n
        ]
        reserved = kube_timestamp(float(self.jobs.submit[j]) - self.notice_seconds)
        return {
            "apiVersion": f"{KUEUE}/{WORKLOADS.version}",
            "kind": "Workload",
            "metadata": {
                "name": f"replay-{j}",
                "namespace": "replay",
                "creationTimestamp": reserved,
            },
            "spec": {
                "queueName": "replay",
                "podSets": [
                    {"name": name, "count": n, "template": {"spec": _spec(self.resource, per)}}
                    for name, per, n in sets
                ],
            },
            "status": {
                "admission": {
                    "clusterQueue": "replay",
                    "podSetAssignments": [
                        {"name": name, "flavors": {self.resource: FLAVOR}, "count": n}
                        for name, _, n in sets
                    ],
                },
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "True",
                        "reason": "QuotaReserved",
                        "message": "",
                        "lastTransitionTime": reserved,
                    }
                ],
            },
        }


def _spec(resource: str, gpus: int) -> dict[str, Any]:
    return {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": "replay",
                "resources": {"requests": {resource: str(gpus)}},
            }
        ],
    }


def flavor(pool: str) -> Obj:
    return {
        "apiVersion": f"{KUEUE}/{FLAVORS.version}",
        "kind": "ResourceFlavor",
        "metadata": {"name": FLAVOR},
        "spec": {"nodeLabels": {lbl.NODEPOOL_LABEL: pool}},
    }
