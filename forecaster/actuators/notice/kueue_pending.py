"""Kueue's pending queue: workloads waiting for quota, timed by the quota running work frees.

A workload Kueue has not admitted has a suspended Job and no pod: no autoscaler sees it. Kueue's
visibility API (an aggregated API, not a CRD; on by default since v0.9) lists each
ClusterQueue's pending workloads in admission order:
``GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/<cq>/pendingworkloads``. For each
ClusterQueue, per pool whose ResourceFlavors it holds quota on (the flavors' ``nodeLabels``
``karpenter.sh/nodepool``; ``kueue_reserved.flavor_pools``):

* quota: the queue's nominal quota of the pool's resource on those flavors; free now: that less
  what it has reserved (``status.flavorsReservation``); borrowing from a cohort is not counted,
  so work may be admitted sooner than announced (it then comes early, which counts as come);
* when quota frees: each admitted, unfinished workload of the queue ends by its admission (the
  ``Admitted`` condition's time) + ``spec.maximumExecutionTimeSeconds`` - Kueue evicts it then,
  so the time is a bound, not a guess; one without that field, by the durations seen before:
  the median of how long its LocalQueue's finished workloads still listed ran (``Admitted`` to
  ``Finished``), among those that ran longer than it has so far - a guess, which the trust rule
  judges like any other (a late start is charged as not come); with fewer than
  ``MIN_RUNS_SEEN`` such runs it frees nothing we can time;
* in the queue's order, each pending workload is admitted once the free quota covers it
  (StrictFIFO's rule) and takes that quota; the first that no timed end covers ends the queue's
  items, as does one due more than ``MAX_AHEAD_SECONDS`` ahead.

Each pod set of a pending workload asking for the pool's resource is one item: earliest start
its expected admission (its creation when the quota covers it now: a fixed time, so a quiet
tick stays quiet), latest that + the grace - a workload still pending then is withdrawn and
charged to this source. Like the ``kueue`` source it marks no pods (``in_history``): once
admitted, its pods are in the histories as every Kueue workload's are.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import cast

from forecaster.actuators.kueue_quota import queue_quota
from forecaster.actuators.manifests import PodTemplateSpec
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.notice.kueue_reserved import (
    FLAVORS,
    KUEUE,
    WORKLOADS,
    flavor_pools,
    pod_set_item,
)
from forecaster.actuators.quantities import (
    condition_true,
    pod_gpus,
    status_condition,
    timestamp_seconds,
)
from forecaster.core.notice import AnnouncedItem

CLUSTER_QUEUES = ApiKind(KUEUE, "v1beta2", "clusterqueues", older_versions=("v1beta1",))
PENDING = ApiKind(
    "visibility.kueue.x-k8s.io",
    "v1beta2",
    "clusterqueues",
    subresource="pendingworkloads",
    parent=CLUSTER_QUEUES,
)
MAX_AHEAD_SECONDS = 6 * 3600
"""Pending work expected later than this is not announced (no plan looks that far)."""
MIN_RUNS_SEEN = 3
"""Finished runs of a LocalQueue needed before its running work is timed by them."""


@dataclass(frozen=True)
class _Queue:
    """One ClusterQueue's quota of one pool's resource: free now, and when more frees."""

    pool: str
    resource: str
    flavors: frozenset[str]
    free: int
    frees: tuple[tuple[float, int], ...]
    """(time, units) a running workload returns, soonest first."""
    nominal: int
    """Its nominal quota: a workload asking more is never admitted on it (nor waits in turn)."""


class KueuePendingSource:
    """The ``kueue-pending`` notice source."""

    name: str = "kueue-pending"
    marks_pods: bool = False
    """Its items' pods stay in the histories: an item comes when it leaves the reading."""
    kinds: tuple[ApiKind, ...] = (PENDING, CLUSTER_QUEUES, WORKLOADS, FLAVORS)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        cq_name = obj["metadata"]["name"]
        cq = next(
            (
                q
                for q in context.objects.get(CLUSTER_QUEUES, [])
                if q["metadata"]["name"] == cq_name
            ),
            None,
        )
        if cq is None:
            return []
        workloads = {
            (w["metadata"].get("namespace", ""), w["metadata"]["name"]): w
            for w in context.objects.get(WORKLOADS, [])
        }
        pending = sorted(obj.get("items") or [], key=lambda p: int(p["positionInClusterQueue"]))
        items = []
        for queue in _queues(cq, list(workloads.values()), context):
            items += _admitted_in_turn(queue, pending, workloads, context, source=self.name)
        return items

    def marker(self, context: NoticeContext) -> PodMarker:
        """None: the pods of Kueue work stay in the histories (see the module docstring)."""
        return lambda pod: None


def _queues(cq: Obj, workloads: list[Obj], context: NoticeContext) -> list[_Queue]:
    """The queue's quota per pool it holds quota on, with the ends of its running work."""
    pools = flavor_pools(context)
    name = cq["metadata"]["name"]
    out = []
    for pool in sorted({pools[f] for f in _quota_flavors(cq) if f in pools}):
        resource = context.resource_of(pool)
        flavors = frozenset(f for f, p in pools.items() if p == pool)
        quota = queue_quota(cq, set(flavors), resource)
        if quota is None:
            continue
        frees = sorted(_running_ends(workloads, name, resource, now=context.now))
        free = quota.nominal_gpus - quota.used_gpus
        out.append(_Queue(pool, resource, flavors, free, tuple(frees), quota.nominal_gpus))
    return out


