"""Planner: table cases for each rule and hypothesis properties over thousands of random inputs.

Properties: no cap is ever exceeded (per-pool max, NodePool limit, total GPUs, cost per hour,
GPU-hours per day with commitment), targets are whole placeholders and never negative, handed-off
and recovering pools get no more than the announced work due, forecast-only pools never act,
stale data beyond the hold gives 0 and within it never more than what exists, and a larger
forecast never shrinks that pool's target.
Caps are charged whole nodes (a 1-GPU placeholder on an 8-GPU node bills 8 GPUs). Cases: the
worked example, each cap with its reason, an unlimited NodePool refused, the opt-in NodePool
pause only with a target.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forecaster.core.cluster import DemandForecast, PoolSnapshot
from forecaster.core.notice import AnnouncedItem
from forecaster.core.planner import Mode, PoolInput, announced_gpus, billed_gpus, plan
from forecaster.core.policy import Budgets, PoolPolicy
from tests.factories import NOW, forecast, policy, snapshot

BIG = Budgets(
    max_total_prewarm_gpus=1000,
    max_prewarm_gpu_hours_per_day=10_000,
    max_cost_per_hour=10_000,
    commitment_seconds=3600,
)


def one(
    p95: float,
    *,
    mode: Mode = Mode.PREDICTIVE,
    budgets: Budgets = BIG,
    spent: float = 0,
    pol: PoolPolicy | None = None,
    snap: PoolSnapshot | None = None,
    data_end: int = NOW - 60,
):  # type: ignore[no-untyped-def]
    item = PoolInput(pol or policy(), snap or snapshot(), forecast(p95, data_end=data_end), mode)
    return plan([item], budgets=budgets, spent_gpu_hours_last_day=spent, now=NOW).pools[0]


def test_worked_example() -> None:
    # 36 requested, 4 spare: a P95 of 57 needs 17 more GPUs -> 3 placeholders of 8 = 24
    result = one(57.0)
    assert (result.needed_gpus, result.target_gpus, result.placeholders) == (24, 24, 3)
    assert not result.protect_nodepool  # off by default: do-not-disrupt keeps the warm nodes
    assert "need 24 (3 x 8-GPU placeholder)" in result.reasons[0]


def test_nodepool_pause_only_when_opted_in_and_only_with_a_target() -> None:
    opted = policy(protect_nodepool=True)
    assert one(57.0, pol=opted).protect_nodepool
    # a rising P50 with nothing to prewarm no longer pauses the whole pool
    ramp = PoolInput(
        opted, snapshot(), DemandForecast("a", 39.0, 39.0, NOW - 60, "m", 0.95), Mode.PREDICTIVE
    )
    result = plan([ramp], budgets=BIG, spent_gpu_hours_last_day=0, now=NOW).pools[0]
    assert result.target_gpus == 0 and not result.protect_nodepool


def test_caps_charge_the_whole_node_a_small_placeholder_launches() -> None:
    # 1-GPU placeholders on 8-GPU nodes: one placeholder bills a whole node
    small = policy(placeholder_size_gpus=1)
    cost_for_four_gpus = dataclasses.replace(BIG, max_cost_per_hour=4 * 2.0)
    assert one(57.0, pol=small, budgets=cost_for_four_gpus).target_gpus == 0
    cost_for_one_node = dataclasses.replace(BIG, max_cost_per_hour=8 * 2.0)
    result = one(57.0, pol=small, budgets=cost_for_one_node)
    assert result.target_gpus == 8  # every GPU of the node it pays for
    hours_for_half_a_node = dataclasses.replace(BIG, max_prewarm_gpu_hours_per_day=4)
    assert one(57.0, pol=small, budgets=hours_for_half_a_node).target_gpus == 0
    total_for_half_a_node = dataclasses.replace(BIG, max_total_prewarm_gpus=4)
    assert one(57.0, pol=small, budgets=total_for_half_a_node).target_gpus == 0


def test_demand_covered_means_no_prewarm_and_original_nodepool() -> None:
    result = one(39.0)
    assert result.target_gpus == 0 and not result.protect_nodepool


def test_a_floor_keeps_whole_placeholders_warm_whatever_the_forecast() -> None:
    floored = policy(floor_gpus=12)
    covered = one(39.0, pol=floored)  # the forecast needs nothing: the floor, in whole nodes
    assert (covered.needed_gpus, covered.target_gpus) == (16, 16)
    assert any("floor of 12 GPUs: prewarm at least 16" in r for r in covered.reasons)
    assert one(57.0, pol=floored).target_gpus == 24  # a forecast above the floor wins
    # every cap and mode still applies to the floor
    assert one(39.0, pol=policy(floor_gpus=12, max_prewarm_gpus=8)).target_gpus == 8
    assert one(39.0, pol=floored, mode=Mode.HANDED_OFF).target_gpus == 0
    with pytest.raises(ValueError, match="floor_gpus"):
        policy(floor_gpus=-1)


@pytest.mark.parametrize(
    ("kwargs", "target", "reason"),
    [
        ({"pol": policy(max_prewarm_gpus=20)}, 16, "capped by pool max_prewarm_gpus (20 GPUs)"),
        ({"snap": snapshot(nodepool_limit_gpus=56)}, 16, "capped by NodePool GPU limit (16 GPUs)"),
        ({"snap": snapshot(nodepool_limit_gpus=None)}, 0, "no nvidia.com/gpu limit"),
        ({"budgets": dataclasses.replace(BIG, max_total_prewarm_gpus=10)}, 8, "total prewarm GPUs"),
        ({"budgets": dataclasses.replace(BIG, max_cost_per_hour=40)}, 16, "cost per hour"),
        (
            {"budgets": dataclasses.replace(BIG, max_prewarm_gpu_hours_per_day=30), "spent": 10},
            16,
            "GPU-hours/day budget (10.0 of 30 spent",
        ),
        ({"mode": Mode.HANDED_OFF}, 0, "handed-off: reactive scaling owns the pool"),
        ({"mode": Mode.RECOVERING}, 0, "recovering: reactive scaling owns the pool"),
        (  # spare past whole placeholders: still nothing, not less
            {"mode": Mode.HANDED_OFF, "snap": snapshot(allocatable_gpus=64)},
            0,
            "handed-off: reactive scaling owns the pool, prewarm 0",
        ),
    ],
)
def test_each_cap_and_mode_with_its_reason(
    kwargs: dict[str, object], target: int, reason: str
) -> None:
    result = one(57.0, **kwargs)  # type: ignore[arg-type]
    assert result.target_gpus == target
    assert any(reason in r for r in result.reasons), result.reasons


def test_unlimited_nodepool_only_when_allowed() -> None:
    snap = snapshot(nodepool_limit_gpus=None)
    assert one(57.0, snap=snap, pol=policy(allow_unlimited_nodepool=True)).target_gpus == 24


def test_stale_data_holds_existing_prewarm_then_drops_to_zero() -> None:
    snap = snapshot(prewarm_gpus=16)
    fresh = one(100.0, snap=snap)
    held = one(100.0, snap=snap, data_end=NOW - 600)
    gone = one(100.0, snap=snap, data_end=NOW - 1000)
    assert fresh.target_gpus > 16
    assert held.target_gpus == 16 and any("no new prewarm" in r for r in held.reasons)
    assert gone.target_gpus == 0


def test_forecast_only_reports_but_does_not_act() -> None:
    result = one(57.0, pol=policy(forecast_only=True))
    assert not result.acts and result.mode is Mode.FORECAST_ONLY and result.target_gpus == 24
    assert any("performs no action" in r for r in result.reasons)
    assert not result.protect_nodepool


def test_invalid_policies_refuse_to_exist() -> None:
    with pytest.raises(ValueError, match="placeholder_size_gpus"):
        policy(placeholder_size_gpus=16)
    with pytest.raises(ValueError, match="price_per_gpu_hour"):
        policy(price_per_gpu_hour=float("nan"))
    with pytest.raises(ValueError, match="max_cost_per_hour"):
        dataclasses.replace(BIG, max_cost_per_hour=-1)


# ---- properties -------------------------------------------------------------------------

units = st.sampled_from([1, 2, 4, 8])


@st.composite
def pool_inputs(draw: st.DrawFn, name: str) -> PoolInput:
    unit = draw(units)
    pol = PoolPolicy(
        pool=name,
        gpus_per_node=8,
        placeholder_size_gpus=unit,
        max_prewarm_gpus=draw(st.integers(0, 200)),
        price_per_gpu_hour=draw(st.floats(0, 10, allow_nan=False)),
        stale_after_seconds=300,
        hold_seconds=draw(st.integers(0, 3600)),
        forecast_only=draw(st.booleans()),
        allow_unlimited_nodepool=draw(st.booleans()),
        protect_nodepool=draw(st.booleans()),
        floor_gpus=draw(st.sampled_from([0, 0, 8, 13, 64])),
    )
    alloc = draw(st.integers(0, 400))
    prewarm = draw(st.integers(0, 100))
    snap = PoolSnapshot(
        pool=name,
        observed_at=NOW,
        allocatable_gpus=alloc,
        launching_gpus=draw(st.integers(0, 64)),
        running_gpus=draw(st.integers(0, alloc)),
        pending_gpus=draw(st.integers(0, 100)),
        prewarm_gpus=prewarm,
        nodepool_limit_gpus=draw(st.one_of(st.none(), st.integers(0, 600))),
        unbound_placeholder_gpus=draw(st.integers(0, prewarm)),
        announced=tuple(
            AnnouncedItem(name, 8, pods, False, NOW + start, NOW + start + 600, "cronjob", "k")
            for pods, start in draw(
                st.lists(st.tuples(st.integers(0, 8), st.integers(0, 1200)), max_size=2)
            )
        ),
    )
    p95 = draw(st.floats(0, 2000, allow_nan=False))
    age = draw(st.integers(0, 5000))
    mode = draw(st.sampled_from(list(Mode)))
    window = draw(st.sampled_from([0, 900]))
    return PoolInput(pol, snap, forecast(p95, pool=name, data_end=NOW - age), mode, window)


budget_strategy = st.builds(
    Budgets,
    max_total_prewarm_gpus=st.integers(0, 500),
    max_prewarm_gpu_hours_per_day=st.floats(0, 5000, allow_nan=False),
    max_cost_per_hour=st.floats(0, 1000, allow_nan=False),
    commitment_seconds=st.integers(60, 7200),
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[PoolInput], Budgets, float]:
    count = draw(st.integers(1, 4))
    inputs = [draw(pool_inputs(f"p{i}")) for i in range(count)]
    budgets = draw(budget_strategy)
    spent = draw(st.floats(0, 6000, allow_nan=False))
    return inputs, budgets, spent


@settings(max_examples=3000, deadline=None)
@given(scenarios())
def test_no_cap_is_ever_exceeded(scenario: tuple[list[PoolInput], Budgets, float]) -> None:
    inputs, budgets, spent = scenario
    result = plan(inputs, budgets=budgets, spent_gpu_hours_last_day=spent, now=NOW)
    total = sum(
        billed_gpus(item.policy, p.target_gpus)
        for item, p in zip(inputs, result.pools, strict=True)
        if p.acts
    )  # whole nodes, not placeholders
    assert total <= budgets.max_total_prewarm_gpus
    assert result.cost_per_hour <= budgets.max_cost_per_hour + 1e-6
    committed = total * budgets.commitment_seconds / 3600
    assert total == 0 or spent + committed <= budgets.max_prewarm_gpu_hours_per_day + 1e-6
    for item, pool in zip(inputs, result.pools, strict=True):
        snap, pol = item.snapshot, item.policy
        assert pool.target_gpus >= 0
        assert pool.target_gpus % pol.placeholder_size_gpus == 0
        assert pool.target_gpus <= pol.max_prewarm_gpus
        in_use = max(
            snap.allocatable_gpus + snap.launching_gpus - snap.prewarm_gpus,
            snap.real_demand_gpus,
        )
        if snap.nodepool_limit_gpus is not None and pool.target_gpus > 0:
            assert pool.target_gpus + in_use <= snap.nodepool_limit_gpus
        elif snap.nodepool_limit_gpus is None and not pol.allow_unlimited_nodepool:
            assert pool.target_gpus == 0
        if item.mode in (Mode.HANDED_OFF, Mode.RECOVERING):  # announced work only
            due = announced_gpus(snap, window_seconds=item.window_seconds)
            assert (
                pool.target_gpus <= -(-due // pol.placeholder_size_gpus) * pol.placeholder_size_gpus
            )
            assert not pool.protect_nodepool
        if pol.forecast_only:
            assert not pool.acts and not pool.protect_nodepool
        if pool.protect_nodepool:
            assert pol.protect_nodepool and pool.target_gpus > 0
        age = NOW - item.forecast.data_end  # type: ignore[union-attr]
        if age > pol.stale_after_seconds + pol.hold_seconds:
            assert pool.target_gpus == 0
        elif age > pol.stale_after_seconds:
            assert pool.target_gpus <= snap.prewarm_gpus
        assert pool.reasons


@settings(max_examples=2000, deadline=None)
@given(scenarios(), st.integers(0, 3), st.floats(0, 500, allow_nan=False))
def test_a_larger_forecast_never_shrinks_that_pool(
    scenario: tuple[list[PoolInput], Budgets, float], which: int, extra: float
) -> None:
    inputs, budgets, spent = scenario
    i = which % len(inputs)
    before = plan(inputs, budgets=budgets, spent_gpu_hours_last_day=spent, now=NOW)
    bigger = list(inputs)
    f = inputs[i].forecast
    assert f is not None
    bigger[i] = dataclasses.replace(
        inputs[i], forecast=dataclasses.replace(f, upper_gpus=f.upper_gpus + extra)
    )
    after = plan(bigger, budgets=budgets, spent_gpu_hours_last_day=spent, now=NOW)
    assert after.pools[i].target_gpus >= before.pools[i].target_gpus


def test_no_capacity_at_the_cloud_holds_what_exists_and_adds_nothing() -> None:
    problem = "Karpenter could not launch a node 3 time(s) (InsufficientCapacityError)"
    snap = snapshot(prewarm_gpus=8, ready_placeholder_gpus=0, launch_problem=problem)
    pool_plan = one(80.0, snap=snap)  # the forecast wants 40 GPUs more than running + spare
    assert pool_plan.needed_gpus >= 40 and pool_plan.target_gpus == 8
    assert any("no capacity at the cloud" in r and "warm: 0 of 8" in r for r in pool_plan.reasons)
    assert one(80.0, snap=dataclasses.replace(snap, launch_problem=None)).target_gpus >= 40


@pytest.mark.parametrize("mode", [Mode.HANDED_OFF, Mode.RECOVERING, None])
def test_only_predictive_pools_get_prewarm_the_actuator_just_carries_it_out(
    mode: Mode | None,
) -> None:
    """The actuator takes the plan's target as is: every other acting mode must plan 0 and a
    restored NodePool (None: the kill switch)."""
    pol = policy(protect_nodepool=True)
    item = PoolInput(pol, snapshot(), forecast(80.0), mode or Mode.PREDICTIVE)
    halted = "incident" if mode is None else None
    (pool_plan,) = plan(
        [item], budgets=BIG, spent_gpu_hours_last_day=0, now=NOW, halted=halted
    ).pools
    assert pool_plan.acts and pool_plan.target_gpus == 0 and pool_plan.placeholders == 0
    assert not pool_plan.protect_nodepool


def test_placeholders_whose_nodes_are_launching_are_kept_until_the_nodes_are_up() -> None:
    """Deleting an unbound placeholder does not stop its node's launch, and freeing a bound one
    lets the unbound one bind there: a node would come up empty and cold. While nodes launch
    for unbound placeholders, the target keeps the bound ones and those the nodes will take."""
    flying = snapshot(prewarm_gpus=24, unbound_placeholder_gpus=16, launching_gpus=8)
    assert flying.in_flight_placeholder_gpus == 8
    kept = one(36.0, snap=flying)  # the forecast asks for nothing now
    assert kept.needed_gpus == 0 and kept.target_gpus == 16  # 8 bound + 8 in flight
    assert any("8 GPUs of placeholders wait for nodes already launching" in r for r in kept.reasons)
    claimed = dataclasses.replace(flying, pending_gpus=8)  # a real pod takes that node first
    assert claimed.in_flight_placeholder_gpus == 0 and one(36.0, snap=claimed).target_gpus == 0
    landed = dataclasses.replace(flying, launching_gpus=0)  # the nodes are up: scale down
    assert one(36.0, snap=landed).target_gpus == 0
    assert one(80.0, snap=flying).target_gpus == one(80.0, snap=landed).target_gpus  # a floor
    stale = one(36.0, snap=flying, data_end=NOW - 5000)
    assert stale.target_gpus == 0  # stale beyond the hold: nothing is kept


def test_empty_nodes_are_not_spare_a_placeholder_keeps_them() -> None:
    """An empty Ready node is consolidated before the work it could serve arrives: the plan asks
    for a placeholder (which lands on it, no launch) instead of counting it as spare."""
    empty = snapshot(allocatable_gpus=48, running_gpus=36, stranded_gpus=4, empty_gpus=8)
    assert empty.spare_gpus == 0
    decision = plan(
        [PoolInput(policy(), empty, forecast(44.0), Mode.PREDICTIVE)],
        budgets=BIG,
        spent_gpu_hours_last_day=0.0,
        now=NOW,
    )
    assert decision.pool("a").target_gpus == 8
