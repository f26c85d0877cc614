"""A pool's own history as a job trace: what ``history export`` writes and ``replay --pool``
replays ("would forecaster help *my* cluster?").

The pods come from kube-state-metrics in the configured Prometheus
(``PrometheusSource.fetch_pods``: our own namespace left out, the pods of one owner created
together one gang); the lead from the daemon's own measurement where it ran
(``forecaster_lead_measured_seconds``), else the configured one - and the replay says which.
How much history a replay needs, and how it splits what exists into warm-up, tuning and judging,
is here too (``windows``): a short history is refused in one line naming what is missing.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

from forecaster.app.connect import build_source
from forecaster.core.cluster import MeasuredLead
from forecaster.core.jobs import JobTrace
from forecaster.core.series import iso_utc
from forecaster.durations import DAY
from forecaster.errors import ConfigError, DataError
from forecaster.settings import Settings
from forecaster.sources.files import write_job_trace
from forecaster.sources.prometheus import DEFAULT_RETENTION, PrometheusSource

log = logging.getLogger(__name__)

HISTORY_STEP_SECONDS = 60
"""The grid the pod history is read on (its durations are to within one step)."""


@dataclass(frozen=True)
class Windows:
    """Whole days of a history: warm-up (simulated, not measured), tuned and judged."""

    warmup: int
    tuned: int
    judged: int

    @property
    def days(self) -> int:
        return self.warmup + self.tuned + self.judged

    def said(self) -> str:
        """``warm-up days 1-7, tuned 8-19, judged 20-28`` (days counted from 1)."""
        tuned = f", tuned {self.warmup + 1}-{self.warmup + self.tuned}" if self.tuned else ""
        return (
            f"warm-up days 1-{self.warmup}{tuned},"
            f" judged {self.warmup + self.tuned + 1}-{self.days}"
        )


MIN_FRONTIER = Windows(warmup=3, tuned=7, judged=4)
"""The least history ``replay --frontier`` judges on: three days for the first weekly model, a
week to choose the knobs on (every weekday once), four days to judge them (14 in all; Prometheus
keeps 15 by default)."""
MIN_REPLAY = Windows(warmup=1, tuned=0, judged=2)
"""The least a plain replay measures on: a day of warm-up, two judged."""


def windows(days: int, *, frontier: bool) -> Windows:
    """How ``days`` of history split: a quarter warm-up; with ``frontier`` the rest three to
    four tuned-judged (28 -> 7, 12, 9), without it all judged. Raises ``DataError`` below the
    minimum (``MIN_FRONTIER``, ``MIN_REPLAY``)."""
    least = MIN_FRONTIER if frontier else MIN_REPLAY
    if days < least.days:
        raise DataError(
            f"{'replay --frontier' if frontier else 'replay'} needs at least {least.days} days"
            f" of history ({least.said()}), found {days}"
        )
    warmup = max(least.warmup, days // 4)
    if not frontier:
        return Windows(warmup=warmup, tuned=0, judged=days - warmup)
    judged = max(least.judged, (days - warmup) * 3 // 7)
    return Windows(warmup=warmup, tuned=days - warmup - judged, judged=judged)


@dataclass(frozen=True)
class PoolHistory:
    """What Prometheus holds of one pool: its submissions since ``start`` (day 0 of the trace),
    up to ``end``, and the lead the daemon measured there (None: it did not)."""

    pool: str
    start: int
    end: int
    jobs: JobTrace
    lead: MeasuredLead | None
    windows: Windows | None = None
    """How a replay splits it (None: not for a replay)."""

    def write_trace(self, path: Path) -> None:
        """The submissions as a job trace ``replay --jobs`` reads (``history export``)."""
        write_job_trace(path, self.jobs, epoch=self.start)

    @property
    def days(self) -> int:
        return round((self.end - self.start) / DAY)

    def said(self) -> str:
        """One line: where the history starts, how long it is, what it holds."""
        gpu_hours = float((self.jobs.duration * self.jobs.gpus).sum()) / 3600
        return (
            f"pool {self.pool}: {self.days} days of pod history, {iso_utc(self.start)} to"
            f" {iso_utc(self.end)}: {len(self.jobs):,} submissions, {gpu_hours:,.0f} GPU-hours"
        )


def read_history(
    settings: Settings,
    *,
    pool: str,
    days: int,
    end: int,
    replay: bool = False,
    frontier: bool = False,
) -> PoolHistory:
    """The last ``days`` whole days before ``end`` of ``pool``'s pods in the configured
    Prometheus - fewer where its history starts later (the first hour a pod of the pool shows,
    rounded up to a day before ``end``). Jobs running at the start are submitted then, those
    still running at ``end`` end then (``JobTrace.seen_between``). For a ``replay``
    (``frontier``) the days found are split (``windows``) before any pod is read. Raises
    ``ConfigError`` for a pool not configured or a source that keeps no pods, ``DataError`` when
    no pod is found or the history is too short for the replay."""
    if days <= 0:
        raise ConfigError(f"--days: at least 1 day of history, got {days}")
    settings.pool(pool)  # an unknown pool fails here, naming the configured ones
    source = build_source(settings)
    if not isinstance(source, PrometheusSource):
        raise ConfigError(
            "source.kind: the pool's history is read from Prometheus (kube-state-metrics); this"
            f" config reads {settings.source.kind}"
        )
    end -= end % HISTORY_STEP_SECONDS
    found = _days_found(source, pool=pool, days=days, end=end)
    split = None
    if replay or frontier:
        try:
            split = windows(found, frontier=frontier)
        except DataError as exc:
            raise DataError(f"pool {pool}: {exc} (from {iso_utc(end - found * DAY)})") from None
    start = end - found * DAY
    pods = source.fetch_pods(pool, start=start, end=end, step_seconds=HISTORY_STEP_SECONDS)
    lead = source.measured_lead(pool, start=start, end=end)
    return PoolHistory(
        pool=pool,
        start=start,
        end=end,
        jobs=pods.seen_between(start, end),
        lead=lead,
        windows=split,
    )


def _days_found(source: PrometheusSource, *, pool: str, days: int, end: int) -> int:
    """The whole days of the pool's pod history before ``end``, at most ``days``: fewer where
    its first pod shows later (said in the log); ``DataError`` when less than a day is found."""
    first = source.first_pod_at(pool, start=end - days * DAY, end=end)
    if first is None:
        raise DataError(
            f"pool {pool}: no pod of the pool in Prometheus in the {days} days before"
            f" {iso_utc(end)} (is kube_pod_nodeselectors opted in? forecaster doctor says)"
        )
    found = min(days, math.floor((end - first) / DAY))
    if found < days:
        log.warning(
            "pool %s: the pod history starts at %s: %d of the %d days asked (Prometheus keeps"
            " %s by default: --storage.tsdb.retention.time)",
            pool,
            iso_utc(first),
            found,
            days,
            DEFAULT_RETENTION,
        )
    if found < 1:
        raise DataError(
            f"pool {pool}: the pod history starts at {iso_utc(first)}, less than a day before"
            f" {iso_utc(end)}"
        )
    return found
