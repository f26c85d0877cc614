"""Rolling-day prewarm spend: what placeholders have cost in GPU-hours over the last 24 h.

The ledger keeps one bucket per minute of actual spend (GPUs held x seconds). The planner is
given ``spent_last_day`` and charges every GPU it plans for ``Budgets.commitment_seconds`` up
front, so spend + commitment never exceeds the daily budget - even if the daemon dies right
after acting and its placeholders run until their TTL.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY = 86400


@dataclass(frozen=True)
class SpendLedger:
    """Prewarm spend per minute bucket: ``((minute_start, gpu_hours), ...)`` oldest first."""

    buckets: tuple[tuple[int, float], ...] = ()


def record_spend(ledger: SpendLedger, *, gpus: int, since: int, now: int) -> SpendLedger:
    """Add ``gpus`` held from ``since`` to ``now`` and forget buckets older than a day."""
    if now <= since or gpus <= 0:
        return prune(ledger, now=now)
    minute = now - now % 60
    spend = gpus * (now - since) / 3600
    buckets = dict(ledger.buckets)
    buckets[minute] = buckets.get(minute, 0.0) + spend
    return prune(SpendLedger(tuple(sorted(buckets.items()))), now=now)


def prune(ledger: SpendLedger, *, now: int) -> SpendLedger:
    """Drop buckets that left the rolling day."""
    return SpendLedger(tuple((t, v) for t, v in ledger.buckets if t > now - DAY))


def spent_last_day(ledger: SpendLedger, *, now: int) -> float:
    """GPU-hours of prewarm spent in the rolling day ending at ``now``."""
    return sum(v for t, v in ledger.buckets if now - DAY < t <= now)
