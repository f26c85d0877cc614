"""Read the cluster into ``core.cluster.PoolSnapshot``s: one node list and one pod list per tick
(or, with a ``PodWatch`` in sync, its cache of other pods plus a list of our own).

Objects other teams write are isolated per object: a pod whose GPU request cannot be read, or
asks more than one node of its pool holds (``1Ki``, ``2T``: whole numbers the API server
accepts), is passed over - a pending one is no demand, a bound one leaves its node busy - and
named in ``Observation.skipped`` (a metric and a rate-limited Event); likewise a notice object
(``actuators.notice.base``), whose source's failure costs only that source. A malformed object
of ours or of the platform's (a NodePool's limit or pause record, a node) makes only the pool it
belongs to unobservable (``core.cluster.unobservable``: that pool withdraws and says why); the
other pools are observed as usual. An API failure of the nodes, pods or NodePools still fails
the whole read.

A pod belongs to a pool when it runs on one of the pool's nodes, or - still pending - when
Karpenter would provision it from that NodePool: ``nodeSelector karpenter.sh/nodepool``, or
else node affinity / labels matched against every NodePool with weights (``attribution``).
Pending GPU pods that no NodePool can serve are reported per namespace (``Observation``). Our
placeholders (by label) are counted apart from real demand.

A pool whose NodeClaims Karpenter could not launch in the last ``LAUNCH_WINDOW_SECONDS``
(Warning Events ``InsufficientCapacityError`` on NodeClaims named ``<nodepool>-<suffix>``)
carries a ``launch_problem``; ``ready_placeholder_gpus`` counts only prewarm on Ready nodes.

A pool's pods are counted by ``pod_tally``: running and pending real work, announced or not,
our placeholders by node, ``arrivals`` (GPUs of real pods created in the last 1, 5, 15 and 60
minutes, of the pods listed - pods that already finished are not counted: the fast signal of
the arrivals model, fresher than any scrape) and ``recent_images``.

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
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.attribution import NodePoolShape, nodepool_of, shape
from forecaster.actuators.kube import Kube, NodePoolForbiddenError
from forecaster.actuators.manifests import Event, Node, NodePool, Pod
from forecaster.actuators.nodepools import NodePoolConflictError, pause_record
from forecaster.actuators.observe.announced import AnnouncedWork, NoticePort, NotRead
from forecaster.actuators.observe.claims import claimed_pods
from forecaster.actuators.observe.kueue import KueueScope, read_rooms
from forecaster.actuators.observe.lead import measure_lead
from forecaster.actuators.observe.pod_tally import ClusterRead, is_placeholder, tally_pods
from forecaster.actuators.observe.pod_watch import PodWatch, live_pods
from forecaster.actuators.observe.signals import SignalReader, read_signals
from forecaster.actuators.quantities import (
    MalformedObjectError,
    accelerators,
    gpu_quantity,
    timestamp_seconds,
)
from forecaster.core.cluster import (
    Observation,
    PoolSnapshot,
    Skipped,
    Unattributed,
    unobservable,
    whole_node_gpus,
)
from forecaster.core.kueue import KueueRoom
from forecaster.core.notice import SourceStatus

log = logging.getLogger(__name__)

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
_ONE_POOL = (
    MalformedObjectError,
    NodePoolConflictError,
    NodePoolForbiddenError,  # a 403 on this pool's NodePool: our grant does not name it
    *_MALFORMED,
)
"""What makes one pool unobservable while the others are observed."""
LAUNCH_WINDOW_SECONDS = 600
NO_CAPACITY = "InsufficientCapacityError"


def _ready(node: Node) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in node.get("status", {}).get("conditions", [])
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
    prewarm_held_gpus: int,
) -> tuple[int, int]:
    """(stranded, billed) GPUs of one pool's nodes; ``billed`` follows the module's billing rule."""
    stranded = billed = 0
    for node in own:
        name = node["metadata"]["name"]
        if name in busy:
            billed += ours_on.get(name, 0)  # shared with real pods: we pay for our part
            if _ready(node):
                stranded += max(0, _allocatable(node, resource) - used_on.get(name, 0))
        elif name in ours_on or (paused and _ready(node) and name not in used_on):
            billed += _allocatable(node, resource)  # only our pods, or empty and kept by our pause
    per_node = max((_allocatable(n, resource) for n in own), default=0)
    pending_ours = whole_node_gpus(ours_on.get("", 0), gpus_per_node=per_node)
    billed += min(unclaimed_launching, pending_ours)
    if prewarm_held_gpus and not paused:  # (a paused pool already pays for its pod-less nodes)
        podless = sum(
            _allocatable(n, resource) for n in own if n["metadata"]["name"] not in used_on
        )
        billed += min(podless, whole_node_gpus(prewarm_held_gpus, gpus_per_node=per_node))
    return stranded, billed


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
    holders: Sequence[HeldCapacity] = (),
    signals: Sequence[SignalReader] = (),
    kueue: Sequence[KueueScope] = (),
    watched: PodWatch | None = None,
    notice: NoticePort | None = None,
    resources: Mapping[str, str] | None = None,
    node_units: Mapping[str, int] | None = None,
) -> Observation:
    """Snapshots of every pool in ``pools``, each in its accelerator resource (``resources``,
    else GPUs): with what ``holders`` hold for it with no pod of ours, Kueue's room (``kueue``),
    ``watched``'s pods while in sync, the work ``notice``'s sources announce, ``signals``.
    ``node_units``: what one node of each pool holds (a pod asking more is passed over)."""
    units = {pool: (resources or {}).get(pool, GPU) for pool in pools}
    nodes = kube.list_nodes(labels=lbl.NODEPOOL_LABEL)
    pods = live_pods(kube, watched)
    shapes = _shapes(kube.list_nodepools())
    launches = _launch_failures(kube.list_events(fields=f"reason={NO_CAPACITY}"), now=now)
    homes, unattributed = _attribute(pods, shapes, set(units.values()))
    backend_held = [backend.held_gpus() for backend in holders]
    readings = read_signals(kube, signals, pools, now=now) if signals else {}
    node_pool = {n["metadata"]["name"]: n["metadata"]["labels"][lbl.NODEPOOL_LABEL] for n in nodes}
    rooms, kueue_problem = _kueue_rooms(kube, kueue)
    gated = {scope.pool for scope in kueue}
    sizes = dict(node_units or {})  # what one node of each pool holds
    reading = _notice(notice, kube, pools=shapes, now=now, resources=units, node_units=sizes)
    snapshots = Observation()
    snapshots.unattributed = unattributed
    snapshots.claimed = claimed_pods(pods, node_pool=node_pool, shapes=shapes)
    snapshots.notice = reading.statuses
    passed: list[Skipped] = list(reading.skipped)
    read = ClusterRead(nodes, pods, homes, node_pool, now, reading.announcement)
    for pool in pools:
        try:
            snapshot = _snapshot(
                kube,
                pool,
                read,
                resource=units[pool],
                node_units=sizes.get(pool),
                prewarm_held_gpus=sum(gpus.get(pool, 0) for gpus in backend_held),
                launch_problem=launches.get(pool),
                passed=passed,
            )
            snapshot = dataclasses.replace(
                snapshot,
                announced=reading.items.get(pool, ()),
                signals=readings.get(pool) or snapshot.signals,
            )
            gate = _gated(snapshot, rooms.get(pool), kueue_problem) if pool in gated else None
            snapshots[pool] = gate or snapshot
        except _ONE_POOL as exc:  # API failures that reach every pool propagate
            snapshots[pool] = unobservable(pool, problem=_one_pool_problem(exc), now=now)
    snapshots.skipped = tuple(passed)
    return snapshots


def _one_pool_problem(exc: Exception) -> str:
    """What a pool's snapshot says when ``_ONE_POOL`` stopped it."""
    if isinstance(exc, NodePoolForbiddenError):
        return str(exc)
    return f"malformed object: {type(exc).__name__}: {exc}"


