"""kube-state-metrics history of a job trace, to backfill into a real Prometheus.

Each job runs as pods of at most a node's GPUs (a job bigger than a node is that many node-sized
pods, the last holding the rest), all owned by one Job (``kube_pod_owner``) and created, started
and running together from the job's submission (a trace records no wait) until it ends; one
scrape every ``every`` seconds, phase 0 at the scrape after the end. Series are those
``forecaster/testing/ksm_exporter.py`` exports live, with the same labels.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from forecaster.core.jobs import JobTrace
from forecaster.testing.prometheus_server import Series


def pods_of(jobs: JobTrace, gpus_per_node: int) -> list[tuple[int, int]]:
    """(job index, GPUs) of every pod the jobs run as."""
    pods = []
    for j in range(len(jobs)):
        left = int(jobs.gpus[j])
        while left > 0:
            pods.append((j, min(gpus_per_node, left)))
            left -= gpus_per_node
    return pods


def job_series(
    jobs: JobTrace,
    *,
    start: int,
    end: int,
    every: int,
    pool: str,
    gpus_per_node: int = 8,
    resource: str = "nvidia_com_gpu",
    prefix: str = "",
) -> Iterator[Series]:
    """The series of every pod of ``jobs`` alive within [start, end] (see the module), asking
    for ``resource`` (as kube-state-metrics labels it); ``prefix`` before every pod's name and
    uid (several pools' histories in one Prometheus)."""
    for n, (j, gpus) in enumerate(pods_of(jobs, gpus_per_node)):
        created = float(jobs.submit[j])
        ended = min(created + float(jobs.duration[j]), end)
        first = int(np.ceil(max(created, start) / every) * every)
        alive = range(first, int(ended) + 1, every)
        if not alive:
            continue
        ident = {"namespace": "ml", "pod": f"{prefix}job{j}-{n}", "uid": f"{prefix}uid-{n}"}
        yield Series(
            "kube_pod_container_resource_requests",
            {**ident, "container": "c0", "resource": resource, "unit": "integer"},
            [(t, float(gpus)) for t in alive],
        )
        yield Series("kube_pod_created", ident, [(t, created) for t in alive])
        yield Series("kube_pod_start_time", ident, [(t, created) for t in alive])
        yield Series(
            "kube_pod_owner",
            {
                **ident,
                "owner_kind": "Job",
                "owner_name": f"{prefix}job{j}",
                "owner_is_controller": "true",
            },
            [(t, 1.0) for t in alive],
        )
        yield Series(
            "kube_pod_nodeselectors",
            {**ident, "nodeselector_karpenter_sh_nodepool": pool},
            [(t, 1.0) for t in alive],
        )
        after = [(alive[-1] + every, 0.0)] if ended < end else []
        yield Series(
            "kube_pod_status_phase",
            {**ident, "phase": "Running"},
            [*[(t, 1.0) for t in alive], *after],
        )
