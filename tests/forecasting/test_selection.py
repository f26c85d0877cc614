"""Selection rule, table-driven.

Within tolerance -> lowest pinball; else the closest over-covering model; else the fallback.
"""

from __future__ import annotations

import math

import pytest

from forecaster.forecasting.backtest import ModelScore
from forecaster.forecasting.selection import select


def s(model: str, cov: float, pin: float, points: int = 100) -> ModelScore:
    return ModelScore(model, cov, pin, 0.0, 0.1, points, 0)


@pytest.mark.parametrize(
    ("scores", "chosen", "reason"),
    [
        ([s("a", 0.95, 2.0), s("b", 0.945, 1.9)], "b", "lowest pinball"),
        ([s("a", 0.95, 2.0), s("cheat", 0.90, 1.0)], "a", "lowest pinball"),
        ([s("a", 0.97, 2.0), s("b", 0.99, 1.5), s("c", 0.90, 1.0)], "a", "closest over-covering"),
        ([s("a", 0.90, 2.0), s("b", 0.80, 1.0)], "persistence", "fallback"),
        ([s("a", math.nan, math.nan, points=0)], "persistence", "fallback"),
    ],
)
def test_selection_rule(scores: list[ModelScore], chosen: str, reason: str) -> None:
    selection = select(scores, target=0.95, tolerance=0.01, fallback="persistence")
    assert selection.model == chosen
    assert reason in selection.reason
