"""The rolling-day spend ledger: charges what was held, forgets only what a day of ledger time
has aged out, and never forgets because a clock moved (forward, backward, across restarts).

Cases: 8 GPUs for an hour is 8 GPU-hours; a +2 day clock jump keeps the day's spend; a backward
jump charges and forgets nothing; spend ages out after a real day of records; a restart after
downtime continues the day. Property: over any sequence of records (any clock jumps) the ledger
clock never goes back, and spend leaves the day only as ledger time passes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forecaster.core.budget import (
    BUCKET_SECONDS,
    DAY,
    DayBuckets,
    SpendLedger,
    add_gpu_hours,
    gpu_hours_last_day,
    record_spend,
    spent_last_day,
)

T = 1_800_000_000
STEP = 3600


def held(
    ledger: SpendLedger, *, gpus: int, start: int, seconds: int, every: int = 60
) -> SpendLedger:
    for now in range(start, start + seconds + 1, every):
        ledger = record_spend(ledger, gpus=gpus, now=now, max_step_seconds=STEP)
    return ledger


def test_spend_is_gpus_times_hours() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=3600)
    assert spent_last_day(ledger) == pytest.approx(8.0)


def test_one_gpu_for_an_hour_is_one_gpu_hour_and_none_is_nothing() -> None:
    assert spent_last_day(held(SpendLedger(), gpus=1, start=T, seconds=3600)) == pytest.approx(1)
    assert held(SpendLedger(), gpus=0, start=T, seconds=3600).buckets == ()


def test_a_ledger_that_lost_its_wall_time_starts_again_keeping_its_spend() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=3600)
    damaged = SpendLedger(ledger.buckets, clock=ledger.clock, last_seen=None)
    again = record_spend(damaged, gpus=8, now=T + 7200, max_step_seconds=STEP)
    assert (again.clock, again.last_seen) == (T + 7200, T + 7200)
    assert again.buckets == ledger.buckets  # nothing charged for the unknown gap


def test_a_forward_clock_jump_does_not_forget_the_day() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=23 * 3600)
    before = spent_last_day(ledger)
    assert before == pytest.approx(184.0)
    jumped = record_spend(ledger, gpus=0, now=T + 23 * 3600 + 2 * DAY, max_step_seconds=STEP)
    assert spent_last_day(jumped) >= before - 8 * STEP / 3600  # at most one step aged out
    assert spent_last_day(jumped) > 170


def test_a_backward_clock_jump_charges_and_forgets_nothing() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=3600)
    back = record_spend(ledger, gpus=8, now=T - DAY, max_step_seconds=STEP)
    assert spent_last_day(back) == pytest.approx(8.0)
    assert back.clock == ledger.clock
    # time then runs on from the new wall clock
    later = record_spend(back, gpus=8, now=T - DAY + 60, max_step_seconds=STEP)
    assert spent_last_day(later) == pytest.approx(8.0 + 8 * 60 / 3600)


def test_spend_ages_out_after_a_day_of_records() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=3600)
    ledger = held(ledger, gpus=0, start=T + 3600, seconds=DAY + 600, every=600)
    assert spent_last_day(ledger) == 0


def test_a_restart_after_downtime_continues_the_day() -> None:
    ledger = held(SpendLedger(), gpus=8, start=T, seconds=3600)
    restarted = record_spend(ledger, gpus=0, now=T + 3 * DAY, max_step_seconds=STEP)
    assert spent_last_day(restarted) == pytest.approx(8.0)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 64), st.integers(-3 * DAY, 3 * DAY)), max_size=60))
def test_the_ledger_forgets_only_as_ledger_time_passes(steps: list[tuple[int, int]]) -> None:
    ledger, now = SpendLedger(), T
    for gpus, jump in steps:
        before, clock = spent_last_day(ledger), ledger.clock
        now += jump
        ledger = record_spend(ledger, gpus=gpus, now=now, max_step_seconds=STEP)
        assert clock is None or (ledger.clock is not None and 0 <= ledger.clock - clock <= STEP)
        charged = gpus * (ledger.clock - (clock or ledger.clock)) / 3600  # type: ignore[operator]
        if clock is not None and ledger.clock == clock:
            assert spent_last_day(ledger) == pytest.approx(before)
        assert spent_last_day(ledger) <= before + charged + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-2 * DAY, 2 * DAY), st.floats(0, 10), st.integers(-DAY, DAY)),
        max_size=40,
    )
)
def test_day_buckets_match_a_plain_tally_whatever_order_the_clock_gives(
    records: list[tuple[int, float, int]],
) -> None:
    """The bucket tuple is trimmed from its oldest end only (it runs at every tick): a clock
    that steps back must not leave it out of order, or an aged bucket would be counted."""
    buckets: DayBuckets = ()
    tally: dict[int, float] = {}
    for offset, gpu_hours, probe in records:
        at = T + offset
        buckets = add_gpu_hours(buckets, gpu_hours=gpu_hours, at=at)
        tally = {b: v for b, v in tally.items() if b > at - DAY}
        if gpu_hours > 0:
            bucket = at - at % BUCKET_SECONDS
            tally[bucket] = tally.get(bucket, 0.0) + gpu_hours
        assert [b for b, _ in buckets] == sorted(tally)
        expected = sum(v for b, v in tally.items() if at + probe - DAY < b <= at + probe)
        assert gpu_hours_last_day(buckets, at=at + probe) == pytest.approx(expected)


def test_after_a_clock_step_back_the_day_ending_at_a_bucket_start_includes_that_bucket() -> None:
    """Asked for a day ending at ``at`` with later buckets kept (the clock stepped back), the
    bucket starting at ``at`` is in it, as it is when nothing stepped back."""
    buckets: DayBuckets = ((T, 1.0), (T + BUCKET_SECONDS, 2.0), (T + 2 * BUCKET_SECONDS, 4.0))
    assert gpu_hours_last_day(buckets, at=T + BUCKET_SECONDS) == pytest.approx(3.0)
    assert gpu_hours_last_day(buckets[:2], at=T + BUCKET_SECONDS) == pytest.approx(3.0)
