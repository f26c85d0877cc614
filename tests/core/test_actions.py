"""A plan becomes ordered commands (``core.actions.commands``): the actuator only carries them out.

Cases: an opted-in pool that prewarms is protected before its prewarm is set; a pool that hands
off has its prewarm removed before its NodePool is restored; a held pause is left alone; a
forecast-only pool gets no command at all; pools keep their plan order.
"""

from __future__ import annotations

import dataclasses

from forecaster.core.actions import ProtectNodePool, RestoreNodePool, SetPrewarm, commands
from forecaster.core.planner import Mode, NodePoolAction, Plan, PoolInput, plan
from forecaster.core.policy import Budgets
from tests.factories import NOW, forecast, policy, snapshot

BIG = Budgets(
    max_total_prewarm_gpus=1000,
    max_prewarm_gpu_hours_per_day=10_000,
    max_cost_per_hour=10_000,
    commitment_seconds=3600,
)


def planned(*items: tuple[str, Mode, bool]) -> Plan:
    """One pool per item (name, mode, opted into NodePool protection), each asking P95 57."""
    return plan(
        [
            PoolInput(
                policy(name, protect_nodepool=protect), snapshot(name), forecast(57.0, name), mode
            )
            for name, mode, protect in items
        ],
        budgets=BIG,
        spent_gpu_hours_last_day=0,
        now=NOW,
    )


def test_protection_comes_before_prewarm_and_restore_after_removal() -> None:
    prewarming = planned(("a", Mode.PREDICTIVE, True), ("b", Mode.HANDED_OFF, True))
    assert commands(prewarming) == (
        ProtectNodePool("a"),
        SetPrewarm("a", units=3, gpus=24),
        SetPrewarm("b", units=0, gpus=0),
        RestoreNodePool("b"),
    )


def test_a_pool_not_opted_in_is_restored_which_is_a_no_op_without_a_pause() -> None:
    assert commands(planned(("a", Mode.PREDICTIVE, False))) == (
        SetPrewarm("a", units=3, gpus=24),
        RestoreNodePool("a"),
    )


def test_a_held_pause_is_left_alone() -> None:
    base = planned(("a", Mode.PREDICTIVE, True))
    held = dataclasses.replace(
        base, pools=(dataclasses.replace(base.pools[0], nodepool=NodePoolAction.HOLD),)
    )
    assert commands(held) == (SetPrewarm("a", units=3, gpus=24),)


def test_a_forecast_only_pool_gets_no_command() -> None:
    forecast_only = plan(
        [
            PoolInput(
                policy("a", forecast_only=True), snapshot("a"), forecast(57.0), Mode.PREDICTIVE
            )
        ],
        budgets=BIG,
        spent_gpu_hours_last_day=0,
        now=NOW,
    )
    assert commands(forecast_only) == ()
