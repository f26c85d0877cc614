"""The protocol every forecasting model follows, like a scikit-learn estimator.

* The constructor takes settings only (horizons, quantiles, hyper-parameters); nothing is fitted.
* ``fit(series)`` learns from a history and returns ``self``; fitted state ends in ``_``.
* ``predict(history, at=origins)`` forecasts ``values(origin + h)`` for each origin in ``at``
  using only ``history`` up to that origin - models are conditioned on the level at the origin
  (a GPU pool's demand 15 minutes from now is mostly its demand now).
* ``to_state()`` / ``from_state()`` give a JSON-able dict for artifacts (never pickle).

A new model is one module that implements this and one ``registry.register(name, Class)`` call
(``docs/extending.md``). A model that holds others (the calibration, the ensemble) sets
``holds_models`` and takes ``from_state(state, *, restore)``: the registry's ``restore`` rebuilds
the models it holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol, Self

from forecaster.core.series import DemandSeries, Forecast, IntArray


class Forecaster(Protocol):
    """A quantile forecaster of GPU demand; see the module docstring for the contract."""

    name: ClassVar[str]
    horizons_seconds: tuple[int, ...]
    quantiles: tuple[float, ...]

    def fit(self, series: DemandSeries) -> Self:
        """Learn from ``series`` (NaN points are ignored) and return self."""
        ...

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Forecast every configured horizon and quantile for each origin in ``at``."""
        ...

    def to_state(self) -> dict[str, Any]:
        """Settings and fitted state as JSON-able data."""
        ...

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        """Rebuild a fitted model from ``to_state()`` output."""
        ...


Restore = Callable[[str, dict[str, Any]], Forecaster]
"""Rebuilds a saved model from its registered name and its ``to_state()``
(``forecasting.registry.restore``)."""