def _quota_flavors(cq: Obj) -> set[str]:
    return {
        flavor["name"]
        for group in cq["spec"].get("resourceGroups") or []
        for flavor in group.get("flavors") or []
    }


def _running_ends(
    workloads: list[Obj], cq: str, resource: str, *, now: float
) -> list[tuple[float, int]]:
    """(when it ends, units it holds) of each admitted, unfinished workload of ``cq`` we can
    time: by ``maximumExecutionTimeSeconds`` (a bound), else by the runs seen before in its
    LocalQueue (``_seen_end``, a guess); one we cannot time is left out."""
    seen = _durations_seen(workloads, cq)
    ends = []
    for wl in workloads:
        admission = (wl.get("status") or {}).get("admission") or {}
        if admission.get("clusterQueue") != cq or condition_true(wl, "Finished"):
            continue
        admitted = status_condition(wl, "Admitted")
        if admitted is None or admitted.get("status") != "True":
            continue
        started = timestamp_seconds(admitted["lastTransitionTime"])
        limit = wl["spec"].get("maximumExecutionTimeSeconds")
        end = (
            started + float(limit)
            if limit is not None
            else _seen_end(seen.get(_local_queue(wl), []), started, now=now)
        )
        if end is not None:
            ends.append((end, _readable_units(wl, resource)))
    return ends


def _durations_seen(workloads: list[Obj], cq: str) -> dict[tuple[str, str], list[float]]:
    """Per LocalQueue of ``cq``: how long its finished workloads ran (``Admitted`` to
    ``Finished``), as long as Kueue keeps them (their Job's TTL, its retention policy)."""
    seen: dict[tuple[str, str], list[float]] = {}
    for wl in workloads:
        admission = (wl.get("status") or {}).get("admission") or {}
        admitted, finished = status_condition(wl, "Admitted"), status_condition(wl, "Finished")
        if admission.get("clusterQueue") != cq or admitted is None or finished is None:
            continue
        if finished.get("status") != "True":
            continue
        ran = timestamp_seconds(finished["lastTransitionTime"]) - timestamp_seconds(
            admitted["lastTransitionTime"]
        )
        if ran > 0:
            seen.setdefault(_local_queue(wl), []).append(ran)
    return seen


def _seen_end(durations: list[float], started: float, *, now: float) -> float | None:
    """When a run admitted at ``started`` ends, by the runs before it that lasted longer than it
    has so far: their median (None: fewer than ``MIN_RUNS_SEEN`` of them - untimed)."""
    longer = sorted(d for d in durations if started + d > now)
    if len(longer) < MIN_RUNS_SEEN:
        return None
    return started + statistics.median(longer)


def _local_queue(wl: Obj) -> tuple[str, str]:
    return (wl["metadata"].get("namespace", ""), wl["spec"].get("queueName", ""))


def _readable_units(wl: Obj, resource: str) -> int:
    """``_units``, or 0 for a workload that cannot be read: it takes no one's turn."""
    try:
        return _units(wl, resource)
    except Exception:
        return 0


def _units(wl: Obj, resource: str) -> int:
    """Units of ``resource`` the workload's pod sets ask for, all pods."""
    return sum(
        int(p.get("count", 1)) * pod_gpus(cast(PodTemplateSpec, p["template"]), resource)
        for p in wl["spec"].get("podSets") or []
    )


def _admitted_in_turn(
    queue: _Queue,
    pending: list[Obj],
    workloads: dict[tuple[str, str], Obj],
    context: NoticeContext,
    *,
    source: str,
) -> list[AnnouncedItem]:
    """The pool's items of the queue's pending workloads, each admitted once the free quota
    covers it (see the module docstring)."""
    free, frees, at, items = queue.free, list(queue.frees), -math.inf, []
    for entry in pending:
        meta = entry.get("metadata") or {}
        wl = workloads.get((meta.get("namespace", ""), meta.get("name", "")))
        need = _readable_units(wl, queue.resource) if wl else 0
        if wl is None or need <= 0 or need > queue.nominal:
            continue  # not this pool's (gone, unreadable, or more than its whole quota)
        while free < need and frees:
            when, units = frees.pop(0)
            free, at = free + units, max(at, when)
        if free < need:
            break  # nothing we can time frees enough: the queue's later work is not timed
        free -= need
        created = timestamp_seconds(wl["metadata"]["creationTimestamp"])
        earliest = int(max(at, created))
        if earliest > context.now + MAX_AHEAD_SECONDS:
            break
        items += _items(wl, queue, earliest, context, source=source)
    return items


def _items(
    wl: Obj, queue: _Queue, earliest: int, context: NoticeContext, *, source: str
) -> list[AnnouncedItem]:
    meta = wl["metadata"]
    found = (
        pod_set_item(
            pod_set,
            queue.pool,
            pods=int(pod_set.get("count", 1)),
            earliest=earliest,
            key=f"pending {meta.get('namespace', '')}/{meta['name']}/{pod_set['name']}",
            context=context,
            source=source,
            namespace=str(meta.get("namespace", "")),
        )
        for pod_set in wl["spec"].get("podSets") or []
    )
    return [item for item in found if item is not None]
