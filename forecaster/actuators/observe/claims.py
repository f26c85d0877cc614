"""Pods that get their accelerators through Dynamic Resource Allocation, counted and reported.

A pod with ``spec.resourceClaims`` asks for devices through ResourceClaims, not an extended
resource, so no GPU request counts it as demand - and Karpenter does not provision for pods
with DRA requirements (it skips them), so prewarm would not serve them either. Rather than
leave them silently out, the observer counts the live ones per namespace and pool (the pool of
the node a pod runs on, or the one a pending pod would wait for), for the status, the metrics
and ``doctor``: "not prewarmed".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from forecaster.actuators import labels as lbl
from forecaster.actuators.attribution import NodePoolShape, nodepool_of
from forecaster.actuators.manifests import Pod
from forecaster.actuators.quantities import MalformedObjectError
from forecaster.core.cluster import ClaimedPods


def claimed_pods(
    pods: Sequence[Pod], *, node_pool: Mapping[str, str], shapes: Sequence[NodePoolShape]
) -> tuple[ClaimedPods, ...]:
    """The live pods with DRA claims, per (namespace, pool); ours never have any."""
    counts: Counter[tuple[str, str | None]] = Counter()
    for pod in pods:
        spec = pod.get("spec") or {}
        if not spec.get("resourceClaims"):
            continue
        node = spec.get("nodeName")
        pool = node_pool.get(node) if node else _waits_for(pod, shapes)
        counts[(str(pod["metadata"].get("namespace", "")), pool)] += 1
    return tuple(
        ClaimedPods(namespace, pool, n)
        for (namespace, pool), n in sorted(
            counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")
        )
    )


def _waits_for(pod: Pod, shapes: Sequence[NodePoolShape]) -> str | None:
    named = (pod["spec"].get("nodeSelector") or {}).get(lbl.NODEPOOL_LABEL)
    if named:
        return str(named)
    try:
        return nodepool_of(pod, shapes)
    except (MalformedObjectError, KeyError, TypeError, ValueError):
        return None
