"""Replay policies that need no forecasting model: reactive, static, schedule, burst, and two
that see the future - oracle (every job) and continuation (the rest of each submission once its
first pod exists).

(The predictive policy is the daemon's own reconcile loop, ``simulation/replay.py``.) Policies
that plan use ``PlannedPrewarm``: the same pure planner and caps as the daemon, with its
rolling-day spend ledger.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np

from forecaster.core.budget import SpendLedger, record_spend, spent_last_day
from forecaster.core.cluster import DemandForecast, PoolSnapshot
from forecaster.core.jobs import JobTrace
from forecaster.core.planner import Mode, Plan, PoolInput, plan
from forecaster.core.policy import Budgets, PoolPolicy
from forecaster.simulation.twin import Decision, TwinView, nodes_needed

WEEK = 7 * 86400
POLICY_NAMES = ("reactive", "static", "schedule", "burst", "predictive", "oracle", "continuation")
"""Every replay policy by name (``static:K``, ``burst:ALPHA`` and ``continuation:GAP`` take a
knob)."""
SUBMISSION_GAP_SECONDS = 60
"""Jobs submitted at most this long after the one before belong to one submission (a batch)."""


class Reactive:
    """Karpenter alone: never prewarm."""

    name = "reactive"

    def decide(self, view: TwinView) -> Decision:
        """Always zero."""
        return Decision(0)


@dataclass
class Static:
    """A constant headroom of placeholders (the overprovisioner charts)."""

    headroom_gpus: int
    name: str = "static"

    def decide(self, view: TwinView) -> Decision:
        """Always ``headroom_gpus``."""
        return Decision(self.headroom_gpus)


@dataclass
class PlannedPrewarm:
    """The daemon's planner and budgets, with spend tracked across ticks."""

    policy: PoolPolicy
    budgets: Budgets
    ledger: SpendLedger = field(default_factory=SpendLedger)
    last: int | None = None

    def decide(
        self, snapshot: PoolSnapshot, forecast: DemandForecast | None, *, mode: Mode, now: int
    ) -> tuple[Decision, Plan]:
        """Plan one tick; spend since the last tick is charged to the ledger first."""
        self.ledger = record_spend(
            self.ledger,
            gpus=snapshot.billed_gpus,
            now=now,
            max_step_seconds=self.budgets.commitment_seconds,
        )
        self.last = now
        decision = plan(
            [PoolInput(self.policy, snapshot, forecast, mode)],
            budgets=self.budgets,
            spent_gpu_hours_last_day=spent_last_day(self.ledger),
            now=now,
        )
        pool_plan = decision.pools[0]
        return Decision(pool_plan.target_gpus, pool_plan.protect_nodepool), decision


@dataclass
class Oracle:
    """Knows every job before it arrives: the zero-wait bound at the least GPU-hours.

    At each decision it packs the jobs that will arrive within the prewarm window (lead +
    decision interval + Karpenter's batch, ``core.policy.prewarm_window_seconds``), after the
    pods already pending, onto the free GPUs the pool has now - first fit as Karpenter packs,
    whole free nodes for a job bigger than a node - and prewarms exactly the nodes the rest
    need, through the daemon's planner and caps. Packing jobs, not a demand level, is what
    makes it a bound: a job waits on new capacity when it does not *fit*, not when the level
    rises (free GPUs stranded on busy nodes do not host an 8-GPU job). Only Ready nodes running
    pods count: a node still launching (for pods already pending) is not there for a job
    arriving sooner, and an empty one is consolidated unless a placeholder keeps it (the plan's
    placeholders land on empty nodes first). Jobs that end within the window are not counted on
    to free room (it may be stranded)."""

    planner: PlannedPrewarm
    window_seconds: int
    jobs: JobTrace
    name: str = "oracle"
    known_from: np.ndarray | None = None
    """When each job becomes known (``continuation``); None: always (the foresight bound)."""

    def decide(self, view: TwinView) -> Decision:
        """The nodes the coming jobs need beyond today's free GPUs, as the plan's demand."""
        now = int(view.now)
        first = bisect.bisect_right(self.jobs.submit, view.now)
        last = bisect.bisect_right(self.jobs.submit, view.now + self.window_seconds)
        per_node = self.planner.policy.gpus_per_node
        gpus = self.jobs.gpus[first:last]
        if self.known_from is not None:
            gpus = gpus[self.known_from[first:last] <= view.now]
        coming = [int(g) for g in gpus]
        new_nodes = nodes_needed(
            sorted(view.pending_requests(), reverse=True) + coming,
            free=view.free_gpus(),
            gpus_per_node=per_node,
        )
        snapshot = view.snapshot()
        demand = snapshot.real_demand_gpus + snapshot.spare_gpus + new_nodes * per_node
        forecast = DemandForecast(
            self.planner.policy.pool, demand, demand, data_end=now, model="oracle", quantile=1.0
        )
        decision, _ = self.planner.decide(snapshot, forecast, mode=Mode.PREDICTIVE, now=now)
        return decision


