"""How long bringing capacity up takes in a pool, measured from what the API server shows.

* provisioning: a node's ``creationTimestamp`` to its ``Ready`` condition's
  ``lastTransitionTime`` (Karpenter's launch, boot, kubelet join);
* startup: per node, the longest ``PodScheduled`` to ``ContainersReady`` of the real pods
  scheduled onto it within ``COLD_START_SECONDS`` of it turning Ready - the pods the node was
  launched for, the first of which pulls its image cold (later ones of the same image start
  warm; our placeholders are left out: they run ``pause``).

Medians over the nodes created in the last ``LOOKBACK_SECONDS``; None until one has launched. A
node that went NotReady and back later measures long: the median keeps one such node from
moving the figure. A node Ready within ``MIN_LAUNCH_SECONDS`` of its creation was registered,
not launched (no cloud instance boots that fast): it is not a launch and would drag the lead
the plan covers towards zero.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from forecaster.actuators import labels as lbl
from forecaster.actuators.manifests import Condition, Node, Pod
from forecaster.actuators.quantities import timestamp_seconds
from forecaster.core.cluster import MeasuredLead
from forecaster.durations import DAY

LOOKBACK_SECONDS = DAY
COLD_START_SECONDS = 600
MIN_LAUNCH_SECONDS = 5


def measure_lead(nodes: Sequence[Node], pods: Sequence[Pod], *, now: int) -> MeasuredLead | None:
    """The pool's measured lead (see the module docstring); ``nodes`` and ``pods`` of one pool."""
    ready_at: dict[str, float] = {}
    provisioning = []
    for node in nodes:
        created = node["metadata"].get("creationTimestamp")
        ready = _true_since(node.get("status", {}).get("conditions") or [], "Ready")
        if created is None or ready is None or now - timestamp_seconds(created) > LOOKBACK_SECONDS:
            continue
        took = ready - timestamp_seconds(created)
        if took >= MIN_LAUNCH_SECONDS:
            provisioning.append(took)
            ready_at[node["metadata"]["name"]] = ready
    if not provisioning:
        return None
    cold: dict[str, float] = {}
    for pod in pods:
        node_ready = ready_at.get(pod.get("spec", {}).get("nodeName", ""))
        labels = pod["metadata"].get("labels") or {}
        if node_ready is None or labels.get(lbl.MANAGED_BY) == lbl.MANAGER:
            continue
        conditions = pod.get("status", {}).get("conditions") or []
        scheduled = _true_since(conditions, "PodScheduled")
        started = _true_since(conditions, "ContainersReady")
        if scheduled is None or started is None or scheduled - node_ready > COLD_START_SECONDS:
            continue
        name = pod["spec"]["nodeName"]
        cold[name] = max(cold.get(name, 0.0), started - scheduled)
    return MeasuredLead(
        provisioning_seconds=statistics.median(provisioning),
        startup_seconds=statistics.median(cold.values()) if cold else None,
        launches=len(provisioning),
    )


def _true_since(conditions: Sequence[Condition], kind: str) -> float | None:
    """When condition ``kind`` last turned True (None: not True, or no time given)."""
    for condition in conditions:
        if condition.get("type") == kind and condition.get("status") == "True":
            at = condition.get("lastTransitionTime")
            return timestamp_seconds(at) if at else None
    return None
