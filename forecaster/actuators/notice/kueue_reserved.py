"""Kueue workloads that hold quota but have no pods yet: notice of seconds to minutes.

A Workload with ``QuotaReserved`` but not ``Admitted`` has its quota and waits for its
admission checks (a ProvisioningRequest, a CapacityBuffer check); once admitted its pods are
created at once. Each pod set with GPUs is one item:

* pool: the one pool the ResourceFlavors Kueue assigned select (their ``nodeLabels``
  ``karpenter.sh/nodepool``), else the pool the pod set's template fits;
* GPUs: the assignment's ``count`` (else the pod set's) x the template's units per pod of the
  pool's accelerator resource; a gang
  when the pod set has more than one pod (Kueue admits a workload whole);
* earliest start: when quota was reserved (due at once: its pods come as soon as it is
  admitted; a fixed time, so the item is the same at every reading); latest start: that + the
  grace - a workload stuck in its checks longer stops holding prewarm and is charged as not
  come.

Unlike the CronJob and JobSet sources this one marks no pods (``in_history``): without an
admission check Kueue admits at once, so most Kueue work is never seen reserved and stays in
the histories the forecast learns; a reserved workload raises the forecast's part to cover it
rather than adding to it. v1beta2 is read where served, v1beta1 otherwise.
"""

from __future__ import annotations

from typing import cast

from forecaster.actuators import labels as lbl
from forecaster.actuators.manifests import PodTemplateSpec
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.quantities import (
    condition_true,
    status_condition,
    timestamp_seconds,
)
from forecaster.core.notice import AnnouncedItem

KUEUE = "kueue.x-k8s.io"
WORKLOADS = ApiKind(KUEUE, "v1beta2", "workloads", older_versions=("v1beta1",))
FLAVORS = ApiKind(KUEUE, "v1beta2", "resourceflavors", older_versions=("v1beta1",))


class KueueReservedSource:
    """The ``kueue`` notice source."""

    name: str = "kueue"
    marks_pods: bool = False
    """Its items' pods stay in the histories: an item comes when it leaves the reading."""
    kinds: tuple[ApiKind, ...] = (WORKLOADS, FLAVORS)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        reserved = status_condition(obj, "QuotaReserved")
        if reserved is None or reserved.get("status") != "True" or condition_true(obj, "Admitted"):
            return []
        since_text = reserved.get("lastTransitionTime") or obj["metadata"]["creationTimestamp"]
        since = int(timestamp_seconds(since_text))
        pools = flavor_pools(context)
        pod_sets = {p["name"]: p for p in obj["spec"]["podSets"]}
        meta = obj["metadata"]
        items = []
        for assignment in obj["status"]["admission"].get("podSetAssignments") or []:
            pod_set = pod_sets[assignment["name"]]
            flavors = assignment.get("flavors") or {}
            by_flavor = {pools[f] for f in flavors.values() if f in pools}  # one, or ambiguous
            item = pod_set_item(
                pod_set,
                by_flavor.pop() if len(by_flavor) == 1 else None,
                pods=int(assignment.get("count") or pod_set.get("count") or 1),
                earliest=since,
                key=f"workload {meta['namespace']}/{meta['name']}/{assignment['name']}",
                context=context,
                source=self.name,
            )
            if item is not None:
                items.append(item)
        return items

    def marker(self, context: NoticeContext) -> PodMarker:
        """None: the pods of Kueue work stay in the histories (see the module docstring)."""
        return lambda pod: None


def flavor_pools(context: NoticeContext) -> dict[str, str]:
    """The pool each ResourceFlavor selects through its ``nodeLabels``."""
    out = {}
    for flavor in context.objects.get(FLAVORS, []):
        labels = (flavor.get("spec") or {}).get("nodeLabels") or {}
        if lbl.NODEPOOL_LABEL in labels:
            out[flavor["metadata"]["name"]] = str(labels[lbl.NODEPOOL_LABEL])
    return out


def pod_set_item(
    pod_set: Obj,
    pool: str | None,
    *,
    pods: int,
    earliest: int,
    key: str,
    context: NoticeContext,
    source: str,
    namespace: str = "",
) -> AnnouncedItem | None:
    """One Kueue pod set as an announced item: placed by its template (on ``pool`` when its
    flavor names one), due from ``earliest`` to that + the grace; None when it places on no
    pool. Its pods stay in the histories (``in_history``): every Kueue workload's do."""
    placed = context.placed(cast(PodTemplateSpec, pod_set["template"]), pool)
    if placed is None:
        return None
    placed_pool, per_pod = placed
    return AnnouncedItem(
        pool=placed_pool,
        gpus_per_pod=per_pod,
        pods=pods,
        gang=pods > 1,
        earliest_start=earliest,
        latest_start=earliest + context.grace_seconds,
        source=source,
        key=key,
        in_history=True,
        namespace=namespace,
    )
