"""The seam for what the cluster announces: a notice source turns objects into announced items.

A source names the kinds it reads (``ApiKind``) and turns one object into items
(``core.notice.AnnouncedItem``), attributing each to a pool from its pod template the way
Karpenter would place the pod (``actuators.attribution``). Objects come through a port,
``ObjectLister.list_objects`` - implemented by ``actuators.kube.Kube`` in a cluster and by the
twin in replay - so the same source code runs in both. ``read_notice`` runs every source: a
kind the cluster does not serve makes its source "not installed" (nothing else happens); an
object a source cannot read is skipped and named; a failed list costs that source's items for
this observation only (the plan then rests on the forecast, as without notice).

Each source also marks the pods of the work it announces (``marker``), naming the item each is
of: those pods are real demand once they exist, but the histories leave them out
(``forecaster_observed_unannounced_demand_gpus``), so the forecast is of unannounced work and
announced work is counted once; and their GPU-hours are linked to the notice their item gave
(``core.notice_use``).

Adding a source: a module here with a class satisfying ``NoticeSource``, and its entry in
``actuators.notice.registry.SOURCES``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from forecaster.accelerators import GPU
from forecaster.actuators.attribution import NodePoolShape, nodepool_of
from forecaster.actuators.manifests import Pod, PodTemplateSpec
from forecaster.actuators.quantities import (
    UnplaceableError,
    accelerators,
    fits_one_node,
    pod_gpus,
)
from forecaster.core.cluster import Skipped
from forecaster.core.notice import AnnouncedItem, SourceStatus

log = logging.getLogger(__name__)
Obj = dict[str, Any]

GRACE_SECONDS = 600
"""How late announced work may come before it counts as not coming (when the object itself
sets no deadline)."""
RECHECK_ABSENT_SECONDS = 600
"""A source whose API the cluster does not serve is asked again this often, not every tick:
a cluster without Argo or Kueue pays one 404 per source per 10 minutes for them."""
SOURCE_DEADLINE_SECONDS = 5.0
"""What one source's reads may take in one tick (all its kinds, retries included): an API that
hangs (an aggregated API down, a CRD's broken conversion webhook) costs this, not the client's
timeout times its retries."""
NOTICE_BUDGET_SECONDS = 20.0
"""What reading every source may take in one tick, well under the daemon's stuck threshold
(``service.scheduler``, 90 s): sources past it are skipped for the tick."""
HANG_BACKOFF_SECONDS = (60, 120, 300, 600)
"""A source that ran out of time is skipped this long (then longer, each time it does again);
one good read resets it."""


@dataclass(frozen=True)
class ApiKind:
    """A kind a source lists, cluster-wide: ``batch/v1 cronjobs``, optionally only the objects
    matching a label selector (e.g. the Jobs a JobSet made, not every Job)."""

    group: str
    version: str
    plural: str
    labels: str | None = None
    older_versions: tuple[str, ...] = ()
    """Read in this order when ``version`` is not served (Kueue: v1beta2, else v1beta1)."""
    subresource: str | None = None
    """Read ``<plural>/<name>/<subresource>`` of every object of ``parent`` (an aggregated
    API's view of them, like Kueue's pending workloads per ClusterQueue) instead of a list."""
    parent: ApiKind | None = None

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}" + (
            f"/*/{self.subresource}" if self.subresource else ""
        )

    def listed(self, lister: ObjectLister) -> list[Obj] | None:
        """Its objects from the first version the cluster serves; None when it serves none."""
        if self.subresource is not None:
            return self._subresources(lister, self.subresource)
        for version in (self.version, *self.older_versions):
            found = lister.list_objects(self.group, version, self.plural, labels=self.labels)
            if found is not None:
                return found
        return None

    def _subresources(self, lister: ObjectLister, subresource: str) -> list[Obj] | None:
        """The subresource of every parent object, named as its parent; None when the parent
        kind or the subresource is not served (nor readable through ``lister``)."""
        parents = self.parent.listed(lister) if self.parent else None
        if parents is None or not isinstance(lister, SubresourceReader):
            return None
        out = []
        for parent in parents:
            name = parent["metadata"]["name"]
            found = lister.get_subresource(self.group, self.version, self.plural, name, subresource)
            if found is None:
                return None
            out.append({**found, "metadata": {**(found.get("metadata") or {}), "name": name}})
        return out


class ObjectLister(Protocol):
    """The port sources read through: every object of a kind, or None when it is not served."""

    def list_objects(
        self, group: str, version: str, plural: str, *, labels: str | None = None
    ) -> list[Obj] | None: ...


@runtime_checkable
class SubresourceReader(Protocol):
    """The port's second verb, where a source needs it (``ApiKind.subresource``): one object's
    subresource, or None when it is not served. A lister without it serves no subresource."""

    def get_subresource(
        self, group: str, version: str, plural: str, name: str, subresource: str
    ) -> Obj | None: ...


@dataclass(frozen=True)
class NoticeContext:
    """What a source may use besides the object: the pools, the time, the other kinds it read."""

    pools: Sequence[NodePoolShape]
    now: int
    objects: Mapping[ApiKind, list[Obj]]
    grace_seconds: int = GRACE_SECONDS
    resources: Mapping[str, str] = field(default_factory=dict)
    """Each pool's accelerator resource (``nvidia.com/gpu`` where not named)."""
    node_units: Mapping[str, int] = field(default_factory=dict)
    """Units of its resource one node of each pool holds: more per pod can never be placed."""
    _placements: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)
    """``pool_of`` by the fields it reads, for this reading: 10,000 CronJobs of a few shapes
    are matched against every pool a few times, not 10,000 times (most of a tick's CPU)."""

    def pool_of(self, template: PodTemplateSpec) -> str | None:
        """The pool Karpenter would launch this template's pods in (None: none fits)."""
        spec = template["spec"]
        shape = json.dumps(
            [spec.get("nodeSelector"), spec.get("affinity"), spec.get("tolerations")],
            sort_keys=True,
            default=str,
        )
        if shape not in self._placements:
            pod = cast(Pod, {"metadata": template.get("metadata") or {}, "spec": spec})
            self._placements[shape] = nodepool_of(pod, self.pools)
        return self._placements[shape]

    def resource_of(self, pool: str) -> str:
        """The accelerator resource ``pool`` counts in."""
        return self.resources.get(pool, GPU)

    def placed(self, template: PodTemplateSpec, pool: str | None = None) -> tuple[str, int] | None:
        """The pool a template's pods would run in (``pool`` when the source knows it) and the
        units of that pool's resource each pod requests; None when the template asks for no
        accelerator, fits no pool, or asks for none of its pool's."""
        if not accelerators(template, self.resources.values()):
            return None
        pool = pool or self.pool_of(template)
        if pool is None:
            return None
        per_pod = self.fits(pool, pod_gpus(template, self.resource_of(pool)))
        return (pool, per_pod) if per_pod > 0 else None

    def fits(self, pool: str, per_pod: int) -> int:
        """``per_pod`` when one node of ``pool`` holds it, else ``UnplaceableError`` (the
        object is skipped: no pod of it can ever run)."""
        node = self.node_units.get(pool)
        return fits_one_node(per_pod, node_units=node, what="its pod template", pool=pool)


