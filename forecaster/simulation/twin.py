"""Discrete-event twin of one GPU NodePool: jobs, nodes, placeholders, reactive Karpenter.

* Jobs arrive from a trace. A job that fits a node (<= GPUs per node) is bin-packed (best fit)
  onto a Ready node's free GPUs; a larger job needs whole nodes and starts only when all of them
  are free at once (gang admission, as Volcano/Kueue do). Pending jobs are retried whenever
  capacity frees up (any pending job that fits may start: no head-of-line blocking).
* A job that does not fit may preempt placeholders (each holds a whole node); it starts after
  ``preempt_grace_seconds``. The prewarm behaves as its backend declares (``conduct``, a
  ``core.actions.PrewarmConduct``): held without pods (a CapacityBuffer), there is no grace and
  its virtual pods pull nothing; refilled by the autoscaler, it comes back within a
  provisioning batch.
* Reactive Karpenter: pods pending for ``batch_seconds`` make it launch nodes for what launching
  nodes will not hold; a node is Ready after ``provision_seconds``. The workload image takes
  ``image_pull_seconds`` to pull on a node the first time - except on a node whose placeholder
  already pulled it (``warm_image``).
* Empty nodes are removed after ``consolidate_after_seconds``, unless the policy protects the
  NodePool (our disruption budget ``nodes: "0"`` for Empty blocks it, as in the actuator).
* The policy is asked every ``tick_seconds`` for a placeholder target and whether to protect -
  and, with ``wake_seconds`` (the daemon's pod watch), also when a job arrives, no sooner than
  ``wake_seconds`` after its previous decision; the regular ticks keep their schedule.

* What a cluster announces before its pods exist is served too: with ``notice`` the declared
  CronJobs and JobSets (``declared_notice``), read by the daemon's own notice sources; with
  ``kueue_quota_gpus`` or ``kueue_notice_seconds`` the workloads Kueue holds or has admitted.
  The replayed daemon reads all of it through ``simulation.live`` as it reads a cluster.

Everything is recorded for metrics: per-job waits, node lifetimes, placeholder lifetimes and how
they ended (preempted = used prewarm; removed or expired = unused), per-minute demand/capacity.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from forecaster.accelerators import GPU
from forecaster.actuators.notice.base import GRACE_SECONDS, read_notice
from forecaster.actuators.notice.registry import SOURCES
from forecaster.core.actions import PLACEHOLDER_PODS, PrewarmConduct
from forecaster.core.cluster import (
    ARRIVAL_WINDOWS_SECONDS,
    MeasuredLead,
    PoolSnapshot,
    RecentArrivals,
)
from forecaster.core.jobs import JobTrace
from forecaster.core.kueue import KueueRoom
from forecaster.core.notice import AnnouncedItem
from forecaster.core.policy import Budgets
from forecaster.durations import DAY
from forecaster.simulation.declared_notice import CRON, PIPELINE, NoticeMix, TwinObjects, declare
from forecaster.simulation.kueue_objects import TwinWorkloads

OBJECT_SOURCES = ("cronjob", "jobset", "kueue-pending")
"""The notice sources the twin's declared objects are read by (the daemon's own)."""
MODELLED_SOURCES = (*OBJECT_SOURCES, "kueue")
"""Every notice source whose objects the twin makes (Kueue's reserved workloads: ``kueue``)."""

ARRIVE, FINISH, READY, TICK, PROVISION, WAKE = range(6)


@dataclass(frozen=True)
class TwinConfig:
    """The modelled NodePool and Karpenter timings."""

    pool: str = "gpu"
    gpus_per_node: int = 8
    resource: str = GPU
    """The pool's accelerator resource: the twin's objects request it, its notice reads it
    (every count of the twin is in its unit)."""
    provision_seconds: float = 60.0
    image_pull_seconds: float = 300.0
    batch_seconds: float = 10.0
    consolidate_after_seconds: float = 300.0
    preempt_grace_seconds: float = 5.0
    warm_image: bool = True
    tick_seconds: float = 60.0
    wake_seconds: float | None = None
    """A new pod wakes a decision, at most this soon after the previous one (the daemon's pod
    watch, ``service.scheduler.MIN_WAKE_SECONDS``); None: decisions only every tick."""
    placeholder_ttl_seconds: float = 3600.0
    nodepool_limit_gpus: int | None = None
    max_prewarm_gpus: int | None = None
    """Cap on placeholder GPUs; a tick above it (or above the NodePool limit) is a breach."""
    budgets: Budgets | None = None
    """The shared caps the planner enforces (``core.policy.Budgets``); a tick above any of them
    is a breach too: prewarm GPUs over the total, their cost an hour over the cost cap (at
    ``price_per_gpu_hour``), or prewarm GPU-hours over the last 24 h over the daily cap -
    counted on the nodes placeholders hold, as the ledger charges them."""
    price_per_gpu_hour: float = 0.0
    conduct: PrewarmConduct = PLACEHOLDER_PODS
    """How the backend's prewarm behaves (``actuators.prewarm.registry.backend_conduct``).
    Without pods (a CapacityBuffer) a real pod uses its capacity with no preemption grace
    (nothing is evicted) and pulls no image ahead (its pods are virtual: warm for nodes, cold
    for images); refilled by the autoscaler, it comes back within its batch, not at the
    daemon's next tick."""
    signals: tuple[TwinSignal, ...] = ()
    """The registered signals as the twin shows them (``app.signals``), read into every
    snapshot as the observer reads them into the daemon's."""
    kueue_quota_gpus: int | None = None
    """Kueue admits at most this many GPUs at once (one ClusterQueue, BestEffortFIFO): jobs
    beyond it wait as workloads, with no pods, so nothing provisions for them - and the planner
    sees the room left (``PoolSnapshot.kueue``)."""
    kueue_notice_seconds: float = 0.0
    """Each job's Kueue workload holds quota this long before its pods are created (an
    admission check such as ProvisioningRequest, or a queue that hands work over ahead): the
    daemon's ``kueue`` notice source reads those Workloads (``simulation.kueue_objects``) and the
    planner covers their GPUs. Waits still count from
    the pods' creation, so runs with and without notice compare job for job. 0: no notice."""
    notice: NoticeMix | None = None
    """Declared notice (``simulation.declared_notice``): the share of jobs announced by
    CronJobs and JobSets, which the daemon's own notice sources read from the twin. Waits
    still count from the pods' creation. None: nothing is announced."""
    notice_sources: tuple[str, ...] = MODELLED_SOURCES
    """The daemon's configured notice sources (``notice.sources``): the twin's objects are read
    by those of them it models, as the daemon would read them; the others hold nothing here."""
    notice_grace_seconds: int = GRACE_SECONDS
    """``notice.grace_seconds``: how late past its latest start announced work may still come."""

    def __post_init__(self) -> None:
        if self.kueue_notice_seconds < 0:
            raise ValueError("kueue_notice_seconds must be >= 0")
        if self.kueue_notice_seconds and self.kueue_quota_gpus is not None:
            raise ValueError("a Kueue quota and Kueue notice are not modelled together")


@dataclass(frozen=True)
class Decision:
    """What a policy wants now."""

    target_gpus: int
    """Total prewarm GPUs wanted (whole placeholders)."""
    protect: bool = False


class TwinView(Protocol):
    """What policies may look at: the past and the present, never the future."""

    now: float

    def demand_history(self, *, since: float) -> tuple[int, np.ndarray]:
        """(start, per-minute GPUs requested) observed from ``since`` up to the last minute -
        by pods of unannounced work, as the daemon's history query counts them."""
        ...

    def snapshot(self) -> PoolSnapshot:
        """The pool as the observer would see it now."""
        ...

    def ended_after(self, count: int) -> tuple[int, float, int]:
        """Placeholders ended so far, and of those after the first ``count``: unused GPU-hours
        and GPUs real jobs took (``Twin.ended_after``)."""
        ...

    def created_gpus(self, *, since: float) -> int:
        """GPUs requested by pods of unannounced work created after ``since`` (their creation
        time is public)."""
        ...

    def arrival_history(self, *, since: float) -> tuple[int, np.ndarray]:
        """(start, per-minute GPUs of pods created) on ``demand_history``'s grid."""
        ...

    def free_gpus(self) -> list[int]:
        """Free GPUs of each Ready node running real pods (an empty node is consolidated
        unless a placeholder keeps it; one holding ours is the prewarm itself)."""
        ...

    def pending_requests(self) -> list[int]:
        """GPUs each pending pod asks for."""
        ...


class TwinSignal(Protocol):
    """A signal as the twin shows it: read from what a policy may see (never ``snapshot``,
    which it fills)."""

    name: str

    def read(self, view: TwinView) -> float:
        """The pool's value now."""
        ...


class Policy(Protocol):
    """A prewarm policy under replay."""

    name: str

    def decide(self, view: TwinView) -> Decision:
        """Placeholder GPUs wanted now (and NodePool protection)."""
        ...


@dataclass
class _Node:
    id: int
    launched: float
    ready_at: float
    free: int
    pulled_at: float = math.inf
    placeholder: int | None = None
    jobs: set[int] = field(default_factory=set)
    empty_since: float | None = None
    removed: float | None = None


@dataclass
class _Placeholder:
    id: int
    created: float
    node: int | None = None
    ended: float | None = None
    preempted: bool = False


@dataclass
class TwinRecord:
    """Everything metrics need, as arrays and lists."""

    job_submit: np.ndarray
    job_start: np.ndarray
    job_placed: np.ndarray
    """When each job was bound to its nodes (NaN: never). ``job_start`` minus this is the wait
    on the node - the preemption grace and the rest of an image pull - not for capacity."""
    job_gpus: np.ndarray
    job_duration: np.ndarray
    nodes: list[tuple[float, float, int]]
    """(launched, removed or end, GPUs) per node."""
    placeholders: list[tuple[float, float, int, bool]]
    """(created, ended, GPUs, preempted) per placeholder."""
    minute_start: int
    demand: np.ndarray
    capacity: np.ndarray
    prewarm: np.ndarray
    waiting: np.ndarray
    breaches: int
    end: float
    breach_times: tuple[float, ...] = ()
    """When each breached tick happened (so a window counts only its own)."""


def nodes_needed(requests: Sequence[int], *, free: Sequence[int], gpus_per_node: int) -> int:
    """New nodes the ``requests`` (in order) need beyond the ``free`` GPUs of each node, packed
    as Karpenter packs pending pods: first fit for a request that fits one node, whole free
    nodes for a bigger one (the twin's provisioning and the oracle's plan)."""
    bins = list(free)
    new = 0
    for gpus in requests:
        if gpus > gpus_per_node:
            whole = -(-gpus // gpus_per_node)
            empty = [i for i, b in enumerate(bins) if b == gpus_per_node][:whole]
            for i in empty:
                bins[i] = 0
            new += whole - len(empty)
            continue
        slot = next((i for i, b in enumerate(bins) if b >= gpus), None)
        if slot is None:
            bins.append(gpus_per_node - gpus)
            new += 1
        else:
            bins[slot] -= gpus
    return new


class Twin:
    """One replay run; ``run()`` returns a ``TwinRecord``."""

    def __init__(
        self,
        jobs: JobTrace,
        policy: Policy,
        config: TwinConfig,
        *,
        start: float,
        end: float,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        self.jobs = jobs
        self._gpus: list[int] = jobs.gpus.tolist()  # per job, as Python ints: read every tick
        self.policy = policy
        self.cfg = config
        self.start = start
        self.end = end
        self.now = start
        self.progress = progress
        self._events: list[tuple[float, int, int, int]] = []
        self._seq = 0
        self.nodes: dict[int, _Node] = {}
        self.live: dict[int, _Node] = {}  # nodes not removed yet
        self.placeholders: dict[int, _Placeholder] = {}  # every one ever (the record)
        self.live_placeholders: dict[int, _Placeholder] = {}  # not ended yet
        self._ended: list[_Placeholder] = []  # in the order they ended (times ascending)
        self.pending: list[int] = []  # real jobs, FIFO
        self.pending_placeholders: list[int] = []
        self.job_start = np.full(len(jobs), np.nan)
        self.job_placed = np.full(len(jobs), np.nan)
        self.job_nodes: dict[int, list[int]] = {}
        self.requested = 0
        self.requested_announced = 0  # of ``requested``, by jobs of announced work
        self.protect = False
        self.breaches = 0
        self._breach_times: list[float] = []
        minutes = int((end - start) // 60) + 1
        self._minute_start = int(start - start % 60)
        self._demand = np.zeros(minutes)
        self._unannounced = np.zeros(minutes)  # the history the daemon reads
        self._capacity = np.zeros(minutes)
        self._prewarm = np.zeros(minutes)
        self._waiting = np.zeros(minutes)
        self._next_id = 0
        self._provision_queued = False
        self._target = 0  # prewarm chunks the last decision asked for
        self._decided_at = -math.inf
        self._wake_queued = False
        self.queued: list[int] = []  # workloads Kueue holds back (no pods yet)
        self._launched: deque[float] = deque()  # node launch times of the last day, ascending
        self._created_at: list[float] = []  # unannounced pods' creation times, ascending
        self._created_cum: list[int] = [0]  # GPUs created up to each of them
        self.admitted_gpus = 0
        self.objects, self._announced_job = _announced(jobs, config)
        self.workloads = _kueue_workloads(jobs, config, start=start, end=end)

    # ---- TwinView ---------------------------------------------------------------------------
    def demand_history(self, *, since: float) -> tuple[int, np.ndarray]:
        """Per-minute GPUs requested by pods of unannounced work so far (the current minute is
        not complete): announced work is planned from its notice, not learnt."""
        last = int((self.now - self._minute_start) // 60)
        first = max(0, int((since - self._minute_start) // 60))
        return self._minute_start + 60 * first, self._unannounced[first:last].copy()

    def snapshot(self) -> PoolSnapshot:
        """What the observer would report now."""
        ready = launching = stranded = empty = 0
        for node in self.live.values():  # one pass: this runs every tick of every replay
            if node.ready_at > self.now:
                launching += self.cfg.gpus_per_node
                continue
            ready += self.cfg.gpus_per_node
            if node.jobs:
                stranded += node.free
            elif node.placeholder is None:
                empty += node.free
        running = sum(map(self._gpus.__getitem__, self.job_nodes))
        pending = sum(map(self._gpus.__getitem__, self.pending))
        held = self.cfg.gpus_per_node * len(self.live_placeholders)
        return PoolSnapshot(
            pool=self.cfg.pool,
            observed_at=int(self.now),
            allocatable_gpus=ready,
            launching_gpus=launching,
            running_gpus=running,
            pending_gpus=pending,
            prewarm_gpus=held,
            nodepool_limit_gpus=self.cfg.nodepool_limit_gpus,
            stranded_gpus=stranded,
            empty_gpus=empty,
            measured_lead=self._measured_lead(),
            arrivals=RecentArrivals(
                tuple(self.created_gpus(since=self.now - w) for w in ARRIVAL_WINDOWS_SECONDS)
            ),
            kueue=self._kueue_room(),
            announced=self._announced(),
            announced_real_gpus=self.requested_announced,
            unbound_placeholder_gpus=self.cfg.gpus_per_node * len(self.pending_placeholders),
            signals=tuple((s.name, float(s.read(self))) for s in self.cfg.signals),
        )

    def _announced(self) -> tuple[AnnouncedItem, ...]:
        """What the daemon's notice sources read from the twin's objects now."""
        items: tuple[AnnouncedItem, ...] = ()
        if self.objects is not None:
            self.objects.now = self.now
            reading = read_notice(
                self.objects,
                [SOURCES.get(n) for n in OBJECT_SOURCES if n in self.cfg.notice_sources],
                pools=self.objects.pools(),
                now=int(self.now),
                grace_seconds=self.cfg.notice_grace_seconds,
                resources={self.cfg.pool: self.cfg.resource},
                node_units={self.cfg.pool: self.cfg.gpus_per_node},
            )
            items += reading.items.get(self.cfg.pool, ())
        if self.workloads is not None and "kueue" in self.cfg.notice_sources:
            # its admission check takes the notice, then the grace
            self.workloads.now = self.now
            reading = read_notice(
                self.workloads,
                (SOURCES.get("kueue"),),
                pools=(),
                now=int(self.now),
                grace_seconds=self.cfg.notice_grace_seconds
                + math.ceil(self.cfg.kueue_notice_seconds),
                resources={self.cfg.pool: self.cfg.resource},
            )
            items += reading.items.get(self.cfg.pool, ())
        return items

    def _kueue_room(self) -> KueueRoom | None:
        """Kueue's quota as the observer reads it: the room it leaves (None: no quota)."""
        if self.cfg.kueue_quota_gpus is not None:
            return KueueRoom(max(0, self.cfg.kueue_quota_gpus - self.admitted_gpus), "replay quota")
        return None

    def _measured_lead(self) -> MeasuredLead | None:
        """What the observer would measure: the twin's launches of the last day take exactly
        the provisioning time, and a pod on a fresh node waits the image pull."""
        while self._launched and self._launched[0] <= self.now - DAY:
            self._launched.popleft()
        if not self._launched:
            return None
        return MeasuredLead(
            provisioning_seconds=self.cfg.provision_seconds,
            startup_seconds=self.cfg.image_pull_seconds,
            launches=len(self._launched),
        )

    def created_gpus(self, *, since: float) -> int:
        """GPUs requested by pods of unannounced work created in (``since``, now]."""
        first = bisect.bisect_right(self._created_at, since)
        return self._created_cum[-1] - self._created_cum[first]

    def arrival_history(self, *, since: float) -> tuple[int, np.ndarray]:
        """GPUs of pods created per minute on the grid of ``demand_history``: the count at
        ``t`` is of the pods created in (t - 60, t], as Prometheus counts them at ``t``."""
        first, demand = self.demand_history(since=since)
        edges = first - 60 + 60 * np.arange(demand.size + 1, dtype=np.float64)
        cumulative = np.asarray(self._created_cum, dtype=np.float64)
        index = np.searchsorted(np.asarray(self._created_at), edges, side="right")
        return first, np.diff(cumulative[index])

    def free_gpus(self) -> list[int]:
        """Free GPUs per Ready node running real pods (the observer sees allocations)."""
        return [n.free for n in self._ready_nodes() if n.placeholder is None and n.jobs]

    def pending_requests(self) -> list[int]:
        """GPUs of each pending real pod."""
        return [self._gpus[j] for j in self.pending]

    def ended_after(self, count: int) -> tuple[int, float, int]:
        """Of the placeholders that ended after the first ``count``: how many, their unused
        GPU-hours and the GPUs real jobs took (by position, not time: a placeholder that ends at
        the very second of a tick is counted once, on the next call)."""
        ended = self._ended[count:]
        gpus = self.cfg.gpus_per_node
        unused = (
            sum((p.ended or p.created) - p.created for p in ended if not p.preempted) * gpus / 3600
        )
        return len(self._ended), unused, sum(gpus for p in ended if p.preempted)

    # ---- the event loop ------------------------------------------------------------------------
    def run(self) -> TwinRecord:
        """Simulate from ``start`` to ``end`` in one go."""
        self.begin()
        self.advance_to(self.end)
        return self.record()

    def begin(self) -> None:
        """Queue the trace's arrivals and the first tick (once)."""
        if self._events:
            return
        for j in range(len(self.jobs)):
            if self.start <= self.jobs.submit[j] < self.end:
                self._push(float(self.jobs.submit[j]), ARRIVE, j)
        self._push(self.start, TICK, 0)

    def advance_to(self, t: float) -> None:
        """Process every event before ``t`` (capped at ``end``); the clock then reads ``t``."""
        t = min(t, self.end)
        while self._events and self._events[0][0] < t:
            event_time, _, kind, ref = heapq.heappop(self._events)
            self.now = event_time
            if kind == ARRIVE:
                self.queued.append(ref)
                self._admit()
                self._schedule()
                self._queue_provision()
            elif kind == WAKE:
                self._wake_queued = False
                self._decide()
            elif kind == FINISH:
                self._finish(ref)
                if self._admit():
                    self._queue_provision()
                self._schedule()
            elif kind == READY:
                self._schedule()
            elif kind == PROVISION:
                self._provision_queued = False
                self._provision()
            else:
                self._tick()
        self.now = max(self.now, t)

    def _push(self, t: float, kind: int, ref: int) -> None:
        self._seq += 1
        heapq.heappush(self._events, (t, self._seq, kind, ref))

    def _queue_wake(self) -> None:
        """A new pod (the watch's ADDED): decide at once, or once the minimum gap is over."""
        if self.cfg.wake_seconds is None or self._wake_queued:
            return
        self._wake_queued = True
        self._push(max(self.now, self._decided_at + self.cfg.wake_seconds), WAKE, 0)

    def _decide(self) -> None:
        """Ask the policy and carry its decision out."""
        self._decided_at = self.now
        decision = self.policy.decide(self)
        self._target = decision.target_gpus // self.cfg.gpus_per_node
        self._set_placeholders(self._target)
        self.protect = decision.protect
        self._expire_placeholders()
        self._consolidate()
        self._schedule()
        self._provision()

    def _breached(self, minute: int) -> bool:
        """Whether this minute's capacity or prewarm is over a cap (every cap the daemon keeps:
        the NodePool limit, the pool's and the total prewarm GPUs, cost an hour and GPU-hours
        over the last 24 h)."""
        limit, cap, budgets = (
            self.cfg.nodepool_limit_gpus,
            self.cfg.max_prewarm_gpus,
            self.cfg.budgets,
        )
        prewarm = float(self._prewarm[minute])
        if (limit is not None and self._capacity[minute] > limit) or (
            cap is not None and prewarm > cap
        ):
            return True
        if budgets is None:
            return False
        day = self._prewarm[max(0, minute - 1439) : minute + 1]
        return (
            prewarm > budgets.max_total_prewarm_gpus
            or prewarm * self.cfg.price_per_gpu_hour > budgets.max_cost_per_hour + 1e-9
            or float(day.sum()) / 60 > budgets.max_prewarm_gpu_hours_per_day + 1e-9
        )

    def _tick(self) -> None:
        minute = int((self.now - self._minute_start) // 60)
        self._decide()
        if 0 <= minute < self._demand.size:
            self._demand[minute] = self.requested
            self._unannounced[minute] = self.requested - self.requested_announced
            self._capacity[minute] = len(self.live) * self.cfg.gpus_per_node
            self._prewarm[minute] = len(self.live_placeholders) * self.cfg.gpus_per_node
            self._waiting[minute] = len(self.pending)
            if self._breached(minute):
                self.breaches += 1
                self._breach_times.append(self.now)
        if self.progress is not None:
            self.progress(self.now)
        every = getattr(self.policy, "tick_seconds", None) or self.cfg.tick_seconds
        self._push(self.now + every, TICK, 0)

    # ---- placeholders ----------------------------------------------------------------------------
    def _set_placeholders(self, target: int) -> None:
        live = list(self.live_placeholders.values())
        while len(live) < target:
            self._next_id += 1
            placeholder = _Placeholder(self._next_id, self.now)
            self.placeholders[placeholder.id] = placeholder
            self.live_placeholders[placeholder.id] = placeholder
            self.pending_placeholders.append(placeholder.id)
            live.append(placeholder)
            self._queue_provision()  # Karpenter sees a pending placeholder within its batch
        if len(live) > target:
            live.sort(key=self._scale_down_order)
            for placeholder in live[: len(live) - target]:
                self._end_placeholder(placeholder, preempted=False)

    def _scale_down_order(self, placeholder: _Placeholder) -> tuple[int, float]:
        """The actuator's order (``placeholders._scale_down_order``): no node yet (youngest
        first), then Running (oldest first), then on a node still pulling (youngest first). A
        placeholder that pulls no image runs as soon as it is bound (nodes here are ready)."""
        if placeholder.node is None:
            return 0, -placeholder.created
        pulls = self.cfg.warm_image and self.cfg.conduct.pods
        if not pulls or self.nodes[placeholder.node].pulled_at <= self.now:
            return 1, placeholder.created
        return 2, -placeholder.created

    def _expire_placeholders(self) -> None:
        for placeholder in list(self.live_placeholders.values()):
            if self.now - placeholder.created >= self.cfg.placeholder_ttl_seconds:
                # the daemon renews by replacing: the old one ends unused, a new one takes its node
                node = placeholder.node
                self._end_placeholder(placeholder, preempted=False)
                self._next_id += 1
                fresh = _Placeholder(self._next_id, self.now, node=node)
                self.placeholders[fresh.id] = fresh
                self.live_placeholders[fresh.id] = fresh
                if node is not None:
                    self.nodes[node].placeholder = fresh.id
                    self.nodes[node].free = 0
                    self.nodes[node].empty_since = None
                else:
                    self.pending_placeholders.append(fresh.id)

    def _end_placeholder(self, placeholder: _Placeholder, *, preempted: bool) -> None:
        placeholder.ended = self.now
        placeholder.preempted = preempted
        del self.live_placeholders[placeholder.id]
        self._ended.append(placeholder)
        if placeholder.node is None:
            self.pending_placeholders.remove(placeholder.id)
            return
        node = self.nodes[placeholder.node]
        node.placeholder = None
        node.free = self.cfg.gpus_per_node  # a placeholder holds a whole node on its own
        node.empty_since = self.now

    # ---- scheduling ------------------------------------------------------------------------------
    def _ready_nodes(self) -> list[_Node]:
        return [n for n in self.live.values() if n.ready_at <= self.now]

    def _schedule(self) -> None:
        if not self.pending and not self.pending_placeholders:
            return  # nothing to place (most calls: every tick schedules)
        ready = self._ready_nodes()
        still: list[int] = []
        for j in self.pending:
            if not self._place(j, ready):
                still.append(j)
        self.pending = still
        remaining: list[int] = []
        for pid in self.pending_placeholders:
            node = next(
                (
                    n
                    for n in ready
                    if n.free == self.cfg.gpus_per_node and n.placeholder is None and not n.jobs
                ),
                None,
            )
            if node is None:
                remaining.append(pid)
                continue
            node.placeholder = pid
            node.free = 0
            node.empty_since = None
            warm = self.cfg.warm_image and self.cfg.conduct.pods  # virtual pods pull nothing
            if warm and node.pulled_at == math.inf:
                node.pulled_at = self.now + self.cfg.image_pull_seconds
            self.placeholders[pid].node = node.id
        self.pending_placeholders = remaining

    def _place(self, j: int, ready: list[_Node]) -> bool:
        gpus = self._gpus[j]
        per_node = self.cfg.gpus_per_node
        if gpus <= per_node:
            fits = [n for n in ready if n.placeholder is None and n.free >= gpus]
            if fits:
                node = min(fits, key=lambda n: (n.free, n.id))
                return self._start(j, [node], preempted=False)
            holders = [n for n in ready if n.placeholder is not None]
            if holders:
                node = min(holders, key=lambda n: n.id)
                self._end_placeholder(self.placeholders[node.placeholder], preempted=True)  # type: ignore[index]
                return self._start(j, [node], preempted=True)
            return False
        count = -(-gpus // per_node)
        empty = [n for n in ready if n.placeholder is None and not n.jobs]
        holders = [n for n in ready if n.placeholder is not None]
        if len(empty) + len(holders) < count:
            return False
        chosen = empty[:count]
        preempt = holders[: count - len(chosen)]
        for node in preempt:
            self._end_placeholder(self.placeholders[node.placeholder], preempted=True)  # type: ignore[index]
        return self._start(j, chosen + preempt, preempted=bool(preempt))

    def _start(self, j: int, nodes: list[_Node], *, preempted: bool) -> bool:
        gpus = self._gpus[j]
        grace = self.cfg.preempt_grace_seconds if preempted and self.cfg.conduct.pods else 0
        start = self.now + grace
        if preempted and self.cfg.conduct.refills:  # the autoscaler refills it by itself
            self._set_placeholders(self._target)
            self._queue_provision()
        for node in nodes:
            if node.pulled_at == math.inf:
                node.pulled_at = max(self.now, node.ready_at) + self.cfg.image_pull_seconds
            start = max(start, node.pulled_at)
            node.free -= min(gpus, self.cfg.gpus_per_node)
            node.jobs.add(j)
            node.empty_since = None
        self.job_start[j] = start
        self.job_placed[j] = self.now
        self.job_nodes[j] = [n.id for n in nodes]
        self._push(start + float(self.jobs.duration[j]), FINISH, j)
        return True

    def _admit(self) -> bool:
        """Kueue: queued workloads whose GPUs fit the quota become pods (all, without one)."""
        quota = self.cfg.kueue_quota_gpus
        admitted = False
        for j in list(self.queued):
            gpus = self._gpus[j]
            if quota is not None and self.admitted_gpus + gpus > quota:
                continue
            self.queued.remove(j)
            if self._announced_job[j]:
                self.requested_announced += gpus
            else:
                self._created_at.append(self.now)
                self._created_cum.append(self._created_cum[-1] + gpus)
            self.admitted_gpus += gpus
            self.requested += gpus
            self.pending.append(j)
            admitted = True
            self._queue_wake()  # its pod is created now: what the pod watch sees
        return admitted

    def _finish(self, j: int) -> None:
        self.admitted_gpus -= self._gpus[j]
        self.requested -= self._gpus[j]
        if self._announced_job[j]:
            self.requested_announced -= self._gpus[j]
        for nid in self.job_nodes.pop(j):
            node = self.nodes[nid]
            node.jobs.discard(j)
            node.free += min(self._gpus[j], self.cfg.gpus_per_node)
            if not node.jobs and node.placeholder is None:
                node.empty_since = self.now

    # ---- Karpenter -------------------------------------------------------------------------------
    def _queue_provision(self) -> None:
        if not self._provision_queued:
            self._provision_queued = True
            self._push(self.now + self.cfg.batch_seconds, PROVISION, 0)

    def _provision(self) -> None:
        if not self.pending and not self.pending_placeholders:
            return  # nothing pending: no node is needed (most calls: every tick provisions)
        per_node = self.cfg.gpus_per_node
        launching = [n for n in self.live.values() if n.ready_at > self.now]
        bins = [n.free for n in launching if n.placeholder is None]
        ripe = self.now - self.cfg.batch_seconds + 1e-9  # Karpenter batches new pending pods
        items = sorted(
            (self._gpus[j] for j in self.pending if self.jobs.submit[j] <= ripe),
            reverse=True,
        )
        items += [per_node] * sum(
            1 for p in self.pending_placeholders if self.placeholders[p].created <= ripe
        )
        needed_nodes = nodes_needed(items, free=bins, gpus_per_node=per_node)
        limit = self.cfg.nodepool_limit_gpus
        live = len(self.live)
        for _ in range(needed_nodes):
            if limit is not None and (live + 1) * per_node > limit:
                break
            self._next_id += 1
            node = _Node(self._next_id, self.now, self.now + self.cfg.provision_seconds, per_node)
            self.nodes[node.id] = node
            self.live[node.id] = node
            self._launched.append(self.now)
            live += 1
            self._push(node.ready_at, READY, node.id)

    def _consolidate(self) -> None:
        """Mark nodes that came up to nothing as empty; remove those empty for long enough,
        unless the pool is protected (one pass: this runs at every decision)."""
        removable = not self.protect
        for node in list(self.live.values()):
            if node.jobs or node.placeholder is not None:
                continue
            if node.empty_since is None and node.ready_at <= self.now:
                node.empty_since = self.now  # came up but nothing landed on it
            since = node.empty_since
            if (
                removable
                and since is not None
                and self.now - since >= self.cfg.consolidate_after_seconds
            ):
                node.removed = self.now
                del self.live[node.id]

    def record(self) -> TwinRecord:
        """Everything metrics need, up to the current time."""
        nodes = [
            (n.launched, n.removed if n.removed is not None else self.end, self.cfg.gpus_per_node)
            for n in self.nodes.values()
        ]
        placeholders = [
            (
                p.created,
                p.ended if p.ended is not None else self.end,
                self.cfg.gpus_per_node,
                p.preempted,
            )
            for p in self.placeholders.values()
        ]
        return TwinRecord(
            job_submit=self.jobs.submit,
            job_start=self.job_start,
            job_placed=self.job_placed,
            job_gpus=self.jobs.gpus,
            job_duration=self.jobs.duration,
            nodes=nodes,
            placeholders=placeholders,
            minute_start=self._minute_start,
            demand=self._demand,
            capacity=self._capacity,
            prewarm=self._prewarm,
            waiting=self._waiting,
            breaches=self.breaches,
            breach_times=tuple(self._breach_times),
            end=self.end,
        )


def _announced(jobs: JobTrace, config: TwinConfig) -> tuple[TwinObjects | None, list[bool]]:
    """The objects announcing the trace's declared work (None: no notice simulated), and per
    job whether it is announced work - the twin's flag, left out of the histories."""
    if config.notice is None:
        return None, [False] * len(jobs)
    declared = declare(jobs, config.notice)
    objects = TwinObjects(
        jobs,
        declared,
        pool=config.pool,
        gpus_per_node=config.gpus_per_node,
        resource=config.resource,
    )
    # queued jobs' pods stay in the histories, as every Kueue workload's (no source marks them)
    flags: list[bool] = np.isin(declared.kind, (CRON, PIPELINE)).tolist()
    return objects, flags


def _kueue_workloads(
    jobs: JobTrace, config: TwinConfig, *, start: float, end: float
) -> TwinWorkloads | None:
    """The Workloads holding quota ahead of their pods (None: no Kueue notice simulated)."""
    if not config.kueue_notice_seconds:
        return None
    return TwinWorkloads(
        jobs,
        notice_seconds=config.kueue_notice_seconds,
        pool=config.pool,
        gpus_per_node=config.gpus_per_node,
        resource=config.resource,
        start=start,
        end=end,
    )
