"""Model names -> classes, and the one place that builds a model from its name.

``build("gbm", ...)`` gives the calibrated model (what selection and production use);
``build("gbm-raw", ...)`` the same model without calibration, for comparison in backtests.
Baselines are never wrapped: their quantiles are already empirical.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster

# name -> "module:Class"; imported on first use, so `forecaster --help` does not load
# scikit-learn, statsmodels and Prophet (tests check each class's own ``name`` matches).
_WHERE = {
    "persistence": "forecaster.forecasting.baselines:PersistenceQuantile",
    "seasonal-naive": "forecaster.forecasting.baselines:SeasonalNaive",
    "prophet": "forecaster.forecasting.prophet_model:ProphetLevel",
    "quantreg": "forecaster.forecasting.statsmodels_model:FourierQuantReg",
    "gbm": "forecaster.forecasting.gbm:GradientBoostingQuantile",
    "ensemble": "forecaster.forecasting.ensemble:MeanEnsemble",
    "calibrated": "forecaster.forecasting.calibration:Calibrated",
}
BASELINES = ("persistence", "seasonal-naive")
CANDIDATES = ("persistence", "seasonal-naive", "prophet", "quantreg", "gbm", "ensemble")
RAW_SUFFIX = "-raw"
FALLBACK = "persistence"


@functools.cache
def _class(name: str) -> Any:
    module, _, attr = _WHERE[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def model_class(name: str) -> Any:
    """The class registered under ``name`` (for ``from_state``)."""
    if name not in _WHERE:
        raise ModelError(f"unknown model {name!r}; known: {sorted(_WHERE)}")
    return _class(name)


def known_names() -> list[str]:
    """Every name ``build`` accepts."""
    return list(CANDIDATES) + [n + RAW_SUFFIX for n in CANDIDATES if n not in BASELINES]


def build(
    name: str, *, horizons_seconds: tuple[int, ...], quantiles: tuple[float, ...]
) -> Forecaster:
    """A fresh, unfitted model; non-baseline models come calibrated unless named ``*-raw``."""
    base = name.removesuffix(RAW_SUFFIX)
    if base not in CANDIDATES or (name != base and base in BASELINES):
        raise ModelError(f"unknown model {name!r}; known: {known_names()}")
    inner: Forecaster = _class(base)(horizons_seconds=horizons_seconds, quantiles=quantiles)
    if base in BASELINES or name.endswith(RAW_SUFFIX):
        return inner
    calibrated: Forecaster = _class("calibrated")(inner)
    return calibrated
