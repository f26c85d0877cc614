"""Which model forecasts each pool, with hot reload and a fallback that never fails the tick.

Every ``get`` checks the pool's ``CURRENT`` pointer (one small file read); a new version is
loaded and verified once, so a retrain published by the CronJob is picked up without a restart.
A missing, corrupt or tampered artifact is refused with one clear log line (once per version),
and the pool is forecast by the persistence baseline fitted on the history at hand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from forecaster.core.operating_point import OperatingPoint
from forecaster.core.series import DemandSeries
from forecaster.errors import ModelError
from forecaster.forecasting.arrivals import RiseModel
from forecaster.forecasting.artifacts import Artifact, ArtifactStore
from forecaster.forecasting.base import Forecaster
from forecaster.forecasting.registry import FALLBACK, build

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActiveModel:
    """The model used for a pool, and where it came from."""

    model: Forecaster
    name: str
    version: str
    """Artifact version, or ``fallback`` when the baseline was fitted on the spot."""
    arrivals: RiseModel | None = None
    """The peak-additional-demand model trained with it (or the burst rule), when the pool's
    arrivals were known:
    the plan then follows it (``reconcile.loop``), the level model feeds the chart."""
    operating_point: OperatingPoint | None = None
    """The quantile and GPU-hours budget chosen with it (``core.operating_point``), when the
    pool follows a budget: the loop then plans for that quantile under that cap."""


class ModelProvider:
    """Loads the current artifact per pool; falls back to the baseline (module docstring)."""

    def __init__(
        self,
        store: ArtifactStore,
        *,
        horizons_seconds: tuple[int, ...],
        quantiles: tuple[float, ...],
        follow_operating_points: bool = False,
    ) -> None:
        self.store = store
        self.follow_operating_points = follow_operating_points
        """Plan at the quantile and budget chosen at the last retrain (``operating_point``
        settings); off: artifacts' operating points are ignored."""
        self.horizons_seconds = horizons_seconds
        self.quantiles = quantiles
        self._loaded: dict[str, ActiveModel] = {}
        self._refused: set[tuple[str, str]] = set()

    def get(self, pool: str, *, history: DemandSeries) -> ActiveModel | None:
        """The pool's model, reloaded if CURRENT moved; the fallback if none is usable."""
        try:
            version = self.store.current_version(pool)
        except ModelError as exc:
            version = None
            self._refuse(pool, "CURRENT", exc)
        if version is not None:
            cached = self._loaded.get(pool)
            if cached is not None and cached.version == version:
                return cached
            if (pool, version) not in self._refused:
                try:
                    artifact = self.store.load(pool, version)
                except ModelError as exc:
                    self._refuse(pool, version, exc)
                else:
                    if _covers(artifact.model, self.horizons_seconds, self.quantiles):
                        active = ActiveModel(
                            artifact.model,
                            artifact.model_name,
                            version,
                            artifact.arrivals,
                            self._point(pool, artifact),
                        )
                        self._loaded[pool] = active
                        log.info("pool %s: using model %s version %s", pool, active.name, version)
                        return active
                    self._refuse(pool, version, ModelError("fitted for other horizons/quantiles"))
        return self._fallback(pool, history)

    def _point(self, pool: str, artifact: Artifact) -> OperatingPoint | None:
        """The artifact's operating point, if the pool follows one and the model can forecast
        its quantile (else the configured quantile, and a log line saying why)."""
        point = artifact.operating_point
        if point is None or not self.follow_operating_points:
            return None
        if not _covers(artifact.model, self.horizons_seconds, (point.quantile,)):
            log.error(
                "pool %s: model %s cannot forecast its operating point's P%g: planning for the"
                " configured quantile",
                pool,
                artifact.version,
                point.quantile * 100,
            )
            return None
        log.info("pool %s: operating point %s", pool, point.reason)
        return point

    def _refuse(self, pool: str, version: str, exc: Exception) -> None:
        if (pool, version) not in self._refused:
            log.error(
                "pool %s: model %s refused (%s); using the %s baseline",
                pool,
                version,
                exc,
                FALLBACK,
            )
            self._refused.add((pool, version))

    def _fallback(self, pool: str, history: DemandSeries) -> ActiveModel | None:
        return fallback_model(
            pool, history=history, horizons_seconds=self.horizons_seconds, quantiles=self.quantiles
        )


def fallback_model(
    pool: str,
    *,
    history: DemandSeries,
    horizons_seconds: tuple[int, ...],
    quantiles: tuple[float, ...],
) -> ActiveModel | None:
    """The persistence baseline fitted on the history at hand: what forecasts a pool that has
    no usable trained model (None if not even that can be fitted)."""
    model = build(FALLBACK, horizons_seconds=horizons_seconds, quantiles=quantiles)
    try:
        model.fit(history)
    except ModelError as exc:
        log.warning("pool %s: not even the baseline can be fitted: %s", pool, exc)
        return None
    return ActiveModel(model, FALLBACK, "fallback")


def _covers(model: Forecaster, horizons: tuple[int, ...], quantiles: tuple[float, ...]) -> bool:
    return set(horizons) <= set(model.horizons_seconds) and all(
        any(abs(q - m) < 1e-9 for m in model.quantiles) for q in quantiles
    )
