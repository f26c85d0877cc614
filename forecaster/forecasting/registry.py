"""Model names -> classes: the one place that builds a model from its name, or rebuilds a saved one.

``build("gbm", ...)`` gives the calibrated model (what selection and production use);
``build("gbm-raw", ...)`` the same model without calibration, for comparison in backtests.
Baselines are never wrapped: their quantiles are already empirical.

A new model is one module and one ``register(name, Class)`` call (``docs/extending.md``); the
built-in models are registered here by "module:Class" and imported on first use, so
``forecaster --help`` does not load scikit-learn, statsmodels and Prophet. This is the one place
in the package that imports by string (``tests/test_architecture.py`` checks).

The wrappers - the calibration around a model, the ensemble of models - hold other models. They
do not import this module to rebuild them: ``restore`` hands them itself (``from_state(state,
restore=...)``), so the registry -> wrapper dependency runs one way and no import cycle hides
behind a lazy import.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster

_WHERE: dict[str, Any] = {
    "persistence": "forecaster.forecasting.baselines:PersistenceQuantile",
    "seasonal-naive": "forecaster.forecasting.baselines:SeasonalNaive",
    "prophet": "forecaster.forecasting.prophet_model:ProphetLevel",
    "quantreg": "forecaster.forecasting.statsmodels_model:FourierQuantReg",
    "gbm": "forecaster.forecasting.gbm:GradientBoostingQuantile",
    "ensemble": "forecaster.forecasting.ensemble:MeanEnsemble",
    "calibrated": "forecaster.forecasting.calibration:Calibrated",
}
"""name -> class, or "module:Class" imported on first use (each class's ``name`` matches)."""
_BASELINES = ["persistence", "seasonal-naive"]
_CANDIDATES = ["persistence", "seasonal-naive", "prophet", "quantreg", "gbm", "ensemble"]
RAW_SUFFIX = "-raw"
FALLBACK = "persistence"
CALIBRATOR = "calibrated"


def register(name: str, model: type[Forecaster] | str, *, baseline: bool = False) -> None:
    """Make ``name`` a candidate model: ``build``, selection, settings and replay accept it.

    ``model`` is the class (its ``name`` must be ``name``) or "module:Class". A baseline is
    never calibrated (its quantiles are empirical); any other model is, unless named ``*-raw``.
    """
    if name in _WHERE or name.endswith(RAW_SUFFIX):
        raise ModelError(f"model {name!r} is registered already or ends in {RAW_SUFFIX!r}")
    if not isinstance(model, str) and getattr(model, "name", name) != name:
        raise ModelError(f"model {name!r}: its class says its name is {model.name!r}")
    _WHERE[name] = model
    _CANDIDATES.append(name)
    if baseline:
        _BASELINES.append(name)
    _class.cache_clear()


def candidates() -> tuple[str, ...]:
    """Every registered candidate model, built-ins first."""
    return tuple(_CANDIDATES)


@functools.cache
def _class(name: str) -> Any:
    where = _WHERE[name]
    if not isinstance(where, str):
        return where
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def model_class(name: str) -> Any:
    """The class registered under ``name``."""
    if name not in _WHERE:
        raise ModelError(f"unknown model {name!r}; known: {sorted(_WHERE)}")
    return _class(name)


def restore(name: str, state: dict[str, Any]) -> Forecaster:
    """The saved model ``name`` rebuilt from its ``to_state()``; a model that holds others
    (``from_state`` takes ``restore``) gets this function to rebuild them."""
    cls = model_class(name)
    if getattr(cls, "holds_models", False):
        held: Forecaster = cls.from_state(state, restore=restore)
        return held
    model: Forecaster = cls.from_state(state)
    return model


def known_names() -> list[str]:
    """Every name ``build`` accepts."""
    return list(_CANDIDATES) + [n + RAW_SUFFIX for n in _CANDIDATES if n not in _BASELINES]


def build(
    name: str, *, horizons_seconds: tuple[int, ...], quantiles: tuple[float, ...]
) -> Forecaster:
    """A fresh, unfitted model; non-baseline models come calibrated unless named ``*-raw``."""
    base = name.removesuffix(RAW_SUFFIX)
    if base not in _CANDIDATES or (name != base and base in _BASELINES):
        raise ModelError(f"unknown model {name!r}; known: {known_names()}")
    inner: Forecaster = _class(base)(horizons_seconds=horizons_seconds, quantiles=quantiles)
    if base in _BASELINES or name.endswith(RAW_SUFFIX):
        return inner
    calibrated: Forecaster = _class(CALIBRATOR)(inner)
    return calibrated
