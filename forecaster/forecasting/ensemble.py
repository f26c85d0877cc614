"""A simple ensemble: the mean of its members' quantile forecasts.

Averaging the quantiles of models that err differently (boosted trees react to recent bursts,
the linear QuantReg to the time of day) lowers pinball loss on both shared traces in the
benchmark; the backtest decides per pool whether it is selected.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

import numpy as np

from forecaster.core.series import DemandSeries, Forecast, IntArray
from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster, Restore
from forecaster.forecasting.gbm import GradientBoostingQuantile
from forecaster.forecasting.statsmodels_model import FourierQuantReg


class MeanEnsemble:
    """Mean of the members' forecasts, quantile by quantile (kept monotone)."""

    holds_models: ClassVar[bool] = True
    """Rebuilt with ``restore`` (``forecasting.registry.restore``)."""
    name: ClassVar[str] = "ensemble"

    def __init__(
        self,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        members: tuple[Forecaster, ...] | None = None,
    ) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.members: tuple[Forecaster, ...] = members or (
            GradientBoostingQuantile(horizons_seconds=horizons_seconds, quantiles=quantiles),
            FourierQuantReg(horizons_seconds=horizons_seconds, quantiles=quantiles),
        )
        self.fitted_ = False

    def fit(self, series: DemandSeries) -> Self:
        """Fit every member on the same history."""
        for member in self.members:
            member.fit(series)
        self.fitted_ = True
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        """Mean of the members' forecasts."""
        if not self.fitted_:
            raise ModelError(f"{self.name}: predict() called before fit()")
        values = np.mean([m.predict(history, at=at).values for m in self.members], axis=0)
        values = np.maximum.accumulate(values, axis=2)
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        """Each member's class name and state."""
        if not self.fitted_:
            raise ModelError(f"{self.name}: cannot save an unfitted model")
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "members": [{"class": m.name, "state": m.to_state()} for m in self.members],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], *, restore: Restore | None = None) -> Self:
        """Inverse of ``to_state``; members are rebuilt by ``restore`` (the registry's, which
        passes itself: this module never imports the registry)."""
        if restore is None:
            raise ModelError(f"{cls.name}: rebuild it through forecasting.registry.restore")
        members = tuple(restore(item["class"], item["state"]) for item in state["members"])
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]),
            quantiles=tuple(state["quantiles"]),
            members=members,
        )
        model.fitted_ = True
        return model
