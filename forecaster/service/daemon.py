"""The running service: reconcile and retrain entry points, and what the endpoint shows.

The scheduler (real cluster) or the twin driver (embedded default) calls ``reconcile(now)``;
only the leader acts, every replica forecasts and serves. A daemon whose last completed tick is
older than ``stuck_after_seconds`` (monotonic time) is **stuck**: ``/healthz`` fails (the kubelet
restarts it) and the cluster service stops renewing the Lease, so another replica takes over.
The last tick's record, a 24 h trail per pool (demand, prewarm, mode, error and waste budget,
spend: ``core.finops``), the forecasts scored in that time, the mode changes and the guardrail
findings are kept for ``http.py``; metrics are updated after every tick. A tick that raises
unexpectedly is logged, counted and the daemon goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.accelerators import GPU
from forecaster.actuators.coordination.leases import CLEANUP_IDENTITY
from forecaster.core.error_budget import (
    Evaluation,
    Transition,
    budget_remaining,
    waste_last_day,
)
from forecaster.core.finops import PoolSpend, SpendPoint, pool_spend
from forecaster.durations import DAY
from forecaster.reconcile.loop import Reconciler
from forecaster.reconcile.records import PoolRuntime, TickRecord
from forecaster.service.metrics import Metrics

log = logging.getLogger(__name__)
TRAIL_SECONDS = DAY
SPEND_METRICS_EVERY_SECONDS = 60
"""The FinOps gauges (a day's integral over the trail) are refreshed at most this often: each
refresh reads the whole day, and at the embedded twin's speed that was 90 % of a tick.
``/api/v1/status`` computes them fresh."""


@dataclass(frozen=True)
class TrailPoint:
    """One tick, per pool, for the page's 24 h charts and the FinOps figures."""

    at: int
    prewarm_gpus: dict[str, int]
    actual_gpus: dict[str, float]
    modes: dict[str, str] = field(default_factory=dict)
    budget_remaining: dict[str, float] = field(default_factory=dict)
    waste_gpu_hours: dict[str, float] = field(default_factory=dict)
    """Wasted prewarm over the trailing day, as the waste budget counts it."""
    spend: dict[str, SpendPoint] = field(default_factory=dict)


@dataclass
class Daemon:
    """See the module docstring."""

    reconciler: Reconciler
    metrics: Metrics = field(default_factory=Metrics)
    is_leader: Callable[[], bool] = lambda: True
    lease_holder: Callable[[], tuple[str, str | None] | None] = lambda: None
    """Another holder of the leader Lease (identity, until) - e.g. ``forecaster cleanup``'s
    hold - said on each tick's line, the status and the page while this replica cannot act."""
    guardrails: list[str] = field(default_factory=list)
    pools: tuple[str, ...] = ()
    trail: deque[TrailPoint] = field(default_factory=deque)
    scored: dict[str, deque[Evaluation]] = field(default_factory=dict)
    """Forecasts scored in the last day, per pool (the page's calibration chart)."""
    transitions: deque[tuple[str, Transition]] = field(default_factory=deque)
    last: TickRecord | None = None
    ticks: int = 0
    monotonic: Callable[[], float] = time.monotonic
    stuck_after_seconds: float | None = None
    """None: never judged stuck (the embedded twin, which runs ticks itself)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _view_lock: threading.Lock = field(default_factory=threading.Lock)
    """Guards ``trail``, ``scored`` and ``transitions``: the endpoint's threads copy them under
    it (``trail_points`` ...) while ``_remember`` appends and pops under it - iterating a deque
    another thread changes raises ``RuntimeError`` (a 500)."""
    _progress_at: float | None = None
    _spend_at: int | None = None  # when the FinOps gauges were last refreshed

    def stuck(self) -> bool:
        """Has no tick completed for ``stuck_after_seconds`` (counting from start-up)?"""
        if self.stuck_after_seconds is None:
            return False
        if self._progress_at is None:
            self._progress_at = self.monotonic()
        return self.monotonic() - self._progress_at > self.stuck_after_seconds

    @property
    def ready(self) -> bool:
        """True once a tick has completed."""
        return self.last is not None

    def reconcile(self, now: int) -> TickRecord | None:
        """One tick; never raises (a bug in a tick must not stop the daemon)."""
        leader = self.is_leader()
        self.metrics.leader.set(1 if leader else 0)
        began = time.perf_counter()
        try:
            with self._lock:
                record = self.reconciler.tick(
                    now, act=leader, not_acting=None if leader else self.not_acting()
                )
        except Exception:
            log.exception("reconcile tick at %s failed; the next tick retries", now)
            self.metrics.errors.labels(kind="crash").inc()
            return None
        self._progress_at = self.monotonic()
        self.metrics.observe_tick(
            record,
            slo_for=self.reconciler.slo_for,
            seconds=time.perf_counter() - began,
        )
        self._remember(record)
        if (
            self._spend_at is None
            or not 0 <= record.at - self._spend_at < SPEND_METRICS_EVERY_SECONDS
        ):
            self.metrics.observe_spend({pool: self.spend(pool) for pool in self.pools})
            self._spend_at = record.at
        return record

    def not_acting(self) -> str:
        """Why this replica writes nothing, for its tick line, status and page."""
        holder = self.lease_holder()
        if holder is None:
            return "not the leader"
        identity, until = holder
        hint = " (`forecaster resume` gives it back)" if identity == CLEANUP_IDENTITY else ""
        return f"the leader Lease is held by {identity}{f' until {until}' if until else ''}{hint}"

    def trail_points(self) -> list[TrailPoint]:
        """A copy of the 24 h trail, safe to read while ticks go on."""
        with self._view_lock:
            return list(self.trail)

    def scored_for(self, pool: str) -> list[Evaluation]:
        """A copy of the pool's forecasts scored in the last day."""
        with self._view_lock:
            return list(self.scored.get(pool, ()))

    def transition_list(self) -> list[tuple[str, Transition]]:
        """A copy of the last day's mode changes."""
        with self._view_lock:
            return list(self.transitions)

    def _runtime(self, pool: str) -> PoolRuntime | None:
        return next((r for r in self.reconciler.pools if r.policy.pool == pool), None)

    def lead_seconds(self, pool: str) -> int:
        """The pool's configured lead (what its plan covers); 0 for an unknown pool."""
        runtime = self._runtime(pool)
        return runtime.lead_seconds if runtime else 0

    def resource(self, pool: str) -> str:
        """The accelerator resource the pool is counted in (``nvidia.com/gpu`` if unknown)."""
        runtime = self._runtime(pool)
        return runtime.policy.resource if runtime else GPU

    def spend(self, pool: str) -> PoolSpend:
        """The pool's last day of spend (``core.finops``)."""
        runtime = self._runtime(pool)
        at = self.last.at if self.last else 0
        return pool_spend(
            [p.spend[pool] for p in self.trail_points() if pool in p.spend],
            since=at - TRAIL_SECONDS,
            price_per_gpu_hour=runtime.policy.price_per_gpu_hour if runtime else 0.0,
            lead_seconds=self.lead_seconds(pool),
            max_step_seconds=self.reconciler.budgets.commitment_seconds,
        )

    def _remember(self, record: TickRecord) -> None:
        report = record.actuation
        actual, spend = {}, {}
        for name, view in record.pools.items():
            if view.history is not None and view.history.usable.any():
                actual[name] = float(view.history.values[view.history.usable][-1])
            snap = view.snapshot
            if snap is not None and snap.problem is None:
                spend[name] = SpendPoint(
                    at=record.at,
                    node_gpus=snap.allocatable_gpus + snap.launching_gpus,
                    running_gpus=snap.running_gpus,
                    billed_prewarm_gpus=snap.billed_gpus,
                    wasted_gpu_hours=report.wasted_gpu_hours.get(name, 0.0) if report else 0.0,
                    used_prewarm_gpus=report.used_gpus.get(name, 0) if report else 0,
                )
        published = {p.pool: record.budget(p.pool) for p in record.plan.pools}
        budgets = {
            name: budget_remaining(budget, self.reconciler.slo_for(name), now=record.at)
            for name, budget in published.items()
        }
        point = TrailPoint(
            record.at,
            {p.pool: p.target_gpus for p in record.plan.pools},
            actual,
            modes={p.pool: p.mode.value for p in record.plan.pools},
            budget_remaining=budgets,
            waste_gpu_hours={
                name: waste_last_day(budget, now=record.at) for name, budget in published.items()
            },
            spend=spend,
        )
        with self._view_lock:
            self._append(record, point)
        self.last = record
        self.ticks += 1

    def _append(self, record: TickRecord, point: TrailPoint) -> None:
        """Add a tick to the trail and forget what is older than a day (under ``_view_lock``)."""
        self.trail.append(point)
        horizon = record.at - TRAIL_SECONDS
        while self.trail and self.trail[0].at < horizon:
            self.trail.popleft()
        for name, evaluations in record.evaluations.items():
            scored = self.scored.setdefault(name, deque())
            scored.extend(evaluations)
            while scored and scored[0].target_time < horizon:
                scored.popleft()
        self.transitions.extend(record.transitions)
        while self.transitions and self.transitions[0][1].at < horizon:
            self.transitions.popleft()
