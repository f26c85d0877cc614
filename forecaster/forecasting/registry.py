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
from dataclasses import dataclass
from typing import Any

from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster
from forecaster.registry import MODEL, Registry


@dataclass(frozen=True)
class _Model:
    where: type[Forecaster] | str
    """The class, or "module:Class" imported on first use (the class's ``name`` matches)."""
    candidate: bool = True
    """Selection may choose it (the calibrator is not a forecast of its own)."""
    baseline: bool = False
    """Never calibrated: its quantiles are empirical."""


MODELS: Registry[_Model] = Registry(MODEL)
RAW_SUFFIX = "-raw"
FALLBACK = "persistence"
CALIBRATOR = "calibrated"


def register(name: str, model: type[Forecaster] | str, *, baseline: bool = False) -> None:
    """Make ``name`` a candidate model: ``build``, selection, settings and replay accept it.

    ``model`` is the class (its ``name`` must be ``name``) or "module:Class". A baseline is
    never calibrated (its quantiles are empirical); any other model is, unless named ``*-raw``.
    """
    if name in MODELS or name.endswith(RAW_SUFFIX):
        raise ModelError(f"model {name!r} is registered already or ends in {RAW_SUFFIX!r}")
    if not isinstance(model, str) and getattr(model, "name", name) != name:
        raise ModelError(f"model {name!r}: its class says its name is {model.name!r}")
    MODELS.register(name, _Model(model, baseline=baseline))
    _class.cache_clear()


def candidates() -> tuple[str, ...]:
    """Every registered candidate model, built-ins first."""
    return tuple(name for name, m in MODELS.items() if m.candidate)


@functools.cache
def _class(name: str) -> Any:
    where = MODELS.get(name).where
    if not isinstance(where, str):
        return where
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def model_class(name: str) -> Any:
    """The class registered under ``name``."""
    if name not in MODELS:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(MODELS.names())}")
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
    chosen = [(name, m) for name, m in MODELS.items() if m.candidate]
    return [n for n, _ in chosen] + [n + RAW_SUFFIX for n, m in chosen if not m.baseline]


def build(
    name: str, *, horizons_seconds: tuple[int, ...], quantiles: tuple[float, ...]
) -> Forecaster:
    """A fresh, unfitted model; non-baseline models come calibrated unless named ``*-raw``."""
    if name not in known_names():
        raise ModelError(f"unknown model {name!r}; known: {known_names()}")
    base = name.removesuffix(RAW_SUFFIX)
    inner: Forecaster = _class(base)(horizons_seconds=horizons_seconds, quantiles=quantiles)
    if MODELS.get(base).baseline or name.endswith(RAW_SUFFIX):
        return inner
    calibrated: Forecaster = _class(CALIBRATOR)(inner)
    return calibrated


for _name, _where in (
    ("persistence", "forecaster.forecasting.baselines:PersistenceQuantile"),
    ("seasonal-naive", "forecaster.forecasting.baselines:SeasonalNaive"),
):
    register(_name, _where, baseline=True)
for _name, _where in (
    ("prophet", "forecaster.forecasting.prophet_model:ProphetLevel"),
    ("quantreg", "forecaster.forecasting.statsmodels_model:FourierQuantReg"),
    ("gbm", "forecaster.forecasting.gbm:GradientBoostingQuantile"),
    ("ensemble", "forecaster.forecasting.ensemble:MeanEnsemble"),
):
    register(_name, _where)
MODELS.register(CALIBRATOR, _Model("forecaster.forecasting.calibration:Calibrated", False))
