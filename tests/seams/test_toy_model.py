"""A model from outside the package, through the registry's public seam (``docs/extending.md``).

``ToyLevel`` lives only here and is registered with ``registry.register`` - no package file
names it. Settings-level names accept it (and its ``-raw`` form); the training job backtests,
selects, fits and publishes it calibrated; the daemon's model provider loads it back (the
calibration rebuilding it through ``registry.restore``) and forecasts with it. A name already
taken is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, Self

import numpy as np
import pytest

from forecaster.core.quality import regularize
from forecaster.core.series import DemandSeries, Forecast, IntArray
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting import registry
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.features import levels_at
from forecaster.forecasting.training import TrainingPlan, train_pool
from forecaster.reconcile.models import ModelProvider
from tests.factories import bursty


class ToyLevel:
    """The level now, widened by the history's spread for the upper quantiles."""

    name: ClassVar[str] = "toy-level"

    def __init__(self, *, horizons_seconds: tuple[int, ...], quantiles: tuple[float, ...]) -> None:
        self.horizons_seconds = tuple(horizons_seconds)
        self.quantiles = tuple(quantiles)
        self.spread_: float | None = None

    def fit(self, series: DemandSeries) -> Self:
        self.spread_ = float(np.nanstd(series.values))
        return self

    def predict(self, history: DemandSeries, *, at: IntArray) -> Forecast:
        if self.spread_ is None:
            raise ModelError("toy-level: predict() before fit()")
        offsets = np.array([(q - 0.5) * 4 * self.spread_ for q in self.quantiles])
        level = levels_at(history, at)
        values = np.broadcast_to(
            level[:, None, None] + offsets[None, None, :],
            (np.size(at), len(self.horizons_seconds), len(self.quantiles)),
        ).copy()
        return Forecast(self.name, at, self.horizons_seconds, self.quantiles, values)

    def to_state(self) -> dict[str, Any]:
        return {
            "horizons_seconds": list(self.horizons_seconds),
            "quantiles": list(self.quantiles),
            "spread": self.spread_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Self:
        model = cls(
            horizons_seconds=tuple(state["horizons_seconds"]), quantiles=tuple(state["quantiles"])
        )
        model.spread_ = state["spread"]
        return model


@pytest.fixture
def toy() -> Iterator[str]:
    """``ToyLevel`` registered for this test only (the registry as it was afterwards)."""
    with registry.MODELS.trial():
        registry.register(ToyLevel.name, ToyLevel)
        yield ToyLevel.name


def test_a_registered_model_trains_publishes_and_serves(toy: str, tmp_path: Path) -> None:
    assert {toy, f"{toy}-raw"} <= set(registry.known_names())
    assert toy in registry.candidates()
    demand, _ = bursty(10, seed=5)
    plan = TrainingPlan(
        models=(toy,),
        horizons_seconds=(600,),
        quantiles=(0.5, 0.95),
        selection_horizon_seconds=600,
        target_quantile=0.95,
        coverage_tolerance=0.05,
        min_history_seconds=3 * DAY,
        test_seconds=DAY,
        train_seconds=6 * DAY,
        origin_every_seconds=3600,
        refit_every_seconds=DAY,
    )
    report = regularize(demand.timestamps, demand.values, step_seconds=60, name="a")[1]
    store = ArtifactStore(tmp_path / "models")
    trained = train_pool(demand, report, plan=plan, store=store, created="20260101T000000Z")
    assert trained.status == "trained", trained.message
    assert trained.selection is not None and trained.selection.model == toy
    served = ModelProvider(store, horizons_seconds=(600,), quantiles=(0.5, 0.95)).get(
        "a", history=demand
    )
    assert served is not None and served.name == toy and served.version == trained.version
    assert type(served.model).__name__ == "Calibrated"
    forecast = served.model.predict(demand, at=np.array([demand.end], dtype=np.int64))
    upper = forecast.values_at(quantile=0.95, horizon_seconds=600)[0]
    assert np.isfinite(upper) and upper >= forecast.values_at(quantile=0.5, horizon_seconds=600)[0]


def test_a_name_already_taken_is_refused(toy: str) -> None:
    with pytest.raises(ModelError, match="registered already"):
        registry.register("gbm", ToyLevel)
    with pytest.raises(ModelError, match="registered already"):
        registry.register(toy, ToyLevel)
    with pytest.raises(ModelError, match="its class says its name is 'toy-level'"):
        registry.register("other", ToyLevel)