PodMarker = Callable[[Pod], str | None]
"""The key of the announced item a pod is of (the ``AnnouncedItem.key`` its source gave it, or
one no item has where the pod cannot tell which); None: not of work the source announces."""


class NoticeSource(Protocol):
    """Turns objects of ``kinds[0]`` into announced items (the other kinds are context, listed
    only when there is an object of ``kinds[0]``)."""

    name: str
    kinds: tuple[ApiKind, ...]

    def announce(self, obj: Obj, context: NoticeContext) -> list[AnnouncedItem]:
        """The items ``obj`` announces now; may raise anything on an object it cannot read
        (the reader skips and names it; no other object's items change)."""
        ...

    def marker(self, context: NoticeContext) -> PodMarker:
        """Which item of this source a pod is of (its items once their pods exist), from the
        objects read this time; should not raise on a malformed pod or object (if it does,
        the source marks nothing this time and says why)."""
        ...


@runtime_checkable
class Deadlined(Protocol):
    """A lister that can bound every read made inside ``within(seconds)`` (the cluster's;
    the twin's reads are in memory and take no deadline)."""

    def within(self, seconds: float) -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class NamespaceFilter:
    """Whose announced work is read (``notice.namespaces``): with ``include``, only those
    namespaces'; never ``exclude``'s. An item of no namespace is always read."""

    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        """Is ``namespace``'s announced work read?"""
        if not namespace:
            return True
        return namespace not in self.exclude and (not self.include or namespace in self.include)


EVERY_NAMESPACE = NamespaceFilter()


