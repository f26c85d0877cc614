"""Read the cluster into ``core.cluster.PoolSnapshot``s: one node list and one pod list per tick
(or, with a ``PodWatch`` in sync, its cache of other pods plus a list of our own).

A malformed object (an unreadable GPU quantity, a NodePool or pod missing a field) makes only
the pool it belongs to unobservable (``core.cluster.unobservable``: that pool withdraws and
says why); the other pools are observed as usual. An API failure still fails the whole read.

A pod belongs to a pool when it runs on one of the pool's nodes, or - still pending - when
Karpenter would provision it from that NodePool: ``nodeSelector karpenter.sh/nodepool``, or
else node affinity / labels matched against every NodePool with weights (``attribution``).
Pending GPU pods that no NodePool can serve are reported per namespace (``Observation``). Our
placeholders (by label) are counted apart from real demand.

A pool whose NodeClaims Karpenter could not launch in the last ``LAUNCH_WINDOW_SECONDS``
(Warning Events ``InsufficientCapacityError`` on NodeClaims named ``<nodepool>-<suffix>``)
carries a ``launch_problem``; ``ready_placeholder_gpus`` counts only prewarm on Ready nodes.

``arrivals`` counts the GPUs of real pods of the pool created in the last 1, 5, 15 and 60
minutes (``metadata.creationTimestamp`` of the pods listed: pending and running ones; pods that
already finished are not in the list and not counted) - the fast signal of the arrivals model,
fresher than any scrape. ``recent_images``: the images those pods of the last hour ran, most
GPUs first, from pods with no ``imagePullSecrets`` only (a placeholder may pull them without
anyone's credentials).

Free GPUs on Ready nodes that run real pods are reported as stranded
(a whole-node job cannot use them); Ready nodes with no pod at all as empty (consolidation
removes them unless a placeholder lands there, or our NodePool pause keeps them). The
NodePool's GPU limit comes from its ``spec.limits``.

``held_gpus`` is what the cloud bills because of us (the charging rule, docs/design.md):

* every GPU of a node whose only pods are our placeholders;
* on a node shared with real pods, the GPUs our placeholders request (the real pods' owners
  pay for the rest of that node);
* every GPU of an empty node while the NodePool carries our consolidation pause;
* launching nodes not claimed by pending real pods, up to whole nodes for our pending
  placeholders (Karpenter launched them for us);
* for what a backend holds with no pod of ours (``held_gpus``: a CapacityBuffer's replicas x
  chunk GPUs, counted as prewarm, never as spare): the pod-less nodes of the pool, up to whole
  nodes for it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Event, Node, NodePool, Pod
from forecaster.actuators.nodepools import NodePoolConflictError, pause_record
from forecaster.actuators.notice.base import NoticeReader, NoticeReading
from forecaster.actuators.observe.attribution import NodePoolShape, nodepool_of, shape
from forecaster.actuators.observe.claims import claimed_pods
from forecaster.actuators.observe.kueue import KueueScope, read_rooms
from forecaster.actuators.observe.lead import measure_lead
from forecaster.actuators.observe.pod_watch import PodWatch, live_pods
from forecaster.actuators.observe.signals import SignalReader, read_signals
from forecaster.actuators.quantities import (
    MalformedObjectError,
    accelerators,
    gpu_quantity,
    pod_gpus,
    timestamp_seconds,
)
from forecaster.core.cluster import (
    ARRIVAL_WINDOWS_SECONDS,
    Observation,
    PoolSnapshot,
    RecentArrivals,
    Unattributed,
    unobservable,
    whole_node_gpus,
)
from forecaster.core.kueue import KueueRoom

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
LAUNCH_WINDOW_SECONDS = 600
MAX_RECENT_IMAGES = 5
NO_CAPACITY = "InsufficientCapacityError"
Announcement = Callable[[Pod], tuple[str, str] | None]
"""(source, item key) of the announced work a pod is of (``NoticeReading.announcement``)."""


def _ready(node: Node) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in node.get("status", {}).get("conditions", [])
    )


def _is_placeholder(pod: Pod) -> bool:
    pod_labels = pod["metadata"].get("labels") or {}
    return (
        pod_labels.get(lbl.MANAGED_BY) == lbl.MANAGER
        and pod_labels.get(lbl.ROLE) == lbl.PLACEHOLDER
    )


def _allocatable(node: Node, resource: str) -> int:
    return gpu_quantity(node["status"].get("allocatable", {}).get(resource, 0))


def _node_gpus(
    own: list[Node],
    *,
    resource: str,
    used_on: dict[str, int],
    ours_on: dict[str, int],
    busy: set[str],
    paused: bool,
    unclaimed_launching: int,
    buffer_gpus: int,
) -> tuple[int, int]:
    """(stranded, held) GPUs of one pool's nodes; ``held`` follows the module's billing rule."""
    stranded = held = 0
    for node in own:
        name = node["metadata"]["name"]
        if name in busy:
            held += ours_on.get(name, 0)  # shared with real pods: we pay for our part
            if _ready(node):
                stranded += max(0, _allocatable(node, resource) - used_on.get(name, 0))
        elif name in ours_on or (paused and _ready(node) and name not in used_on):
            held += _allocatable(node, resource)  # only our pods, or empty and kept by our pause
    per_node = max((_allocatable(n, resource) for n in own), default=0)
    pending_ours = whole_node_gpus(ours_on.get("", 0), gpus_per_node=per_node)
    held += min(unclaimed_launching, pending_ours)
    if buffer_gpus and not paused:  # (a paused pool already pays for its pod-less nodes)
        podless = sum(
            _allocatable(n, resource) for n in own if n["metadata"]["name"] not in used_on
        )
        held += min(podless, whole_node_gpus(buffer_gpus, gpus_per_node=per_node))
    return stranded, held


class HeldCapacity(Protocol):
    """What the observer asks of a prewarm backend (``prewarm.base.PrewarmBackend``)."""

    def held_gpus(self) -> Mapping[str, int]:
        """GPUs held per pool that no pod of ours shows."""
        ...


def observe(
    kube: Kube,
    *,
    pools: Sequence[str],
    now: int,
    held: Sequence[HeldCapacity] = (),
    signals: Sequence[SignalReader] = (),
    kueue: Sequence[KueueScope] = (),
    watched: PodWatch | None = None,
    notice: NoticeReader | None = None,
    resources: Mapping[str, str] | None = None,
) -> Observation:
    """Snapshots of every pool in ``pools``, each in its accelerator resource (``resources``,
    else GPUs): with what ``held`` holds for it with no pod of ours, Kueue's room (``kueue``),
    ``watched``'s pods while in sync, the work ``notice``'s sources announce, ``signals``."""
    units = {pool: (resources or {}).get(pool, GPU) for pool in pools}
    nodes = kube.list_nodes(labels=lbl.NODEPOOL_LABEL)
    pods = live_pods(kube, watched)
    shapes = _shapes(kube.list_nodepools())
    launches = _launch_failures(kube.list_events(fields=f"reason={NO_CAPACITY}"), now=now)
    homes, unattributed = _attribute(pods, shapes, set(units.values()))
    held_gpus = [backend.held_gpus() for backend in held]
    readings = read_signals(kube, signals, pools, now=now) if signals else {}
    node_pool = {n["metadata"]["name"]: n["metadata"]["labels"][lbl.NODEPOOL_LABEL] for n in nodes}
    rooms, kueue_problem = _kueue_rooms(kube, kueue)
    gated = {scope.pool for scope in kueue}
    reading = (
        notice.read(kube, pools=shapes, now=now, resources=units) if notice else NoticeReading()
    )
    snapshots = Observation()
    snapshots.unattributed = unattributed
    snapshots.claimed = claimed_pods(pods, node_pool=node_pool, shapes=shapes)
    snapshots.notice = reading.statuses
    for pool in pools:
        try:
            snapshots[pool] = _snapshot(
                kube,
                pool,
                resource=units[pool],
                nodes=nodes,
                pods=pods,
                homes=homes,
                node_pool=node_pool,
                now=now,
                buffer_gpus=sum(gpus.get(pool, 0) for gpus in held_gpus),
                launch_problem=launches.get(pool),
                announced=reading.announcement,
            )
            snapshots[pool] = dataclasses.replace(
                snapshots[pool],
                announced=reading.items.get(pool, ()),
                signals=readings.get(pool) or snapshots[pool].signals,
            )
            if pool in gated:
                snapshots[pool] = _gated(snapshots[pool], rooms.get(pool), kueue_problem)
        except (MalformedObjectError, NodePoolConflictError, *_MALFORMED) as exc:  # not API ones
            problem = f"malformed object: {type(exc).__name__}: {exc}"
            snapshots[pool] = unobservable(pool, problem=problem, now=now)
    return snapshots


def _kueue_rooms(
    kube: Kube, kueue: Sequence[KueueScope]
) -> tuple[dict[str, KueueRoom], str | None]:
    """What Kueue's quota could still admit per gated pool, or why it cannot be read (then
    those pools withdraw: their quota is unknown)."""
    if not kueue:
        return {}, None
    try:
        return read_rooms(kube, kueue), None
    except (MalformedObjectError, *_MALFORMED) as exc:
        return {}, f"malformed Kueue object: {type(exc).__name__}: {exc}"


def _gated(snapshot: PoolSnapshot, room: KueueRoom | None, problem: str | None) -> PoolSnapshot:
    """A Kueue-gated pool's snapshot with its quota room; unobservable without one."""
    if problem:
        raise MalformedObjectError(problem)
    return dataclasses.replace(
        snapshot,
        kueue=room,
        problem=snapshot.problem
        or (None if room else "Kueue gates this pool but the cluster does not serve it"),
    )


