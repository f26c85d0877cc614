"""Volcano's pending PodGroups: gang work no autoscaler can see, and the deadlock we break.

Volcano's job controller creates a vcjob's pods only once its PodGroup leaves ``Pending``, and
its enqueue step judges the group against the capacity of Ready nodes: on a pool scaled to zero
no pod ever appears, Karpenter never launches a node, and the group waits for ever. A pending
group is therefore notice of unbounded length, and prewarm is what lets it in.

Each PodGroup (``scheduling.volcano.sh/v1beta1``) in phase ``Pending`` is one gang item:

* pool: the ``karpenter.sh/nodepool`` label or annotation on the group (Volcano copies the
  vcjob's), else the only configured pool whose accelerator resource ``spec.minResources``
  asks for (none, or several: no item - a group says nothing else about where it runs);
* units: ``minResources`` of the pool's resource, as ``minMember`` pods of an equal share (one
  pod of all of it when they do not divide evenly) - if its Queue can still take it:
  ``spec.capability`` (else ``deserved``) of the resource less ``status.allocated``, taken by
  the queue's pending groups oldest first; a group its queue cannot take whole gets no prewarm
  (Volcano enqueues a gang whole or not at all);
* earliest start: the group's creation (due at once); latest: that + the grace, the group's
  TTL - one Volcano still does not enqueue by then is withdrawn and charged to this source.

It marks no pods (``in_history``): once enqueued, its pods are real demand in every history.
"""

from __future__ import annotations

from forecaster.actuators import labels as lbl
from forecaster.actuators.notice.base import ApiKind, NoticeContext, Obj, PodMarker
from forecaster.actuators.quantities import gpu_quantity, timestamp_seconds
from forecaster.core.notice import AnnouncedItem

VOLCANO = "scheduling.volcano.sh"
PODGROUPS = ApiKind(VOLCANO, "v1beta1", "podgroups")
QUEUES = ApiKind(VOLCANO, "v1beta1", "queues")


class VolcanoSource:
    """The ``volcano`` notice source."""

    name: str = "volcano"
    marks_pods: bool = False
    """Its items' pods stay in the histories: an item comes when it leaves the reading."""
    kinds: tuple[ApiKind, ...] = (PODGROUPS, QUEUES)

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        if (obj.get("status") or {}).get("phase", "Pending") != "Pending":
            return []
        pool = _pool(obj, context)
        if pool is None:
            return []
        resource = context.resource_of(pool)
        units = gpu_quantity((obj["spec"].get("minResources") or {}).get(resource, 0))
        members = max(1, int(obj["spec"].get("minMember", 1)))
        pods, per_pod = (members, units // members) if units % members == 0 else (1, units)
        context.fits(pool, per_pod)  # more per pod than a node holds: never placed, skipped
        if units <= 0 or units > _room(obj, resource, context):
            return []  # its queue cannot take it (whole: Volcano enqueues a gang or nothing)
        meta = obj["metadata"]
        created = int(timestamp_seconds(meta["creationTimestamp"]))
        return [
            AnnouncedItem(
                pool=pool,
                gpus_per_pod=per_pod,
                pods=pods,
                gang=True,
                earliest_start=created,
                latest_start=created + context.grace_seconds,
                source=self.name,
                key=f"podgroup {meta.get('namespace', '')}/{meta['name']}",
                in_history=True,
            )
        ]

    def marker(self, context: NoticeContext) -> PodMarker:
        """None: a group's pods stay in the histories (see the module docstring)."""
        return lambda pod: None


def _pool(group: Obj, context: NoticeContext) -> str | None:
    meta = group["metadata"]
    named = (meta.get("labels") or {}).get(lbl.NODEPOOL_LABEL) or (
        meta.get("annotations") or {}
    ).get(lbl.NODEPOOL_LABEL)
    known = {shape.name for shape in context.pools}
    if named:
        return str(named) if named in known else None
    asked = set(group["spec"].get("minResources") or {})
    fitting = [p for p in sorted(known) if context.resource_of(p) in asked]
    return fitting[0] if len(fitting) == 1 else None


def _room(group: Obj, resource: str, context: NoticeContext) -> int:
    """What the group's Queue can still take of ``resource`` for it: its capability (else its
    deserved share; unbounded without either) less what it has allocated and what its older
    pending groups ask for."""
    name = group["spec"].get("queue") or "default"
    queue = next(
        (
            q
            for q in context.objects.get(QUEUES, [])
            if isinstance(q.get("metadata"), dict) and q["metadata"].get("name") == name
        ),
        None,
    )
    if queue is None:
        return 1 << 30
    spec = queue.get("spec") or {}
    bound = (spec.get("capability") or {}).get(resource, (spec.get("deserved") or {}).get(resource))
    if bound is None:
        return 1 << 30
    allocated = gpu_quantity(((queue.get("status") or {}).get("allocated") or {}).get(resource, 0))
    capability = gpu_quantity(bound)
    ahead = sum(
        _asks(g, resource, name, capability)
        for g in context.objects.get(PODGROUPS, [])
        if g is not group and _older(g, group)
    )
    return capability - allocated - ahead


def _asks(group: Obj, resource: str, queue: str, capability: int) -> int:
    """What a pending group of ``queue`` takes of it ahead of others: 0 for any other group,
    one that cannot be read, or one larger than the queue's capability (Volcano never enqueues
    it, and it holds up no one): another team's object costs itself only."""
    try:
        if (group["spec"].get("queue") or "default") != queue:
            return 0
        if (group.get("status") or {}).get("phase", "Pending") != "Pending":
            return 0
        units = gpu_quantity((group["spec"].get("minResources") or {}).get(resource, 0))
    except Exception:
        return 0
    return units if units <= capability else 0


def _older(a: Obj, b: Obj) -> bool:
    """Whether group ``a`` is before ``b`` in its queue (created earlier; then by name)."""
    try:
        key = [
            (str(o["metadata"]["creationTimestamp"]), str(o["metadata"]["name"])) for o in (a, b)
        ]
    except Exception:  # not readable: not ahead of anyone
        return False
    return key[0] < key[1]