@dataclass
class NoticeReading:
    """Announced items per pool, and how each source fared."""

    items: dict[str, tuple[AnnouncedItem, ...]] = field(default_factory=dict)
    statuses: tuple[SourceStatus, ...] = ()
    markers: tuple[tuple[str, PodMarker], ...] = ()
    """(source, its marker) per source read this time: one not installed or not read marks
    nothing."""
    skipped: tuple[Skipped, ...] = ()
    """Objects skipped this time: unreadable, or asking more per pod than a node holds."""
    timed_out: tuple[str, ...] = ()
    """Sources that ran out of their time this tick (``SOURCE_DEADLINE_SECONDS``)."""
    namespaces: NamespaceFilter = EVERY_NAMESPACE
    """Whose announced work was read: a pod of a namespace not read is unannounced work."""

    def announcement(self, pod: Pod) -> tuple[str, str] | None:
        """(source, item key) of the announced work ``pod`` is of; None: unannounced work (a
        marker that fails on this pod marks nothing: the pod is counted as unannounced; so is
        a pod of a namespace whose notice is not read)."""
        if not self.namespaces.allows(str((pod.get("metadata") or {}).get("namespace") or "")):
            return None
        for source, marks in self.markers:
            try:
                key = marks(pod)
            except Exception:  # one pod must not stop the reading of the others
                continue
            if key is not None:
                return source, key
        return None

    def announced(self, pod: Pod) -> bool:
        """Is ``pod`` of announced work (left out of the histories the forecast learns)."""
        return self.announcement(pod) is not None


class NoticeReader:
    """``read_notice`` over a fixed set of sources, logging a source's problem once (when it
    appears or changes), not at every observation; a source found not installed is asked again
    only after ``RECHECK_ABSENT_SECONDS`` (installing its CRDs is noticed within that), and one
    that ran out of time is skipped for ``HANG_BACKOFF_SECONDS`` (growing while it keeps doing
    so): a hanging API costs its deadline once per backoff, not every tick."""

    def __init__(
        self,
        sources: Sequence[NoticeSource],
        *,
        grace_seconds: int = GRACE_SECONDS,
        source_deadline_seconds: float = SOURCE_DEADLINE_SECONDS,
        budget_seconds: float = NOTICE_BUDGET_SECONDS,
        namespaces: NamespaceFilter = EVERY_NAMESPACE,
    ):
        self.sources = tuple(sources)
        self.grace_seconds = grace_seconds
        self.namespaces = namespaces
        self.source_deadline_seconds = source_deadline_seconds
        self.budget_seconds = budget_seconds
        self._problems: dict[str, str | None] = {}
        self._absent_until: dict[str, int] = {}
        self._hung: dict[str, tuple[int, int]] = {}  # source -> (times in a row, skipped until)

    def read(
        self,
        lister: ObjectLister,
        *,
        pools: Sequence[NodePoolShape],
        now: int,
        resources: Mapping[str, str] | None = None,
        node_units: Mapping[str, int] | None = None,
    ) -> NoticeReading:
        absent = {n for n, until in self._absent_until.items() if now < until}
        hung = {n: until for n, (_, until) in self._hung.items() if now < until}
        asked = [s for s in self.sources if s.name not in absent and s.name not in hung]
        reading = read_notice(
            lister,
            asked,
            pools=pools,
            now=now,
            grace_seconds=self.grace_seconds,
            resources=resources,
            node_units=node_units,
            source_deadline_seconds=self.source_deadline_seconds,
            budget_seconds=self.budget_seconds,
            namespaces=self.namespaces,
        )
        self._follow_hangs(reading, now=now)
        for status in reading.statuses:
            if not status.installed:
                self._absent_until[status.source] = now + RECHECK_ABSENT_SECONDS
            else:
                self._absent_until.pop(status.source, None)
        still = {s.name: SourceStatus(s.name, installed=False) for s in self.sources}
        for name, until in hung.items():
            still[name] = SourceStatus(
                name, True, problem=f"ran out of time before; skipped until {until}"
            )
        found = {status.source: status for status in reading.statuses}
        reading.statuses = tuple(found.get(s.name, still[s.name]) for s in self.sources)
        for status in reading.statuses:
            before = self._problems.get(status.source)
            if status.problem != before:
                if status.problem:
                    log.warning("notice source %s: %s", status.source, status.problem)
                elif before:
                    log.info("notice source %s: read again", status.source)
            self._problems[status.source] = status.problem
        return reading

    def _follow_hangs(self, reading: NoticeReading, *, now: int) -> None:
        """Back off the sources that ran out of time; forget those read again."""
        for status in reading.statuses:
            if status.source in reading.timed_out:
                times = self._hung.get(status.source, (0, 0))[0]
                wait = HANG_BACKOFF_SECONDS[min(times, len(HANG_BACKOFF_SECONDS) - 1)]
                self._hung[status.source] = (times + 1, now + wait)
            elif status.problem is None:
                self._hung.pop(status.source, None)