def _snapshot(
    kube: Kube,
    pool: str,
    *,
    resource: str,
    nodes: list[Node],
    pods: list[Pod],
    homes: list[str | None],
    node_pool: dict[str, str],
    now: int,
    buffer_gpus: int,
    launch_problem: str | None,
    announced: Announcement,
) -> PoolSnapshot:
    """One pool's snapshot; a malformed object raises (the caller isolates the pool)."""
    own = [n for n in nodes if node_pool[n["metadata"]["name"]] == pool]
    nodes_by_name, capacity = {n["metadata"]["name"]: n for n in own}, {True: 0, False: 0}
    for node in own:
        capacity[_ready(node)] += _allocatable(node, resource)
    tally = _tally(
        pool, resource, pods=pods, homes=homes, node_pool=node_pool, now=now, announced=announced
    )
    used_on, ours_on, placeholders = tally.used_on, tally.ours_on, tally.placeholders
    paused_until, limit = _nodepool_facts(kube.get_nodepool(pool), resource)
    stranded, held = _node_gpus(
        own, resource=resource, used_on=used_on, ours_on=ours_on, busy=tally.busy,
        paused=paused_until is not None,
        unclaimed_launching=max(0, capacity[False] - tally.pending), buffer_gpus=buffer_gpus,
    )  # fmt: skip
    podless = sum(
        _allocatable(n, resource) for n in own if _ready(n) and n["metadata"]["name"] not in used_on
    )
    # empty nodes go at consolidation - unless our pause keeps them, or they are the buffer's
    empty = 0 if paused_until is not None else max(0, podless - buffer_gpus)
    return PoolSnapshot(
        pool=pool,
        observed_at=now,
        allocatable_gpus=capacity[True],
        launching_gpus=capacity[False],
        running_gpus=tally.running,
        pending_gpus=tally.pending,
        prewarm_gpus=placeholders + buffer_gpus,  # buffer headroom holds no pods: ours, not spare
        nodepool_limit_gpus=limit,
        stranded_gpus=stranded,
        empty_gpus=empty,
        held_gpus=held,
        paused_until=paused_until,
        launch_problem=launch_problem,
        ready_placeholder_gpus=sum(
            gpus for name, gpus in ours_on.items() if name and _ready(nodes_by_name[name])
        ),
        measured_lead=measure_lead(
            own, [p for p in pods if p["spec"].get("nodeName") in nodes_by_name], now=now
        ),
        recent_images=tally.recent_images(),
        announced_real_gpus=tally.of_announced,
        unbound_placeholder_gpus=ours_on.get("", 0),
        announced_running=tally.announced_running(),
        arrivals=tally.arrivals(),
    )