def _notice(
    notice: NoticePort | None,
    kube: Kube,
    *,
    pools: list[NodePoolShape],
    now: int,
    resources: dict[str, str],
    node_units: dict[str, int],
) -> AnnouncedWork:
    """The announced work; a reader that fails outright (a bug) costs notice only, this time."""
    if notice is None:
        return NotRead()
    try:
        return notice.read(kube, pools=pools, now=now, resources=resources, node_units=node_units)
    except Exception as exc:  # the pools are still observed, as without notice
        log.exception("reading notice failed; planning without it this tick")
        problem = f"not read this tick: {type(exc).__name__}: {exc}"
        return NotRead(tuple(SourceStatus(s.name, True, problem=problem) for s in notice.sources))


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
    read: ClusterRead,
    *,
    resource: str,
    node_units: int | None,
    prewarm_held_gpus: int,
    launch_problem: str | None,
    passed: list[Skipped],
) -> PoolSnapshot:
    """One pool's snapshot; a malformed node or NodePool raises (the caller isolates the pool),
    a pod another team wrote is passed over on its own (into ``passed``)."""
    now, pods = read.now, read.pods
    own = [n for n in read.nodes if read.node_pool[n["metadata"]["name"]] == pool]
    nodes_by_name, capacity = {n["metadata"]["name"]: n for n in own}, {True: 0, False: 0}
    for node in own:
        capacity[_ready(node)] += _allocatable(node, resource)
    tally = tally_pods(pool, resource, read, node_units=node_units, passed=passed)
    used_on, ours_on, placeholders = tally.used_on, tally.ours_on, tally.placeholders
    paused_until, limit = _nodepool_facts(kube.get_nodepool(pool), resource)
    paused = paused_until is not None
    stranded, billed = _node_gpus(
        own,
        resource=resource,
        used_on=used_on,
        ours_on=ours_on,
        busy=tally.busy,
        paused=paused,
        unclaimed_launching=max(0, capacity[False] - tally.pending),
        prewarm_held_gpus=prewarm_held_gpus,
    )
    empty = 0 if paused else _empty_gpus(own, resource, used_on, prewarm_held_gpus)
    return PoolSnapshot(
        pool=pool,
        observed_at=now,
        allocatable_gpus=capacity[True],
        launching_gpus=capacity[False],
        running_gpus=tally.running,
        pending_gpus=tally.pending,
        prewarm_gpus=placeholders + prewarm_held_gpus,  # headroom, no pods: ours, not spare
        nodepool_limit_gpus=limit,
        stranded_gpus=stranded,
        empty_gpus=empty,
        held_gpus=billed,
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
        announced_present=tuple(sorted(tally.present)),
        arrivals=tally.arrivals(),
    )


def _empty_gpus(
    own: list[Node], resource: str, used_on: Mapping[str, int], prewarm_held_gpus: int
) -> int:
    """GPUs of ready nodes with no pods, past the buffer's: what consolidation takes (unless
    our pause keeps them)."""
    podless = sum(
        _allocatable(n, resource) for n in own if _ready(n) and n["metadata"]["name"] not in used_on
    )
    return max(0, podless - prewarm_held_gpus)


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
                    if home is None and not is_placeholder(pod):
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
