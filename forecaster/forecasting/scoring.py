"""Forecast quality measures, in GPUs, used by backtests and the error budget alike."""

from __future__ import annotations

import numpy as np

from forecaster.core.series import FloatArray


def pinball_loss(actual: FloatArray, predicted: FloatArray, *, quantile: float) -> float:
    """Mean quantile (pinball) loss; lower is better, in the data's unit (GPUs)."""
    diff = actual - predicted
    return float(np.mean(np.maximum(quantile * diff, (quantile - 1.0) * diff)))


def coverage(actual: FloatArray, predicted: FloatArray) -> float:
    """Share of points where the actual value did not exceed the forecast."""
    return float(np.mean(actual <= predicted))


def headroom(actual: FloatArray, predicted: FloatArray) -> float:
    """Mean forecast minus actual: how many GPUs the forecast keeps spare on average."""
    return float(np.mean(predicted - actual))
