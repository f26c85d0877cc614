"""Rolling-day prewarm spend: what placeholders have cost in GPU-hours over the last 24 h.

The ledger keeps one bucket per 5 minutes of actual spend (GPUs held x seconds). The planner is
given ``spent_last_day`` and charges every GPU it plans for ``Budgets.commitment_seconds`` up
front, so spend + commitment never exceeds the daily budget - even if the daemon dies right
after acting and its placeholders run until their TTL.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY = 86400
BUCKET_SECONDS = 300
"""Spend is kept in 5-minute buckets: 288 per day, cheap to sum every tick."""


@dataclass(frozen=True)
class SpendLedger:
    """Prewarm spend per 5-minute bucket: ``((bucket_start, gpu_hours), ...)`` oldest first."""

    buckets: tuple[tuple[int, float], ...] = ()


def record_spend(ledger: SpendLedger, *, gpus: int, since: int, now: int) -> SpendLedger:
    """Add ``gpus`` held from ``since`` to ``now`` and forget buckets older than a day."""
    if now <= since or gpus <= 0:
        return prune(ledger, now=now)
    bucket = now - now % BUCKET_SECONDS
    spend = gpus * (now - since) / 3600
    kept = prune(ledger, now=now).buckets
    if kept and kept[-1][0] == bucket:
        return SpendLedger((*kept[:-1], (bucket, kept[-1][1] + spend)))
    return SpendLedger((*kept, (bucket, spend)))


def prune(ledger: SpendLedger, *, now: int) -> SpendLedger:
    """Drop buckets that left the rolling day (buckets are in time order)."""
    first = 0
    while first < len(ledger.buckets) and ledger.buckets[first][0] <= now - DAY:
        first += 1
    return ledger if first == 0 else SpendLedger(ledger.buckets[first:])


def spent_last_day(ledger: SpendLedger, *, now: int) -> float:
    """GPU-hours of prewarm spent in the rolling day ending at ``now``."""
    return sum(v for t, v in ledger.buckets if now - DAY < t <= now)
