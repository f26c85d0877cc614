"""GPU work the cluster announces before its pods exist, and what of it is due now.

A CronJob says when its next run starts; a JobSet says which of its jobs wait on others. Such
*announced items* are known, not forecast: the plan covers the ones whose earliest start falls
within the pool's lead time (prewarming earlier would only hold GPUs idle longer), and drops an
item once its pods exist (they are then real demand) or its latest start has passed (it did not
come). Pure: the notice sources (``actuators.notice``) build the items from the objects.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from forecaster.core.notice_use import ALL, DAY_SECONDS, NoticeUse, PoolNotice, UseTotals, spread


@dataclass(frozen=True)
class AnnouncedItem:
    """One piece of announced GPU work on one pool."""

    pool: str
    gpus_per_pod: int
    pods: int
    gang: bool
    """All pods must run at once (an indexed Job, a JobSet's replicated job): whole nodes."""
    earliest_start: int
    """Epoch seconds its first pod can be created, at the soonest."""
    latest_start: int
    """Past this without its pods, it did not come: the item is withdrawn."""
    source: str
    """The notice source that read it (``cronjob``, ``jobset``...)."""
    key: str
    """What announced it, e.g. ``cronjob team-a/nightly@2026-12-03T02:00:00Z``."""
    in_history: bool = False
    """Its pods stay in the histories the forecast learns (its source marks none, e.g. Kueue's
    reserved workloads: notice of seconds on work that is mostly unannounced): the plan raises
    the forecast's part to cover it - the larger of the two - instead of adding it on top."""
    namespace: str = ""
    """The namespace of the object that announced it: trust is judged per source and namespace
    (``trust_key``), so one team's misses cut that team's items only."""

    @property
    def trust_key(self) -> str:
        """What trust is judged on: ``source/namespace`` (the source alone without one)."""
        return trust_key(self.source, self.namespace)

    def __post_init__(self) -> None:
        if self.gpus_per_pod < 0 or self.pods < 0:
            raise ValueError(f"{self.key}: GPUs and pods must be >= 0")
        if self.latest_start < self.earliest_start:
            raise ValueError(f"{self.key}: latest start before earliest start")

    @property
    def gpus(self) -> int:
        return self.gpus_per_pod * self.pods

    def due(self, now: int, *, within_seconds: float) -> bool:
        """Should the plan cover it now: it starts within ``within_seconds`` and may still come."""
        return self.earliest_start <= now + within_seconds and now <= self.latest_start


def due_items(
    items: Iterable[AnnouncedItem], now: int, *, within_seconds: float
) -> tuple[AnnouncedItem, ...]:
    """The items the plan covers now, soonest first."""
    return tuple(
        sorted(
            (i for i in items if i.due(now, within_seconds=within_seconds)),
            key=lambda i: (i.earliest_start, i.key),
        )
    )


@dataclass(frozen=True)
class SourceStatus:
    """One notice source as the last observation found it."""

    source: str
    installed: bool
    """False: the cluster does not serve its API (or we may not read it); it costs nothing."""
    items: int = 0
    problem: str | None = None
    """Why it could not be read this time (forbidden, failing, out of time)."""
    precision: float | None = None
    """Share of its items resolved in the last 7 days that came (None: none resolved)."""
    resolved: int = 0
    waste_gpu_hours: float = 0.0
    """GPU-hours held in the last 7 days for its items that did not come."""
    trusted: bool = True
    """False: below ``TRUST_THRESHOLD`` for a day, its items are not planned until its precision
    recovers."""
    came_gpus: int = 0
    """GPUs of its items that came in the last 7 days."""
    ahead_gpus: int = 0
    """Of those, the GPUs announced at least the pool's lead time before they came (the notice
    that lets prewarm be warm when the pods come)."""
    median_notice_seconds: float | None = None
    """Median time from an item's first reading to its coming, over the last 7 days."""
    marks_pods: bool = True
    """It marks the pods of its items (``NoticeSource.marker``): its items come when their pods
    do; False (Kueue, Volcano), when they leave its reading (``NoticeLedger``)."""
    distrusted_namespaces: tuple[str, ...] = ()
    """Namespaces whose items of this source are not planned now (their own precision stayed
    below ``TRUST_THRESHOLD`` for a day): the source's other namespaces stay trusted."""
    dropped: int = 0
    """Its items withdrawn unjudged since start because too many were in flight
    (``MAX_IN_FLIGHT``, or the state's bytes: ``NoticeLedger.shed``), each charged as not come."""
    skipped: int = 0
    """Its objects skipped this time (unreadable, or more per pod than a node holds): each
    costs itself only, the source stays readable (``Observation.skipped`` names them)."""


TRUST_WINDOW_SECONDS = 7 * 86400
"""Precision is judged over the items resolved in the last 7 days."""
TRUST_THRESHOLD = 0.5
"""Below this precision for ``DISTRUST_AFTER_SECONDS`` a source's items are not planned until
it recovers (at or above it again: trusted at once)."""
DISTRUST_AFTER_SECONDS = 86400
"""How long a source must stay below ``TRUST_THRESHOLD`` before its items are left out: one bad
hour (a cluster upgrade, a paused team) does not cut a source that is usually right."""
TRUST_MIN_OUTCOMES = 4
"""Fewer resolved items than this: no verdict, the source is trusted."""
ENDED_SECONDS = 86400
"""An item that came or was withdrawn is not planned nor judged again for this long, however
often its source announces it again (``NoticeLedger.ended``)."""
MAX_IN_FLIGHT = 10_000
"""Announced items followed at once, at most: how many tenants announce is theirs to decide.
Past it the least urgent (latest earliest start) are dropped - withdrawn and charged as not
come, not planned again for ``ENDED_SECONDS``, counted in ``NoticeLedger.dropped`` - so the
state that persists them stays bounded (``reconcile.in_flight_codec``)."""
MAX_ENDED = 50_000
"""Ended items remembered at most (the newest): how many items end a day is the tenants' to
decide; one forgotten early is, at worst, followed (and held for) once more."""


@dataclass(frozen=True)
class Outcome:
    """How one announced item ended: it came (its pods were created by its latest start), or
    it was withdrawn unused. Either way ``held_gpu_hours`` is the prewarm the plan held for it
    while no pod of it existed: its GPUs from the reading it first became due to the reading
    its pods came in (the cost of acting on notice), or to its latest start when it did not
    come (the source's waste). An upper bound on what the plan held: the ledger charges the
    item's GPUs whether or not caps, or a pool that did not act, cut the plan below them."""

    source: str
    pool: str
    key: str
    came: bool
    at: int
    held_gpu_hours: float = 0.0
    gpus: int = 0
    notice_seconds: int = 0
    """From its first reading to its end (to a tick: the reading that no longer lists it)."""
    ahead: bool = False
    """It came with notice of at least the pool's prewarm window (its lead time)."""
    namespace: str = ""
    """Of the object that announced it (``AnnouncedItem.namespace``)."""

    @property
    def trust_key(self) -> str:
        """What trust is judged on (``AnnouncedItem.trust_key``)."""
        return trust_key(self.source, self.namespace)


def trust_key(source: str, namespace: str) -> str:
    """``source/namespace``, or the source alone for an item of no namespace."""
    return f"{source}/{namespace}" if namespace else source


@dataclass(frozen=True)
class InFlight:
    """An announced item followed but not resolved yet: persisted with the outcomes, so a
    restart keeps when it was first read and since when prewarm was held for it."""

    item: AnnouncedItem
    due_since: int | None
    first_seen: int


class NoticeLedger:
    """Follows every announced item from its first reading to its end, per source.

    **An item comes when its pods come.** For a source that marks its pods (``marking``: the
    CronJob, JobSet, Argo sources - ``NoticeSource.marker``), the item came when pods of its
    Job / JobSet stage / step exist on the pool (``present``: pending, gated or running) by its
    latest start, whether or not its source still lists it; one whose pods never came by then
    did not come and is charged - leaving the reading is no verdict (a CronJob moves its
    ``lastScheduleTime`` whether or not a pod is ever made: no quota, an admission refusal).
    Pods Kueue gates (``schedulingGates``) count as come: they exist and hold quota; their node
    comes when Kueue admits them. For a source that marks no pods (Kueue's reserved and pending
    workloads, Volcano's PodGroups: their pods stay in the histories), an item that leaves the
    reading by its latest start came - the workload was admitted, the group enqueued - as does
    every item when pods are not known (``present`` None: the twin, where announced work always
    comes). **An item keeps its first deadline**: a source that re-announces it later (a
    JobSet stage with nothing to time it by, an Argo step whose status the user wrote) cannot
    hold prewarm for ever - past its first latest start it is withdrawn and charged, and the
    same key is not planned nor judged again for ``ENDED_SECONDS`` (``ended``).

    Items of a source that could not be read this time are left open (a failed list is no
    verdict). The outcomes and the items in flight are persisted with the daemon's state
    (``reconcile.state``, ``saved``/``restore``), so a restart keeps the verdicts, each item's
    first reading and the prewarm held for it. ``use`` follows the pods of the items that came,
    in GPU-hours (``core.notice_use``)."""

    def __init__(self) -> None:
        self._open: dict[tuple[str, str], InFlight] = {}
        self._pool_keys: dict[str, dict[tuple[str, str], None]] = {}
        """The keys in ``_open`` by pool (in the order they opened): a reading of one pool
        visits its items only, not every pool's (30 pools x 10,000 items a tick)."""
        self.outcomes: list[Outcome] = []
        self.use = NoticeUse()
        self._ended: dict[tuple[str, str], int] = {}  # (pool, key) -> when it came or went
        self._trust: tuple[tuple[int, int, int], dict[str, str]] | None = None
        self.dropped: dict[str, int] = {}
        """Items dropped past ``MAX_IN_FLIGHT``, by source, since start."""

    def observe(
        self,
        pool: str,
        items: Iterable[AnnouncedItem],
        *,
        readable: frozenset[str] | None,
        now: int,
        window_seconds: float,
        present: frozenset[tuple[str, str]] | None = None,
        marking: frozenset[str] = frozenset(),
    ) -> list[Outcome]:
        """Record this reading of ``pool``; returns the outcomes it resolved. ``present``:
        (source, key) of the items whose pods exist on the pool now (None: not known);
        ``marking``: the sources that mark their pods (see the class docstring)."""
        seen = self._seen(pool, items, now=now)
        resolved = []
        for key in list(self._pool_keys.get(pool, ())):
            held = self._open[key]
            came = self._came(
                key, held, seen, now=now, readable=readable, present=present, marking=marking
            )
            if came is None:
                continue
            resolved.append(self._outcome(pool, held, came, now=now, window=window_seconds))
            self._close(key, now=now)
            seen.pop(key, None)
        for key, item in seen.items():
            due = item.due(now, within_seconds=window_seconds)
            before = self._open.get(key)
            since = before.due_since if before is not None else None
            first = before.first_seen if before is not None else now
            self._open[key] = InFlight(
                item, since if since is not None else (now if due else None), first
            )
            self._pool_keys.setdefault(pool, {})[key] = None
        resolved += self._drop_past_cap(now=now, window=window_seconds)
        kept = now - TRUST_WINDOW_SECONDS - DISTRUST_AFTER_SECONDS  # the window, a day ago too
        # outcomes are appended as they end (``at`` is then now): the old ones are a prefix
        del self.outcomes[: bisect.bisect_right(self.outcomes, kept, key=lambda o: o.at)]
        self.outcomes += resolved
        oldest = next(iter(self._ended.values()), now)  # ``_close`` keeps them in time order
        if now - oldest >= ENDED_SECONDS:
            self._ended = {k: t for k, t in self._ended.items() if now - t < ENDED_SECONDS}
        if len(self._ended) > MAX_ENDED:  # the oldest go first
            newest = sorted(self._ended.items(), key=lambda kv: kv[1])[-MAX_ENDED:]
            self._ended = dict(newest)
        return resolved

    def _drop_past_cap(self, *, now: int, window: float) -> list[Outcome]:
        """Past ``MAX_IN_FLIGHT`` items in flight, the least urgent are withdrawn (``shed``)."""
        return self._shed(len(self._open) - MAX_IN_FLIGHT, now=now, window=window)

    def shed(self, count: int, *, now: int) -> list[Outcome]:
        """Withdraw the ``count`` least urgent items in flight (latest earliest start): charged
        as not come for the GPU-hours held for them until now, ended, counted in ``dropped``.
        What keeps the persisted state within its bytes (``reconcile.in_flight_codec.fit``)."""
        dropped = self._shed(count, now=now, window=0.0)
        self.outcomes += dropped
        return dropped

    def _shed(self, count: int, *, now: int, window: float) -> list[Outcome]:
        if count <= 0:
            return []
        urgency = sorted(self._open, key=lambda k: (self._open[k].item.earliest_start, k))
        dropped = []
        for key in urgency[-count:]:
            held = self._open[key]  # charged to now, not to its own deadline:
            dropped.append(self._outcome(key[0], held, False, now=now, window=window, until=now))
            self._close(key, now=now)
            self.dropped[held.item.source] = self.dropped.get(held.item.source, 0) + 1
        return dropped

    def _close(self, key: tuple[str, str], *, now: int) -> None:
        """``key`` is no longer in flight: it ended now."""
        del self._open[key]
        del self._pool_keys[key[0]][key]
        self._ended.pop(key, None)  # re-added last: the dict stays in time order
        self._ended[key] = now

    def ended(self, pool: str, key: str) -> bool:
        """Whether ``key`` on ``pool`` ended lately - came (its pods are demand now) or was
        withdrawn: its source may list it again, but it is not planned nor judged again."""
        return (pool, key) in self._ended

    def _seen(
        self, pool: str, items: Iterable[AnnouncedItem], *, now: int
    ) -> dict[tuple[str, str], AnnouncedItem]:
        """This reading's items that may still come, each with its first deadline."""
        seen = {}
        for read in items:
            key = (pool, read.key)
            if key in self._ended:
                continue  # judged already: announcing it again buys nothing
            before = self._open.get(key)
            item = read
            if before is not None and before.item.latest_start < read.latest_start:
                latest = before.item.latest_start  # its first deadline holds
                item = dataclasses.replace(
                    read, earliest_start=min(read.earliest_start, latest), latest_start=latest
                )
            if now <= item.latest_start:
                seen[key] = item  # (still listed past it: resolved as not come)
        return seen

    def _came(
        self,
        key: tuple[str, str],
        held: InFlight,
        seen: dict[tuple[str, str], AnnouncedItem],
        *,
        now: int,
        readable: frozenset[str] | None,
        present: frozenset[tuple[str, str]] | None,
        marking: frozenset[str],
    ) -> bool | None:
        """Whether the open item ``key`` came now (True), did not come (False) or is still
        open (None), by the rules of the class docstring."""
        item = held.item
        if present is not None and item.source in marking:
            if (item.source, item.key) in present:
                return now <= item.latest_start
            return False if now > item.latest_start else None
        if key in seen or (readable is not None and item.source not in readable):
            return None
        return now <= item.latest_start

    def _outcome(
        self,
        pool: str,
        held: InFlight,
        came: bool,
        *,
        now: int,
        window: float,
        until: int | None = None,
    ) -> Outcome:
        """The outcome of ``held`` ending now; a come item starts its use (``core.notice_use``).
        Prewarm was held for it from when it became due to ``until`` (default: now if it came,
        else its latest start)."""
        hours = 0.0
        if held.due_since is not None:
            if until is None:
                until = now if came else held.item.latest_start
            hours = held.item.gpus * max(0, until - held.due_since) / 3600
        notice = now - held.first_seen
        if came:
            self.use.came(pool, held.item.key, ahead=notice >= window, at=now)
        return Outcome(
            held.item.source,
            pool,
            held.item.key,
            came,
            now,
            hours,
            gpus=held.item.gpus,
            notice_seconds=notice,
            ahead=came and notice >= window,
            namespace=held.item.namespace,
        )

    def saved(self) -> tuple[tuple[Outcome, ...], tuple[InFlight, ...], UseTotals]:
        """What a restart needs: the outcomes, the items in flight, the GPU-hours followed."""
        return tuple(self.outcomes), tuple(self._open.values()), self.use.saved()

    def restore(
        self, outcomes: Iterable[Outcome], in_flight: Iterable[InFlight], use: UseTotals
    ) -> None:
        """The ledger as ``saved`` left it (after a restart)."""
        self.outcomes = list(outcomes)
        self._open = {(f.item.pool, f.item.key): f for f in in_flight}
        self._pool_keys = {}
        for key in self._open:
            self._pool_keys.setdefault(key[0], {})[key] = None
        self.use.restore(use)

    def precision(self, source: str, *, now: int) -> tuple[float | None, int]:
        """(items that came / items resolved, resolved) over the trust window ending ``now``."""
        mine = [
            o
            for o in self.outcomes
            if o.source == source and now - TRUST_WINDOW_SECONDS < o.at <= now
        ]
        if not mine:
            return None, 0
        return sum(o.came for o in mine) / len(mine), len(mine)

    def waste_gpu_hours(self, source: str, *, now: int) -> float:
        """GPU-hours held for this source's items that did not come, over the trust window."""
        return sum(
            o.held_gpu_hours
            for o in self.outcomes
            if o.source == source and not o.came and o.at > now - TRUST_WINDOW_SECONDS
        )

    def judged(self, status: SourceStatus, *, now: int) -> SourceStatus:
        """``status`` with the source's precision, waste, trust and notice filled in."""
        value, count = self.precision(status.source, now=now)
        cut = self.distrusted(now=now)
        prefix = f"{status.source}/"
        came = [
            o
            for o in self.outcomes
            if o.source == status.source and o.came and o.at > now - TRUST_WINDOW_SECONDS
        ]
        return dataclasses.replace(
            status,
            precision=value,
            resolved=count,
            waste_gpu_hours=self.waste_gpu_hours(status.source, now=now),
            trusted=status.source not in cut,
            distrusted_namespaces=tuple(
                k.removeprefix(prefix) for k in cut if k.startswith(prefix)
            ),
            dropped=self.dropped.get(status.source, 0),
            came_gpus=sum(o.gpus for o in came),
            ahead_gpus=sum(o.gpus for o in came if o.ahead),
            median_notice_seconds=(
                statistics.median(o.notice_seconds for o in came) if came else None
            ),
        )

    def by_pool(self, pools: Iterable[str], *, now: int) -> tuple[PoolNotice, ...]:
        """Each source's announced work on each of ``pools`` over the trust window: its
        GPU-hours by notice, the pool's, precision and the notice its items gave."""
        return tuple(found for pool in pools for found in self._of_pool(pool, now=now))

    def _of_pool(self, pool: str, *, now: int) -> list[PoolNotice]:
        hours = self.use.gpu_hours(pool, now=now)
        mine = [o for o in self.outcomes if o.pool == pool and now - TRUST_WINDOW_SECONDS < o.at]
        sources = sorted({s for s, _ in hours if s} | {o.source for o in mine})
        out = []
        for source in sources:
            resolved = [o for o in mine if o.source == source]
            came = [o for o in resolved if o.came]
            out.append(
                PoolNotice(
                    pool,
                    source,
                    {kind: h for (s, kind), h in hours.items() if s == source},
                    hours.get(("", ALL), 0.0),
                    len(came) / len(resolved) if resolved else None,
                    len(resolved),
                    spread(o.notice_seconds for o in came),
                )
            )
        return out

    def over_share(self, *, now: int, limit: float) -> dict[str, str]:
        """``over_share`` of this ledger's outcomes and items in flight."""
        return over_share(self.outcomes, self._open.values(), now=now, limit=limit)

    def distrusted(self, *, now: int) -> dict[str, str]:
        """Trust keys (``source/namespace``; a source alone for items of no namespace) whose
        items the plan leaves out now, with why: below ``TRUST_THRESHOLD`` (on at least
        ``TRUST_MIN_OUTCOMES`` items) at every moment of the last day. One team whose items do
        not come cuts its own, never the source's items of another namespace. Computed once
        per reading (asked again at the same ``now`` over the same outcomes: the same answer)."""
        asked = (now, len(self.outcomes), self.outcomes[-1].at if self.outcomes else 0)
        if self._trust is None or self._trust[0] != asked:
            self._trust = (asked, distrusted_keys(self.outcomes, now=now))
        return dict(self._trust[1])


def over_share(
    outcomes: Iterable[Outcome], in_flight: Iterable[InFlight], *, now: int, limit: float
) -> dict[str, str]:
    """Trust keys (``source/namespace``) of every namespace whose announced work held at least
    ``limit`` GPU-hours of prewarm in the last day - the items that ended in it (what each held,
    an upper bound) and those still in flight since they became due - with why. Items of no
    namespace are never cut this way (the twin's, a cluster-scoped source's)."""
    held: dict[str, float] = {}
    sources: dict[str, set[str]] = {}
    since = now - DAY_SECONDS
    for o in outcomes:
        if o.namespace and o.at > since:
            held[o.namespace] = held.get(o.namespace, 0.0) + o.held_gpu_hours
            sources.setdefault(o.namespace, set()).add(o.source)
    for f in in_flight:
        item = f.item
        sources.setdefault(item.namespace, set()).add(item.source)
        if item.namespace and f.due_since is not None:
            hours = item.gpus * max(0, now - max(f.due_since, since)) / 3600
            held[item.namespace] = held.get(item.namespace, 0.0) + hours
    out = {}
    for namespace, hours in sorted(held.items()):
        if hours >= limit:
            why = (
                f"namespace {namespace}'s announced work held {hours:.1f} GPU-hours of prewarm"
                f" in a day, its share is {limit:.1f}"
            )
            for source in sorted(sources[namespace]):
                out[trust_key(source, namespace)] = why
    return out


def over_gpu_share(
    due: Mapping[str, Sequence[AnnouncedItem]],
    pool_caps: Mapping[str, int],
    *,
    share: float,
    total_gpus: int,
    left_out: Mapping[str, str],
) -> dict[str, dict[str, str]]:
    """Per pool, the keys of the items ``due`` there that the plan leaves out now, with why:
    their namespace's work due at once is past ``share`` of the pool's cap (``pool_caps``, on
    that pool) or of ``total_gpus`` (over all pools). Soonest first is kept, so what a tenant
    adds later never displaces what it announced earlier. Items of no namespace, items whose
    pods stay in the histories (``in_history``: Kueue's reserved workloads, bounded by the
    quota the cluster's admin sets) and items already left out (``left_out``, by trust key)
    claim nothing."""
    ordered = sorted(
        ((item, pool) for pool, items in due.items() for item in items),
        key=lambda entry: (entry[0].earliest_start, entry[0].key, entry[1]),
    )
    total_limit = math.floor(share * total_gpus)
    on_pool: dict[tuple[str, str], int] = {}
    overall: dict[str, int] = {}
    out: dict[str, dict[str, str]] = {}
    for item, pool in ordered:
        namespace = item.namespace
        if not namespace or item.in_history or item.trust_key in left_out:
            continue
        pool_limit = math.floor(share * pool_caps[pool])
        here = on_pool.get((namespace, pool), 0) + item.gpus
        everywhere = overall.get(namespace, 0) + item.gpus
        if here > pool_limit or everywhere > total_limit:
            which = f"{pool_limit} of this pool's" if here > pool_limit else f"{total_limit} of all"
            out.setdefault(pool, {})[item.key] = (
                f"namespace {namespace}'s announced work due at once is past its share"
                f" ({which} prewarm GPUs)"
            )
            continue
        on_pool[(namespace, pool)], overall[namespace] = here, everywhere
    return out


@dataclass(frozen=True)
class NamespaceNotice:
    """One namespace's announced work over the trust window: what acting on it held."""

    namespace: str
    resolved: int
    precision: float
    """Share of its items resolved in the window that came."""
    held_gpu_hours: float
    """Prewarm held for its items before their pods came, or until they were withdrawn."""
    waste_gpu_hours: float
    """Of that, what was held for items that did not come."""


def top_namespaces(
    outcomes: Iterable[Outcome], *, now: int, count: int = 10
) -> tuple[NamespaceNotice, ...]:
    """The ``count`` namespaces whose announced work held the most prewarm in the last 7 days
    (every source), with their precision and waste: whom notice serves, and at what cost."""
    by_namespace: dict[str, list[Outcome]] = {}
    for o in outcomes:
        if o.namespace and o.at > now - TRUST_WINDOW_SECONDS:
            by_namespace.setdefault(o.namespace, []).append(o)
    found = [
        NamespaceNotice(
            namespace,
            len(mine),
            sum(o.came for o in mine) / len(mine),
            sum(o.held_gpu_hours for o in mine),
            sum(o.held_gpu_hours for o in mine if not o.came),
        )
        for namespace, mine in by_namespace.items()
    ]
    found.sort(key=lambda n: (-n.held_gpu_hours, n.namespace))
    return tuple(found[:count])


def distrusted_keys(outcomes: Iterable[Outcome], *, now: int) -> dict[str, str]:
    """``NoticeLedger.distrusted`` of ``outcomes``: per trust key, the precision at every
    moment of the last day that it could change (an outcome entered or left the window), in
    arrays - O(n log n) in the outcomes, whatever the tenants make of their number."""
    by_key: dict[tuple[str, str], tuple[list[int], list[bool]]] = {}
    for o in outcomes:
        ats_of, came_of = by_key.setdefault((o.source, o.namespace), ([], []))
        ats_of.append(o.at)
        came_of.append(o.came)
    out = {}
    for (source, namespace), (ats_of, came_of) in sorted(by_key.items()):
        order = np.argsort(np.asarray(ats_of, dtype=np.int64), kind="stable")
        ats = np.asarray(ats_of, dtype=np.int64)[order]
        came = np.concatenate(([0], np.cumsum(np.asarray(came_of, dtype=np.int64)[order])))
        start = now - DISTRUST_AFTER_SECONDS
        changes = np.concatenate((ats, ats + TRUST_WINDOW_SECONDS))
        moments = np.unique(
            np.concatenate(([start], changes[(changes > start) & (changes <= now)], [now]))
        )
        right = np.searchsorted(ats, moments, side="right")
        left = np.searchsorted(ats, moments - TRUST_WINDOW_SECONDS, side="right")
        count, good = right - left, came[right] - came[left]
        below = (count >= TRUST_MIN_OUTCOMES) & (good < TRUST_THRESHOLD * count)
        if bool(below.all()):
            value = float(good[-1] / count[-1])
            out[trust_key(source, namespace)] = (
                f"precision {value:.2f} over {int(count[-1])} items in 7 days < {TRUST_THRESHOLD}"
                " for a day"
            )
    return out