def _nodepool_facts(nodepool: NodePool | None, resource: str) -> tuple[int | None, int | None]:
    """Until when our pause holds the NodePool's nodes (None: not paused), and its limit on
    ``resource`` (None: uncapped). A damaged pause record raises: the pool is unobservable."""
    if nodepool is None:
        return None, None
    paused_until = None
    if lbl.ORIGINAL_DISRUPTION in (nodepool["metadata"].get("annotations") or {}):
        paused_until = int(pause_record(nodepool)["until"])
    limit = None
    if resource in (nodepool["spec"].get("limits") or {}):
        limit = gpu_quantity(nodepool["spec"]["limits"][resource])
    return paused_until, limit


@dataclass
class _Tally:
    """One pool's pods, counted: what ``_snapshot`` builds the pool's GPUs from."""

    running: int
    pending: int
    placeholders: int
    of_announced: int
    created: list[tuple[float, int, str]]
    """(age, GPUs, uid) of the pool's real pods."""
    unannounced: set[str]
    """uids of those not of announced work (the arrivals model's)."""
    images: dict[str, int]
    """image -> GPUs of the last hour's pods that ran it."""
    used_on: dict[str, int]
    ours_on: dict[str, int]
    """our placeholders' GPUs per node ("" = still pending)."""
    busy: set[str]
    running_announced: dict[tuple[str, str], int]
    """(source, item key) -> GPUs of the bound pods of that announced item."""

    def announced_running(self) -> tuple[tuple[str, str, int], ...]:
        """(source, item key, GPUs) of the bound pods of announced work, by item."""
        return tuple((s, key, g) for (s, key), g in sorted(self.running_announced.items()))

    def recent_images(self) -> tuple[str, ...]:
        """The images the last hour's pods ran, most GPUs first (what placeholders pre-pull)."""
        by_gpus = sorted(self.images, key=lambda image: (-self.images[image], image))
        return tuple(by_gpus[:MAX_RECENT_IMAGES])

    def arrivals(self) -> RecentArrivals:
        """GPUs of unannounced pods created within each arrival window, and the pods."""
        return RecentArrivals(
            tuple(
                sum(g for age, g, uid in self.created if age < window and uid in self.unannounced)
                for window in ARRIVAL_WINDOWS_SECONDS
            ),
            tuple((uid, g) for age, g, uid in self.created if age < ARRIVAL_WINDOWS_SECONDS[-1]),
        )


