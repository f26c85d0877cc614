"""Every model honours the Forecaster protocol on real data.

For each model (baselines, Prophet, QuantReg, GBM, raw and calibrated): fitted once on 16 days of
the Helios sample, it forecasts every horizon and quantile; P95 >= P50; no look-ahead (cutting the
history after the origin changes nothing); state survives a JSON round trip exactly; forecasts
move with the level now (level-conditioning); predict before fit and too-short history fail
with ModelError.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.errors import ModelError
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.registry import build, known_names, restore

HORIZONS = (300, 900)
QUANTILES = (0.5, 0.95)


@pytest.fixture(scope="module")
def history(helios: DemandSeries) -> DemandSeries:
    start = helios.start + 12 * DAY  # after the outages: clean data
    return helios.window(start, start + 18 * DAY)


@pytest.fixture(scope="module")
def fitted(history: DemandSeries) -> dict[str, Forecaster]:
    train = history.window(history.start, history.start + 16 * DAY)
    return {
        name: build(name, horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(train)
        for name in known_names()
    }


def origins(history: DemandSeries) -> np.ndarray:
    first = history.start + 16 * DAY
    return np.arange(first, first + DAY, 3600, dtype=np.int64)


@pytest.mark.parametrize("name", known_names())
def test_forecasts_every_horizon_and_quantile(
    name: str, fitted: dict[str, Forecaster], history: DemandSeries
) -> None:
    at = origins(history)
    forecast = fitted[name].predict(history, at=at)
    assert forecast.values.shape == (at.size, len(HORIZONS), len(QUANTILES))
    assert np.isfinite(forecast.values).all()
    for h in HORIZONS:
        p50 = forecast.values_at(quantile=0.5, horizon_seconds=h)
        p95 = forecast.values_at(quantile=0.95, horizon_seconds=h)
        assert (p95 >= p50).all()


@pytest.mark.parametrize("name", known_names())
def test_no_look_ahead(name: str, fitted: dict[str, Forecaster], history: DemandSeries) -> None:
    at = origins(history)[::6]
    full = fitted[name].predict(history, at=at).values
    for i, origin in enumerate(at):
        cut = fitted[name].predict(history.until(int(origin)), at=at[i : i + 1]).values
        np.testing.assert_allclose(cut[0], full[i], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", known_names())
def test_state_round_trips_through_json(
    name: str, fitted: dict[str, Forecaster], history: DemandSeries
) -> None:
    model = fitted[name]
    state = json.loads(json.dumps(model.to_state()))
    restored = restore(model.name, state)
    at = origins(history)
    np.testing.assert_array_equal(
        restored.predict(history, at=at).values, model.predict(history, at=at).values
    )


@pytest.mark.parametrize("name", ["persistence", "quantreg", "gbm", "prophet", "ensemble"])
def test_forecast_follows_the_level_now(
    name: str, fitted: dict[str, Forecaster], history: DemandSeries
) -> None:
    at = origins(history)[:1]
    raised = DemandSeries(history.start, history.step_seconds, history.values + 100.0)
    base = fitted[name].predict(history, at=at).values
    moved = fitted[name].predict(raised, at=at).values
    # a uniform shift of the whole history moves the forecast by about the same amount
    np.testing.assert_allclose(moved - base, 100.0, atol=25.0)


@pytest.mark.parametrize("name", known_names())
def test_predict_before_fit_is_a_model_error(name: str, history: DemandSeries) -> None:
    model = build(name, horizons_seconds=HORIZONS, quantiles=QUANTILES)
    with pytest.raises(ModelError, match="before fit"):
        model.predict(history, at=origins(history))


@pytest.mark.parametrize(
    "name", ["persistence", "seasonal-naive", "prophet", "quantreg", "gbm", "ensemble"]
)
def test_too_short_history_is_a_model_error(name: str, history: DemandSeries) -> None:
    short = history.window(history.start, history.start + 3600)
    with pytest.raises(ModelError):
        build(name, horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(short)


def test_unknown_model_name() -> None:
    with pytest.raises(ModelError, match="unknown model 'arima'"):
        build("arima", horizons_seconds=HORIZONS, quantiles=QUANTILES)
    with pytest.raises(ModelError, match="unknown model"):
        build("persistence-raw", horizons_seconds=HORIZONS, quantiles=QUANTILES)


def test_the_lazy_registry_names_each_class_by_its_own_name() -> None:
    from forecaster.forecasting import registry

    for name in registry.MODELS.names():
        assert registry.model_class(name).name == name


def test_quantreg_forecasts_a_flat_history_as_flat(history: DemandSeries) -> None:
    """When every pod was announced work the unannounced history is all zeros: the fit must
    not divide by its zero spread (a warning is an error here) but forecast the flat level."""
    flat = dataclasses.replace(history, values=np.zeros_like(history.values))
    train = flat.window(flat.start, flat.start + 16 * DAY)
    model = build("quantreg", horizons_seconds=HORIZONS, quantiles=QUANTILES).fit(train)
    assert np.all(model.predict(flat, at=origins(flat)).values == 0)
