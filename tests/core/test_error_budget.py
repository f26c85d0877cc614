"""Error budget state machine: table cases and properties over random histories.

Cases: accurate forecasts stay predictive; a burst of misses in both windows hands off with the
burn rates in the reason; a short burst that the 6 h window does not confirm does not; too few
points never trigger; the waste budget hands off; recovery takes the full calm period, and a miss
while recovering goes back to handed-off; the state survives a dict round trip.
Properties: handed-off never jumps straight to predictive, a return to predictive always follows
at least ``recovery_seconds`` of recovering, and every hand-off happened when a budget burned.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forecaster.core.error_budget import (
    ErrorBudgetState,
    Evaluation,
    SloPolicy,
    _merged,
    _tallied,
    advance,
    budget_remaining,
    burn_rate,
    following_the_plan,
)
from forecaster.core.operating_point import CANDIDATE_QUANTILES
from forecaster.core.planner import Mode

POLICY = SloPolicy(max_waste_gpu_hours_per_day=10)
T0 = 1_800_000_000


def minutes(
    state: ErrorBudgetState,
    start: int,
    count: int,
    *,
    miss_every: int = 0,
    waste: float = 0.0,
    policy: SloPolicy = POLICY,
) -> tuple[ErrorBudgetState, int]:
    """Advance one evaluation per minute; every ``miss_every``-th is a miss (0 = never)."""
    now = start
    for i in range(count):
        now = start + 60 * (i + 1)
        miss = miss_every > 0 and i % miss_every == 0
        ev = Evaluation(target_time=now, actual_gpus=110.0 if miss else 90.0, upper_gpus=100.0)
        state = advance(state, evaluations=[ev], wasted_gpu_hours=waste, policy=policy, now=now)
    return state, now


def at_quantile(quantile: float, **slo: float) -> SloPolicy:
    """The SLO of a plan at ``quantile`` (as the operating point sets it), waste unbounded."""
    return following_the_plan(
        SloPolicy(**slo), target_quantile=quantile, prewarm_gpu_hours_per_day=1e9
    )


@pytest.mark.parametrize("quantile", CANDIDATE_QUANTILES)
def test_a_forecast_that_misses_every_point_hands_off_at_every_candidate_quantile(
    quantile: float,
) -> None:
    """6 x a P80 plan's 20 % is 120 % of the points: uncapped, a P80 forecast that is always
    wrong would never be handed off."""
    policy = at_quantile(quantile)
    state, _ = minutes(ErrorBudgetState(), T0, 6 * 60, miss_every=1, policy=policy)
    assert state.mode is Mode.HANDED_OFF
    assert f">= {policy.fast_threshold:g} over 1h" in state.reason


def test_a_p80_plan_keeps_its_misses_by_design_and_half_of_the_points() -> None:
    """The cap sits halfway between a P80 plan's 20 % and all points (60 %): 20 % misses, and
    even 50 % for hours, stay predictive."""
    policy = at_quantile(0.8)
    assert policy.fast_threshold == policy.slow_threshold == 3
    state, now = minutes(ErrorBudgetState(), T0, 24 * 60, miss_every=5, policy=policy)
    state, _ = minutes(state, now, 6 * 60, miss_every=2, policy=policy)
    assert state.mode is Mode.PREDICTIVE


def test_a_pool_still_burning_does_not_recover_under_a_capped_threshold() -> None:
    """A configured recovery burn above what a P80 plan's window can reach would call a pool
    that still misses every point calm, and flap."""
    policy = at_quantile(0.8, fast_burn=6, slow_burn=6, recovery_burn=6)
    state, now = minutes(ErrorBudgetState(), T0, 6 * 60, miss_every=1, policy=policy)
    assert state.mode is Mode.HANDED_OFF
    state, _ = minutes(state, now, 6 * 60, miss_every=1, policy=policy)
    assert state.mode is Mode.HANDED_OFF and len(state.transitions) == 1


@settings(max_examples=200, deadline=None)
@given(
    target=st.floats(0.001, 0.999),
    fast=st.floats(1, 100),
    slow=st.floats(1, 100),
)
def test_every_point_missed_burns_both_windows_whatever_the_target(
    target: float, fast: float, slow: float
) -> None:
    policy = SloPolicy(target_exceedance=target, fast_burn=fast, slow_burn=slow)
    state, _ = minutes(ErrorBudgetState(), T0, 6 * 60, miss_every=1, policy=policy)
    assert state.mode is Mode.HANDED_OFF
    assert policy.calm_threshold <= min(policy.fast_threshold, policy.slow_threshold)


def test_accurate_forecasts_stay_predictive() -> None:
    state, now = minutes(ErrorBudgetState(), T0, 24 * 60, miss_every=25)  # 4 % misses
    assert state.mode is Mode.PREDICTIVE
    assert 0 < budget_remaining(state, POLICY, now=now) < 1


def test_burning_both_windows_hands_off_with_the_reason() -> None:
    state, now = minutes(ErrorBudgetState(), T0, 6 * 60, miss_every=25)
    state, now = minutes(state, now, 120, miss_every=2)  # 50 % misses for 2 h
    assert state.mode is Mode.HANDED_OFF
    assert "error budget burning" in state.reason and "1h burn rate" in state.reason
    assert state.transitions[-1].before is Mode.PREDICTIVE


def test_a_short_burst_not_confirmed_by_the_slow_window_does_not_hand_off() -> None:
    state, now = minutes(ErrorBudgetState(), T0, 6 * 60)  # 6 h perfect
    state, now = minutes(state, now, 40, miss_every=1)  # 40 min of misses
    fast = burn_rate(state, POLICY, window=3600, now=now)
    slow = burn_rate(state, POLICY, window=21600, now=now)
    assert (
        fast is not None
        and fast >= POLICY.fast_burn
        and slow is not None
        and slow < POLICY.slow_burn
    )
    assert state.mode is Mode.PREDICTIVE


def test_too_few_points_never_trigger() -> None:
    state, _ = minutes(ErrorBudgetState(), T0, POLICY.min_points - 1, miss_every=1)
    assert state.mode is Mode.PREDICTIVE


def test_waste_budget_hands_off() -> None:
    state, _ = minutes(ErrorBudgetState(), T0, 60, waste=0.2)  # 12 GPU-hours in an hour
    assert state.mode is Mode.HANDED_OFF and "waste budget spent" in state.reason


def test_recovery_takes_the_full_calm_period_and_a_miss_interrupts_it() -> None:
    state, now = minutes(ErrorBudgetState(), T0, 6 * 60, miss_every=1)
    assert state.mode is Mode.HANDED_OFF
    state, now = minutes(state, now, 61)  # the 1 h window clears
    assert state.mode is Mode.RECOVERING
    state, now = minutes(state, now, 60, miss_every=3)  # misses again
    assert state.mode is Mode.HANDED_OFF and "recovery interrupted" in state.reason
    state, now = minutes(state, now, 61)
    assert state.mode is Mode.RECOVERING
    recovering_since = state.since
    left = (POLICY.recovery_seconds - (now - recovering_since)) // 60
    state, now = minutes(state, now, left - 1)
    assert state.mode is Mode.RECOVERING
    state, now = minutes(state, now, 1)
    assert state.mode is Mode.PREDICTIVE and now - recovering_since >= POLICY.recovery_seconds


def test_state_round_trips_through_json() -> None:
    state, _ = minutes(ErrorBudgetState(), T0, 400, miss_every=1, waste=0.01)
    restored = ErrorBudgetState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert restored.to_dict() == state.to_dict()
    assert restored.mode is state.mode


steps = st.lists(
    st.tuples(
        st.integers(0, 5),  # evaluations this step
        st.floats(0, 1),  # share of them that miss
        st.floats(0, 2),  # waste GPU-hours
        st.integers(30, 1800),  # seconds to the next step
    ),
    min_size=1,
    max_size=300,
)


@settings(max_examples=500, deadline=None)
@given(steps)
def test_no_flapping_and_every_hand_off_has_a_cause(
    history: list[tuple[int, float, float, int]],
) -> None:
    state, now = ErrorBudgetState(), T0
    for count, miss_share, waste, dt in history:
        now += dt
        misses = round(count * miss_share)
        evs = [Evaluation(now - i, 120.0 if i < misses else 80.0, 100.0) for i in range(count)]
        state = advance(state, evaluations=evs, wasted_gpu_hours=waste, policy=POLICY, now=now)
    entered_recovering: int | None = None
    for t in state.transitions:
        assert not (t.before is Mode.HANDED_OFF and t.after is Mode.PREDICTIVE)
        if t.after is Mode.RECOVERING:
            entered_recovering = t.at
        if t.after is Mode.PREDICTIVE:
            assert (
                entered_recovering is not None
                and t.at - entered_recovering >= POLICY.recovery_seconds
            )
        if t.before is Mode.PREDICTIVE:
            assert t.after is Mode.HANDED_OFF
            assert "error budget burning" in t.reason or "waste budget spent" in t.reason


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 100), st.integers(1, 5), st.booleans()), max_size=30),
    st.lists(st.tuples(st.integers(0, 40_000), st.booleans()), max_size=30),
    st.integers(0, 30_000),
)
def test_counting_evaluations_at_the_ends_equals_a_full_merge(
    buckets: list[tuple[int, int, bool]], evaluated: list[tuple[int, bool]], cut: int
) -> None:
    """The per-tick fast path (evaluations into the newest bucket or a new one) tallies exactly
    what merging every evaluation into every bucket does - in order or not."""
    starts = sorted({T0 + 300 * b for b, _, _ in buckets})
    points = tuple((m, n, int(bad)) for m, (_, n, bad) in zip(starts, buckets, strict=False))
    evaluations = [Evaluation(T0 + t, 2.0 if over else 0.0, 1.0) for t, over in evaluated]
    after = T0 + cut
    assert _tallied(points, evaluations, after=after) == _merged(points, evaluations, after=after)
    in_order = sorted(evaluations, key=lambda e: e.target_time)
    assert _tallied(points, in_order, after=after) == _merged(points, in_order, after=after)