def _tally(
    pool: str,
    resource: str,
    *,
    pods: list[Pod],
    homes: list[str | None],
    node_pool: dict[str, str],
    now: int,
    announced: Announcement,
) -> _Tally:
    """Count the pods of ``pool`` (on its nodes, or pending for it): real work by state and
    notice, our placeholders by node."""
    running = pending = placeholders = of_announced = 0
    created: list[tuple[float, int, str]] = []  # (age, GPUs, uid) of the pool's real pods
    unannounced: set[str] = set()  # uids of those not of announced work (the arrivals model's)
    images: dict[str, int] = {}  # image -> GPUs of the last hour's pods that ran it
    used_on: dict[str, int] = {}
    ours_on: dict[str, int] = {}  # our placeholders' GPUs per node ("" = still pending)
    busy: set[str] = set()
    running_announced: dict[tuple[str, str], int] = {}
    for pod, home in zip(pods, homes, strict=True):
        node_name = pod["spec"].get("nodeName")
        if (node_pool.get(node_name) if node_name else home) != pool:
            continue
        gpus = pod_gpus(pod, resource)
        if node_name:
            used_on[node_name] = used_on.get(node_name, 0) + gpus
        if _is_placeholder(pod):
            placeholders += gpus
            ours_on[node_name or ""] = ours_on.get(node_name or "", 0) + gpus
            continue
        uid = _note_created(pod, gpus, now=now, created=created, images=images)
        announcement = announced(pod)
        is_announced = announcement is not None
        if not is_announced and uid:
            unannounced.add(uid)
        if node_name:
            running += gpus
            busy.add(node_name)
            if announcement is not None:
                running_announced[announcement] = running_announced.get(announcement, 0) + gpus
        elif not pod["spec"].get("schedulingGates"):  # gated pods (Kueue) start no node
            pending += gpus
        else:
            continue
        of_announced += gpus if is_announced else 0
    return _Tally(
        running, pending, placeholders, of_announced, created, unannounced, images, used_on,
        ours_on, busy, running_announced,
    )  # fmt: skip