def read_notice(
    lister: ObjectLister,
    sources: Sequence[NoticeSource],
    *,
    pools: Sequence[NodePoolShape],
    now: int,
    grace_seconds: int = GRACE_SECONDS,
    resources: Mapping[str, str] | None = None,
    node_units: Mapping[str, int] | None = None,
    source_deadline_seconds: float = SOURCE_DEADLINE_SECONDS,
    budget_seconds: float = NOTICE_BUDGET_SECONDS,
    namespaces: NamespaceFilter = EVERY_NAMESPACE,
) -> NoticeReading:
    """Run every source over what the cluster serves (see the module docstring); each pool's
    items in its accelerator resource (``resources``), of the namespaces ``namespaces`` reads.
    Each source's reads end within ``source_deadline_seconds`` and all of them within
    ``budget_seconds`` (where ``lister`` takes deadlines); whatever one source or one object
    does costs that source or object only."""
    items: dict[str, list[AnnouncedItem]] = {}
    statuses, markers, skipped, timed_out = [], [], [], []
    started = time.monotonic()
    for source in sources:
        left = budget_seconds - (time.monotonic() - started)
        if left < min(1.0, source_deadline_seconds):
            spent = f"not read this tick: the notice budget ({budget_seconds:g} s) is spent"
            statuses.append(SourceStatus(source.name, installed=True, problem=spent))
            continue
        deadline = min(source_deadline_seconds, left)
        listed = _listed(lister, source, deadline)
        if isinstance(listed, str):
            statuses.append(SourceStatus(source.name, installed=True, problem=listed))
            if listed.startswith(_OUT_OF_TIME):
                timed_out.append(source.name)
            continue
        if listed is None:
            statuses.append(SourceStatus(source.name, installed=False))
            continue
        context = NoticeContext(
            pools, now, listed, grace_seconds, dict(resources or {}), dict(node_units or {})
        )
        status, found_items, passed, marker = _announced(source, listed[source.kinds[0]], context)
        for item in found_items:
            if namespaces.allows(item.namespace):
                items.setdefault(item.pool, []).append(item)
        if marker is not None:
            markers.append((source.name, marker))
        skipped += passed
        statuses.append(status)
    return NoticeReading(
        {pool: tuple(found) for pool, found in items.items()},
        tuple(statuses),
        tuple(markers),
        tuple(skipped),
        tuple(timed_out),
        namespaces,
    )


_OUT_OF_TIME = "ran out of time"


def _announced(
    source: NoticeSource, objects: list[Obj], context: NoticeContext
) -> tuple[SourceStatus, list[AnnouncedItem], list[Skipped], PodMarker | None]:
    """``source``'s status, items, skipped objects and marker over ``objects``: each object
    that raises costs itself only; a marker that raises is the source's problem (None: it
    marks nothing this time)."""
    found, passed = [], []
    for obj in objects:
        try:
            found += [_of_namespace(i, obj) for i in source.announce(obj, context)]
        except Exception as exc:  # any object, however written, costs itself only
            passed.append(_skipped(source, obj, exc))
    problem, marker = None, None  # a skipped object is no problem: the rest was read
    try:
        marker = source.marker(context)
    except Exception as exc:  # its pods are then counted as unannounced, this time
        problem = f"cannot mark its pods: {type(exc).__name__}: {exc}"
    marks = bool(getattr(source, "marks_pods", True))
    status = SourceStatus(
        source.name, True, len(found), problem, skipped=len(passed), marks_pods=marks
    )
    return status, found, passed, marker


def _listed(
    lister: ObjectLister, source: NoticeSource, deadline: float
) -> dict[ApiKind, list[Obj]] | str | None:
    """The objects of ``source``'s kinds by kind; None when its main kind is not served; the
    problem when they cannot be read within ``deadline`` seconds (or at all)."""
    bounded = lister.within(deadline) if isinstance(lister, Deadlined) else nullcontext()
    began = time.monotonic()
    objects: dict[ApiKind, list[Obj]] = {}
    try:
        with bounded:
            for kind in source.kinds:
                found = kind.listed(lister)
                if found is None:
                    # a context kind may be missing; the main one not
                    return objects if objects else None
                objects[kind] = found
                if not found:
                    break  # nothing announces: no context needed
    except Exception as exc:  # e.g. forbidden, 500, a hang: no notice from it this time
        took = time.monotonic() - began
        if took >= deadline * 0.9:
            return f"{_OUT_OF_TIME} ({took:.1f} s of {deadline:g} s): {exc}"
        return str(exc) or type(exc).__name__
    return objects


def _of_namespace(item: AnnouncedItem, obj: Obj) -> AnnouncedItem:
    """``item`` with the namespace of the object that announced it (where the source did not
    name one: a cluster-scoped object's items name their own), which its trust is judged by."""
    if item.namespace:
        return item
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    return dataclasses.replace(item, namespace=str(namespace)) if namespace else item


def _skipped(source: NoticeSource, obj: Obj, exc: Exception) -> Skipped:
    kind = source.kinds[0].plural
    reason = "exceeds-node" if isinstance(exc, UnplaceableError) else "unreadable"
    return Skipped(kind=kind, name=_name(obj), reason=reason, message=str(exc)[:300])


def _name(obj: Obj) -> str:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '?')}".lstrip("/")[:300]
