"""Rolling-day prewarm spend: what we held has cost in GPU-hours over the last 24 h.

The ledger keeps one bucket per 5 minutes of actual spend (GPUs billed x seconds). The planner
is given ``spent_last_day`` and charges every GPU it plans for ``Budgets.commitment_seconds`` up
front, so spend + commitment never exceeds the daily budget - even if the daemon dies right
after acting and its placeholders run until their TTL.

**The ledger never forgets spend because a clock moved.** It runs on its own clock
(``SpendLedger.clock``), which advances by the wall time between two records but by at most
``max_step_seconds`` and never backwards:

* a forward jump (NTP step, a restored VM, a wrong clock) ages the day by at most one step -
  yesterday's spend is forgotten only after a day of ledger time has really been recorded;
* a backward jump advances nothing and charges nothing for that interval;
* a restart continues from the persisted ledger; the downtime counts as at most one step (we
  held nothing longer than the placeholder TTL while away, and the TTL is the step the daemon
  uses), so a long outage cannot wipe the day either.

In normal operation the ledger clock equals the wall clock (it starts there).
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypeVar

from forecaster.durations import DAY

BUCKET_SECONDS = 300
"""GPU-hours are kept in 5-minute buckets: 288 per day, cheap to sum every tick."""

Row = TypeVar("Row", bound=tuple[Any, ...])
DayBuckets = tuple[tuple[int, float], ...]
"""GPU-hours per 5-minute bucket over a rolling day, ``((bucket_start, gpu_hours), ...)``,
oldest first: the one rolling-day tally, of prewarm spend (``SpendLedger``) and of prewarm that
ended unused (the error budget's waste)."""


def add_gpu_hours(buckets: DayBuckets, *, gpu_hours: float, at: int) -> DayBuckets:
    """``buckets`` with ``gpu_hours`` added at time ``at`` and what left the day before it
    dropped."""
    kept = _within_day(buckets, at=at)
    if gpu_hours <= 0:
        return kept
    bucket = at - at % BUCKET_SECONDS
    if kept and kept[-1][0] == bucket:
        return (*kept[:-1], (bucket, kept[-1][1] + gpu_hours))
    if kept and kept[-1][0] > bucket:  # the clock stepped back: keep the buckets in order
        merged = dict(kept)
        merged[bucket] = merged.get(bucket, 0.0) + gpu_hours
        return tuple(sorted(merged.items()))
    return (*kept, (bucket, gpu_hours))


def gpu_hours_last_day(buckets: DayBuckets, *, at: int) -> float:
    """GPU-hours in the rolling day ending at ``at``."""
    if buckets and buckets[-1][0] > at:  # a bucket after ``at``: only after a clock step back
        return sum(v for t, v in buckets if at - DAY < t <= at)
    return float(sum(map(itemgetter(1), _within_day(buckets, at=at))))


def _within_day(buckets: DayBuckets, *, at: int) -> DayBuckets:
    """``buckets`` without those that left the day before ``at``."""
    return drop_through(buckets, at - DAY)


def drop_through(rows: tuple[Row, ...], start: int) -> tuple[Row, ...]:
    """``rows`` (each starting with its bucket start, oldest first) without those that start at
    or before ``start``. Only a head can go - usually none or one, and this runs at every tick."""
    first = 0
    while first < len(rows) and rows[first][0] <= start:
        first += 1
    return rows[first:] if first else rows


@dataclass(frozen=True)
class SpendLedger:
    """Spend per 5-minute bucket of ledger time: ``((bucket_start, gpu_hours), ...)``."""

    buckets: DayBuckets = ()
    clock: int | None = None
    """Ledger time (seconds) of the last record; None before the first."""
    last_seen: int | None = None
    """Wall time of the last record."""


def record_spend(ledger: SpendLedger, *, gpus: int, now: int, max_step_seconds: int) -> SpendLedger:
    """Charge ``gpus`` held since the last record (see the module docstring for time rules)."""
    if ledger.clock is None or ledger.last_seen is None:
        return SpendLedger(ledger.buckets, clock=now, last_seen=now)
    step = min(max(0, now - ledger.last_seen), max_step_seconds)
    clock = ledger.clock + step
    spend = gpus * step / 3600 if gpus > 0 else 0.0
    return SpendLedger(
        add_gpu_hours(ledger.buckets, gpu_hours=spend, at=clock), clock=clock, last_seen=now
    )


def spent_last_day(ledger: SpendLedger) -> float:
    """GPU-hours spent in the rolling day of ledger time ending at the last record."""
    if ledger.clock is None:
        return sum(v for _, v in ledger.buckets)
    return gpu_hours_last_day(ledger.buckets, at=ledger.clock)
