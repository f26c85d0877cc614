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

from forecaster.durations import DAY

BUCKET_SECONDS = 300
"""Spend is kept in 5-minute buckets: 288 per day, cheap to sum every tick."""


@dataclass(frozen=True)
class SpendLedger:
    """Spend per 5-minute bucket of ledger time: ``((bucket_start, gpu_hours), ...)``."""

    buckets: tuple[tuple[int, float], ...] = ()
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
    kept = _prune(ledger.buckets, clock=clock)
    if gpus <= 0 or step == 0:
        return SpendLedger(kept, clock=clock, last_seen=now)
    bucket = clock - clock % BUCKET_SECONDS
    spend = gpus * step / 3600
    if kept and kept[-1][0] == bucket:
        kept = (*kept[:-1], (bucket, kept[-1][1] + spend))
    else:
        kept = (*kept, (bucket, spend))
    return SpendLedger(kept, clock=clock, last_seen=now)


def _prune(buckets: tuple[tuple[int, float], ...], *, clock: int) -> tuple[tuple[int, float], ...]:
    """Drop buckets that left the rolling day of ledger time."""
    return tuple(b for b in buckets if b[0] > clock - DAY)


def spent_last_day(ledger: SpendLedger) -> float:
    """GPU-hours spent in the rolling day of ledger time ending at the last record."""
    if ledger.clock is None:
        return sum(v for _, v in ledger.buckets)
    return sum(v for t, v in ledger.buckets if t > ledger.clock - DAY)