def _note_created(
    pod: Pod,
    gpus: int,
    *,
    now: int,
    created: list[tuple[float, int, str]],
    images: dict[str, int],
) -> str | None:
    """Count a real GPU pod's age (arrivals) and, within the hour, its images (prewarm pulls);
    its uid when counted."""
    meta = pod["metadata"]
    stamp = meta.get("creationTimestamp")
    if not stamp or not gpus:
        return None
    age = now - timestamp_seconds(stamp)
    uid = meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"
    created.append((age, gpus, uid))
    if age < ARRIVAL_WINDOWS_SECONDS[-1] and not pod["spec"].get("imagePullSecrets"):
        for container in pod["spec"].get("containers") or []:
            image = container.get("image")
            if image:
                images[image] = images.get(image, 0) + gpus
    return uid


def _shapes(nodepools: list[NodePool]) -> list[NodePoolShape]:
    """Every readable NodePool's shape (a malformed one serves no pending pod here)."""
    shapes = []
    for nodepool in nodepools:
        try:
            shapes.append(shape(nodepool))
        except _MALFORMED:
            continue
    return shapes


def _attribute(
    pods: list[Pod], shapes: list[NodePoolShape], resources: set[str]
) -> tuple[list[str | None], tuple[Unattributed, ...]]:
    """The NodePool each pending pod waits for (None for bound pods and pods no pool serves),
    and the pending accelerator pods (any known one or ``resources``) that no NodePool can
    serve, per namespace (their units summed whatever the resource)."""
    homes: list[str | None] = []
    lost: dict[str, list[int]] = {}
    for pod in pods:
        spec = pod["spec"]
        home = None
        if not spec.get("nodeName"):
            home = (spec.get("nodeSelector") or {}).get(lbl.NODEPOOL_LABEL)
            try:
                if home is None and accelerators(pod, resources):
                    home = nodepool_of(pod, shapes)
                    if home is None and not _is_placeholder(pod):
                        seen = lost.setdefault(pod["metadata"].get("namespace", ""), [0, 0])
                        seen[0] += 1
                        seen[1] += sum(accelerators(pod, resources).values())
            except (MalformedObjectError, *_MALFORMED):
                home = None  # unreadable and selecting no pool by name: counted nowhere
        homes.append(home)
    return homes, tuple(Unattributed(ns, n, g) for ns, (n, g) in sorted(lost.items()))


def _launch_failures(events: list[Event], *, now: int) -> dict[str, str]:
    """Per NodePool, Karpenter's recent "no capacity" Warnings on its NodeClaims, summarised."""
    seen: dict[str, tuple[int, float, str]] = {}
    for event in events:
        try:
            involved = event["involvedObject"]
            if involved.get("kind") != "NodeClaim" or event.get("reason") != NO_CAPACITY:
                continue
            at = timestamp_seconds(
                event.get("lastTimestamp") or event.get("eventTime") or event["firstTimestamp"]
            )
        except (*_MALFORMED, OSError):
            continue
        if now - at > LAUNCH_WINDOW_SECONDS:
            continue
        pool = str(involved.get("name", "")).rsplit("-", 1)[0]  # NodeClaims: <nodepool>-<suffix>
        count, last, message = seen.get(pool, (0, 0.0, ""))
        count += int(event.get("count") or 1)
        if at >= last:
            last, message = at, str(event.get("message", ""))
        seen[pool] = (count, last, message)
    minutes = LAUNCH_WINDOW_SECONDS // 60
    return {
        pool: f"Karpenter could not launch a node {count} time(s) in the last {minutes} min"
        f" (InsufficientCapacityError): {message}"
        for pool, (count, _, message) in seen.items()
    }