def continuation(
    planner: PlannedPrewarm,
    window_seconds: int,
    jobs: JobTrace,
    *,
    gap_seconds: float = SUBMISSION_GAP_SECONDS,
) -> Oracle:
    """The bound of any model that reads bursts from the pods created so far: an oracle that
    knows every remaining job of a submission (``submission_starts``) once its first pod
    exists, and nothing of a submission before then. Over a floor (the planner's), it shows
    how much of static headroom's wait no such model can remove: the first jobs of
    submissions land unannounced, on whatever is warm."""
    return Oracle(
        planner,
        window_seconds,
        jobs,
        name=f"continuation:{gap_seconds:g}",
        known_from=submission_starts(jobs, gap_seconds=gap_seconds),
    )


def submission_starts(jobs: JobTrace, *, gap_seconds: float) -> np.ndarray:
    """When each job's submission began: a job submitted at most ``gap_seconds`` after the one
    before belongs to its submission (``jobs`` sorted by submission time)."""
    submit = jobs.submit.astype(float)
    if submit.size == 0:
        return submit
    begins = np.concatenate(([True], np.diff(submit) > gap_seconds))
    starts: np.ndarray = submit[np.flatnonzero(begins)[np.cumsum(begins) - 1]]
    return starts


@dataclass
class Schedule:
    """Headroom by hour of week learned from past demand (what people build with KEDA cron).

    Every week it relearns, from the demand observed so far only, the 95th percentile of how far
    demand rose within one lead time, per hour of the week (per hour of the day until a week of
    history exists), and keeps that much headroom, rounded up to whole nodes.
    """

    lead_seconds: int
    gpus_per_node: int
    quantile: float = 0.95
    name: str = "schedule"
    relearn_every_seconds: int = WEEK
    _next: float = -math.inf
    _table: dict[int, float] = field(default_factory=dict)
    _by_week: bool = False

    def decide(self, view: TwinView) -> Decision:
        """The learned headroom of the current hour."""
        if view.now >= self._next:
            self._learn(view)
            self._next = view.now + self.relearn_every_seconds
        hour = self._bucket(int(view.now))
        headroom = self._table.get(hour, 0.0)
        return Decision(math.ceil(headroom / self.gpus_per_node) * self.gpus_per_node)

    def _bucket(self, t: int) -> int:
        return (t // 3600) % (168 if self._by_week else 24)

    def _learn(self, view: TwinView) -> None:
        start, demand = view.demand_history(since=view.now - 4 * WEEK)
        steps = self.lead_seconds // 60
        if demand.size <= steps + 60:
            return
        windows = np.lib.stride_tricks.sliding_window_view(demand, steps + 1)
        rise = windows.max(axis=1) - demand[: windows.shape[0]]
        times = start + 60 * np.arange(rise.size)
        self._by_week = demand.size >= WEEK // 60
        table: dict[int, float] = {}
        keys = (times // 3600) % (168 if self._by_week else 24)
        for key in np.unique(keys):
            table[int(key)] = float(np.quantile(rise[keys == key], self.quantile))
        self._table = table


@dataclass
class Burst:
    """The hand-built baseline the product's model must beat: burst continuation.

    Jobs arrive in batch submissions that land within one lead time, so the GPUs requested by
    pods created in the last ``recent_seconds`` say more about the next minutes than the level
    does. Keep a floor learned from the past (the median rise of demand within one prewarm
    window over the last four weeks, relearned daily) plus ``alpha`` times the GPUs of pods
    created in the last 15 minutes, beyond what is spare; re-planned every ``tick_seconds``
    (15 s: a watch on new pods, not a scrape). Whole nodes, at most ``max_gpus``.
    """

    window_seconds: int
    gpus_per_node: int
    max_gpus: int
    alpha: float = 1.0
    recent_seconds: int = 900
    tick_seconds: float = 15.0
    name: str = "burst"
    _floor: float = 0.0
    _next: float = -math.inf

    def decide(self, view: TwinView) -> Decision:
        """floor + alpha x recent arrivals - spare, in whole nodes, capped."""
        if view.now >= self._next:
            self._learn(view)
            self._next = view.now + 86400
        recent = view.created_gpus(since=view.now - self.recent_seconds)
        snapshot = view.snapshot()
        want = self._floor + self.alpha * recent - snapshot.spare_gpus  # spare excludes ours
        nodes = max(0, math.ceil(want / self.gpus_per_node - 1e-9))
        return Decision(
            min(
                nodes * self.gpus_per_node, self.max_gpus // self.gpus_per_node * self.gpus_per_node
            )
        )

    def _learn(self, view: TwinView) -> None:
        _, demand = view.demand_history(since=view.now - 4 * WEEK)
        steps = max(1, self.window_seconds // 60)
        if demand.size <= steps:
            return
        windows = np.lib.stride_tricks.sliding_window_view(demand, steps + 1)
        self._floor = float(np.median(windows.max(axis=1) - demand[: windows.shape[0]]))
