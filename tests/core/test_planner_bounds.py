"""The planner's caps at their exact bounds, and the reasons and NodePool action each plan carries.

The property tests in ``test_planner`` show no cap is ever exceeded; these show each cap lets
through exactly what it allows and no less: a budget met to the GPU-hour is spent, a total met
to the GPU is handed out, the commitment is charged in hours (1.5 h is not 1 h), a blocked pool
does not stop the next pool's turn. The NodePool limit counts launching nodes and not our own
placeholders' nodes; a negative room or an uncapped pool gives 0 even with 1-GPU placeholders.
A pause is held until its deadline and not at it. Each plan says why its NodePool is as it is.
"""

from __future__ import annotations

import dataclasses
import math

from forecaster.core.planner import Mode, NodePoolAction, PoolInput, PoolPlan, _cap, plan
from forecaster.core.policy import Budgets, PoolPolicy
from tests.factories import NOW, forecast, policy, snapshot

BIG = Budgets(
    max_total_prewarm_gpus=1000,
    max_prewarm_gpu_hours_per_day=10_000,
    max_cost_per_hour=10_000,
    commitment_seconds=3600,
)
ONES = {"placeholder_size_gpus": 1, "gpus_per_node": 1}  # one GPU is one node: no rounding


def target(
    p95: float = 200.0, *, budgets: Budgets = BIG, pol: PoolPolicy | None = None, **snap: object
) -> int:
    return one(p95, budgets=budgets, pol=pol, **snap).target_gpus


def one(
    p95: float = 200.0, *, budgets: Budgets = BIG, pol: PoolPolicy | None = None, **snap: object
) -> PoolPlan:
    item = PoolInput(pol or policy(), snapshot(**snap), forecast(p95), Mode.PREDICTIVE)
    return plan([item], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW).pools[0]


def hours(budget: float, commitment_seconds: int = 3600) -> Budgets:
    return dataclasses.replace(
        BIG, max_prewarm_gpu_hours_per_day=budget, commitment_seconds=commitment_seconds
    )


def test_the_nodepool_limit_counts_launching_nodes_and_not_our_own_placeholders() -> None:
    # 48 up (16 of them our placeholders') + 8 launching = 40 GPUs of others: 16 left of 56
    room = {"allocatable_gpus": 48, "launching_gpus": 8, "prewarm_gpus": 16, "running_gpus": 20}
    assert target(nodepool_limit_gpus=56, **room) == 16


def test_no_room_and_no_limit_give_zero_even_for_one_gpu_placeholders() -> None:
    ones = policy(**ONES)
    assert target(pol=ones, nodepool_limit_gpus=30) == 0  # 36 running: over the limit
    assert target(pol=ones, nodepool_limit_gpus=None) == 0  # uncapped and not allowed
    assert target(pol=policy(**ONES, max_prewarm_gpus=0)) == 0
    assert _cap(16, -5, 8, "x", []) == 0  # a negative limit is no room, not a negative target


def test_a_cap_met_exactly_is_not_reported_as_capping() -> None:
    exact = one(pol=policy(max_prewarm_gpus=64), nodepool_limit_gpus=1000)
    assert exact.target_gpus == 64
    assert any("capped by pool max_prewarm_gpus" in r for r in exact.reasons)
    needed = one(57.0, pol=policy(max_prewarm_gpus=24))  # needs 24, allowed 24
    assert needed.target_gpus == 24
    assert not any("capped" in r for r in needed.reasons)


def test_one_gpu_needed_gets_one_gpu() -> None:
    assert target(37.0, pol=policy(**ONES), running_gpus=36, allocatable_gpus=36) == 1


def test_the_gpu_hours_budget_is_spent_to_the_last_gpu_hour_and_not_past_it() -> None:
    assert target(budgets=hours(8)) == 8  # one 8-GPU node for an hour: exactly the budget
    assert target(budgets=hours(16)) == 16
    assert target(budgets=hours(8 - 0.001)) == 0
    assert target(budgets=hours(8 - 0.5)) == 0


