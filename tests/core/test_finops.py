"""FinOps figures from tick points, computed by hand: GPU-hours as a step function, the last
point's span not yet counted, a gap longer than the cap charged only up to it, points before
``since`` ignored; dollars, cost per used GPU-hour and the wait-removed estimate."""

from __future__ import annotations

import pytest

from forecaster.core.finops import SpendPoint, pool_spend


def test_spend_integrates_ticks_as_steps() -> None:
    points = [
        SpendPoint(at=0, node_gpus=80, running_gpus=64, billed_prewarm_gpus=16),  # before since
        SpendPoint(
            at=3600, node_gpus=40, running_gpus=32, billed_prewarm_gpus=8, wasted_gpu_hours=2.0
        ),
        SpendPoint(
            at=7200,
            node_gpus=48,
            running_gpus=32,
            billed_prewarm_gpus=16,
            used_prewarm_gpus=8,
        ),
        SpendPoint(at=7200 + 5 * 3600, node_gpus=8, running_gpus=8, billed_prewarm_gpus=0),  # a gap
    ]
    spend = pool_spend(
        points, since=3600, price_per_gpu_hour=2.0, lead_seconds=420, max_step_seconds=3600
    )
    assert spend.node_gpu_hours == pytest.approx(40 + 48)  # the 5 h gap charged 1 h
    assert spend.used_gpu_hours == pytest.approx(32 + 32)
    assert spend.prewarm_gpu_hours == pytest.approx(8 + 16)
    assert spend.prewarm_cost == pytest.approx(48.0)
    assert spend.wasted_cost == pytest.approx(4.0) and spend.used_prewarm_cost == pytest.approx(44)
    assert spend.cost_per_used_gpu_hour == pytest.approx(88 * 2.0 / 64)
    assert spend.wait_removed_gpu_minutes == pytest.approx(8 * 7)


def test_no_use_has_no_cost_per_used_gpu_hour() -> None:
    spend = pool_spend(
        [SpendPoint(0, 8, 0, 8), SpendPoint(60, 8, 0, 8, wasted_gpu_hours=100.0)],
        since=0,
        price_per_gpu_hour=1.0,
        lead_seconds=0,
        max_step_seconds=3600,
    )
    assert spend.cost_per_used_gpu_hour is None
    assert spend.wasted_cost == pytest.approx(spend.prewarm_cost)  # never more than was spent
