"""The running service: reconcile and retrain entry points, and what the endpoint shows.

The scheduler (real cluster) or the twin driver (embedded default) calls ``reconcile(now)``;
only the leader acts, every replica forecasts and serves. A daemon whose last completed tick is
older than ``stuck_after_seconds`` (monotonic time) is **stuck**: ``/healthz`` fails (the kubelet
restarts it) and the cluster service stops renewing the Lease, so another replica takes over.
The last tick's record, a 24 h trail of prewarm per pool and the guardrail findings are kept
for ``http.py``; metrics are updated after every tick. A tick that raises unexpectedly is
logged, counted and the daemon goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.core.error_budget import SloPolicy
from forecaster.service.loop import Reconciler, TickRecord
from forecaster.service.metrics import Metrics

log = logging.getLogger(__name__)
TRAIL_SECONDS = 86400


@dataclass(frozen=True)
class TrailPoint:
    """One tick's prewarm per pool, for the 24 h chart."""

    at: int
    prewarm_gpus: dict[str, int]
    actual_gpus: dict[str, float]


@dataclass
class Daemon:
    """See the module docstring."""

    reconciler: Reconciler
    slo: SloPolicy
    metrics: Metrics = field(default_factory=Metrics)
    is_leader: Callable[[], bool] = lambda: True
    guardrails: list[str] = field(default_factory=list)
    pools: tuple[str, ...] = ()
    trail: deque[TrailPoint] = field(default_factory=deque)
    last: TickRecord | None = None
    ticks: int = 0
    monotonic: Callable[[], float] = time.monotonic
    stuck_after_seconds: float | None = None
    """None: never judged stuck (the embedded twin, which runs ticks itself)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _progress_at: float | None = None

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
                record = self.reconciler.tick(now, act=leader)
        except Exception:
            log.exception("reconcile tick at %s failed; the next tick retries", now)
            self.metrics.errors.labels(kind="crash").inc()
            return None
        self._progress_at = self.monotonic()
        self.metrics.observe_tick(
            record, state=self.reconciler.state, slo=self.slo, seconds=time.perf_counter() - began
        )
        self._remember(record)
        return record

    def _remember(self, record: TickRecord) -> None:
        actual = {}
        for name, view in record.pools.items():
            if view.history is not None and view.history.usable.any():
                actual[name] = float(view.history.values[view.history.usable][-1])
        point = TrailPoint(record.at, {p.pool: p.target_gpus for p in record.plan.pools}, actual)
        self.trail.append(point)
        while self.trail and self.trail[0].at < record.at - TRAIL_SECONDS:
            self.trail.popleft()
        self.last = record
        self.ticks += 1
