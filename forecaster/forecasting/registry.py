"""Model names -> classes, and the one place that builds a model from its name.

``build("gbm", ...)`` gives the calibrated model (what selection and production use);
``build("gbm-raw", ...)`` the same model without calibration, for comparison in backtests.
Baselines are never wrapped: their quantiles are already empirical.
"""

from __future__ import annotations

from typing import Any

from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.baselines import PersistenceQuantile, SeasonalNaive
from forecaster.forecasting.calibration import Calibrated
from forecaster.forecasting.ensemble import MeanEnsemble
from forecaster.forecasting.gbm import GradientBoostingQuantile
from forecaster.forecasting.prophet_model import ProphetLevel
from forecaster.forecasting.statsmodels_model import FourierQuantReg

_CLASSES: dict[str, Any] = {
    cls.name: cls
    for cls in (
        PersistenceQuantile,
        SeasonalNaive,
        ProphetLevel,
        FourierQuantReg,
        GradientBoostingQuantile,
        MeanEnsemble,
        Calibrated,
    )
}
BASELINES = (PersistenceQuantile.name, SeasonalNaive.name)
CANDIDATES = (
    PersistenceQuantile.name,
    SeasonalNaive.name,
    ProphetLevel.name,
    FourierQuantReg.name,
    GradientBoostingQuantile.name,
    MeanEnsemble.name,
)
RAW_SUFFIX = "-raw"
FALLBACK = PersistenceQuantile.name


def model_class(name: str) -> Any:
    """The class registered under ``name`` (for ``from_state``)."""
    try:
        return _CLASSES[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; known: {sorted(_CLASSES)}") from None


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
    inner: Forecaster = _CLASSES[base](horizons_seconds=horizons_seconds, quantiles=quantiles)
    if base in BASELINES or name.endswith(RAW_SUFFIX):
        return inner
    calibrated: Forecaster = Calibrated(inner)
    return calibrated
