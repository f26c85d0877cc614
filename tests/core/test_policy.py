"""The planning horizon follows the measured lead (``core.policy.planning_horizon``).

Table: no measurement or too few launches keep the configured lead and horizon; a measured lead
(+ the configured margin, + the decision interval and Karpenter's batch) picks the shortest
covering horizon - longer or shorter than configured; a window beyond every horizon takes the
longest and says so.
"""

from __future__ import annotations

import pytest

from forecaster.core.policy import planning_horizon

HORIZONS = (300, 900, 1800)


@pytest.mark.parametrize(
    ("measured", "launches", "horizon", "lead", "why"),
    [
        (None, 0, 900, 420, "configured lead_time"),
        (800.0, 2, 900, 420, "configured lead_time"),  # two launches are not enough
        (800.0, 3, 900, 860, "measured lead 800 s over 3 launches + 60 s margin"),
        (1000.0, 5, 1800, 1060, "measured lead 1000 s"),  # 1060 + 30 + 10 > 900
        (150.0, 4, 300, 210, "measured lead 150 s"),  # shorter than configured: 250 s window
        (2000.0, 3, 1800, 2060, "beyond every horizon, using 1800 s"),
    ],
)
def test_the_horizon_covers_the_measured_lead(
    measured: float | None, launches: int, horizon: int, lead: int, why: str
) -> None:
    planned = planning_horizon(
        configured_lead_seconds=420,
        configured_horizon_seconds=900,
        measured_lead_seconds=measured,
        measured_launches=launches,
        margin_seconds=60,
        decision_interval_seconds=30,
        horizons_seconds=HORIZONS,
    )
    assert (planned.horizon_seconds, planned.lead_seconds) == (horizon, lead)
    assert why in planned.reason