def test_the_commitment_is_charged_in_hours() -> None:
    assert target(budgets=hours(16, commitment_seconds=5400)) == 8  # 12 GPU-h, then 24 > 16
    assert target(budgets=hours(16, commitment_seconds=7200)) == 8  # 16 GPU-h, then 32 > 16
    assert target(budgets=hours(24, commitment_seconds=7200)) == 8  # 16 GPU-h, then 32 > 24
    assert target(budgets=hours(32, commitment_seconds=7200)) == 16


def test_the_total_gpus_and_cost_caps_are_handed_out_to_the_last_unit() -> None:
    assert target(budgets=dataclasses.replace(BIG, max_total_prewarm_gpus=16)) == 16
    assert target(budgets=dataclasses.replace(BIG, max_cost_per_hour=16 * 2.0)) == 16
    assert target(budgets=dataclasses.replace(BIG, max_cost_per_hour=16 * 2.0 - 0.5)) == 8


def test_a_pool_blocked_by_the_cost_cap_does_not_end_the_next_pools_turn() -> None:
    dear = PoolInput(
        policy("a", price_per_gpu_hour=3.0), snapshot("a"), forecast(200, "a"), Mode.PREDICTIVE
    )
    cheap = PoolInput(policy("b"), snapshot("b"), forecast(200, "b"), Mode.PREDICTIVE)
    budgets = dataclasses.replace(BIG, max_cost_per_hour=16.0)  # 8 GPUs at $2, not at $3
    result = plan([dear, cheap], budgets=budgets, spent_gpu_hours_last_day=0, now=NOW)
    assert [p.target_gpus for p in result.pools] == [0, 8]


def test_each_plan_says_why_its_nodepool_is_as_it_is() -> None:
    warm = "warm nodes kept by karpenter.sh/do-not-disrupt on the placeholders"
    assert warm in one(57.0).reasons
    assert warm in one(37.0, pol=policy(**ONES), running_gpus=36, allocatable_gpus=36).reasons
    idle = one(30.0)
    assert idle.target_gpus == 0 and warm not in idle.reasons
    assert not any(r.startswith("NodePool:") for r in idle.reasons)
    opted = policy(protect_nodepool=True)
    paused = one(57.0, pol=opted)
    assert paused.nodepool is NodePoolAction.PAUSE
    assert (
        "NodePool: consolidation paused while prewarming (opt-in, with a deadline)"
        in paused.reasons
    )
    assert warm not in paused.reasons
    held = one(30.0, pol=opted, paused_until=NOW + 1)
    assert held.nodepool is NodePoolAction.HOLD
    assert any(r.startswith("NodePool: pause held until its deadline") for r in held.reasons)
    restored = one(30.0, pol=opted)
    assert restored.nodepool is NodePoolAction.RESTORE
    assert "NodePool: original settings" in restored.reasons
    assert warm not in one(57.0, pol=opted).reasons


def test_a_pause_is_held_until_its_deadline_and_not_at_it() -> None:
    opted = policy(protect_nodepool=True)
    assert one(30.0, pol=opted, paused_until=NOW + 1).nodepool is NodePoolAction.HOLD
    assert one(30.0, pol=opted, paused_until=NOW).nodepool is NodePoolAction.RESTORE
    assert one(30.0, pol=opted, paused_until=NOW - 10).nodepool is NodePoolAction.RESTORE
    one_gpu = policy(protect_nodepool=True, **ONES)
    small = one(37.0, pol=one_gpu, running_gpus=36, allocatable_gpus=36)
    assert small.target_gpus == 1 and small.nodepool is NodePoolAction.PAUSE


def test_the_plan_reports_the_forecast_it_acted_on() -> None:
    assert one(57.0).demand_upper_gpus == 57.0
    item = PoolInput(policy(), snapshot(), None, Mode.HANDED_OFF)
    result = plan([item], budgets=BIG, spent_gpu_hours_last_day=0, now=NOW).pools[0]
    assert math.isnan(result.demand_upper_gpus)
